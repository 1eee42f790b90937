"""Notebook 05's kernel exercise: the swizzled shared-memory tile of a transpose."""

import cutlass.cute as cute


def transpose_tile_layout():
    tile = cute.make_layout((64, 64), stride=(64, 1))  # a row starts at offset bit 6
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 6), 0, tile)


def transpose_tile_layout__no_swizzle():
    return cute.make_layout((64, 64), stride=(64, 1))


def transpose_tile_layout__section_4_swizzle():
    """Section 4's Swizzle<5,0,5>, right for a 32-float row: it reads offset bits 5-9,
    one column bit and the row's low four, so rows l and l + 16 still share a bank."""
    tile = cute.make_layout((64, 64), stride=(64, 1))
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 5), 0, tile)


def transpose_tile_layout__three_row_bits():
    tile = cute.make_layout((64, 64), stride=(64, 1))
    return cute.make_composed_layout(cute.make_swizzle(3, 0, 6), 0, tile)


def transpose_tile_layout__swizzle_shift_four():
    """A shift below the swizzle's bits (S < B): CuTe DSL makes it the identity S<0,4,3>."""
    tile = cute.make_layout((64, 64), stride=(64, 1))
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 4), 0, tile)


def transpose_tile_layout__section_4_padding():
    """Section 4's 33-float rows for a 64-float row: rows overlap."""
    return cute.make_layout((64, 64), stride=(33, 1))


def transpose_tile_layout_padded():
    """Padding each row to 65 floats also puts a column's 32 floats in 32 banks."""
    return cute.make_layout((64, 64), stride=(65, 1))


def transpose_tile_layout_six_row_bits():
    """Six row bits XORed into offset bits 0-5: the sixth changes which half-row a float
    sits in, not its bank, and costs nothing."""
    tile = cute.make_layout((64, 64), stride=(64, 1))
    return cute.make_composed_layout(cute.make_swizzle(6, 0, 6), 0, tile)


def transpose_tile_layout_column_major_swizzled():
    tile = cute.make_layout((64, 64), stride=(1, 64))
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 6), 0, tile)


def transpose_tile_layout_tiled_atom():
    """NVIDIA's tensorop_gemm spelling: a swizzled atom of 8 rows (an ordered row-major
    layout composed with the swizzle), tiled to the tile's shape with cute.tile_to_shape;
    the swizzle acts on the whole offset, so the rows of the atom's copies take part."""
    rows = cute.make_ordered_layout((8, 64), order=(1, 0))
    atom = cute.make_composed_layout(cute.make_swizzle(5, 0, 6), 0, rows)
    return cute.tile_to_shape(atom, (64, 64), (0, 1))


def transpose_tile_layout_padded_column_major():
    """Padding the other way: columns of 65 floats; a row's 32 floats are 65 apart."""
    return cute.make_layout((64, 64), stride=(1, 65))


REFERENCE = {"05.transpose_swizzle": transpose_tile_layout}
WRONG = {
    "05.transpose_swizzle": {
        transpose_tile_layout__no_swizzle: ("32-way", "cpu"),
        transpose_tile_layout__section_4_swizzle: ("bits 6-10", "cpu"),
        transpose_tile_layout__three_row_bits: ("4-way", "cpu"),
        transpose_tile_layout__section_4_padding: ("overlap", "cpu"),
        transpose_tile_layout__swizzle_shift_four: ("swizzle collapsed", "cpu"),
    }
}
ALTERNATIVES = {
    "05.transpose_swizzle": [
        transpose_tile_layout_padded,
        transpose_tile_layout_six_row_bits,
        transpose_tile_layout_column_major_swizzled,
        transpose_tile_layout_tiled_atom,
        transpose_tile_layout_padded_column_major,
    ]
}
