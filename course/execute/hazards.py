"""What the executor says: a hazard it found, a call it does not model, and where in the
kernel's source each happened; and the words it says them in: every kind of hazard or note
and every word of a structured cause, defined here once with its meaning (KINDS, CAUSES,
UNITS), whichever module raises it.

Kernel code runs with globals of a `KernelGlobals` class (course.execute.translate makes
them), so the line of the kernel that made an operation is the innermost frame with such
globals: `site()` finds it (past NVIDIA's translated library code, such as cutlass.pipeline,
which runs with such globals too), `Site.describe()` names it as a learner reads it: the
function, the line within it and the line's text.
"""

from __future__ import annotations

import linecache
import re
import sys
from dataclasses import dataclass


class KernelGlobals(dict):
    """The globals of kernel code run on the executor (see course.execute.translate)."""


class Unmodelled(Exception):
    """Kernel code called something the executor does not model: no value is made up."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(f"the CPU executor does not model `{what}`; this check needs a GPU")


class UnmodelledAttribute(Unmodelled, AttributeError):
    """An attribute CuTe DSL's own class has and the executor's stand-in lacks (an
    AttributeError too, so `hasattr` and `getattr(x, name, default)` still work)."""


class Standin:
    """A mixin for the executor's stand-ins of CuTe DSL classes (`REAL`: "module:Class" of
    the classes it stands in for). An attribute the stand-in lacks but CuTe DSL's class has
    is `UnmodelledAttribute` (this needs a GPU, not the kernel's bug); one CuTe DSL's class
    lacks too is the kernel's own AttributeError, as it would be on the GPU."""

    __slots__ = ()
    REAL: tuple = ()

    def __getattr__(self, name: str):
        if name.startswith("__") or not any(hasattr(c, name) for c in _real_classes(type(self))):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise UnmodelledAttribute(f"{_short_name(type(self))}.{name}")


_REAL_CACHE: dict = {}


def _real_classes(cls) -> tuple:
    """CuTe DSL's classes a stand-in class names in REAL (its bases' too), imported once."""
    if cls not in _REAL_CACHE:
        import importlib

        found = []
        for klass in cls.__mro__:
            for spec in vars(klass).get("REAL", ()):
                module, _, name = spec.partition(":")
                try:
                    found.append(getattr(importlib.import_module(module), name))
                except (ImportError, AttributeError):
                    continue
        _REAL_CACHE[cls] = tuple(found)
    return _REAL_CACHE[cls]


def _short_name(cls) -> str:
    real = _real_classes(cls)
    return real[0].__name__.lstrip("_") if real else cls.__name__


def _open_brackets(text: str) -> int:
    """Brackets a line of Python leaves open (those in strings and comments not counted)."""
    code = re.sub(r"(\"[^\"]*\"|'[^']*')", "", text).split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


@dataclass(frozen=True)
class Site:
    """One line of kernel source."""

    filename: str
    lineno: int
    function: str
    first_line: int

    def text(self) -> str:
        """The statement that starts on this line, whole where it runs over several lines
        (a call wrapped one argument a line, as ruff formats it), up to 160 characters."""
        text = linecache.getline(self.filename, self.lineno).strip()
        more = self.lineno
        while _open_brackets(text) > 0 and more < self.lineno + 16:
            more += 1
            following = linecache.getline(self.filename, more).strip()
            if not following:
                break
            text = f"{text} {following}"
        text = re.sub(r"([(\[{]) ", r"\1", re.sub(r",? ([)\]}])", r"\1", text))
        return text if len(text) <= 160 else text[:157] + "..."

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


# ---------------------------------------------------------------- the executor's vocabulary
# Every word a Hazard.kind, a Note.kind, a Cause.what or a Cause.unit holds is defined here,
# once, with what it means: KINDS, CAUSES and UNITS are the tables (words -> meaning). A new
# hazard is one entry here and its raise. Checkers (course.exercises' hints) compare these
# constants, never a sentence's words. A module that raised a kind of its own keeps the old
# name as an alias (tmem.TMEM is hazards.TMEM); tests/test_hazard_kinds.py checks that every
# kind raised in course/execute is one of KINDS.

KINDS: dict[str, str] = {}  # Hazard.kind and Note.kind
CAUSES: dict[str, str] = {}  # Cause.what
UNITS: dict[str, str] = {}  # Cause.unit


def _word(table: dict, words: str, meaning: str) -> str:
    """Enter `words` in `table` with its meaning, each once (two kinds with the same words
    could not be told apart), and give the words back for the constant."""
    assert words not in table, f"{words!r} defined twice"
    table[words] = meaning
    return words


def _kind(words: str, meaning: str) -> str:
    return _word(KINDS, words, meaning)


def _cause(words: str, meaning: str) -> str:
    return _word(CAUSES, words, meaning)


def _unit(words: str, meaning: str) -> str:
    return _word(UNITS, words, meaning)


# the kinds of hazard (and of note), in the words a verdict uses
IN_FLIGHT = _kind(
    "read while a copy is in flight",
    "bytes read before the asynchronous copy into them landed",
)
WRITE_IN_FLIGHT = _kind(
    "write while a copy is in flight",
    "bytes written while an earlier asynchronous copy (or CLC response) into them lands",
)
RACE = _kind("race", "two warps touch the same bytes, one writing, with nothing ordering them")
STAGE_OVERWRITE = _kind(
    "overwrite while being read",
    "bytes written over while an asynchronous reader (wgmma, TMA store, tcgen05.mma) reads",
)
OUT_OF_BOUNDS = _kind("out of bounds", "an element index outside the tensor")
DEADLOCK = _kind(
    "deadlock",
    "every live warp waits on a barrier or mbarrier nothing in flight can complete",
)
DIVERGENT = _kind(
    "divergent barrier",
    "a barrier or warpgroup-wide instruction reached by part of the threads it needs",
)
UNINITIALISED = _kind(
    "uninitialised registers",
    "an instruction read registers no instruction wrote",
)
MISALIGNED = _kind("misaligned access", "an address not aligned as its instruction requires")
CRASH = _kind(
    "the kernel raised an error",
    "the kernel raised, or did what the GPU refuses (operands that do not fit, a bad launch)",
)
HANG = _kind("no progress", "the time limit ran out in a loop that never advances")
COLLECTIVE = _kind(
    "collective in divergent code",
    "a warp-collective instruction (elect.sync, a warp-wide copy) reached by part of its lanes",
)
PROXY_FENCE = _kind(
    "missing fence.proxy.async",
    "shared memory threads wrote, read or rewritten by the async proxy (TMA, wgmma, CLC) "
    "with no fence.proxy.async between",
)
MBARRIER = _kind(
    "mbarrier misuse",
    "an mbarrier used against the PTX ISA: misaligned, uninitialised, more arrivals or "
    "bytes than it expects, a parity other than 0 or 1",
)
TMEM = _kind(
    "tensor memory misuse",
    "TMEM read before or while an MMA writes it, outside the warp's lanes, unallocated, "
    "freed, or left allocated",
)
COMMIT_NOT_WAITED = _kind(
    "tcgen05.commit never waited on",
    "a CTA exits before a wait saw a tcgen05.commit's arrival: a hazard for another CTA's "
    "commit, a note for its own",
)
NOT_DRAINED = _kind(
    "TMA store not drained",
    "a CTA exits while a TMA store it never waited for may still read its shared memory",
)
LOAD_NOT_WAITED = _kind(
    "TMA load not waited for",
    "a CTA exits while a TMA load no mbarrier wait saw land may still write its shared memory",
)
ACC_IN_FLIGHT = _kind(
    "accumulator used while a wgmma writes it",
    "accumulator registers touched before wgmma.wait_group retired the wgmma writing them",
)
A_IN_FLIGHT = _kind(
    "A registers written while a wgmma reads them",
    "a wgmma's register A operand overwritten before wgmma.wait_group retired the wgmma",
)
NO_FENCE = _kind(
    "wgmma without warpgroup.fence",
    "a wgmma over registers written since the last warpgroup.fence (wgmma.fence)",
)
UNSPECIFIED_USED = _kind(
    "use of an unspecified value",
    "a branch, index, address or int() decided by an integer division by zero, whose "
    "result the PTX ISA leaves unspecified",
)
WAIT_LD = _kind(
    "wait::ld",
    "a note: tcgen05.ld's registers read before tcgen05.wait::ld (the ISA observes the "
    "load's completion through the wait, but does not call the registers undefined)",
)
TF32_ROUNDING = _kind(
    "tf32 rounding",
    "a note: a tf32 MMA read fp32 operands as tf32 the executor's way (the top 10 mantissa "
    "bits kept), where the PTX ISA leaves tf32's layout implementation defined",
)
ODD_ISSUER = _kind(
    "odd pair issuer",
    "a note: the odd CTA of a pair issued a cta_group::2 tcgen05.mma (the PTX ISA allows either "
    "CTA); the executor keeps rows 0-127 of D in the even CTA, its own reading",
)

# Cause.what: what happened, for each kind (subject, expected, observed as each entry says)
BELOW_START = _cause("index below the start", "OUT_OF_BOUNDS below element 0 (expected: the range)")
PAST_END = _cause("index past the end", "OUT_OF_BOUNDS past the last element (expected: the range)")
SLICE_PAST_MODE = _cause(
    "a shared-memory tensor sliced past the extent of one of its modes",
    "OUT_OF_BOUNDS; subject: the tensor, expected: (mode, its extent), observed: the coordinate",
)
SWAPPED_COORDINATES = _cause(
    "a coordinate outside its tensor's shape, inside it once reversed",
    "OUT_OF_BOUNDS of a 2-D read; subject: the tensor, expected: its shape, observed: the "
    "coordinate",
)
PART_OF_THE_LANES = _cause(
    "reached by part of the lanes it needs",
    "COLLECTIVE; subject: the instruction, expected: the threads it needs, observed: those there",
)
BLOCKED = _cause(
    "every live warp waits on something nothing in flight can bring",
    "DEADLOCK; subject: the CTAs, observed: who waits on what, expected: the mbarriers waited on",
)
LIVELOCK = _cause(
    "a loop that never advances",
    "HANG; subject: the CTAs, observed: who waits on what",
)
# ... of a write over shared memory an asynchronous reader (unit) still reads (STAGE_OVERWRITE;
# subject: the bytes, as SharedMemory.describe names them; expected: the reader's warp,
# observed: the writer's), or of a use of registers a wgmma still writes: how the reader stands
UNCOMMITTED = _cause("its group was never committed", "the reader's group was never committed")
NEWEST_GROUP = _cause(
    "its group is the warp's newest: the k-tile just issued",
    "the reader is in the newest group its warp committed",
)
NEVER_WAITED = _cause("its warp has waited for no group yet", "no wait_group has run in its warp")
NOT_RETIRED = _cause("no wait has retired it yet", "a wait ran, but kept the reader's group")
STORED_AGAIN = _cause(
    "a store of bytes an earlier store read, unwritten since",
    "a TMA store of bytes an earlier TMA store read, no thread having written them since",
)
RETIRED_UNORDERED = _cause(
    "retired by another warp's wait that nothing orders before the write",
    "the reader was retired, but by a wait of another warp the writer never synchronised with",
)
RELEASED_EARLY = _cause(
    "refilled with no release ordered after its last read",
    "a TMA load into a stage whose last reader (expected: its warp; unit: the wgmma its "
    "wait_group retired, or '' for its threads) did not release it after reading",
)
READ_IN_FLIGHT = _cause(
    "read while a copy into it is in flight",
    "IN_FLIGHT; unit: the copy's, or the reader's where an asynchronous unit reads",
)
COPIED_SINCE_BARRIER = _cause(
    "read while a copy issued since the last barrier is in flight",
    "IN_FLIGHT of a cp.async the reader's CTA issued after its last sync_threads: whatever "
    "the waits before that barrier retired, this copy goes into the bytes being read",
)
WRITTEN_IN_FLIGHT = _cause(
    "written while an earlier copy into it is in flight",
    "WRITE_IN_FLIGHT; unit: the copy's",
)
READ_AFTER_FENCE = _cause(
    "generic-proxy read made after the reader's fence.proxy.async, unfenced when rewritten",
    "PROXY_FENCE of a CLC answer its readers fenced before reading it (the fence and the "
    "release that follows it came first); unit: the async writer",
)
UNFENCED = _cause(
    "generic-proxy access with no fence.proxy.async before the async proxy's",
    "PROXY_FENCE; unit: who reads or rewrites through the async proxy",
)
TWO_STORES = _cause(
    "two unordered stores of the same elements",
    "RACE of two TMA stores; subject: the tensor, expected and observed: the two warps",
)
NEVER_WRITTEN = _cause(
    "registers no instruction wrote",
    "UNINITIALISED; subject: the MMA operand, 'A', 'B' or 'C' (the accumulator)",
)
UNWRITTEN = _cause(
    "TMEM no tcgen05.mma has written",
    "TMEM read before any MMA wrote it; subject: the columns, unit: the reader",
)
SF_NOT_COPIED = _cause(
    "SF columns no tcgen05.cp wrote before the MMA",
    "TMEM; a block-scaled MMA read scale-factor columns tcgen05.cp had not filled",
)
USE_AFTER_FREE = _cause("TMEM used after tcgen05.dealloc", "TMEM; the columns were freed")
NOT_ALLOCATED = _cause("TMEM not allocated", "TMEM; no tcgen05.alloc gave these columns")
FREED_WHILE_READ = _cause(
    "TMEM freed while another warp may still read it",
    "TMEM; expected: the reader's warp",
)
NEVER_FREED = _cause(
    "TMEM still allocated when the CTA exits",
    "TMEM; no tcgen05.dealloc before the CTA's exit",
)
PEER_NOT_DONE = _cause(
    "cta_group::2 TMEM freed before the peer CTA reached its dealloc",
    "TMEM; a CTA pair's columns freed while the peer may still use them",
)
DIVISION_BY_ZERO = _cause(
    "the result of an integer division by zero",
    "UNSPECIFIED_USED; subject: the division's source text, observed: its line",
)

# Cause.unit: the instructions and asynchronous units a cause can name
UNIT_WGMMA = _unit("wgmma", "Hopper's warpgroup MMA, reading shared memory and registers")
UNIT_TMA_STORE = _unit("TMA store", "a bulk tensor copy from shared to global memory")
UNIT_TMA_LOAD = _unit("TMA load", "a bulk tensor copy from global to shared memory")
UNIT_CP_ASYNC = _unit("cp.async", "Ampere's per-thread asynchronous copy into shared memory")
UNIT_ST_ASYNC = _unit(
    "st.async", "a thread's asynchronous store into a peer CTA's shared memory (complete-tx)"
)
UNIT_MMA = _unit("tcgen05.mma", "Blackwell's MMA, reading shared memory and TMEM")
UNIT_SF_COPY = _unit("tcgen05.cp", "the copy of scale factors from shared memory into TMEM")
UNIT_TMEM_LOAD = _unit("tcgen05.ld", "a warp's load of TMEM into registers")
UNIT_CLC_QUERY = _unit(
    "CLC query (clusterlaunchcontrol.try_cancel)",
    "Cluster Launch Control's query, writing its response to shared memory",
)


@dataclass(frozen=True)
class Cause:
    """What a hazard is, in parts a checker can act on: a hint is chosen from these fields,
    never from the words of the hazard's sentence (which stay free to be reworded)."""

    what: str  # what happened: one of CAUSES (BELOW_START, PAST_END, ...)
    subject: str  # the tensor, stage, barrier or register it happened to
    expected: object = None  # what a correct kernel has there, e.g. the valid range (lo, hi)
    observed: object = None  # what this kernel had, e.g. the index it used
    unit: str = ""  # the instruction or asynchronous unit involved: one of UNITS, or ""


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


@dataclass(frozen=True)
class Note:
    """Something a run did that is no hazard -- the PTX ISA leaves the result defined -- but
    that the course's kernels do differently (e.g. tcgen05.ld's registers read before
    tcgen05.wait::ld): recorded on the launch (runner.Result.notes), never raised."""

    kind: str
    detail: str
    site: Site = UNKNOWN

    def __str__(self) -> str:
        where = f"; at {self.site.describe()}" if self.site is not UNKNOWN else ""
        return f"{self.kind} (a note): {self.detail}{where}"


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
