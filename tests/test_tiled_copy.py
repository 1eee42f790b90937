"""The seed's TiledCopy ownership map, as CuTe DSL's TV layout gives it."""
from course.cute.tiled_copy import ownership_pairs, seed_tiled_copy


def test_seed_ownership():
    m = seed_tiled_copy()
    assert m.shape == (16, 8) and (m.threads, m.values) == (32, 4)
    assert m.cells_of(0) == [(0, 0), (1, 0), (2, 0), (3, 0)]  # T00: rows 0-3 of column 0
    assert m.cells_of(1) == [(4, 0), (5, 0), (6, 0), (7, 0)]  # T01: rows 4-7 of column 0
    assert m.cells_of(4) == [(0, 1), (1, 1), (2, 1), (3, 1)]  # T04: rows 0-3 of column 1
    assert m.owner(9, 2) == [(10, 1)]
    assert m.tv_layout == "(32,4):(4,1)"


def test_every_cell_owned_once():
    m = seed_tiled_copy()
    cells = [rc for _, rc in m.pairs]
    assert len(cells) == 128 and len(set(cells)) == 128
    g = m.grid()
    assert list(g[:, 0]) == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert list(g[0]) == [0, 4, 8, 12, 16, 20, 24, 28]


def test_pairs_for_the_ownership_model():
    pairs = ownership_pairs()
    assert pairs[0] == ((0, 0), (0, 0)) and ((31, 3), (15, 7)) in pairs
