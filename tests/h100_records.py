"""The H100's recorded verdicts of the kernel exercises it runs (01-13), case by case
(results/kernel_exercises.json; 13's were recorded on an H200, the same sm_90 chip), and the
tables of exercises whose record is awaited or older than their code: read by
tests/test_kernel_exercises.py (each case's executor verdict against its record, beside the
CPU verdict tests that share the executor's run of it) and tests/test_execute_exercises.py
(every case has a record or awaits one)."""

from course.exercises import kernel_exercises, solutions
from course.exercises.executor_checks import EXERCISES
from course.exercises.verdicts import RIGHT, WRONG
from course.runtime import results

H100_RUNS = tuple(e for e in EXERCISES if kernel_exercises.lookup(e).needs != "sm_100a")


def _recorded_rows() -> dict:
    """(exercise, variant) -> the latest H100 row."""
    rows = {}
    for record in results.load("kernel_exercises"):  # recorded on a GPU only, oldest first
        for case in record.data.get("cases", []):
            if case["exercise"] in H100_RUNS:
                rows[(case["exercise"], case["variant"])] = case
    return rows


ROWS = _recorded_rows()

# exercises an H100 runs whose cases have no H100 verdict recorded yet, and the command that
# records them there; each leaves this table once its record is committed
AWAITING_H100_RECORD: dict[str, str] = {}  # exercise id -> the command that records it

# exercises whose cases were rewritten after their last H100 record: the old rows describe
# other code, so the comparison waits for a record made after the change (exercise id ->
# (the change's time, UTC, and the command that records it)); each leaves this table once
# such a record is committed
CHANGED_SINCE_H100_RECORD: dict[str, tuple[str, str]] = {}


def recorded_after(exercise: str, when: str) -> bool:
    from datetime import datetime

    since = datetime.fromisoformat(when)
    return any(
        datetime.fromisoformat(r.provenance["date"]) > since
        and any(c["exercise"] == exercise for c in r.data.get("cases", []))
        for r in results.load("kernel_exercises")
    )


CASES = solutions.cases(H100_RUNS)  # references, alternatives and wrong variants
OLD_WORDS = {"pass": RIGHT, "fail": WRONG}  # records made before the verdicts had their words
