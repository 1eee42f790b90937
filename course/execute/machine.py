"""The executor's GPU: a grid of CTAs; in each CTA, one greenlet per warp.

A launch runs its CTAs one after another. Within a CTA each warp runs the kernel's own code
on its own greenlet, its 32 lanes together (values that differ between lanes are
course.execute.lanes.Lanes; branches they take differently run masked,
course.execute.simt). A warp runs until it reaches `sync_threads` -- where every warp of
the CTA must arrive, with every lane -- or finishes. Which warp runs next is a seeded
choice: seed 0 runs warps in order; other seeds shuffle them after every barrier, switch
warps at shared-memory accesses now and then, and let a cp.async land early or late. When
no warp can go on, what they wait for is the verdict: a barrier some threads never reach
(they finished, or a branch took them around it) is a deadlock, named with who waits where.
Warp-wide instructions (ldmatrix, mma.sync) need all 32 lanes active, and get them: the
warp is one execution.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from dataclasses import dataclass

import numpy as np
from greenlet import GreenletExit, greenlet

from course.execute import hazards
from course.execute.lanes import Divergent, lanes
from course.execute.memory import SharedMemory
from course.execute.hazards import Hazard, Site, threads_text

WARP = 32
SMEM_CAPACITY = 232448  # bytes a CTA may use on sm_90 (227 KB)
MAX_STEPS = 2_000_000  # barriers and shared-memory accesses of one launch

_CURRENT = None


def current_warp() -> "Warp | None":
    return _CURRENT


def warp() -> "Warp":
    if _CURRENT is None:
        raise hazards.Unmodelled("a thread-only call (thread_idx, sync_threads, ...) in host code")
    return _CURRENT


@dataclass
class Options:
    """How one run goes: its interleaving seed and what it records."""

    seed: int = 0
    count_banks: bool = False
    preempt: float | None = None  # chance of a warp switch at a shared-memory access

    @property
    def preempt_chance(self) -> float:
        return (0.0 if self.seed == 0 else 0.05) if self.preempt is None else self.preempt


@dataclass
class Wait:
    site: Site


class Warp:
    """One warp: its lanes' thread ids and indices, its active mask, its cp.async groups."""

    def __init__(self, cta: "Cta", index: int, tids: np.ndarray):
        self.cta, self.index, self.tids = cta, index, tids
        self.width = len(tids)
        bx, by, _ = cta.dim
        self.idx = (tids % bx, (tids // bx) % by, tids // (bx * by))
        self.mask: np.ndarray | None = None  # None: every lane active
        self.state = "ready"  # ready, running, blocked, done
        self.wait: Wait | None = None
        self.pending: list = []  # cp.async copies not committed yet
        self.groups: deque = deque()  # committed groups, oldest first
        self.site_counts: dict = {}
        self.glet: greenlet | None = None

    def __repr__(self) -> str:
        return f"Warp({self.index})"

    def thread_idx(self) -> tuple:
        return tuple(lanes(v) for v in self.idx)

    def active_tids(self) -> np.ndarray:
        return self.tids if self.mask is None else self.tids[self.mask]

    def full(self) -> bool:
        return self.mask is None or bool(self.mask.all())

    def block(self, wait: Wait) -> None:
        self.state, self.wait = "blocked", wait
        self.cta.step()
        self.cta.scheduler.switch()
        self.wait = None

    def note_smem(
        self, mem: SharedMemory, site: Site, unit_addresses: np.ndarray, width: int
    ) -> None:
        """Every shared-memory instruction passes here: count it, log each lane's access
        units for the bank model, and maybe let another warp run first."""
        cta = self.cta
        cta.step()
        if mem.count_banks:
            sid = mem.site_id(site)
            n = self.site_counts.get(sid, 0)
            self.site_counts[sid] = n + 1
            mem.note_access((sid, self.index, n), self.lanes_active(), unit_addresses, width)
        if cta.preempt and cta.rng.random() < cta.preempt:
            self.state = "ready"
            cta.scheduler.switch()

    def lanes_active(self) -> np.ndarray:
        lanes_ = self.tids % WARP
        return lanes_ if self.mask is None else lanes_[self.mask]


class Cta:
    """One CTA's warps, shared memory and barrier epoch."""

    def __init__(self, launch: "Launch", block: tuple[int, int, int]):
        self.launch, self.block = launch, block
        self.dim = launch.block
        self.rng = random.Random(hash((launch.options.seed, block)) & 0xFFFFFFFF)
        self.preempt = launch.options.preempt_chance
        self.epoch = 0
        self._smem: SharedMemory | None = None
        threads = self.dim[0] * self.dim[1] * self.dim[2]
        self.threads = threads
        all_tids = np.arange(threads, dtype=np.int64)
        self.warps = [
            Warp(self, w, all_tids[w * WARP : (w + 1) * WARP]) for w in range(-(-threads // WARP))
        ]
        self.scheduler: greenlet | None = None

    @property
    def smem(self) -> SharedMemory:
        if self._smem is None:
            self._smem = SharedMemory(SMEM_CAPACITY, self, self.launch.options.count_banks)
            self.launch.smems.append(self._smem)
        return self._smem

    def step(self) -> None:
        self.launch.steps += 1
        if self.launch.steps > MAX_STEPS:
            raise Hazard(
                hazards.HANG,
                f"more than {MAX_STEPS:,} steps in one launch: a loop "
                f"that does not end, or a problem too large for the "
                f"CPU executor",
                hazards.site(3),
            )

    # --- running
    def run(self, fn, args: tuple) -> None:
        global _CURRENT
        self.scheduler = greenlet.getcurrent()
        for w in self.warps:
            w.glet = greenlet(lambda w=w: self._body(w, fn, args), parent=self.scheduler)
        ready = deque(self._order(self.warps))
        try:
            while True:
                while ready:
                    w = ready.popleft()
                    if w.state == "done":
                        continue
                    w.state = "running"
                    _CURRENT = w
                    try:
                        w.glet.switch()
                    except (Hazard, hazards.Unmodelled):
                        raise
                    except Divergent as exc:
                        raise hazards.Unmodelled(
                            f"a value that differs between the threads of a warp where Python "
                            f"needs one ({exc}), at "
                            f"{hazards.site_of_traceback(exc.__traceback__).describe()}"
                        ) from exc
                    except Exception as exc:  # the kernel's own error: which warp, where
                        raise _crash(w, exc) from exc
                    finally:
                        _CURRENT = None
                    if w.state == "ready":  # switched away at an access: back of the queue
                        ready.append(w)
                woken = self._resolve()
                if woken is None:
                    break
                ready.extend(woken)
        finally:
            self._stop_all()
        self._land_the_rest()

    def _body(self, w: Warp, fn, args):
        try:
            fn(*args)
        finally:
            w.state = "done"

    def _order(self, warps):
        warps = list(warps)
        if self.launch.options.seed:
            self.rng.shuffle(warps)
        return warps

    def _stop_all(self) -> None:
        for w in self.warps:
            if w.glet is not None and not w.glet.dead:
                try:
                    w.glet.throw(GreenletExit)
                except BaseException:  # noqa: BLE001 -- already failing: the first error wins
                    pass

    def _land_the_rest(self) -> None:
        if self._smem is not None:
            for copy in list(self._smem.copies.values()):
                self._smem.retire(copy)

    def _resolve(self) -> list[Warp] | None:
        """Every warp waits or is done: open the barrier, or name the deadlock."""
        live = [w for w in self.warps if w.state != "done"]
        if not live:
            return None
        if len(live) == len(self.warps):
            sites = {w.wait.site for w in live}
            if len(sites) > 1:
                raise Hazard(hazards.DIVERGENT, _split(live), live[0].wait.site)
            self.epoch += 1
            for w in live:
                w.state = "ready"
            return self._order(live)
        done = [w for w in self.warps if w.state == "done"]
        raise Hazard(
            hazards.DEADLOCK,
            f"CTA {self.block}: {_tids(live)} wait at sync_threads "
            f"({live[0].wait.site.describe()}); {_tids(done)} finished without "
            f"reaching it: a barrier not every thread reaches never opens",
            live[0].wait.site,
        )


def _tids(warps: list[Warp]) -> str:
    return threads_text(np.concatenate([w.tids for w in warps]).tolist())


def _split(warps: list[Warp]) -> str:
    groups: dict[Site, list[Warp]] = {}
    for w in warps:
        groups.setdefault(w.wait.site, []).append(w)
    parts = [f"{_tids(ws)} at {site.describe()}" for site, ws in groups.items()]
    return "threads reach sync_threads at different lines: " + "; ".join(parts)


def _crash(w: Warp, exc: Exception) -> Hazard:
    from course.execute.oracle import CuteError

    what = (
        "CuTe DSL refused a call" if isinstance(exc, CuteError) else f"raised {type(exc).__name__}"
    )
    return Hazard(
        hazards.CRASH,
        f"{threads_text(w.tids.tolist())} of CTA {w.cta.block} {what}: {exc}",
        hazards.site_of_traceback(exc.__traceback__),
    )


class Launch:
    """One kernel launch: grid, block, the kernel function and its arguments."""

    def __init__(self, fn, args: tuple, grid, block, options: Options):
        self.fn, self.args = fn, args
        self.grid = _dim3(grid)
        self.block = _dim3(block)
        self.options = options
        self.steps = 0
        self.smems: list[SharedMemory] = []
        threads = self.block[0] * self.block[1] * self.block[2]
        if not 1 <= threads <= 1024:
            raise Hazard(hazards.CRASH, f"a block of {threads} threads: the GPU takes 1 to 1024")

    def run(self) -> None:
        if _CURRENT is not None:
            raise hazards.Unmodelled("launching a kernel from inside a kernel")
        gx, gy, gz = self.grid
        for z, y, x in itertools.product(range(gz), range(gy), range(gx)):
            Cta(self, (x, y, z)).run(self.fn, self.args)


def _dim3(v) -> tuple[int, int, int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    v = [int(x) for x in v] + [1] * (3 - len(v))
    return v[0], v[1], v[2]


def barrier(site: Site) -> None:
    w = warp()
    if not w.full():
        skipped = w.tids[~w.mask]
        raise Hazard(
            hazards.DEADLOCK,
            f"{threads_text(w.active_tids().tolist())} reach sync_threads while "
            f"{threads_text(skipped.tolist())} of the same warp go around it (a "
            f"branch the threads take differently): a barrier not every thread "
            f"reaches never opens",
            site,
        )
    w.block(Wait(site))
