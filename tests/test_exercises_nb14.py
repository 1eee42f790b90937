"""Notebook 14's exercises accept the right answers and reject near misses."""

from types import SimpleNamespace

import pytest

from tests.nvidia_examples import examples_dir

from course.exercises.check import check


def test_right_answers_pass():
    assert check("14.tmem_cols", 256, quiet=True).ok
    assert check("14.idesc", 138413200, quiet=True).ok
    assert check("14.idesc", 0x8400490, quiet=True).ok
    assert check("14.lane_owner", (2, 29), quiet=True).ok  # row 93: warp 2, its lane 29
    assert check("14.stage_bytes", 49152, quiet=True).ok


def test_near_misses_fail_with_a_reason():
    v = check("14.tmem_cols", 200, quiet=True)  # not a request the allocator takes
    assert not v.ok and "power" in v.message
    v = check("14.idesc", 136316048, quiet=True)  # N = 128 instead of 256
    assert not v.ok and "n=128" in v.message
    assert not check("14.idesc", "0x8400490", quiet=True).ok  # a string is not an int
    v = check("14.lane_owner", (2, 93), quiet=True)  # the thread index, not the lane
    assert not v.ok and "lane within warp 2" in v.message
    assert not check("14.lane_owner", (2, 77 % 32), quiet=True).ok  # row 77's, printed above
    assert not check("14.stage_bytes", 32768, quiet=True).ok  # tile_n = 128's answer


def _teardown(*lines):
    """The end of an epilogue as the 14.epilogue_role check reads it (PTX instructions)."""
    return SimpleNamespace(instructions=list(lines))


LOAD = "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%r150, %r151}, [%r251];"
WAIT = "tcgen05.wait::ld.sync.aligned;"
MEET = "bar.sync 1, 128;"
DRAIN = "cp.async.bulk.wait_group.read 0;"
FREE = "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r23, %r241;"


def test_a_free_needs_a_barrier_after_every_warps_last_read_not_right_before_it():
    """The PTX ISA: tcgen05.wait::ld waits for the thread's own tcgen05.ld only, so warp 0's
    dealloc must follow a synchronisation after the other warps' last reads; what stands right
    before the dealloc (a branch, the stores' drain) is no rule."""
    from course.exercises.nb14_epilogue_kernel import all_warps_done_before_free as rule

    branch = ("setp.ne.s32 %p56, %r3, 0;", "@%p56 bra $L__BB0_51;")
    assert rule(_teardown(LOAD, WAIT, MEET, *branch, DRAIN, FREE)).status == "pass"  # tutorial
    assert rule(_teardown(LOAD, WAIT, MEET, *branch, FREE, DRAIN)).status == "pass"
    late = rule(_teardown(LOAD, WAIT, MEET, LOAD, WAIT, *branch, DRAIN, FREE))
    assert late.status == "fail" and "still be reading" in late.hint
    freed_first = rule(_teardown(FREE, LOAD, WAIT, MEET))
    assert freed_first.status == "fail" and "after tcgen05.dealloc freed it" in freed_first.hint


# the CUTLASS checkout NVIDIA's examples come from: the one setting of tests/nvidia_examples
# (CUTLASS_DSL_EXAMPLES, a checkout's examples/python/CuTeDSL), three folders up
CUTLASS = examples_dir().parents[2]


@pytest.mark.compile
@pytest.mark.skipif(not CUTLASS.is_dir(), reason=f"no CUTLASS examples at {CUTLASS}")
def test_nvidia_s_tutorial_teardown_is_not_refused():
    """fp16_gemm_4 hands the accumulator back, drains its stores and frees TMEM with no
    barrier of its own, in a kernel compiled twice over (two cluster shapes): neither the
    exercise's rule at the free nor the drain rule may refuse it."""
    from course.cute import ptx_protocol as pp
    from course.exercises.nb14_epilogue_kernel import all_warps_done_before_free as rule
    from course.tools import upstream_mix as um

    _, art = um.tutorial_artifacts(CUTLASS, "fp16_gemm_4")
    kernels = um.ptx_kernels(art.ptx)
    ptx = kernels[um.gemm_kernel(kernels, r"tcgen05\.mma")]
    assert rule(_teardown(*pp.instructions(ptx))).status == "pass"
    assert "tma_stores_drained" not in {v.rule for v in pp.check(ptx)}
