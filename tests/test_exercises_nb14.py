"""Notebook 14's exercises accept the right answers and reject near misses."""

from course.exercises.check import check


def test_right_answers_pass():
    assert check("14.tmem_cols", 256, quiet=True).ok
    assert check("14.idesc", 138413200, quiet=True).ok
    assert check("14.idesc", 0x8400490, quiet=True).ok
    assert check("14.lane_owner", (2, 93), quiet=True).ok
    assert check("14.stage_bytes", 49152, quiet=True).ok


def test_near_misses_fail_with_a_reason():
    v = check("14.tmem_cols", 200, quiet=True)  # not a request the allocator takes
    assert not v.ok and "power" in v.message
    v = check("14.idesc", 136316048, quiet=True)  # N = 128 instead of 256
    assert not v.ok and "n=128" in v.message
    assert not check("14.idesc", "0x8400490", quiet=True).ok  # a string is not an int
    assert not check("14.lane_owner", (93 // 32, 29), quiet=True).ok  # lane within the warp
    assert not check("14.lane_owner", (2, 77), quiet=True).ok  # the lane printed above it
    assert not check("14.stage_bytes", 32768, quiet=True).ok  # tile_n = 128's answer
