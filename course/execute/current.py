"""The warp running now on the executor (course.execute.machine switches it), for the modules
below the machine that need to know who accesses memory (course.execute.memory).

A module of its own, importing nothing of course.execute but hazards, so that memory can ask
without importing the machine that imports it.
"""

from __future__ import annotations

from course.execute import hazards

_RUNNING: list = [None]  # the Warp running now, or None (host code, between warps)


def set_warp(w) -> None:
    _RUNNING[0] = w


def current_warp():
    """The running Warp, or None outside kernel code."""
    return _RUNNING[0]


def warp():
    """The running Warp; in host code, Unmodelled (a thread-only call there)."""
    if _RUNNING[0] is None:
        raise hazards.Unmodelled("a thread-only call (thread_idx, sync_threads, ...) in host code")
    return _RUNNING[0]
