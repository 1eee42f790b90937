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
on `self` are the kernel class's own methods, run the same way. The CTA's state, and
what a run found, are course.sim.ring_cta's.

    verdict(TmaGemm.ring, TmaGemm, stages=2, k_tiles=5)   ->  Verdict("ok", ...)

Beside the CPU executor. course.execute runs the same code too -- the whole TmaGemm, when
course.exercises.executor_checks runs exercise 09.ring -- and finds the same mistakes in it:
a deadlock (execute.machine), a stage read before it landed or overwritten while read
(execute.memory and execute.tma: hazards.IN_FLIGHT, STAGE_OVERWRITE), a barrier used before
its initialisation was fenced (execute.mbarriers: hazards.MBARRIER), and its output against
torch besides. What this model is for that the executor is not: it runs the ring method
alone, a k-tile's copies and MMAs one step each and no data, so it sweeps ring depths 1-4,
lengths of 1-9 k-tiles and three interleavings of each in seconds, where the executor runs
the whole kernel at one configuration and the exercise's quick shapes; and a verdict names
the exercise's mistake (`Verdict.mistake`, a key of nb09_ring_kernel.HINTS). It needs CuTe
DSL installed, as the executor does (the ring's kernel class is kernels.tma_gemm's).
"""

from __future__ import annotations

import inspect
import random
import threading
import types

from course.models.mbarrier import MBarrier, MBarrierError
from course.sim.ring_cta import (
    OK,
    BarrierPointer,
    Cta,
    Found,
    Verdict,
    deadlock,
    end_read,
    finished,
    issue,
    land,
    note_release,
    start_read,
)
from course.sim.warp_threads import (
    error_verdict,
    PLAIN_NAMES,
    Unmodelled,
    Warp,
    python_version,
    stop_all,
)

MAX_STEPS = 200_000  # a warp spinning on try_wait for longer than this is stuck


class _Arch:
    """`cute.arch` for one warp: barrier calls become steps of the model."""

    def __init__(self, warp: Warp, cta: Cta):
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
                raise Found("misuse", "mbarrier_init past the ring's barriers", "stage index")
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
        return self._warp.step(
            ("act", lambda: self._cta.barriers.get(bar.index, "try_wait on").try_wait(int(parity)))
        )

    def make_warp_uniform(self, x):
        return x

    def _arrive(self, bar, lanes: int, nbytes: int):
        bars = self._cta.barriers
        barrier = bars.get(bar.index, f"warp {self._warp.index} arrives on")
        what = "arrive.expect_tx" if nbytes else "arrive"
        if not nbytes:
            note_release(self._cta, self._warp.index, bar.index)
        try:
            for lane in range(lanes):
                bars.armed[bar.index] += nbytes
                completed = barrier.arrive(tx=nbytes)
                bars.note(bar.index, completed)
                if completed and lane < lanes - 1:
                    raise Found(
                        "misuse",
                        f"all {lanes} lanes of warp {self._warp.index} ran "
                        f"{what} on {bars.name(bar.index)}: lane {lane} completed its "
                        f"phase (of {barrier.count} arrivals) and the rest arrive on "
                        f"the next one",
                        "every lane arrives",
                    )
        except MBarrierError as exc:
            lanes_said = f"all {lanes} lanes ran {what}: " if lanes > 1 else ""
            raise Found(
                "misuse",
                f"warp {self._warp.index}: {lanes_said}{exc}",
                "every lane arrives" if lanes > 1 else "arrival count",
            ) from None

    def __getattr__(self, name):
        raise Unmodelled(f"cute.arch.{name}")


class _Cute:
    """`cute` for one warp: only `cute.arch` is modelled."""

    def __init__(self, arch: _Arch):
        self.arch = arch

    def __getattr__(self, name):
        raise Unmodelled(f"cute.{name}")


class _Self:
    """`self` for one warp: cfg and tx_bytes from the kernel object's config; the leaf
    steps modelled; any other method the kernel class's own, run as plain Python."""

    def __init__(self, kernel_cls, cfg, tx_bytes, warp: Warp, cta: Cta, names: dict):
        self.cfg, self.tx_bytes = cfg, tx_bytes
        self._kernel_cls, self._warp, self._cta, self._names = kernel_cls, warp, cta, names

    def __getattr__(self, name):
        """Only reached for what this class does not define; the result is kept on the
        instance, so each method is rebuilt once per warp, not once per call."""
        attr = inspect.getattr_static(self._kernel_cls, name)
        if isinstance(attr, staticmethod):
            value = python_version(attr.__func__, self._names)
        elif callable(attr):
            value = types.MethodType(python_version(attr, self._names), self)
        else:
            return getattr(self._kernel_cls, name)
        setattr(self, name, value)
        return value

    # the leaf steps ------------------------------------------------------------------
    def wait(self, bar, parity, kind, stage, ktile, report):
        self._warp.step(("wait", bar.index, int(parity), f"k-tile {ktile}", self._warp.index))

    def copy_k_tile(self, loads, j, stage, bar):
        self._warp.step(("act", lambda: issue(self._cta, int(j), int(stage), bar.index)))

    def mma_k_tile(self, tiled_mma, f, stage):
        warp = self._warp.index
        self._warp.step(("act", lambda: start_read(self._cta, warp, int(stage))))
        self._warp.step(("act", lambda: end_read(self._cta, warp, int(stage))))


