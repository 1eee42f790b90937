"""Run a CuTe DSL mbarrier ring on the CPU: the code itself, one Python thread per warp.

course.sim.ring_protocol replays the *design* of notebook 09's ring. This module runs the
*code*: a `ring(self, k_tiles, warp, full, empty, loads, tiled_mma, f, report)` method
written for kernels.tma_gemm.TmaGemm (the kernel's own, or a learner's), executed as
plain Python by each of the CTA's warps, with `cute.arch`'s barrier calls mapped onto
course.models.mbarrier and the kernel's leaf steps (the TMA copies of a k-tile, the MMAs
that read a stage) modelled. The warps and the copies' landings are interleaved at
random, one step at a time, so what the code allows (a deadlock, a stage read before its
bytes landed or overwritten while read, a barrier used before it was initialised or its
initialisation not fenced) shows up as a verdict naming the warp, the barrier and the
phase.

A warp is one agent: code inside `with cute.arch.elect_one():` runs once, code outside it
once per lane (32 arrivals from an `mbarrier_arrive` outside it). Methods the ring calls
on `self` are the kernel class's own methods, run the same way.

    verdict(TmaGemm.ring, TmaGemm, stages=2, k_tiles=5)   ->  Verdict("ok", ...)
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import random
import textwrap
import threading
import types
from dataclasses import dataclass, field

from course.models.mbarrier import MBarrier, MBarrierError

LANES = 32
MAX_STEPS = 200_000  # a warp spinning on try_wait for longer than this is stuck
OK = "ok"


@dataclass(frozen=True)
class Verdict:
    """What one run (or the first failing run of a sweep) found."""

    kind: str  # "ok", "deadlock", "race", "misuse", or "unmodelled" (the model cannot tell)
    detail: str = ""
    mistake: str = ""  # the likely mistake, in the words a hint uses ("" when ok)

    @property
    def ok(self) -> bool:
        return self.kind == OK


class _Stop(BaseException):
    """Ends a warp's thread when the run is over (BaseException: learners catch Exception)."""


class _Found(Exception):
    def __init__(self, kind: str, detail: str, mistake: str):
        super().__init__(detail)
        self.verdict = Verdict(kind, detail, mistake)


class Unmodelled(Exception):
    """The ring calls something this model does not know."""


# ------------------------------------------------------------------ the CTA's shared state

class _Barriers:
    """The ring's 2 x stages mbarriers in shared memory: full[0..S-1], then empty[0..S-1]."""

    def __init__(self, stages: int):
        self.stages = stages
        self.bars: list[MBarrier | None] = [None] * (2 * stages)
        self.fenced = False
        self.armed = [0] * (2 * stages)  # expect_tx bytes announced in the current phase
        self.last_armed = [None] * (2 * stages)  # ... in the last completed phase

    def note(self, i: int, completed: bool) -> None:
        """After an arrival or a landing: remember what the phase it completed expected."""
        if completed:
            self.last_armed[i], self.armed[i] = self.armed[i], 0

    def name(self, i: int) -> str:
        return f"full[{i}]" if i < self.stages else f"empty[{i - self.stages}]"

    def get(self, i: int, use: str) -> MBarrier:
        if not 0 <= i < len(self.bars):
            raise _Found("misuse", f"{use} a barrier past the ring's {2 * self.stages} "
                         f"barriers (index {i})", "stage index")
        if self.bars[i] is None:
            raise _Found("race", f"{use} {self.name(i)} before it was initialised",
                         "missing sync")
        return self.bars[i]


@dataclass(frozen=True)
class BarrierPointer:
    """What `full + s` is in the model: an index into the ring's barriers."""

    index: int

    def __add__(self, other):
        return BarrierPointer(self.index + int(other))

    __radd__ = __add__


@dataclass
class _Copy:
    stage: int
    k_tile: int
    barrier: int
    nbytes: int
    half: str  # "A" or "B"


