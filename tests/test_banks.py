"""course.models.bank_model: the bank model on hand-worked cases, and notebook 05's cases."""

import numpy as np
import pytest

from course.models import bank_model
from course.models import smem_access as sa
from course.models.bank_model import Request, analyze
from course.models.layout import Layout, Swizzle


def req(addrs, width=4):
    return Request.of(addrs, width)


def test_consecutive_words_take_one_wavefront():
    a = analyze(req([4 * l for l in range(32)]))
    assert (a.wavefronts, a.ideal, a.conflicts, a.degree) == (1, 1, 0, 1)
    assert a.heat().shape == (1, 32) and a.heat().max() == 1


def test_stride_two_words_is_a_two_way_conflict():
    a = analyze(req([8 * l for l in range(32)]))
    assert (a.wavefronts, a.conflicts) == (2, 1)
    assert a.heat()[0, 0] == 2 and a.heat()[0, 1] == 0


def test_column_of_a_32_wide_tile_is_32_way():
    a = analyze(req([128 * l for l in range(32)]))
    assert (a.wavefronts, a.conflicts, a.degree) == (32, 31, 32)


def test_broadcast_is_free():
    assert analyze(req([0] * 32)).wavefronts == 1
    # 16 lanes on word 0, 16 on word 32 (both bank 0): 2 distinct words -> 2 wavefronts
    assert analyze(req([0] * 16 + [128] * 16)).wavefronts == 2
    # bytes of the same word are the same word
    assert analyze(req([l % 4 for l in range(32)], width=1)).wavefronts == 1
    assert analyze(req([2 * (l % 2) for l in range(32)], width=2)).wavefronts == 1


def test_inactive_lanes_cost_nothing():
    a = analyze(req([0, 128]))  # two lanes, same bank, different words
    assert (a.wavefronts, a.ideal, len(a.request.active)) == (2, 1, 2)


