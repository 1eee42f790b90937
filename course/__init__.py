"""Everything around the course's kernels: hardware tiers, the live-or-fallback
policy, benchmarking, recorded results, pictures, widgets and exercises.

Notebooks start with `import course` and use:
    course.machine()            this machine and its tier
    course.live_or(...)         run a live cell or take its labelled fallback
    course.recorded / compile_only / simulated   the three fallbacks
"""
from .hardware import machine
from .live import Mode, compile_only, live_or, recorded, simulated

__all__ = ["machine", "live_or", "recorded", "compile_only", "simulated", "Mode"]