@dataclass
class _Cta:
    stages: int
    k_tiles: int
    warps: int
    bytes_a: int
    bytes_b: int
    barriers: _Barriers = None
    content: list = None  # which k-tile each stage holds (both halves landed)
    halves: list = None  # {stage: {k_tile: set of halves landed}}
    readers: list = None  # per stage: {(warp, k_tile)}
    reads: list = None  # per warp: k-tiles read so far
    waited: list = None  # per warp: the barriers waited on since its last read
    loaded: list = field(default_factory=list)
    in_flight: list = field(default_factory=list)

    def __post_init__(self):
        self.barriers = _Barriers(self.stages)
        self.content = [None] * self.stages
        self.halves = [dict() for _ in range(self.stages)]
        self.readers = [set() for _ in range(self.stages)]
        self.reads = [0] * self.warps
        self.waited = [set() for _ in range(self.warps)]


# ------------------------------------------------------------------ one warp

class _Warp:
    """One warp's thread, parked at each step until the scheduler lets it take it."""

    def __init__(self, index: int, parked: threading.Semaphore):
        self.index = index
        self.elected = 0
        self.pending = None  # the step it is parked at
        self.result = None
        self.done = False
        self.error: BaseException | None = None
        self.stop = False
        self.resume = threading.Semaphore(0)
        self.parked = parked  # shared: released whenever any warp parks or ends

    def start(self, run) -> None:
        """Run `run()` on this warp's thread up to its first step."""
        threading.Thread(target=self._body, args=(run,), daemon=True).start()
        self.resume.release()
        self.parked.acquire()

    def _body(self, run):
        self.resume.acquire()
        try:
            if not self.stop:
                run()
        except _Stop:
            pass
        except BaseException as exc:  # noqa: BLE001 -- reported as the verdict
            self.error = exc
        finally:
            self.done, self.pending = True, None
            self.parked.release()

    def step(self, op):
        """Park at `op` until the scheduler takes it; return its result."""
        self.pending = op
        self.parked.release()
        self.resume.acquire()
        if self.stop:
            raise _Stop
        return self.result

    @property
    def lanes(self) -> int:
        return 1 if self.elected else LANES


class _Arch:
    """`cute.arch` for one warp: barrier calls become steps of the model."""

    def __init__(self, warp: _Warp, cta: _Cta):
        self._warp, self._cta = warp, cta

    def elect_one(self):
        warp = self._warp

        class _Elected:
            def __enter__(self):
                warp.elected += 1

            def __exit__(self, *exc):
                warp.elected -= 1

        return _Elected()

    def mbarrier_init(self, bar, count):
        def init():
            bars = self._cta.barriers
            if not 0 <= bar.index < len(bars.bars):
                raise _Found("misuse", f"mbarrier_init past the ring's barriers", "stage index")
            bars.bars[bar.index] = MBarrier(int(count), bars.name(bar.index))
            bars.fenced = False
        self._warp.step(("act", init))

    def mbarrier_init_fence(self):
        def fence():
            self._cta.barriers.fenced = True
        self._warp.step(("act", fence))

    def sync_threads(self):
        self._warp.step(("sync",))

    barrier = sync_threads

    def mbarrier_arrive(self, bar, *cta):
        lanes = self._warp.lanes
        self._warp.step(("act", lambda: self._arrive(bar, lanes, 0)))

    def mbarrier_arrive_and_expect_tx(self, bar, nbytes, *cta):
        lanes = self._warp.lanes
        self._warp.step(("act", lambda: self._arrive(bar, lanes, int(nbytes))))

    def mbarrier_expect_tx(self, bar, nbytes, *cta):
        def expect():
            bars = self._cta.barriers
            bars.get(bar.index, "expect_tx on").expect_tx(int(nbytes) * self._warp.lanes)
            bars.armed[bar.index] += int(nbytes) * self._warp.lanes
        self._warp.step(("act", expect))

    def mbarrier_wait(self, bar, parity):
        self._warp.step(("wait", bar.index, int(parity), "", self._warp.index))

    def mbarrier_try_wait(self, bar, parity):
        return self._warp.step(("act", lambda: self._cta.barriers.get(
            bar.index, "try_wait on").try_wait(int(parity))))

    def make_warp_uniform(self, x):
        return x

    def _arrive(self, bar, lanes: int, nbytes: int):
        bars = self._cta.barriers
        barrier = bars.get(bar.index, f"warp {self._warp.index} arrives on")
        what = "arrive.expect_tx" if nbytes else "arrive"
        try:
            for lane in range(lanes):
                bars.armed[bar.index] += nbytes
                completed = barrier.arrive(tx=nbytes)
                bars.note(bar.index, completed)
                if completed and lane < lanes - 1:
                    raise _Found("misuse", f"all {lanes} lanes of warp {self._warp.index} ran "
                                 f"{what} on {bars.name(bar.index)}: lane {lane} completed its "
                                 f"phase (of {barrier.count} arrivals) and the rest arrive on "
                                 f"the next one", "every lane arrives")
        except MBarrierError as exc:
            lanes_said = f"all {lanes} lanes ran {what}: " if lanes > 1 else ""
            raise _Found("misuse", f"warp {self._warp.index}: {lanes_said}{exc}",
                         "every lane arrives" if lanes > 1 else "arrival count") from None

    def __getattr__(self, name):
        raise Unmodelled(f"cute.arch.{name}")


