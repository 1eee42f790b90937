"""Notebook 04's 16x8 TiledCopy ownership map, as CuTe DSL's TV layout gives it."""

from course.cute.tiled_copy import tiled_copy_16x8
from course.models import smem_access


def test_tiled_copy_16x8_ownership():
    m = tiled_copy_16x8()
    assert m.shape == (16, 8) and (m.threads, m.values) == (32, 4)
    assert m.cells_of(0) == [(0, 0), (1, 0), (2, 0), (3, 0)]  # T00: rows 0-3 of column 0
    assert m.cells_of(1) == [(4, 0), (5, 0), (6, 0), (7, 0)]  # T01: rows 4-7 of column 0
    assert m.cells_of(4) == [(0, 1), (1, 1), (2, 1), (3, 1)]  # T04: rows 0-3 of column 1
    assert m.owner(9, 2) == [(10, 1)]
    assert m.tv_layout == "(32,4):(4,1)"


def test_every_cell_owned_once():
    m = tiled_copy_16x8()
    cells = [rc for _, rc in m.pairs]
    assert len(cells) == 128 and len(set(cells)) == 128
    g = m.grid()
    assert list(g[:, 0]) == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert list(g[0]) == [0, 4, 8, 12, 16, 20, 24, 28]


def test_pairs_for_the_ownership_model():
    pairs = tiled_copy_16x8().pairs
    assert pairs[0] == ((0, 0), (0, 0)) and ((31, 3), (15, 7)) in pairs


def test_the_bank_model_reads_the_copy_cute_builds():
    """course.models.smem_access states the copy's TV layout without CuTe; CuTe agrees."""
    m = tiled_copy_16x8()
    assert m.tv_layout == smem_access.TILED_COPY_16X8_TV
    cute_access = smem_access.from_ownership("TiledCopy (4,8) threads x 4 floats", m.pairs, 4)
    assert smem_access.tiled_copy_16x8_fragment() == cute_access
