"""Reference solutions of the kernel exercises, and the known wrong variants each checker
must catch with its hint (tests/test_kernel_exercises.py runs them all).

One module per notebook, `nbNN.py`, with two tables:

    REFERENCE = {"01.saxpy": saxpy_kernel}                    # passes every check
    WRONG = {"01.saxpy": {saxpy_kernel__no_guard: ("predicate", "cpu")}}

A wrong variant is named `<reference>__<mistake>`; its entry holds a word its hint must
contain, and where it is caught: "cpu" (by the checks every machine runs: compile, PTX,
trace) or "gpu" (only by running it: wrong values, a race under compute-sanitizer).
"""
import importlib
import pkgutil


def modules():
    """Every solutions module, in notebook order."""
    return [importlib.import_module(f"{__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)]
