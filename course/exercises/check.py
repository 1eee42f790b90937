"""Auto-checked exercises.

Each notebook ends with a few exercises. A learner writes an answer and calls
`check("00.tiles", answer)`; the verdict is printed as one friendly line and never as a
traceback, whatever the answer is (a wrong type, an exception inside the learner's own
kernel...). A verdict is one of five, and claims only what was checked:

  right          every check passed, and for a kernel that includes a run of it whose
                 every output was compared with a reference
  wrong          a check failed; the message says what was observed, then a hint
  not proven     every check this machine can make passed, but the kernel did not run
                 here: the message says what only a run shows ("not proven here")
  not answered   the skeleton as shipped, or `...`
  machine fault  the check could not run here through no fault of the answer (a package
                 missing, a driver that does not start, no GPU memory): "the checker
                 could not run here: <what>, <fix>" (course.exercises.machine_faults),
                 never "your answer raised"

Exercises are registered with `@exercise(...)` in `course.exercises.<notebook>`; a
checker returns (ok, message) with ok True / False / None (not answered), or (status,
message) with one of the five words, or raises `Wrong("why")`.
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from course.exercises.machine_faults import diagnose
from course.exercises.progress import record as record_progress
from course.exercises.verdicts import (
    MACHINE_FAULT,
    RIGHT,
    UNANSWERED,
    VERDICTS,
    WRONG,
    Verdict,
)

Checker = Callable[[Any], "tuple[bool, str] | bool | None"]


class Wrong(Exception):
    """Raised by a checker to reject an answer with a specific explanation."""


@dataclass(frozen=True)
class Exercise:
    id: str
    prompt: str
    hint: str
    checker: Checker
    solution: str = ""


REGISTRY: dict[str, Exercise] = {}
SOLVED: set[str] = set()  # the exercises judged right in this process (see `solved`)
_STATUS = {True: RIGHT, False: WRONG, None: UNANSWERED}


def exercise(id: str, prompt: str, hint: str, solution: str = "") -> Callable[[Checker], Checker]:
    """Register the decorated function as the checker of exercise `id`."""

    def register(fn: Checker) -> Checker:
        REGISTRY[id] = Exercise(id, prompt, hint, fn, solution)
        return fn

    return register


def status_of(ok: "bool | str | None") -> str:
    """One of VERDICTS from a checker's first value (True / False / None, or a word)."""
    if isinstance(ok, str):
        if ok not in VERDICTS:
            raise ValueError(f"a verdict is one of {VERDICTS}, not {ok!r}")
        return ok
    return _STATUS[None if ok is None else bool(ok)]


def find_exercise(id: str) -> Exercise:
    """Exercise `id`, importing its notebook's module (course.exercises.nbNN) if need be."""
    if id not in REGISTRY:
        notebook = id.split(".")[0]
        try:
            importlib.import_module(f"course.exercises.nb{notebook}")
        except ImportError:
            pass
    if id not in REGISTRY:
        raise KeyError(f"no exercise {id!r}; known: {sorted(REGISTRY)}")
    return REGISTRY[id]


def check(id: str, answer: Any = ..., quiet: bool = False, **options) -> Verdict:
    """Judge `answer` to exercise `id`; prints and returns the Verdict. Kernel exercises
    take options (course.exercises.kernel_check: `sanitize=True`, `gpu=False`)."""
    ex = find_exercise(id)
    if answer is ...:
        verdict = Verdict(
            id, UNANSWERED, f"{ex.prompt} Replace `...` with your answer. Hint: {ex.hint}"
        )
    else:
        try:
            result = ex.checker(answer, **options)
            ok, msg = result if isinstance(result, tuple) else (bool(result), "")
            status = status_of(ok)
            verdict = Verdict(
                id, status, msg or (f"hint: {ex.hint}" if status == WRONG else "well done.")
            )
        except Wrong as why:
            verdict = Verdict(id, WRONG, f"{why} (hint: {ex.hint})")
        except Exception as exc:  # explain, don't explode
            verdict = raised(id, exc)
    if verdict.status == RIGHT:
        SOLVED.add(id)
    record_progress(verdict)  # for the teacher's class table (python -m course progress)
    if not quiet:
        print(verdict)
        verdict = Verdict(verdict.id, verdict.status, verdict.message, printed=True)
    return verdict


def raised(id: str, exc: Exception) -> Verdict:
    """The verdict on a check that raised: the machine's fault where the traceback says so
    (a package missing from the course's Python, no driver, no GPU memory), else the
    learner's code failed."""
    fault = diagnose(exc)
    if fault is not None:
        return Verdict(id, MACHINE_FAULT, fault.message())
    where = traceback.extract_tb(exc.__traceback__)[-1]
    return Verdict(
        id,
        WRONG,
        f"your answer raised {type(exc).__name__}: {exc} (at {where.name}, line {where.lineno})",
    )


def solved(id: str) -> bool:
    """Was exercise `id` judged right in this process? A notebook shows the kernel's own
    version of an exercise only then, so no stored output puts the answer on the page."""
    return id in SOLVED


def prompt(id: str) -> str:
    return find_exercise(id).prompt


def solution(id: str) -> str:
    """The worked answer, for teachers and for learners who are truly stuck."""
    ex = find_exercise(id)
    return ex.solution or "(no worked solution written for this exercise)"


def pair(answer: Any, wrong: str) -> tuple[Any, Any]:
    """The two items of an answer that must be a pair; `Wrong(wrong)` if it is not one."""
    try:
        first, second = answer
    except (TypeError, ValueError):
        raise Wrong(wrong)
    return first, second


def number(answer: Any, expected: float, rel: float = 0.0, unit: str = "") -> tuple[bool, str]:
    """Compare a numeric answer, explaining how far off it is."""
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise Wrong(f"expected a number{' in ' + unit if unit else ''}, got {answer!r}")
    if abs(value - expected) <= rel * abs(expected):
        return True, f"{value:g}{' ' + unit if unit else ''} is right."
    direction = "high" if value > expected else "low"
    return False, f"{value:g} is too {direction}."


def number_or_known_slip(
    answer: Any, expected: float, slips: dict, unit: str = ""
) -> tuple[bool, str]:
    """`number`, and a wrong answer that is a known slip (a key of `slips`: a whole number)
    told what it is instead of only "too high" or "too low"."""
    ok, message = number(answer, expected, unit=unit)
    if not ok:
        value = float(answer)
        message = slips.get(int(value), message) if value.is_integer() else message
    return ok, message