class _Cute:
    """`cute` for one warp: only `cute.arch` is modelled."""

    def __init__(self, arch: _Arch):
        self.arch = arch

    def __getattr__(self, name):
        raise Unmodelled(f"cute.{name}")


class _Cutlass:
    """`cutlass` as plain Python: values are ints, loops are Python loops."""

    Int32 = Int64 = Uint32 = Uint64 = staticmethod(int)
    Boolean = staticmethod(bool)
    Constexpr = object
    min, max = staticmethod(builtins.min), staticmethod(builtins.max)

    @staticmethod
    def const_expr(x):
        return x

    @staticmethod
    def range_constexpr(*args):
        return builtins.range(*args)

    @staticmethod
    def range(*args, **_unroll):
        return builtins.range(*args)

    def __getattr__(self, name):
        raise Unmodelled(f"cutlass.{name}")


def _python_version(fn, names: dict):
    """`fn` (a @cute.jit function or method, or plain) as plain Python, rebuilt from its
    source without decorators (so CuTe DSL's rewriting of it plays no part), with `names`
    in place of its module's globals."""
    raw = inspect.unwrap(getattr(fn, "__func__", fn))
    namespace = {**raw.__globals__, **names}
    exec(_plain_code(raw), namespace)
    return namespace[raw.__name__]


@functools.lru_cache(maxsize=256)
def _plain_code(raw):
    tree = ast.parse(textwrap.dedent(inspect.getsource(raw)))
    tree.body[0].decorator_list = []
    return compile(tree, inspect.getsourcefile(raw) or f"<{raw.__name__}>", "exec")


class _Self:
    """`self` for one warp: cfg and tx_bytes from the kernel object's config; the leaf
    steps modelled; any other method the kernel class's own, run as plain Python."""

    def __init__(self, kernel_cls, cfg, tx_bytes, warp: _Warp, cta: _Cta, names: dict):
        self.cfg, self.tx_bytes = cfg, tx_bytes
        self._kernel_cls, self._warp, self._cta, self._names = kernel_cls, warp, cta, names

    def __getattr__(self, name):
        attr = inspect.getattr_static(self._kernel_cls, name)
        if isinstance(attr, staticmethod):
            return _python_version(attr.__func__, self._names)
        if callable(attr):
            return types.MethodType(_python_version(attr, self._names), self)
        return getattr(self._kernel_cls, name)

    # the leaf steps ------------------------------------------------------------------
    def wait(self, bar, parity, kind, stage, ktile, report):
        self._warp.step(("wait", bar.index, int(parity), f"k-tile {ktile}", self._warp.index))

    def copy_k_tile(self, loads, j, stage, bar):
        self._warp.step(("act", lambda: _issue(self._cta, int(j), int(stage), bar.index)))

    def mma_k_tile(self, tiled_mma, f, stage):
        warp = self._warp.index
        self._warp.step(("act", lambda: _start_read(self._cta, warp, int(stage))))
        self._warp.step(("act", lambda: _end_read(self._cta, warp, int(stage))))


