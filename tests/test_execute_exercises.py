"""Fidelity, measured: every reference and known wrong variant of the kernel exercises an
H100 runs (01-13) has the H100's recorded verdict (tests/h100_records.py: an exercise whose
verdicts are not recorded yet is listed in AWAITING_H100_RECORD, by name, until they are);
the CPU executor's verdict on each equals it (that comparison runs in
tests/test_kernel_exercises.py, beside the CPU verdict tests, so one executor run serves
both). Exercises 14-16 need a Blackwell GPU, so the H100 record has no run
of theirs to compare with: tests/test_planted_agreement.py compares the executor with the
PTX checks there instead.

The verdict on a machine without a GPU is what the checker can do there -- compile, the CPU
checks -- plus the exercise's own GPU checks run on the executor
(course.exercises.executor_checks). Beyond the verdict, each run the executor makes of a
shape the H100 also ran gives the same pass or fail, and a hazard is only ever found in a
case the H100 failed.
"""

import pytest

from course.exercises import kernel_check, solutions

from .h100_records import (
    AWAITING_H100_RECORD,
    CASES,
    CHANGED_SINCE_H100_RECORD,
    H100_RUNS,
    ROWS,
    recorded_after,
)


pytestmark = pytest.mark.usefixtures("cpu_reports_shared")  # one CPU report per solution


def test_every_case_of_exercises_01_to_13_has_an_h100_record_or_awaits_one():
    assert H100_RUNS[0].startswith("01.") and H100_RUNS[-1].startswith("13."), H100_RUNS
    assert set(AWAITING_H100_RECORD) <= set(H100_RUNS), AWAITING_H100_RECORD
    missing = [
        (c.exercise, c.name)
        for c in CASES
        if (c.exercise, c.name) not in ROWS
        and c.exercise not in AWAITING_H100_RECORD
        and c.exercise not in CHANGED_SINCE_H100_RECORD
    ]
    assert not missing, f"no H100 verdict recorded for {missing}"
    recorded = sorted({e for e, _ in ROWS} & set(AWAITING_H100_RECORD))
    assert not recorded, f"{recorded} now have an H100 record: take them off AWAITING_H100_RECORD"
    assert set(CHANGED_SINCE_H100_RECORD) <= {e for e, _ in ROWS}  # else: AWAITING_H100_RECORD
    again = [e for e, (when, _) in CHANGED_SINCE_H100_RECORD.items() if recorded_after(e, when)]
    assert not again, f"{again} were recorded after their change: take them off the table"


def test_a_clc_read_in_flight_and_a_second_clc_query_get_different_hints():
    """The hints tell launch_control's two CLC hazards apart by their causes: a read of the
    answer before it landed and a second query while the last is in flight."""
    from course.exercises.executor_checks import _blackwell_hint
    from course.execute import hazards

    query = hazards.UNIT_CLC_QUERY
    read = hazards.Hazard(
        hazards.IN_FLIGHT,
        f"thread 0 (warp 0, lane 0) reads sClc[0] while its own {query} to it (issued at "
        f"kernel line 3) is still in flight: no mbarrier wait has seen its response land",
        cause=hazards.Cause(hazards.READ_IN_FLIGHT, "sClc[0]", unit=query),
    )
    again = hazards.Hazard(
        hazards.WRITE_IN_FLIGHT,
        "a CLC query into sClc[0] of CTA (0, 0, 0) while the last one is still in flight",
        cause=hazards.Cause(hazards.WRITTEN_IN_FLIGHT, "sClc[0]", unit=query),
    )
    assert "decoded before it has arrived" in _blackwell_hint(read)
    assert "producer_acquire" in _blackwell_hint(again)
    assert "decoded before" not in _blackwell_hint(again)


def test_the_gemm_host_redirect_and_its_twins_are_one_class():
    from course.exercises.executor_checks import _redirects

    import kernels.gemm_host

    redirects = _redirects()  # (what, its stand-in) pairs; GemmHost instances are unhashable
    on_cpu = next(v for k, v in redirects if k is kernels.gemm_host.GemmHost)
    twins = [v for k, v in redirects if isinstance(k, kernels.gemm_host.GemmHost)]
    assert twins and all(type(t) is on_cpu for t in twins)


FIFTEEN_CAUGHT_BY_THE_PTX = [
    c for c in solutions.cases(("16.sf_copy_and_mma",)) if not c.correct and c.where == "cpu"
]


@pytest.mark.parametrize(
    "case", FIFTEEN_CAUGHT_BY_THE_PTX, ids=[c.name for c in FIFTEEN_CAUGHT_BY_THE_PTX]
)
def test_notebook_16s_mistakes_the_ptx_shows_fail_on_the_executor_too(case):
    """No Blackwell GPU has run 16.sf_copy_and_mma's variants: its mistakes that the PTX checks
    catch (so that no run follows them) are also caught by the executor's run of the same
    code, each with a hint about the SFs' copies or the MMAs' SFs."""
    from course.exercises.executor_checks import EXECUTOR_CHECKS
    from course.exercises.learner_code import LearnerCode

    runs = EXECUTOR_CHECKS[case.exercise](LearnerCode.from_function(case.fn).load(), True)
    failed = [f for f in runs if f.status == kernel_check.FAIL]
    assert failed and all(f.ran for f in runs), [f.line() for f in runs]
    assert case.word in failed[0].hint or "no tcgen05.cp" in failed[0].hint, failed[0].line()
