import pytest

from course.models.wgmma_descriptor import Descriptor, core_matrix_bytes, k_major_sw128
from course.cute.kernel_traces import wgmma_accumulator_pairs


def test_encode_decode_roundtrip_and_fields():
    d = k_major_sw128(0x400, 2)
    v = d.encode()
    assert v & 0x3FFF == (0x400 + 64) >> 4  # two k16 steps = 64 bytes further
    assert (v >> 32) & 0x3FFF == 1024 >> 4
    assert v >> 62 == 1  # 128-byte swizzle
    assert Descriptor.decode(v) == d
    with pytest.raises(ValueError):
        Descriptor(start=8, lbo=16, sbo=1024).encode()


def test_swizzle_spreads_a_core_column_over_all_bank_groups():
    # the 8 rows of one 16-byte column of a core matrix land in 8 different 16-byte chunks
    chunks = {(core_matrix_bytes(r, 0) % 128) // 16 for r in range(8)}
    assert chunks == set(range(8))


def test_wgmma_accumulator_matches_the_seed_store_mapping():
    """64x64 fp32 accumulator: thread t of warp w holds rows w*16 + (t%32)//4 (+8),
    columns 16*j + 2*(t%4) + {0, 1, 8, 9}."""
    owned = {}
    for (t, v), rc in wgmma_accumulator_pairs(64):
        owned.setdefault(t, set()).add(rc)
    assert len(owned) == 128
    for t in range(128):
        w, lane = divmod(t, 32)
        expected = {
            (w * 16 + lane // 4 + dr, 16 * j + 2 * (lane % 4) + dc)
            for dr in (0, 8)
            for j in range(4)
            for dc in (0, 1, 8, 9)
        }
        assert owned[t] == expected