def _issue(cta: _Cta, j: int, stage: int, bar: int):
    bars = cta.barriers
    if not bars.fenced:
        raise _Found("race", f"TMA was handed k-tile {j} counted on {bars.name(bar)} while the "
                     f"barriers' initialisation was never fenced (fence.mbarrier_init): the "
                     f"copy engine may not see them initialised", "missing fence")
    if not 0 <= j < cta.k_tiles:
        raise _Found("misuse", f"a load of k-tile {j}: there are only {cta.k_tiles}",
                     "past the last k-tile")
    if bar != stage:
        raise _Found("misuse", f"k-tile {j} copied into stage {stage} but counted on "
                     f"{bars.name(bar)}; its bytes belong on full[{stage}]", "stage index")
    bars.get(bar, f"a TMA copy counted on")
    cta.loaded.append(j)
    cta.in_flight += [_Copy(stage, j, bar, cta.bytes_a, "A"), _Copy(stage, j, bar, cta.bytes_b, "B")]


def _land(cta: _Cta, copy: _Copy):
    readers = cta.readers[copy.stage]
    if readers:
        warp, t = min(readers)
        raise _Found("race", f"k-tile {copy.k_tile}'s {copy.half} landed in stage {copy.stage} "
                     f"while warp {warp} was still reading k-tile {t} from it",
                     _overwrite_mistake(cta, copy.stage, copy.k_tile))
    landed = cta.halves[copy.stage].setdefault(copy.k_tile, set())
    landed.add(copy.half)
    if landed == {"A", "B"}:
        cta.content[copy.stage] = copy.k_tile
        del cta.halves[copy.stage][copy.k_tile]
    barrier = cta.barriers.bars[copy.barrier]
    try:
        cta.barriers.note(copy.barrier, barrier.complete_tx(copy.nbytes))
    except MBarrierError as exc:
        raise _Found("misuse", str(exc), "expect_tx bytes") from None


def _start_read(cta: _Cta, warp: int, stage: int):
    t = cta.reads[warp]
    if t >= cta.k_tiles:
        raise _Found("misuse", f"warp {warp} reads a k-tile past the last ({cta.k_tiles})",
                     "past the last k-tile")
    if stage != t % cta.stages:
        raise _Found("misuse", f"warp {warp} read stage {stage} for k-tile {t}, which lands in "
                     f"stage {t % cta.stages}", "stage index")
    if cta.content[stage] is not None and cta.content[stage] > t:
        raise _Found("race", f"warp {warp} read stage {stage} for k-tile {t}, but k-tile "
                     f"{cta.content[stage]} had already been loaded over it",
                     _overwrite_mistake(cta, stage, cta.content[stage]))
    if stage not in cta.waited[warp] and cta.content[stage] != t:
        raise _Found("race", f"warp {warp} read stage {stage} for k-tile {t} without waiting "
                     f"on full[{stage}] since its last read", "missing wait")
    if cta.content[stage] != t:
        held = "nothing yet" if cta.content[stage] is None else f"k-tile {cta.content[stage]}"
        unarmed = cta.barriers.last_armed[stage] == 0  # its phase completed with no bytes due
        raise _Found("race", f"warp {warp} read stage {stage} for k-tile {t} while it held "
                     f"{held}: the wait on full[{stage}] returned before the bytes landed",
                     "missing expect_tx" if unarmed else "wrong parity")
    cta.readers[stage].add((warp, t))
    cta.waited[warp].clear()


def _overwrite_mistake(cta: _Cta, stage: int, j: int) -> str:
    """k-tile j overwrote a stage still needed: did every warp release the stage's previous
    k-tile (then some released it before reading it), or did the producer not wait?"""
    empty = cta.barriers.bars[cta.stages + stage]
    trip = j // cta.stages
    return "released too early" if empty is not None and empty.phase >= trip else "wrong parity"


def _end_read(cta: _Cta, warp: int, stage: int):
    cta.readers[stage].discard((warp, cta.reads[warp]))
    cta.reads[warp] += 1


# ------------------------------------------------------------------ the scheduler

