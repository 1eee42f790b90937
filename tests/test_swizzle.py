"""Swizzle<B,M,S> on offsets (course.models.layout), composition with layouts, the TMA modes
(course.models.swizzle) -- by hand, and against CuTe DSL's own algebra evaluated on the CPU."""

import random

import numpy as np
import pytest

from course.models.layout import Layout, Swizzle
from course.models.swizzle import TMA_SWIZZLES, SwizzledLayout, tma_atom, tma_row_bytes


def test_seed_example_by_hand():
    # the seed's worked XOR: element (0,4) of (8,8):(1,8) is offset 32 = 0b100000 -> 36
    sw = Swizzle(3, 2, 3)
    assert sw(32) == 36 and 36 % 32 == 4
    assert sw.source_mask == 0b11100000 and sw.target_mask == 0b00011100
    tr = sw.trace(32, 9)
    assert tr["binary"] == "000100000" and tr["moved"] == 4 and tr["result"] == 36


def test_swizzle_keeps_blocks_and_is_its_own_inverse():
    for sw in (Swizzle(3, 2, 3), Swizzle(2, 4, 3), Swizzle(5, 0, 5), Swizzle(1, 3, 4)):
        x = np.arange(4096)
        y = sw(x)
        assert np.array_equal(sw(y), x)  # XOR twice is the identity
        assert sorted(y) == list(x)  # a permutation of every aligned period
        assert np.array_equal(y % (1 << sw.base), x % (1 << sw.base))  # M low bits kept


def test_bit_roles():
    roles = Swizzle(3, 2, 3).bit_roles(9)
    assert roles == [
        "kept",
        "kept",
        "target",
        "target",
        "target",
        "source",
        "source",
        "source",
        "other",
    ]


def test_rejects_overlapping_fields():
    with pytest.raises(ValueError, match="overlap"):
        Swizzle(3, 2, 2)


def test_units_convert_between_bytes_and_elements():
    sw128 = TMA_SWIZZLES["128B"]
    assert str(sw128.on_elements(2)) == "Swizzle<3,3,3>"
    assert str(sw128.on_elements(4)) == "Swizzle<3,2,3>"
    assert sw128.on_elements(2).on_bytes(2) == sw128
    with pytest.raises(ValueError, match="cannot"):
        Swizzle(3, 1, 3).on_elements(4)
    # the same tile through a byte swizzle or the equivalent element swizzle
    lay = Layout.row_major(8, 64)
    as_bytes = SwizzledLayout(lay, sw128, "bytes", 2).byte_offsets()
    as_elems = SwizzledLayout(lay, sw128.on_elements(2), "elements", 2).byte_offsets()
    assert np.array_equal(as_bytes, as_elems)


def test_layouts():
    assert Layout.col_major(8, 8).grid()[3, 2] == 19
    assert Layout.row_major(4, 5, ld=6)(2, 3) == 15
    assert Layout.col_major(32, 32, ld=33).cosize == 31 + 33 * 31 + 1
    assert str(Layout.col_major(8, 8)) == "(8,8):(1,8)"
    seed = SwizzledLayout(Layout.col_major(8, 8), Swizzle(3, 2, 3))
    assert seed(0, 4) == 36 and str(seed) == "Swizzle<3,2,3> o (8,8):(1,8)"


def test_tma_modes_spread_16_byte_chunks_over_rows():
    for mode, sw in TMA_SWIZZLES.items():
        atom = tma_atom(mode, 2)
        assert atom.byte_offsets().shape == (8, tma_row_bytes(mode) // 2)
        chunks = atom.byte_offsets()[:, 0] % tma_row_bytes(mode) // 16  # chunk of each row's start
        # the row's 128-byte group index (r >> (3 - B)) is XORed into its B chunk bits
        assert list(chunks) == [(r >> (3 - sw.bits)) % (1 << sw.bits) for r in range(8)]


# ---------------------------------------------------------------- against CuTe DSL


def _cute(job):
    from course.cute.trace import on_cpu

    return on_cpu(job)


def test_composition_matches_cute_dsl():
    """composition(Swizzle<3,2,3>, (8,8):(1,8)) and random swizzles on plain offsets,
    evaluated by CuTe DSL (make_composed_layout) inside one trace on the CPU."""
    import cutlass.cute as cute

    rng = random.Random(4)
    params = [(3, 2, 3), (5, 0, 5), (2, 4, 3), (1, 4, 3), (3, 3, 4)]
    params += [(b, rng.randint(0, 3), b + rng.randint(0, 2)) for b in (1, 2, 3) for _ in range(2)]

    def job():
        seed = cute.make_composed_layout(
            cute.make_swizzle(3, 2, 3), 0, cute.make_layout((8, 8), stride=(1, 8))
        )
        grid = [[int(seed((r, c))) for c in range(8)] for r in range(8)]
        flat = {}
        for b, m, s in params:
            lay = cute.make_composed_layout(cute.make_swizzle(b, m, s), 0, cute.make_layout(512))
            flat[(b, m, s)] = [int(lay(i)) for i in range(0, 512, 7)]
        return grid, flat

    grid, flat = _cute(job)
    ours = SwizzledLayout(Layout.col_major(8, 8), Swizzle(3, 2, 3)).offsets()
    assert np.array_equal(np.array(grid), ours)
    assert grid[0][4] == 36  # element (0,4): bank 0 -> bank 4
    for (b, m, s), values in flat.items():
        assert values == [Swizzle(b, m, s)(i) for i in range(0, 512, 7)], (b, m, s)


def test_tma_atoms_match_cute_dsl():
    """warpgroup.make_smem_layout_atom: the same byte swizzle S<B,4,3> for every element type
    (so it acts on bytes), and on 1-byte elements its offsets are our byte offsets."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warpgroup

    kinds = {"none": "K_INTER", "32B": "K_SW32", "64B": "K_SW64", "128B": "K_SW128"}

    def job():
        out = {}
        for mode, kind in kinds.items():
            k = getattr(warpgroup.SmemLayoutAtomKind, kind)
            bf16 = warpgroup.make_smem_layout_atom(k, cutlass.BFloat16)
            u8 = warpgroup.make_smem_layout_atom(k, cutlass.Uint8)
            cols = int(cute.size(u8.outer.shape[1]))
            out[mode] = (
                str(bf16.inner),
                str(u8.inner),
                str(bf16.outer),
                [[int(u8((r, c))) for c in range(cols)] for r in range(8)],
            )
        return out

    got = _cute(job)
    for mode, (bf16_sw, u8_sw, bf16_outer, u8_offsets) in got.items():
        sw = TMA_SWIZZLES[mode]
        assert bf16_sw == u8_sw == f"S<{sw.bits},{sw.base},{sw.shift}>"
        cols = tma_row_bytes(mode) // 2
        assert bf16_outer == f"(8,{cols}):({cols},1)"
        assert np.array_equal(np.array(u8_offsets), tma_atom(mode, 1).byte_offsets())
        # and the bf16 atom's bytes are the 1-byte atom's bytes at even columns
        assert np.array_equal(tma_atom(mode, 2).byte_offsets(), np.array(u8_offsets)[:, ::2])
