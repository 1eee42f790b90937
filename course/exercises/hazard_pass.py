"""The executor's hazard pass beside a GPU run: the same verdict on every machine.

A GPU runs a kernel one way: a race its warps happen not to lose today, a wait the compiler
happens to make redundant, a read past an input's end that stays inside its allocation all
give the right values there. The CPU executor (course.execute) watches for each of these,
so a learner without a GPU is told of them, and a learner with one must be too. On a GPU
machine the exercise's executor check runs first, at its quick shapes, and only its
hazards are taken (its value checks repeat what the GPU run measures):

* a hazard that hangs a GPU (a deadlock, a loop that never advances, a warp-wide
  instruction reached by part of the warp, a divergent barrier) stops there: the GPU run is
  not made, as after any check that finds the kernel broken, and the hazard names the
  cause the watchdog could not;
* any other hazard fails the check after the GPU run; if the GPU's values were right, it
  says so: "the GPU computed the right values; the PTX ISA does not promise it".

Where the executor cannot run here (its packages missing: a provisioned GPU box without
greenlet) the pass is not run and says why; a GPU verdict never needs it.
"""

from __future__ import annotations

from course.exercises.kernel_exercises import FAIL, NOT_RUN, Finding, not_checked, passed
from course.exercises.machine_faults import diagnose

HAZARD_PASS = "the CPU executor's hazard pass (the quick shapes)"
HARDWARE_HIDES = (
    "the GPU computed the right values; the PTX ISA does not promise it: the executor found "
)
ALSO_FOUND = "the executor also found "


def _hang_kinds() -> tuple:
    from course.execute import hazards

    return (hazards.DEADLOCK, hazards.HANG, hazards.COLLECTIVE, hazards.DIVERGENT)


def kind_of(finding) -> str:
    """The hazard kind of an executor check's hazard finding ("<check>: <kind>")."""
    return finding.check.split(": ", 1)[-1]


def executor_hazards(ex, code) -> list:
    """The executor's hazard findings for `code` at the quick shapes (failures each), or
    [] (it found none), or one NOT_RUN finding saying why it could not look."""
    try:  # the executor's packages may be missing here: a fault the finding names
        from course.exercises.executor_checks import EXECUTOR_CHECKS, EXERCISES

        if ex.id not in EXERCISES:
            return []
        found = EXECUTOR_CHECKS[ex.id](code.load(), True)
    except Exception as exc:  # noqa: BLE001 -- the machine's fault or the executor's gap
        fault = diagnose(exc)
        why = fault.what if fault is not None else f"{type(exc).__name__}: {exc}"
        return [not_checked(HAZARD_PASS, f"not run here: {why}")]
    return [f for f in found if f.status == FAIL and getattr(f, "hazard", False)]


def hangs(found: list) -> bool:
    """True when a hazard found would hang the GPU run."""
    return any(getattr(f, "hazard", False) and kind_of(f) in _hang_kinds() for f in found)


def as_findings(found: list, gpu_right: bool | None) -> list:
    """The pass's findings, told against the GPU run: `gpu_right` True (its values were
    right), False (they were not) or None (it was not made)."""
    if not found:
        return [passed(HAZARD_PASS, "no hazard")]
    if found[0].status == NOT_RUN:
        return found
    lead = HARDWARE_HIDES if gpu_right else (ALSO_FOUND if gpu_right is False else "")
    return [
        Finding(f"{HAZARD_PASS}: {kind_of(f)}", FAIL, lead + f.detail, f.hint, ran=True)
        for f in found
    ]
