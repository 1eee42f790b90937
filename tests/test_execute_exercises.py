"""Fidelity, measured: the CPU executor's verdict on every reference and known wrong variant
of kernel exercises 01-07 equals the H100's recorded verdict (results/kernel_exercises.json).

The verdict on a machine without a GPU is what the checker can do there -- compile, the CPU
checks -- plus the exercise's own GPU checks run on the executor
(course.exercises.executor_checks). Beyond the verdict, each run the executor makes of a
shape the H100 also ran gives the same pass or fail, and a hazard is only ever found in a
case the H100 failed.
"""
import pytest

from course.exercises import kernel_check, solutions
from course.exercises.executor_checks import CHECK, EXECUTOR_CHECKS, EXERCISES
from course.runtime import results


def _recorded_rows() -> dict:
    """(exercise, variant) -> the latest H100 row."""
    rows = {}
    for record in results.load("kernel_exercises"):  # recorded on a GPU only, oldest first
        for case in record.data.get("cases", []):
            if case["exercise"] in EXERCISES:
                rows[(case["exercise"], case["variant"])] = case
    return rows


ROWS = _recorded_rows()


def _cases():
    for mod in solutions.modules():
        for id, ref in mod.REFERENCE.items():
            if id not in EXERCISES:
                continue
            yield id, ref, None
            for fn, (word, where) in mod.WRONG.get(id, {}).items():
                yield id, fn, where


CASES = list(_cases())


def test_every_case_of_exercises_01_to_07_has_an_h100_record():
    missing = [(id, kernel_check.function_name(fn)) for id, fn, _ in CASES
               if (id, kernel_check.function_name(fn)) not in ROWS]
    assert not missing, f"no H100 verdict recorded for {missing}"


@pytest.mark.parametrize("id,fn,where", CASES,
                         ids=[f"{c[0]}-{kernel_check.function_name(c[1])}" for c in CASES])
def test_the_executor_verdict_equals_the_h100_verdict(id, fn, where):
    row = ROWS[(id, kernel_check.function_name(fn))]
    ex = kernel_check.lookup(id)
    cpu = kernel_check.run_checks(ex, fn, gpu=False)
    ran = EXECUTOR_CHECKS[id](fn, True)
    findings = [f for f in cpu.findings if f.status != kernel_check.NOT_RUN] + ran
    report = kernel_check.Report(tuple(findings))
    verdict = "pass" if report.ok else "fail"
    assert verdict == row["verdict"], report.text()

    runs = [f for f in ran if f.check.startswith(CHECK)]
    assert runs, "nothing ran on the executor"
    assert all(f.status != kernel_check.NOT_RUN for f in runs), report.text()
    h100 = {}
    for name, status, _ in row["checks"]:
        h100.setdefault(name, set()).add(status)
    for f in runs:
        name = f.check[len(CHECK) + 2:]
        if name in h100:  # the same shape, run on both: the same outcome
            assert f.status in h100[name], (f.line(), h100[name])
        elif f.status == "fail":  # a hazard: only where the H100 failed the case too
            assert row["verdict"] == "fail", f.line()
    if where == "gpu":  # a mistake only a run shows: the executor's run shows it
        assert any(f.status == "fail" for f in runs), report.text()
