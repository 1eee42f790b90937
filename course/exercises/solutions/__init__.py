"""Reference solutions of the kernel exercises, correct solutions written another way, and
the known wrong variants each checker must catch with its hint (tests/test_kernel_exercises.py
and `python -m course.exercises verify` run them all).

One module per notebook, `nbNN_solutions.py`, with up to three tables:

    REFERENCE = {"01.saxpy": saxpy_kernel}                    # passes every check
    ALTERNATIVES = {"01.saxpy": [saxpy_kernel_grid_stride]}   # correct too, written otherwise
    WRONG = {"01.saxpy": {saxpy_kernel__no_guard: ("predicate", "cpu")}}

An alternative is a correct solution that differs from the reference in a way a learner may
well write it (another legal order, NVIDIA's own idiom, other CuTe calls): the checker must
accept it, or it would teach its own spelling instead of the hardware's rules. A wrong
variant is named `<reference>__<mistake>`; its entry holds a word its hint must contain, and
where it is caught: "cpu" (by the checks every machine runs: compile, PTX, trace) or "gpu"
(only by running it: wrong values, a race under compute-sanitizer).
"""

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable


def modules():
    """Every solutions module, in notebook order."""
    return [
        importlib.import_module(f"{__name__}.{m.name}")
        for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    ]


@dataclass(frozen=True)
class Case:
    """One function the checker is run on, and what it must say of it."""

    exercise: str
    fn: Callable
    kind: str  # "reference", "alternative" or "wrong"
    word: str = ""  # a wrong variant's hint contains it
    where: str = ""  # a wrong variant is caught on "cpu" (any machine) or only by a "gpu" run

    @property
    def correct(self) -> bool:
        return self.kind != "wrong"

    @property
    def name(self) -> str:
        from course.exercises.kernel_check import function_name

        return function_name(self.fn)


def cases(ids=()) -> list[Case]:
    """Every reference, alternative and wrong variant (of `ids`, or of all exercises)."""
    found = []
    for mod in modules():
        for id, ref in mod.REFERENCE.items():
            if ids and id not in ids:
                continue
            found.append(Case(id, ref, "reference"))
            found += [
                Case(id, fn, "alternative") for fn in getattr(mod, "ALTERNATIVES", {}).get(id, ())
            ]
            found += [
                Case(id, fn, "wrong", word, where)
                for fn, (word, where) in mod.WRONG.get(id, {}).items()
            ]
    return found