def run(ring_fn, kernel_cls, cfg, k_tiles: int, seed: int = 0) -> Verdict:
    """One random interleaving of `ring_fn` run by every warp of a CTA of `kernel_cls`
    (a kernels.tma_gemm.TmaGemm or subclass) with Config `cfg`, over `k_tiles` k-tiles."""
    from kernels.tma_gemm import TILE_K

    elem = 2  # 16-bit operands: the bytes one k-tile of A and of B bring
    cta = _Cta(cfg.stages, k_tiles, cfg.warps, cfg.tile_m * TILE_K * elem,
               cfg.tile_n * TILE_K * elem)
    parked = threading.Semaphore(0)
    warps = [_Warp(w, parked) for w in range(cfg.warps)]
    try:
        for warp in warps:
            arch = _Arch(warp, cta)
            names = {"cute": _Cute(arch), "cutlass": _Cutlass(),
                     "const_expr": _Cutlass.const_expr,
                     "range_constexpr": _Cutlass.range_constexpr, "Int32": int}
            me = _Self(kernel_cls, cfg, cfg.stage_bytes(elem), warp, cta, names)
            body = _python_version(ring_fn, names)
            warp.start(lambda body=body, me=me, w=warp.index: body(
                me, k_tiles, w, BarrierPointer(0), BarrierPointer(cfg.stages), None, None,
                None, None))
        return _schedule(cta, warps, random.Random(seed))
    finally:
        for warp in warps:
            if not warp.done:
                warp.stop = True
                warp.resume.release()
                parked.acquire()


def _schedule(cta: _Cta, warps: list[_Warp], rng: random.Random) -> Verdict:
    for _ in range(MAX_STEPS):
        failed = next((w for w in warps if w.error is not None), None)
        if failed is not None:
            return _error_verdict(failed)
        live = [w for w in warps if not w.done]
        if not live and not cta.in_flight:
            return _finished(cta)
        choices = [("warp", w) for w in live if _enabled(cta, w, warps)]
        choices += [("copy", i) for i in range(len(cta.in_flight))]
        if not choices:
            return _deadlock(cta, live)
        kind, x = rng.choice(choices)
        try:
            if kind == "copy":
                copy = cta.in_flight.pop(x)
                if not live:
                    raise _Found("race", f"k-tile {copy.k_tile} landed after every warp had left "
                                 f"the ring: nothing waited for it, and its stage is C's "
                                 f"staging buffer in the epilogue", "past the last k-tile")
                _land(cta, copy)
            elif x.pending[0] == "sync":
                for w in live:
                    _resume(w, None)
            else:
                _resume(x, _take(cta, x.pending))
        except _Found as found:
            return found.verdict
    return Verdict("deadlock", f"no progress after {MAX_STEPS} steps: a warp spins on "
                   f"try_wait for a phase that never completes", "wrong parity")


def _enabled(cta: _Cta, warp: _Warp, warps: list[_Warp]) -> bool:
    op = warp.pending
    if op[0] == "sync":  # every warp of the CTA there (one that already left never comes)
        return all(w.pending and w.pending[0] == "sync" for w in warps)
    if op[0] == "wait":
        bar = cta.barriers.bars[op[1]] if 0 <= op[1] < len(cta.barriers.bars) else None
        return bar is None or bar.try_wait(op[2])  # an uninitialised one fails when taken
    return True


def _take(cta: _Cta, op):
    """Do a step's effect; a _Found is handed to the warp (and raised in the run)."""
    if op[0] == "wait":
        cta.barriers.get(op[1], "a wait on")
        cta.waited[op[4]].add(op[1])
        return None
    return op[1]()


def _resume(warp: _Warp, result) -> None:
    warp.result, warp.pending = result, None
    warp.resume.release()
    warp.parked.acquire()


def _error_verdict(warp: _Warp) -> Verdict:
    exc = warp.error
    if isinstance(exc, _Found):
        return exc.verdict
    if isinstance(exc, Unmodelled):
        return Verdict("unmodelled", f"the CPU model of the ring does not know {exc}")
    library = _library_frame(exc)
    if library:  # a CuTe DSL call the model does not stand in for got the model's values
        return Verdict("unmodelled", f"the CPU model of the ring cannot run {library}")
    return Verdict("misuse", f"warp {warp.index} raised {type(exc).__name__}: {exc}",
                   "runs as plain Python")


def _library_frame(exc: BaseException) -> str:
    """'module.function' of the first CuTe DSL (cutlass package) frame the error passed
    through, or ''."""
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.split(".")[0] == "cutlass":
            return f"{module}.{tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return ""


