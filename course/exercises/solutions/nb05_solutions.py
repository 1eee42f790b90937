"""Notebook 05's kernel exercise: the swizzled shared-memory tile of a transpose."""

import cutlass.cute as cute


def transpose_tile_layout():
    tile = cute.make_layout((32, 32), stride=(32, 1))
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 5), 0, tile)


def transpose_tile_layout__no_swizzle():
    return cute.make_layout((32, 32), stride=(32, 1))


def transpose_tile_layout__three_row_bits():
    tile = cute.make_layout((32, 32), stride=(32, 1))
    return cute.make_composed_layout(cute.make_swizzle(3, 0, 5), 0, tile)


def transpose_tile_layout__swizzle_shift_four():
    """A shift below the swizzle's bits (S < B): CuTe DSL makes it the identity S<0,4,3>."""
    tile = cute.make_layout((32, 32), stride=(32, 1))
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 4), 0, tile)


def transpose_tile_layout__overlapping_rows():
    return cute.make_layout((32, 32), stride=(31, 1))  # "padding" below 32: rows overlap


def transpose_tile_layout_padded():
    """Padding each row to 33 floats also puts a column's 32 floats in 32 banks."""
    return cute.make_layout((32, 32), stride=(33, 1))


def transpose_tile_layout_column_major_swizzled():
    tile = cute.make_layout((32, 32), stride=(1, 32))
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 5), 0, tile)


def transpose_tile_layout_tiled_atom():
    """NVIDIA's tensorop_gemm spelling: a swizzled atom of 8 rows (an ordered row-major
    layout composed with the swizzle), tiled to the tile's shape with cute.tile_to_shape;
    the swizzle acts on the whole offset, so the rows of the atom's copies take part."""
    rows = cute.make_ordered_layout((8, 32), order=(1, 0))
    atom = cute.make_composed_layout(cute.make_swizzle(5, 0, 5), 0, rows)
    return cute.tile_to_shape(atom, (32, 32), (0, 1))


def transpose_tile_layout_padded_column_major():
    """Padding the other way: columns of 33 floats; a row's 32 floats are 33 apart."""
    return cute.make_layout((32, 32), stride=(1, 33))


REFERENCE = {"05.transpose_swizzle": transpose_tile_layout}
WRONG = {
    "05.transpose_swizzle": {
        transpose_tile_layout__no_swizzle: ("32-way", "cpu"),
        transpose_tile_layout__three_row_bits: ("4-way", "cpu"),
        transpose_tile_layout__overlapping_rows: ("overlap", "cpu"),
        transpose_tile_layout__swizzle_shift_four: ("swizzle collapsed", "cpu"),
    }
}
ALTERNATIVES = {
    "05.transpose_swizzle": [
        transpose_tile_layout_padded,
        transpose_tile_layout_column_major_swizzled,
        transpose_tile_layout_tiled_atom,
        transpose_tile_layout_padded_column_major,
    ]
}