def test_64_bit_is_two_phases_of_16_lanes():
    a = analyze(req([8 * l for l in range(32)], width=8))  # 256 contiguous bytes
    assert [p.lanes[0] for p in a.phases] == [0, 16] and len(a.phases[0].lanes) == 16
    assert (a.wavefronts, a.ideal, a.conflicts) == (2, 2, 0)
    # lanes 0 and 16 hit the same bank with different words: different phases, no conflict
    b = analyze(req([128 * (l // 16) + 8 * (l % 16) for l in range(32)], width=8))
    assert b.conflicts == 0
    # a 16-byte stride puts lanes l and l+8 of a phase on the same two banks
    c = analyze(req([16 * l for l in range(32)], width=8))
    assert [p.wavefronts for p in c.phases] == [2, 2] and c.conflicts == 2


def test_128_bit_is_four_phases_of_8_lanes():
    a = analyze(req([16 * l for l in range(32)], width=16))  # 512 contiguous bytes
    assert (len(a.phases), a.wavefronts, a.ideal, a.conflicts) == (4, 4, 4, 0)
    assert all(p.words_per_bank == (1,) * 32 for p in a.phases)
    # every lane at a 128-byte stride: each phase's 8 lanes pile on banks 0-3
    b = analyze(req([128 * l for l in range(32)], width=16))
    assert [p.wavefronts for p in b.phases] == [8, 8, 8, 8]
    assert (b.wavefronts, b.conflicts, b.degree) == (32, 28, 8)
    assert b.lane_banks()[3] == (0, 1, 2, 3)


def test_requests_are_validated():
    with pytest.raises(ValueError, match="aligned"):
        req([4], width=8)
    with pytest.raises(ValueError, match="width"):
        req([0], width=12)
    with pytest.raises(ValueError, match="32 lanes"):
        Request(tuple([0] * 31), 4)


def test_bank_of():
    assert bank_model.bank_of(132) == 1
    assert list(bank_model.bank_of(np.array([0, 4, 128, 260]))) == [0, 1, 0, 1]


# ---------------------------------------------------------------- notebook 05's 8x8 float tile


def test_float8x8_tile_bank_maps_and_row_conflicts():
    plain = sa.SmemTile("fp32", Layout.col_major(8, 8))
    swz = sa.SmemTile("fp32", Layout.col_major(8, 8), Swizzle(3, 2, 3))
    assert list(plain.bank_map()[0]) == [0, 8, 16, 24, 0, 8, 16, 24]
    assert list(swz.bank_map()[0]) == [0, 8, 16, 24, 4, 12, 20, 28]
    assert list(swz.bank_map()[4]) == [4, 12, 20, 28, 0, 8, 16, 24]
    assert list(swz.bank_map()[:, 4]) == [4, 5, 6, 7, 0, 1, 2, 3]
    assert plain.bank_map()[0, 4] == 0 and swz.bank_map()[0, 4] == 4  # element (0,4) moves
    rows = sa.rows((8, 8))
    assert rows.predict(plain).conflicts == 8  # "Row-wise bank conflicts: 8"
    assert rows.predict(swz).conflicts == 0  # "Row-wise bank conflicts: 0"
    assert sa.columns((8, 8)).predict(plain).conflicts == 0


EXPECTED = {  # case: (requests, wavefronts, ideal, conflicts), worked out by hand
    "float8x8_rows": (8, 16, 8, 8),
    "float8x8_rows_swizzled": (8, 8, 8, 0),
    "float8x8_columns": (8, 8, 8, 0),
    "transpose_rows": (32, 1024, 32, 992),
    "transpose_rows_padded": (32, 32, 32, 0),
    "transpose_rows_swizzled": (32, 32, 32, 0),
    "tiled_copy_128": (1, 4, 4, 0),
    "vec128_rows": (1, 32, 4, 28),
    "vec128_rows_swizzled": (1, 4, 4, 0),
    "vec64_contiguous": (1, 2, 2, 0),
    "vec64_strided": (1, 4, 2, 2),
    "tma_none": (1, 4, 4, 0),
    "tma_32B_plain": (1, 8, 4, 4),
    "tma_32B": (1, 4, 4, 0),
    "tma_64B_plain": (1, 16, 4, 12),
    "tma_64B": (1, 4, 4, 0),
    "tma_128B_plain": (1, 32, 4, 28),
    "tma_128B": (1, 4, 4, 0),
    "mma_a": (4, 32, 4, 28),
    "mma_a_swizzled": (4, 4, 4, 0),
}


def test_notebook_cases_predictions():
    names = [c.name for c in sa.cases()]
    assert names == list(EXPECTED)
    for c in sa.cases():
        t = c.predict()
        assert (t.requests, t.wavefronts, t.ideal, t.conflicts) == EXPECTED[c.name], c.name


def test_kernel_offsets_are_the_models_addresses():
    for c in sa.cases():
        table = c.kernel_offsets()
        assert table.shape == (len(c.access.coords), 32) and table.dtype == np.int32
        for q, r in enumerate(c.requests()):
            want = [-1 if a is None else a // c.width for a in r.addresses]
            assert list(table[q]) == want
        assert c.tile.bytes <= 16384  # fits the measuring kernel's shared buffer


def test_access_contiguity_is_checked():
    # 4 floats down a column are not contiguous in a row-major tile
    bad = sa.lane_vectors("down a column", lambda l: (0, l % 8), 4, along=0)
    with pytest.raises(ValueError, match="not contiguous"):
        bad.requests(sa.SmemTile("fp32", Layout.row_major(8, 8)))
    with pytest.raises(ValueError, match="outside"):
        sa.rows((4, 4)).requests(sa.SmemTile("fp32", Layout.row_major(2, 2)))


def test_heat_of_a_pattern():
    h = bank_model.heat(sa.case("float8x8_rows").predict())
    assert h.shape == (8, 1, 32) and h.max() == 2
