"""Everything around the course's kernels: hardware tiers, the live-or-fallback
policy, benchmarking, recorded results, pictures, widgets and exercises.

Notebooks start with `import course` and use:
    course.machine()            this machine and its tier
    course.live_or(...)         run a live cell or take its labelled fallback
    course.executed / recorded / compile_only / simulated   the four fallbacks
    course.recorded_or(...)     recorded if measured yet, else a labelled stand-in
    course.compiled_here(...)   compile for this GPU, or for the target arch without one
"""

from course.repository import ROOT
from course.runtime.hardware import machine
from course.runtime.live import (
    Mode,
    compile_only,
    compiled_here,
    executed,
    live_or,
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