def _finished(cta: _Cta) -> Verdict:
    short = [(w, n) for w, n in enumerate(cta.reads) if n != cta.k_tiles]
    if short:
        w, n = short[0]
        return Verdict("misuse", f"warp {w} read {n} of the {cta.k_tiles} k-tiles",
                       "every k-tile")
    if sorted(cta.loaded) != list(range(cta.k_tiles)):
        return Verdict("misuse", f"the k-tiles loaded were {sorted(cta.loaded)}",
                       "every k-tile")
    return Verdict(OK, f"{cta.warps} warps, {cta.stages} stage(s), {cta.k_tiles} k-tile(s): "
                       f"every k-tile loaded once, waited for and read by every warp")


def _deadlock(cta: _Cta, live: list[_Warp]) -> Verdict:
    """Who waits on what, the producer's waits (on empty barriers) first: a full barrier
    that never completes is usually the symptom of an empty one that never did."""
    groups: dict[tuple, list[int]] = {}
    for w in live:
        op = w.pending
        key = (op[1] < cta.stages, op[1], op[2]) if op[0] == "wait" else (2, -1, -1)
        groups.setdefault(key, []).append(w.index)
    lines = []
    for (_, i, parity), ids in sorted(groups.items()):
        who = (f"warp {ids[0]} waits" if len(ids) == 1
               else f"warps {', '.join(map(str, ids))} wait")
        if i < 0:
            lines.append(f"{who} at sync_threads, which not every warp reaches")
            continue
        bar = cta.barriers.bars[i]
        want = _expected_parity(cta, i, ids[0])
        lines.append(f"{who} on {bar.name} for parity {parity} "
                     f"({_role(cta, i, ids[0])}, which needs parity {want}), but {bar.describe()}")
    return Verdict("deadlock", "; ".join(lines[:2]) + ("; ..." if len(lines) > 2 else ""),
                   _deadlock_mistake(cta, live))


def _role(cta: _Cta, i: int, warp: int) -> str:
    if i >= cta.stages:
        return f"loading k-tile {len(cta.loaded)}"
    return f"reading k-tile {cta.reads[warp]}"


def _expected_parity(cta: _Cta, i: int, warp: int) -> int:
    """The parity the kernel's protocol waits for here: the producer's next load j on
    empty[j % S] waits for ((j // S) % 2) ^ 1, warp w's next read t on full[t % S] for
    (t // S) % 2."""
    if i >= cta.stages:
        return ((len(cta.loaded) // cta.stages) % 2) ^ 1
    return (cta.reads[warp] // cta.stages) % 2


def _deadlock_mistake(cta: _Cta, live: list[_Warp]) -> str:
    waits = sorted(((w.pending[1] < cta.stages, w.pending[1], w.pending[2], w.index)
                    for w in live if w.pending[0] == "wait"))
    if not waits:
        return "sync_threads"
    for _, i, parity, warp in waits:
        if parity != _expected_parity(cta, i, warp):
            return "wrong parity"
    _, i, _, _ = waits[0]
    bar = cta.barriers.bars[i]
    if bar.pending == 0 and bar.tx > 0:
        return "expect_tx bytes"
    if bar.arrived == 0 and i >= cta.stages:
        return "missing release"
    return "arrival count"


def verdict(ring_fn, kernel_cls, stages_list=(1, 2, 3, 4), k_tiles_list=(1, 3, 5, 9),
            seeds: int = 3, config=None) -> Verdict:
    """run() over ring depths, lengths and interleavings: the first problem, or ok."""
    from dataclasses import replace

    from kernels.tma_gemm import Config

    base = config or Config()
    for stages in stages_list:
        cfg = replace(base, stages=stages)
        for k_tiles in k_tiles_list:
            for seed in range(seeds):
                found = run(ring_fn, kernel_cls, cfg, k_tiles, seed)
                if not found.ok:
                    return Verdict(found.kind, f"{stages} stage(s), {k_tiles} k-tile(s): "
                                   f"{found.detail}", found.mistake)
    return Verdict(OK, f"no deadlock and no race over {len(stages_list)} ring depths x "
                       f"{len(k_tiles_list)} lengths x {seeds} interleavings")
