"""What the executor says: a hazard it found, a call it does not model, and where in the
kernel's source each happened.

Kernel code runs with globals of a `KernelGlobals` class (course.execute.translate makes
them), so the line of the kernel that made an operation is the innermost frame with such
globals: `site()` finds it (past NVIDIA's translated library code, such as cutlass.pipeline,
which runs with such globals too), `Site.describe()` names it as a learner reads it: the
function, the line within it and the line's text.
"""

from __future__ import annotations

import linecache
import sys
from dataclasses import dataclass


class KernelGlobals(dict):
    """The globals of kernel code run on the executor (see course.execute.translate)."""


class Unmodelled(Exception):
    """Kernel code called something the executor does not model: no value is made up."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(f"the CPU executor does not model `{what}`; this check needs a GPU")


@dataclass(frozen=True)
class Site:
    """One line of kernel source."""

    filename: str
    lineno: int
    function: str
    first_line: int

    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def describe(self) -> str:
        line = self.lineno - self.first_line + 1
        text = self.text()
        return f"{self.function} line {line}" + (f" (`{text}`)" if text else "")


UNKNOWN = Site("<unknown>", 0, "the kernel", 0)


def _translated_library(frame) -> bool:
    """A frame of installed CuTe DSL code run translated (course.execute.translate's
    TRANSLATED_LIBRARIES: NVIDIA's cutlass.pipeline): kernel globals, but not the kernel's
    own lines."""
    translate = sys.modules.get("course.execute.translate")
    if translate is None:  # nothing has been translated, so no library either
        return False
    name = dict.get(frame.f_globals, "__name__") or ""  # dict.get: no lazy translation
    return any(name == p or name.startswith(p + ".") for p in translate.TRANSLATED_LIBRARIES)


def _site_of(frame, lineno: int) -> Site:
    code = frame.f_code
    return Site(code.co_filename, lineno, code.co_name, code.co_firstlineno)


def site(depth: int = 1) -> Site:
    """The innermost line of kernel code on the current stack: the kernel's (or learner's)
    own, past the frames of translated library code it called (a hazard inside
    PipelineTmaAsync.consumer_wait names the kernel's line that called consumer_wait); a
    library line only when no frame of the kernel's own is on the stack."""
    return site_in(sys._getframe(depth))


def site_in(frame) -> Site:
    """`site` from a given frame outwards (a signal handler's: the line a loop was running
    when the time ran out)."""
    library = None
    while frame is not None:
        if isinstance(frame.f_globals, KernelGlobals):
            if not _translated_library(frame):
                return _site_of(frame, frame.f_lineno)
            library = library or _site_of(frame, frame.f_lineno)
        frame = frame.f_back
    return library or UNKNOWN


def site_of_traceback(tb) -> Site:
    """The innermost kernel line an exception passed through (past translated library code,
    as `site`)."""
    found = library = UNKNOWN
    while tb is not None:
        frame = tb.tb_frame
        if isinstance(frame.f_globals, KernelGlobals):
            if _translated_library(frame):
                library = _site_of(frame, tb.tb_lineno)
            else:
                found = _site_of(frame, tb.tb_lineno)
        tb = tb.tb_next
    return found if found is not UNKNOWN else library


# the kinds of hazard, in the words a verdict uses
IN_FLIGHT = "read while a copy is in flight"
WRITE_IN_FLIGHT = "write while a copy is in flight"
RACE = "race"
STAGE_OVERWRITE = "overwrite while being read"
OUT_OF_BOUNDS = "out of bounds"
DEADLOCK = "deadlock"
DIVERGENT = "divergent barrier"
UNINITIALISED = "uninitialised registers"
MISALIGNED = "misaligned access"
CRASH = "the kernel raised an error"
HANG = "no progress"
COLLECTIVE = "collective in divergent code"


@dataclass(frozen=True)
class Cause:
    """What a hazard is, in parts a checker can act on: a hint is chosen from these fields,
    never from the words of the hazard's sentence (which stay free to be reworded)."""

    what: str  # what happened, e.g. "index below the start", "index past the end"
    subject: str  # the tensor, stage, barrier or register it happened to
    expected: object = None  # what a correct kernel has there, e.g. the valid range (lo, hi)
    observed: object = None  # what this kernel had, e.g. the index it used


# Cause.what of an out-of-bounds access: below element 0, or past the last element
BELOW_START = "index below the start"
PAST_END = "index past the end"
# Cause.what of a COLLECTIVE hazard (subject: the instruction; expected: the threads it
# needs, observed: those that reached it)
PART_OF_THE_LANES = "reached by part of the lanes it needs"
# Cause.what of a DEADLOCK or HANG (subject: the CTAs; observed: who waits on what)
BLOCKED = "every live warp waits on something nothing in flight can bring"
LIVELOCK = "a loop that never advances"


class Hazard(Exception):
    """Something the GPU would get wrong or race on, with who, what and where; `cause`, where
    the raiser knows it, the same in structured form."""

    def __init__(
        self, kind: str, detail: str, site: Site | None = None, cause: Cause | None = None
    ):
        self.kind, self.detail, self.site = kind, detail, site or UNKNOWN
        self.cause = cause
        where = f"; at {self.site.describe()}" if self.site is not UNKNOWN else ""
        super().__init__(f"{kind}: {detail}{where}")


def threads_text(tids, warp_size: int = 32) -> str:
    """'threads 0-127 (warps 0-3)' or 'thread 5 (warp 0, lane 5)'."""
    tids = sorted(set(int(t) for t in tids))
    if not tids:
        return "no thread"
    if len(tids) == 1:
        t = tids[0]
        return f"thread {t} (warp {t // warp_size}, lane {t % warp_size})"
    runs, start, prev = [], tids[0], tids[0]
    for t in tids[1:] + [None]:
        if t is not None and t == prev + 1:
            prev = t
            continue
        runs.append(f"{start}" if start == prev else f"{start}-{prev}")
        if t is not None:
            start = prev = t
    warps = sorted({t // warp_size for t in tids})
    wtext = (
        f"warp {warps[0]}"
        if len(warps) == 1
        else (
            f"warps {warps[0]}-{warps[-1]}"
            if warps == list(range(warps[0], warps[-1] + 1))
            else "warps " + ",".join(map(str, warps[:8])) + ("..." if len(warps) > 8 else "")
        )
    )
    text = ",".join(runs[:6]) + ("..." if len(runs) > 6 else "")
    return f"threads {text} ({wtext})"
