"""Everything around the course's kernels: hardware tiers, the live-or-fallback
policy, benchmarking, recorded results, pictures, widgets and exercises.

Notebooks start with `import course` and use:
    course.machine()            this machine and its tier
    course.live_or(...)         run a live cell or take its labelled fallback
    course.executed / recorded / compile_only / simulated   the four fallbacks
    course.recorded_or(...)     recorded if measured yet, else a labelled stand-in
    course.compiled_here(...)   compile for this GPU, or for the target arch without one
"""

from pathlib import Path

# The repository: notebooks/, results/, figures/ and build/ sit beside course/.
ROOT = Path(__file__).resolve().parent.parent

from course.runtime.hardware import machine  # noqa: E402
from course.runtime.live import (
    Mode,
    compile_only,
    compiled_here,
    executed,
    live_or,  # noqa: E402
    recorded,
    recorded_or,
    simulated,
)

__all__ = [
    "ROOT",
    "machine",
    "live_or",
    "recorded",
    "recorded_or",
    "compile_only",
    "simulated",
    "executed",
    "compiled_here",
    "Mode",
]
