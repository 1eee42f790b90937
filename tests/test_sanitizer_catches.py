"""compute-sanitizer, as the kernel-exercise checker runs it, catches what it should on this
GPU: a planted race and a planted missing wait in notebook 07's cp.async ring are reported,
named by the two instructions that race; the references it is the default for are clean.

A missing wait in notebook 09's TMA ring is a different story: racecheck follows the
shared-memory accesses threads make (cp.async included), not the bytes TMA writes through
the async proxy, so it reports no hazard there. That mistake is caught by its wrong result
on the GPU, and by the CPU model of the ring before any run (course.sim.ring_code)."""

import pytest

from course.bench import sanitizer_log
from course.exercises import gpu_run, kernel_check, kernel_exercises
from course.exercises.learner_code import LearnerCode
from course.exercises.solutions import nb07_solutions, nb09_solutions
from tests import planted_mistakes as planted

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _needs_hopper_and_the_sanitizer():
    from course.runtime.hardware import machine

    if not machine().can("sm_90+"):
        pytest.skip(f"needs an sm_90 GPU; {machine().describe()}")
    if sanitizer_log.sanitizer() is None:
        pytest.skip("compute-sanitizer is not installed")


def _racecheck(id, fn, tool="racecheck"):
    ex = kernel_exercises.lookup(id)
    (finding,) = gpu_run.under_sanitizer(ex, LearnerCode.from_function(fn), (tool,))
    return finding


@pytest.mark.parametrize(
    "planted_case",
    [planted.CP_ASYNC_RACE, planted.CP_ASYNC_NO_WAIT],
    ids=["race: the barrier after the wait removed", "missing wait: cp_async_wait_group removed"],
)
def test_racecheck_catches_a_planted_mistake_and_names_the_instructions(planted_case):
    finding = _racecheck(*planted_case)
    assert finding.status == kernel_check.FAIL, finding.line()
    assert "cp.async copy into shared memory" in finding.detail, finding.line()
    assert "ldmatrix read" in finding.detail, finding.line()


@pytest.mark.parametrize(
    "id,ref", [("07.mainloop", nb07_solutions.mainloop), ("09.ring", nb09_solutions.ring)]
)
@pytest.mark.parametrize("tool", ["racecheck", "synccheck", "memcheck"])
def test_the_references_are_clean(id, ref, tool):
    finding = _racecheck(id, ref, tool)
    assert finding.status == kernel_check.PASS, finding.line()


def test_a_missing_wait_in_the_tma_ring_is_caught_by_its_result_not_by_racecheck():
    finding = _racecheck(*planted.TMA_NO_WAIT)
    assert finding.status == kernel_check.FAIL, finding.line()
    assert "no racecheck error, but the run under it failed its checks" in finding.detail, (
        finding.line()
    )
    # the checker no longer runs a kernel its CPU checks find broken (the CPU model of the
    # ring names this one), so the run is made directly here
    live = gpu_run.in_child(
        kernel_exercises.lookup("09.ring"), LearnerCode.from_function(planted.TMA_NO_WAIT[1])
    )
    assert any(f.status == kernel_check.FAIL for f in live), [f.line() for f in live]


def test_a_deadlocked_ring_comes_back_as_the_barrier_and_parity_that_stuck():
    ex = kernel_exercises.lookup("09.ring")
    findings = gpu_run.in_child(ex, LearnerCode.from_function(nb09_solutions.ring__producer_parity))
    stuck = [f for f in findings if f.status == kernel_check.FAIL]
    assert stuck and "hang:" in stuck[0].detail, [f.line() for f in findings]
    assert "waiting on empty[" in stuck[0].detail and "for parity" in stuck[0].detail, stuck[
        0
    ].line()
