"""Notebook 02's kernel exercise: a padded tile cut into 2x4 tiles, built with CuTe's calls."""

import cutlass.cute as cute


def padded_tiles():
    tile = cute.make_layout((4, 8), stride=(9, 1))  # row by row, rows padded to 9 floats
    return cute.zipped_divide(tile, (2, 4))  # ((2,4),(2,2)): (inside a tile, which tile)


def padded_tiles__column_major():
    tile = cute.make_layout((4, 8), stride=(1, 9))
    return cute.zipped_divide(tile, (2, 4))


def padded_tiles__no_padding():
    tile = cute.make_layout((4, 8), stride=(8, 1))
    return cute.zipped_divide(tile, (2, 4))


def padded_tiles__tiler_transposed():
    tile = cute.make_layout((4, 8), stride=(9, 1))
    return cute.zipped_divide(tile, (4, 2))


def padded_tiles__logical_divide():
    tile = cute.make_layout((4, 8), stride=(9, 1))
    return cute.logical_divide(tile, (2, 4))


def padded_tiles_by_composition():
    """The padded tile as a (4,9) row-major buffer seen through a 4x8 column-major view."""
    rows = cute.make_layout((4, 9), stride=(9, 1))
    return cute.zipped_divide(cute.composition(rows, cute.make_layout((4, 8))), (2, 4))


def padded_tiles_layout_tiler():
    tile = cute.make_layout((4, 8), stride=(9, 1))
    return cute.zipped_divide(tile, (cute.make_layout(2), cute.make_layout(4)))


def padded_tiles_ordered_layout():
    """NVIDIA's spelling: a row-major buffer of 4 rows of 9 floats as an ordered layout,
    its first 8 columns by composition with a shape (mode by mode), then zipped_divide."""
    rows = cute.make_ordered_layout((4, 9), order=(1, 0))  # (4,9):(9,1)
    return cute.zipped_divide(cute.composition(rows, (4, 8)), tiler=(2, 4))


def padded_tiles_rank_one_tiler():
    """The tiler's column mode written as a rank-1 layout, make_layout((4,), stride=(1,)):
    the tile mode comes out as (2,(4)) where the reference has (2,4), a 1-tuple taking the
    same coordinates, and every offset is the reference's."""
    tile = cute.make_layout((4, 8), stride=(9, 1))
    columns = cute.make_layout((4,), stride=(1,))
    return cute.zipped_divide(tile, tiler=(cute.make_layout(2, stride=1), columns))


REFERENCE = {"02.padded_tiles": padded_tiles}
WRONG = {
    "02.padded_tiles": {
        padded_tiles__column_major: ("swapped strides", "cpu"),
        padded_tiles__no_padding: ("no padding", "cpu"),
        padded_tiles__tiler_transposed: ("transposed", "cpu"),
        padded_tiles__logical_divide: ("logical_divide", "cpu"),
    }
}
ALTERNATIVES = {
    "02.padded_tiles": [
        padded_tiles_by_composition,
        padded_tiles_layout_tiler,
        padded_tiles_ordered_layout,
        padded_tiles_rank_one_tiler,
    ]
}
