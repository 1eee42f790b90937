"""Collectives in divergent code, and kernels that never finish, named on the CPU executor.

elect.sync (cute.arch.elect_one), warp-wide instructions (ldmatrix, mma.sync, tcgen05.ld)
and the copies CuTe DSL issues through its own elect.sync (a TMA copy, tcgen05.mma,
tcgen05.cp) need every lane of the warp: reached by part of it -- inside elect_one, behind
a branch on the lane -- the GPU waits for lanes that never come (a TMA copy inside
elect_one hangs an H200). NVIDIA's idiom, `with cute.arch.elect_one():` around an mbarrier
arrive from a whole warp and the TMA copy outside it, runs clean.

A kernel that does not finish is named at once when every live warp waits on something
nothing in flight can bring, and after a few seconds without progress when a loop spins
(the wall-clock fallback), with the warps and what they wait on.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the annotations
import time

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import pytest
import torch
from cutlass.memory.smem import SmemAllocator

from course.execute import Hazard, hazards, pointer, run, runner

THREADS = 64


@cute.kernel
def elect_kernel(gOut: cute.Tensor, mode: cutlass.Constexpr):
    """Each warp's elected lane writes 1 (mode "whole"); or the elect is nested in another
    ("nested"), or reached by half the warp ("lane_branch")."""
    tid, _, _ = cute.arch.thread_idx()
    if cutlass.const_expr(mode == "whole"):
        with cute.arch.elect_one():
            gOut[tid] = cutlass.Float32(1.0)
    if cutlass.const_expr(mode == "nested"):
        with cute.arch.elect_one():
            with cute.arch.elect_one():
                gOut[tid] = cutlass.Float32(1.0)
    if cutlass.const_expr(mode == "lane_branch"):
        if cute.arch.lane_idx() < 16:
            with cute.arch.elect_one():
                gOut[tid] = cutlass.Float32(1.0)


@cute.jit
def elect(out_ptr: cute.Pointer, stream: cuda.CUstream, mode: cutlass.Constexpr):
    elect_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS)), mode).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def waits_forever_kernel(gOut: cute.Tensor):
    """Warp 0 waits on a barrier nobody arrives at; warp 1 waits on warp 0's barrier."""
    warp = cute.arch.warp_idx()
    smem = SmemAllocator()
    bars = smem.allocate_array(cutlass.Int64, 2, byte_alignment=8)
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bars, 1)
            cute.arch.mbarrier_init(bars + 1, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.mbarrier_wait(bars, 0)  # nobody arrives: never completes
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bars + 1)
    if warp == 1:
        cute.arch.mbarrier_wait(bars + 1, 0)


@cute.jit
def waits_forever(out_ptr: cute.Pointer, stream: cuda.CUstream):
    waits_forever_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS))).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def polls_forever_kernel(gOut: cute.Tensor):
    """Every warp spins on mbarrier.test_wait of a phase nobody completes."""
    warp = cute.arch.warp_idx()
    smem = SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    done = cute.arch.mbarrier_test_wait(bar, 0)
    while not done:
        done = cute.arch.mbarrier_test_wait(bar, 0)


@cute.jit
def polls_forever(out_ptr: cute.Pointer, stream: cuda.CUstream):
    polls_forever_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS))).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


def _run_elect(mode: str) -> torch.Tensor:
    out = torch.zeros(THREADS)
    run(elect, pointer(out), None, mode)
    return out


# ---------------------------------------------------------------- collectives


def test_elect_one_from_a_whole_warp_runs_clean():
    out = _run_elect("whole")
    assert out.tolist() == [1.0 if t % 32 == 0 else 0.0 for t in range(THREADS)]


@pytest.mark.parametrize(
    "mode, how", [("nested", "inside the elect_one"), ("lane_branch", "branch")]
)
def test_an_elect_reached_by_part_of_the_warp_is_a_named_hazard(mode, how):
    with pytest.raises(Hazard) as found:
        _run_elect(mode)
    h = found.value
    assert h.kind == hazards.COLLECTIVE, h
    assert h.cause.what == hazards.PART_OF_THE_LANES
    assert "elect.sync" in h.cause.subject
    assert h.cause.expected == tuple(range(32))  # warp 0's lanes
    assert h.cause.observed == ((0,) if mode == "nested" else tuple(range(16)))
    assert how in h.detail and "elect_one" in h.site.text()


