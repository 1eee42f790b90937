"""Compile once: the compiled object of each configuration, kept, and the seconds it took.

`cute.compile` traces and compiles every time it is called (a tenth of a second to tens of
seconds), so every compile of the kernels goes through `compile_cached`: a launchable
handle (`kernels.host`) as well as the PTX and cubin read without a GPU
(`kernels.artifacts`). Each first compile is logged in `COMPILE_LOG`, because compile time
is a cost the learner pays and the course reports it. Only the standard library is needed,
so both of those modules can build on it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class CompileEvent:
    key: tuple
    arch: str
    seconds: float


_CACHE: dict[tuple, Any] = {}
COMPILE_LOG: list[CompileEvent] = []


def compile_cached(key: tuple, arch: str, build: Callable[[], Any]) -> Any:
    """The compiled object for `key` on `arch`, calling `build()` only the first time."""
    full_key = (*key, arch)
    if full_key not in _CACHE:
        start = time.perf_counter()
        _CACHE[full_key] = build()
        COMPILE_LOG.append(CompileEvent(full_key, arch, time.perf_counter() - start))
    return _CACHE[full_key]