# ------------------------------------------------------------------ the scheduler


def run(ring_fn, kernel_cls, cfg, k_tiles: int, seed: int = 0) -> Verdict:
    """One random interleaving of `ring_fn` run by every warp of a CTA of `kernel_cls`
    (a kernels.tma_gemm.TmaGemm or subclass) with Config `cfg`, over `k_tiles` k-tiles."""
    from kernels.gemm_host import SWIZZLE_ROW_BYTES

    # the bytes one k-tile of A and of B bring: a 128-byte swizzle row per tile row
    cta = Cta(
        cfg.stages,
        k_tiles,
        cfg.warps,
        cfg.tile_m * SWIZZLE_ROW_BYTES,
        cfg.tile_n * SWIZZLE_ROW_BYTES,
    )
    parked = threading.Semaphore(0)
    warps = [Warp(w, parked) for w in range(cfg.warps)]
    try:
        for warp in warps:
            arch = _Arch(warp, cta)
            names = {**PLAIN_NAMES, "cute": _Cute(arch)}
            me = _Self(kernel_cls, cfg, cfg.stage_bytes, warp, cta, names)
            body = python_version(ring_fn, names)
            warp.start(
                lambda body=body, me=me, w=warp.index: body(
                    me,
                    k_tiles,
                    w,
                    BarrierPointer(0),
                    BarrierPointer(cfg.stages),
                    None,
                    None,
                    None,
                    None,
                )
            )
        return _schedule(cta, warps, random.Random(seed))
    finally:
        stop_all(warps, parked)


def _schedule(cta: Cta, warps: list[Warp], rng: random.Random) -> Verdict:
    for _ in range(MAX_STEPS):
        failed = next((w for w in warps if w.error is not None), None)
        if failed is not None:
            return error_verdict(failed, "the ring")
        live = [w for w in warps if not w.done]
        if not live and not cta.in_flight:
            return finished(cta)
        choices = [("warp", w) for w in live if _enabled(cta, w, warps)]
        choices += [("copy", i) for i in range(len(cta.in_flight))]
        if not choices:
            return deadlock(cta, live)
        kind, x = rng.choice(choices)
        try:
            if kind == "copy":
                copy = cta.in_flight.pop(x)
                if not live:
                    raise Found(
                        "race",
                        f"k-tile {copy.k_tile} landed after every warp had left "
                        f"the ring: nothing waited for it, and its stage is C's "
                        f"staging buffer in the epilogue",
                        "past the last k-tile",
                    )
                land(cta, copy)
            elif x.pending[0] == "sync":
                for w in live:
                    w.take(None)
            else:
                x.take(_take(cta, x.pending))
        except Found as found:
            return found.verdict
    return Verdict(
        "deadlock",
        f"no progress after {MAX_STEPS} steps: a warp spins on "
        f"try_wait for a phase that never completes",
        "wrong parity",
    )


def _enabled(cta: Cta, warp: Warp, warps: list[Warp]) -> bool:
    op = warp.pending
    if op[0] == "sync":  # every warp of the CTA there (one that already left never comes)
        return all(w.pending and w.pending[0] == "sync" for w in warps)
    if op[0] == "wait":
        bar = cta.barriers.bars[op[1]] if 0 <= op[1] < len(cta.barriers.bars) else None
        return bar is None or bar.try_wait(op[2])  # an uninitialised one fails when taken
    return True


def _take(cta: Cta, op):
    """Do a step's effect; a Found is handed to the warp (and raised in the run)."""
    if op[0] == "wait":
        cta.barriers.get(op[1], "a wait on")
        cta.waited[op[4]].add(op[1])
        return None
    return op[1]()


def verdict(
    ring_fn,
    kernel_cls,
    stages_list=(1, 2, 3, 4),
    k_tiles_list=(1, 3, 5, 9),
    seeds: int = 3,
    config=None,
) -> Verdict:
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
                    return Verdict(
                        found.kind,
                        f"{stages} stage(s), {k_tiles} k-tile(s): {found.detail}",
                        found.mistake,
                    )
    return Verdict(
        OK,
        f"no deadlock and no race over {len(stages_list)} ring depths x "
        f"{len(k_tiles_list)} lengths x {seeds} interleavings",
    )