def _tma_check(fn):
    from course.exercises.executor_checks import EXECUTOR_CHECKS

    return EXECUTOR_CHECKS["08.arm_and_load"](fn, True)


COPY = "    cute.copy(tma, src, dst, tma_bar_ptr=bar)\n"


def test_nvidias_elect_one_around_the_arrive_runs_clean():
    from course.exercises.solutions import nb08_solutions

    for fn in (nb08_solutions.arm_and_load, nb08_solutions.arm_and_load_lane_zero):
        findings = _tma_check(fn)
        assert findings and all(f.status == "pass" for f in findings), findings


@pytest.mark.parametrize(
    "name, edit, how",
    [
        ("arm_and_load__copy_inside_elect", (COPY, "    " + COPY), "inside the elect_one"),
        (
            "arm_and_load__copy_by_lane_zero",
            (COPY, "    if cute.arch.lane_idx() == 0:\n    " + COPY),
            "branch",
        ),
    ],
)
def test_a_tma_copy_issued_by_one_lane_is_a_named_hazard(name, edit, how):
    """The TMA copy elects its own lane (elect.sync over the whole warp): issued inside
    elect_one (a nested elect) or by lane 0 alone, the GPU hangs."""
    from course.exercises.learner_code import edited
    from course.exercises.solutions import nb08_solutions

    findings = _tma_check(edited(nb08_solutions.arm_and_load, name, edit))
    assert findings[0].status == "fail", findings
    assert hazards.COLLECTIVE in findings[0].check, findings[0]
    assert "TMA load" in findings[0].detail and how in findings[0].detail, findings[0].detail
    assert "elect_one" in findings[0].hint, findings[0].hint


# ---------------------------------------------------------------- kernels that never finish


def test_a_deadlock_is_named_at_once_with_who_waits_on_what():
    out = torch.zeros(THREADS)
    started = time.monotonic()
    with pytest.raises(Hazard) as found:
        run(waits_forever, pointer(out), None)
    assert time.monotonic() - started < 15
    h = found.value
    assert h.kind == hazards.DEADLOCK, h
    assert h.cause.what == hazards.BLOCKED
    waits = {(warp, what.split(" (")[0]) for _, warp, what, _ in h.cause.observed}
    assert len(waits) == 2 and {w for w, _ in waits} == {0, 1}, waits
    assert all("parity 0" in what for _, what in waits), waits


def test_warps_that_poll_a_phase_nothing_completes_are_a_deadlock_at_once():
    out = torch.zeros(THREADS)
    started = time.monotonic()
    with pytest.raises(Hazard) as found:
        run(polls_forever, pointer(out), None, time_limit_s=60.0)
    assert time.monotonic() - started < 15
    h = found.value
    assert h.kind == hazards.DEADLOCK, h
    assert {warp for _, warp, _, _ in h.cause.observed} == {0, 1}
    assert "polls mbarrier" in h.detail and "test_wait" in h.site.text()


def test_a_loop_that_never_advances_is_named_within_15_s_with_its_line():
    from tests import execute_kernels

    assert runner.TIME_LIMIT_S <= 15.0
    out = torch.full((execute_kernels.THREADS,), float("nan"))
    started = time.monotonic()
    with pytest.raises(Hazard) as found:
        run(execute_kernels.spin, pointer(out), None, time_limit_s=2.0)
    assert time.monotonic() - started < 15
    h = found.value
    assert h.kind == hazards.HANG and h.cause.what == hazards.LIVELOCK, h
    # a line of the spinning kernel: the time runs out on whichever of its lines the loop
    # is at (its header, its body, or the kernel's own frame as the translated loop
    # re-enters it), never on the executor's or the test's
    assert h.site.filename.endswith("execute_kernels.py"), h.site
    assert h.site.function in ("spin_kernel", "<lambda>"), h.site
    assert h.site.first_line <= h.site.lineno <= h.site.first_line + 5, h.site
    assert "warp" in h.detail
