"""Correctness against torch and timing against cuBLAS, in the same process.

`python -m course.bench --help` lists the command-line entry points.
"""

from course.bench.correctness import (
    Check,
    assert_close,
    compare,
    poison_,
    relative_error,
    tolerance,
)

__all__ = ["Check", "assert_close", "compare", "poison_", "relative_error", "tolerance"]
