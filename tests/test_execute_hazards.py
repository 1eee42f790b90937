"""The CPU executor names what would go wrong on the GPU: one planted bug per hazard.

Each bug is planted in a small kernel (tests/execute_kernels.py) or is one of the known
wrong variants of the course's exercises; the same code without the bug runs clean, over
several seeded interleavings of its warps.
"""

import pytest
import torch

from course.execute import Hazard, Unmodelled, hazards, pointer, run
from tests import execute_kernels as planted

SEEDS = (0, 1, 2)


def _line(fn, text: str) -> int:
    """The line of `fn`'s source, counted from its `def` line, that holds `text`: what a
    hazard names."""
    import inspect

    lines = inspect.getsource(inspect.unwrap(fn)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    return next(i for i, line in enumerate(lines[start:], 1) if text in line)


def _buffers(n=planted.THREADS * planted.VEC):
    x = torch.randn(n, generator=torch.Generator().manual_seed(5))
    return x, torch.full((n,), float("nan"))


def _neighbour(x, out, *, sync_before_read: bool, sync_before_overwrite: bool, seed=0):
    """planted.neighbour with each of its two barriers in or left out."""
    switches = {
        "sync_before_read": sync_before_read,
        "sync_before_overwrite": sync_before_overwrite,
    }
    run(planted.neighbour, pointer(x), pointer(out), None, seed=seed, kwargs=switches)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_correct_kernels_run_clean_in_every_interleaving(seed):
    x, out = _buffers(planted.THREADS)
    _neighbour(x, out, sync_before_read=True, sync_before_overwrite=True, seed=seed)
    assert torch.equal(out, 2 * torch.roll(x, -1))
    x, out = _buffers()
    run(planted.staged_copy, pointer(x), pointer(out), None, seed=seed, kwargs={"wait": True})
    assert torch.equal(out, torch.roll(x, -planted.VEC))


def test_missing_cp_async_wait_is_a_read_of_a_copy_in_flight():
    x, out = _buffers()
    with pytest.raises(Hazard) as found:
        run(planted.staged_copy, pointer(x), pointer(out), None, kwargs={"wait": False})
    h = found.value
    assert h.kind == hazards.IN_FLIGHT
    assert "thread 0 (warp 0, lane 0)" in h.detail and "staged[" in h.detail
    assert "still in flight" in h.detail and "cute.copy(g2s" in h.detail  # where it was issued
    assert "gOut[tid * VEC + v] = staged" in h.site.text()  # the line that read it


def test_a_hazard_inside_a_loop_names_its_own_line():
    """A loop's body stands twice in the rewritten code (lanes agreeing, lanes apart): its
    lines must still be the file's, not moved once per copy."""
    out = torch.zeros(planted.THREADS)
    run(planted.looped, pointer(out), 3, None, kwargs={"past_end": False})
    assert torch.equal(out, torch.full((planted.THREADS,), 2.0))
    zeros = torch.zeros(planted.THREADS)
    with pytest.raises(Hazard) as found:
        run(planted.looped, pointer(zeros), 3, None, kwargs={"past_end": True})
    h = found.value
    assert h.kind == hazards.OUT_OF_BOUNDS
    assert h.site.text() == "gOut[tid + 1] = cutlass.Float32(t)"
    assert h.site.describe().startswith(
        f"looped_kernel line {_line(planted.looped_kernel, 'gOut[tid + 1]')} "
    )


def test_missing_sync_is_a_race_naming_both_threads_and_lines():
    x, out = _buffers(planted.THREADS)
    with pytest.raises(Hazard) as found:
        _neighbour(x, out, sync_before_read=False, sync_before_overwrite=True)
    h = found.value
    assert h.kind == hazards.RACE
    assert (
        "thread 0 (warp 0, lane 0) reads staged[1], which thread 1 (warp 0, lane 1) wrote "
        f"at neighbour_kernel line {_line(planted.neighbour_kernel, 'staged[tid] = gIn[tid]')} "
        "(`staged[tid] = gIn[tid]`) with no barrier between"
    ) in h.detail
    assert "neighbour = staged[(tid + 1) % THREADS]" in h.site.text()


def test_overwriting_data_still_being_read_is_named():
    x, out = _buffers(planted.THREADS)
    with pytest.raises(Hazard) as found:
        _neighbour(x, out, sync_before_read=True, sync_before_overwrite=False)
    h = found.value
    assert h.kind == hazards.STAGE_OVERWRITE
    assert (
        "thread 1 (warp 0, lane 1) writes staged[1], which thread 0 (warp 0, lane 0) read"
        in h.detail
    )
    assert "staged[tid] = neighbour * 2.0" in h.site.text()


def test_a_store_past_the_end_of_memory_is_out_of_bounds():
    from kernels import vector_add

    a, b = torch.randn(300), torch.randn(300)
    c = torch.full((260,), float("nan"))  # 40 elements short
    with pytest.raises(Hazard) as found:
        run(vector_add.add, pointer(a), pointer(b), pointer(c, "c"), 300, None, 256)
    h = found.value
    assert h.kind == hazards.OUT_OF_BOUNDS
    assert "writes element 260 of c, outside its 260 Float32 elements" in h.detail
    assert "CTA (1, 0, 0)" in h.detail and "c[i] = a[i] + b[i]" in h.site.text()


def test_a_store_into_the_guard_zone_is_seen_by_the_output_check():
    from course.exercises.executor_checks import EXECUTOR_CHECKS
    from course.exercises.solutions import nb01_solutions

    findings = EXECUTOR_CHECKS["01.saxpy"](nb01_solutions.saxpy_kernel__no_guard, True)
    assert findings and all(f.status == "fail" for f in findings)
    assert any("missing predicate" in f.hint for f in findings)


def test_a_barrier_some_warps_never_reach_is_a_deadlock_naming_who_waits_where():
    out = torch.full((planted.THREADS,), float("nan"))
    with pytest.raises(Hazard) as found:
        run(planted.partial_barrier, pointer(out), None, kwargs={"at_barrier": 64})
    h = found.value
    assert h.kind == hazards.DEADLOCK
    assert "threads 0-63 (warps 0-1) wait at sync_threads" in h.detail
    assert "threads 64-127 (warps 2-3) finished without reaching it" in h.detail


def test_a_barrier_half_a_warp_goes_around_is_a_deadlock():
    out = torch.full((planted.THREADS,), float("nan"))
    with pytest.raises(Hazard) as found:
        run(planted.partial_barrier, pointer(out), None, kwargs={"at_barrier": 16})
    assert found.value.kind == hazards.DEADLOCK
    assert (
        "threads 0-15 (warp 0) reach sync_threads while threads 16-31 (warp 0)"
        in found.value.detail
    )


def test_every_thread_at_the_barrier_is_no_deadlock():
    out = torch.full((planted.THREADS,), float("nan"))
    run(planted.partial_barrier, pointer(out), None, kwargs={"at_barrier": planted.THREADS})
    assert (out == 1).all()


def test_an_accumulator_never_cleared_is_named_before_it_is_used():
    from course.exercises.executor_checks import EXECUTOR_CHECKS
    from course.exercises.solutions import nb06_solutions

    findings = EXECUTOR_CHECKS["06.mma_tile"](nb06_solutions.mma_tile_kernel__no_clear, True)
    assert findings[0].status == "fail" and hazards.UNINITIALISED in findings[0].check
    assert "accumulator" in findings[0].detail and "tCrC.fill(0.0)" not in findings[0].detail


def test_a_call_it_does_not_model_says_so_and_makes_up_no_value():
    out = torch.full((planted.THREADS,), float("nan"))
    with pytest.raises(Unmodelled) as found:
        run(planted.voted, pointer(out), None)
    assert "does not model `cute.arch.brev`; this check needs a GPU" in str(found.value)
    assert torch.isnan(out).all()


def test_a_kernel_that_never_ends_is_stopped_and_named():
    out = torch.full((planted.THREADS,), float("nan"))
    with pytest.raises(Hazard) as found:
        run(planted.spin, pointer(out), None, time_limit_s=1.0)
    assert found.value.kind == hazards.HANG


def test_the_time_limit_keeps_an_alarm_already_pending():
    """A test runner's own time-out (pytest-timeout's SIGALRM) neither switches the limit
    off nor is lost: the run stops after its own second, the outer alarm is re-armed."""
    import signal

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    signal.setitimer(signal.ITIMER_REAL, 600.0)
    try:
        out = torch.full((planted.THREADS,), float("nan"))
        with pytest.raises(Hazard) as found:
            run(planted.spin, pointer(out), None, time_limit_s=1.0)
        assert found.value.kind == hazards.HANG
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 590.0 < left <= 600.0
        assert not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- the SM80 main loop


def test_the_sm80_main_loop_without_its_wait_reads_a_stage_in_flight():
    from course.exercises.executor_checks import EXECUTOR_CHECKS
    from tests.planted_mistakes import CP_ASYNC_NO_WAIT

    _, no_wait = CP_ASYNC_NO_WAIT
    findings = EXECUTOR_CHECKS["07.mainloop"](no_wait, True)
    assert findings[0].status == "fail", findings
    assert hazards.IN_FLIGHT in findings[0].check
    assert "sA[" in findings[0].detail or "sB[" in findings[0].detail
    assert "(stage " in findings[0].detail and "mainloop__no_wait line" in findings[0].detail


# ---------------------------------------------------------------- loops the lanes leave apart


@pytest.mark.parametrize("n", [1, 130, 300])
def test_loops_whose_trip_counts_differ_between_lanes_run_masked(n):
    """A grid-stride loop and a while loop that each lane leaves at its own trip: every lane
    runs its own trips and no more (values, and no write past what it owns)."""
    out = torch.full((n + planted.THREADS,), float("nan"))
    run(planted.per_lane_loops, pointer(out), n, None)
    assert torch.equal(out[:n], torch.arange(n, dtype=torch.float32))
    t = torch.arange(planted.THREADS, dtype=torch.float32)
    assert torch.equal(out[n:], t * (t - 1) / 2)


# ---------------------------------------------------------------- barriers, driven warp by warp


def _launch(fn, threads: int, seed: int = 0) -> None:
    """Run fn on every warp of one CTA of `threads` threads (plain Python, no translation)."""
    from course.execute import machine

    machine.Launch(fn, (), 1, threads, machine.Options(seed=seed)).run()


def test_bar_arrive_on_barrier_0_with_every_thread_does_not_wait():
    """bar.arrive 0 with the CTA's thread count goes on (it is no sync_threads): the producer
    reaches barrier 1, where the consumer waits, and the consumer's bar.sync 0 then opens on
    that earlier arrival."""
    from course.execute import machine

    log = []

    def body():
        w = machine.warp()
        site = hazards.site(1)
        if w.index == 0:
            machine.named_barrier(0, 64, site, wait=False)
            log.append("arrived")
            machine.named_barrier(1, 64, site)
        else:
            machine.named_barrier(1, 64, site)
            machine.named_barrier(0, 64, site)
            log.append("synced")

    _launch(body, 64)
    assert log == ["arrived", "synced"]


def test_a_named_barrier_releases_its_count_and_no_more():
    """Three warps at a barrier of 64 threads: the first two pass, the third waits for a next
    generation that never comes (its arrival is not carried over as the others')."""
    from course.execute import machine

    def body():
        machine.named_barrier(1, 64, hazards.site(1))

    with pytest.raises(Hazard) as found:
        _launch(body, 96)
    assert found.value.kind == hazards.DEADLOCK
    assert "threads 64-95 (warp 2)" in found.value.detail
    assert "named barrier 1" in found.value.detail


def test_a_bar_arrive_hands_what_it_knows_to_the_warps_the_barrier_releases():
    from course.execute import machine

    knows = {}

    def body():
        w = machine.warp()
        if w.index == 0:
            machine.named_barrier(1, 64, hazards.site(1), wait=False)
            knows["arriver"] = (w, w.clock)
        else:
            machine.named_barrier(1, 64, hazards.site(1))
            knows["waiter"] = dict(w.knows)

    _launch(body, 64)
    arriver, clock = knows["arriver"]
    assert knows["waiter"].get(arriver, 0) >= clock >= 1


def test_a_woken_warp_checks_its_condition_again_when_it_resumes():
    """Two warps woken for one token: the first takes it; the second must wait again (it
    would take a token that is no longer there)."""
    from course.execute import machine

    state = {"tokens": 0, "low": 0}

    def take():
        machine.block_until(lambda: state["tokens"] > 0, "a token", hazards.site(1))
        state["tokens"] -= 1
        state["low"] = min(state["low"], state["tokens"])

    def body():
        w = machine.warp()
        if w.index < 2:
            take()
        else:
            for _ in range(2):
                state["tokens"] += 1
                machine.block_until(lambda: state["tokens"] == 0, "empty", hazards.site(1))

    _launch(body, 96)
    assert state == {"tokens": 0, "low": 0}


def test_a_test_wait_spin_loop_lets_the_arriving_warp_run_and_orders_the_poller():
    """while not test_wait(): ...: the poller yields (no hang), sees the phase complete, and
    is ordered after the arrival (happens-before knowledge, as a blocking wait)."""
    import numpy as np

    from course.execute import machine, mbarriers
    from course.execute.tensor import Pointer

    seen = {}

    def body():
        w = machine.warp()
        ptr = Pointer(w.cta.smem, 0, None, None, 8)
        if w.index == 0:
            w.mask = np.arange(32) == 0
            mbarriers.init(ptr, 1)
            mbarriers.init_fence()
            w.mask = None
        machine.barrier(hazards.site(1))
        if w.index == 0:
            for polls in range(100):
                if mbarriers.completed(ptr, 0):
                    break
            seen["polls"], seen["knows"] = polls, dict(w.knows)
            seen["slot"] = mbarriers.barrier_at(ptr)
        else:
            w.mask = np.arange(32) == 0
            mbarriers.arrive(ptr)
            w.mask = None
            seen["arriver"] = (w, w.clock)

    _launch(body, 64)
    arriver, clock = seen["arriver"]
    assert 0 < seen["polls"] < 100
    assert seen["knows"].get(arriver, 0) >= clock
    assert seen["slot"].seen == 0


@pytest.mark.parametrize("cluster_barrier", [False, True])
def test_a_peer_ctas_arrive_needs_a_cluster_barrier_after_the_init(cluster_barrier):
    """A remote arrive from the other CTA of the cluster: the owner's sync_threads does not
    make the init visible to it; a cluster barrier after the init does."""
    import numpy as np

    from course.execute import machine, mbarriers, sm90
    from course.execute.mbarriers import MBARRIER
    from course.execute.tensor import Pointer

    def body():
        w = machine.warp()
        ptr = Pointer(w.cta.smem, 0, None, None, 8)
        w.mask = np.arange(32) == 0
        if w.cta.rank == 0:
            mbarriers.init(ptr, 1)
            mbarriers.init_fence()
        w.mask = None
        machine.barrier(hazards.site(1))
        if cluster_barrier:
            sm90.cluster_arrive()
            sm90.cluster_wait()
        if w.cta.rank == 1:
            w.mask = np.arange(32) == 0
            mbarriers.arrive(ptr, cta=0)
            w.mask = None

    launch = machine.Launch(body, (), 2, 32, machine.Options(), cluster=(2, 1, 1))
    if cluster_barrier:
        launch.run()
        return
    with pytest.raises(Hazard) as found:
        launch.run()
    assert found.value.kind == MBARRIER and "no cluster barrier" in found.value.detail
