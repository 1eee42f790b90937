"""The executor's GPU: a grid of CTAs, each a set of threads run as greenlets.

A launch runs its CTAs one after another. Within a CTA every thread runs the kernel's own
code on its own greenlet until it blocks -- at `sync_threads` (every thread of the CTA must
come), at a warp-wide instruction (`ldmatrix`, `mma.sync`: all lanes of the warp must
come, then it is computed for the 32 of them at once) -- or finishes. The order the
threads run in is a seeded choice: seed 0 runs warps in order; other seeds shuffle the
warps after every barrier, preempt threads at shared-memory accesses now and then, and let
a cp.async land early or late. When no thread can go on, what they wait for is the
verdict: a barrier some threads finished without reaching is a deadlock, named with who
waits where.
"""
from __future__ import annotations

import itertools
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from greenlet import GreenletExit, greenlet

from course.execute import report
from course.execute.memory import SharedMemory
from course.execute.report import Hazard, Site, threads_text

WARP = 32
SMEM_CAPACITY = 232448  # bytes a CTA may use on sm_90 (227 KB)
MAX_STEPS = 5_000_000  # blocking points and shared-memory accesses of one launch

_CURRENT = None


def current_thread() -> "Thread | None":
    return _CURRENT


def thread() -> "Thread":
    if _CURRENT is None:
        raise report.Unmodelled("a thread-only call (thread_idx, sync_threads, ...) on the "
                                "host side")
    return _CURRENT


@dataclass
class Options:
    """How one run goes: its interleaving seed and what it records."""

    seed: int = 0
    count_banks: bool = False
    preempt: float | None = None  # chance of a switch at a shared-memory access

    @property
    def preempt_chance(self) -> float:
        return (0.0 if self.seed == 0 else 0.02) if self.preempt is None else self.preempt


@dataclass
class Wait:
    kind: str  # "barrier" or "collective"
    site: Site
    op: str = ""
    payload: Any = None
    run: Callable | None = None  # a collective: run(list of the lanes' waits)
    thread: "Thread | None" = None


class Thread:
    """One GPU thread: its indices, what it waits for, its cp.async groups."""

    def __init__(self, cta: "Cta", tid: int, idx: tuple[int, int, int]):
        self.cta, self.tid, self.idx = cta, tid, idx
        self.warp, self.lane = tid // WARP, tid % WARP
        self.state = "ready"  # ready, running, blocked, done
        self.wait: Wait | None = None
        self.pending: list = []  # cp.async copies not committed yet
        self.groups: deque = deque()  # committed groups, oldest first
        self.site_counts: dict = {}
        self.glet: greenlet | None = None
        self.result = None

    def __repr__(self) -> str:
        return f"Thread({self.tid})"

    # --- blocking
    def block(self, wait: Wait):
        wait.thread = self
        self.state, self.wait = "blocked", wait
        self.cta.step()
        self.cta.scheduler.switch()
        self.wait = None
        return self.result

    def note_smem(self, mem: SharedMemory, site: Site, elems, dtype, width: int = 0) -> None:
        """Every shared-memory access passes here: count it, log it for the bank model,
        and maybe let another thread run first."""
        cta = self.cta
        cta.step()
        if mem.count_banks:
            sid = mem.site_id(site)
            n = self.site_counts.get(sid, 0)
            self.site_counts[sid] = n + 1
            size = dtype.storage.itemsize
            mem.note_access((sid, self.warp, n), self.lane, elems * size, width or size)
        if cta.preempt and cta.rng.random() < cta.preempt:
            self.state = "ready"
            cta.scheduler.switch()


class Cta:
    """One CTA's threads, shared memory and barrier epoch."""

    def __init__(self, launch: "Launch", block: tuple[int, int, int]):
        self.launch, self.block = launch, block
        self.dim = launch.block
        self.rng = random.Random(hash((launch.options.seed, block)) & 0xFFFFFFFF)
        self.preempt = launch.options.preempt_chance
        self.epoch = 0
        self._smem: SharedMemory | None = None
        self.smem_used = 0
        bx, by, bz = self.dim
        self.threads = [Thread(self, x + bx * (y + by * z), (x, y, z))
                        for z in range(bz) for y in range(by) for x in range(bx)]
        self.threads.sort(key=lambda t: t.tid)
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
            raise Hazard(report.HANG, f"more than {MAX_STEPS:,} steps in one launch: a loop "
                                      f"that does not end, or a problem too large for the "
                                      f"CPU executor", report.site(3))

    # --- running
    def run(self, fn: Callable, args: tuple) -> None:
        global _CURRENT
        self.scheduler = greenlet.getcurrent()
        for t in self.threads:
            t.glet = greenlet(lambda t=t: self._body(t, fn, args), parent=self.scheduler)
        ready = deque(self._order(self.threads))
        try:
            while True:
                while ready:
                    t = ready.popleft()
                    if t.state == "done":
                        continue
                    t.state = "running"
                    _CURRENT = t
                    try:
                        t.glet.switch()
                    except (Hazard, report.Unmodelled):
                        raise
                    except Exception as exc:  # the kernel's own error: which thread, where
                        raise _crash(t, exc) from exc
                    finally:
                        _CURRENT = None
                    if t.state == "ready":  # preempted: back of the queue
                        ready.append(t)
                woken = self._resolve()
                if woken is None:
                    break
                ready.extend(woken)
        finally:
            self._stop_all()
        self._land_the_rest()

    def _body(self, t: Thread, fn, args):
        try:
            fn(*args)
        except GreenletExit:
            raise
        finally:
            t.state = "done"

    def _order(self, threads):
        """Warps in order at seed 0, shuffled otherwise; lanes in order."""
        warps = sorted({t.warp for t in threads})
        if self.launch.options.seed:
            self.rng.shuffle(warps)
        rank = {w: i for i, w in enumerate(warps)}
        return sorted(threads, key=lambda t: (rank[t.warp], t.lane))

    def _stop_all(self) -> None:
        for t in self.threads:
            if t.glet is not None and not t.glet.dead:
                try:
                    t.glet.throw(GreenletExit)
                except GreenletExit:
                    pass
                except BaseException:  # noqa: BLE001 -- already failing: the first error wins
                    pass

    def _land_the_rest(self) -> None:
        if self._smem is not None:
            for copy in list(self._smem.copies.values()):
                self._smem.retire(copy)

    # --- when every live thread waits
    def _resolve(self) -> list[Thread] | None:
        live = [t for t in self.threads if t.state != "done"]
        if not live:
            return None
        by_warp: dict[int, list[Thread]] = {}
        for t in live:
            by_warp.setdefault(t.warp, []).append(t)
        woken: list[Thread] = []
        for warp, lanes in by_warp.items():
            waits = [t for t in lanes if t.wait and t.wait.kind == "collective"]
            if not waits:
                continue
            everyone = [t for t in self.threads if t.warp == warp]
            if len(waits) != len(everyone):
                continue  # some lanes elsewhere: maybe they come after a barrier
            sites = {t.wait.site for t in waits}
            if len(sites) > 1:
                raise Hazard(report.DIVERGENT, _split(waits, "a warp-wide instruction"),
                             waits[0].wait.site)
            results = waits[0].wait.run([t.wait for t in waits])
            for t, r in zip(waits, results or [None] * len(waits)):
                t.result, t.state = r, "ready"
            woken.extend(waits)
        if woken:
            return woken
        at_barrier = [t for t in live if t.wait and t.wait.kind == "barrier"]
        if len(at_barrier) == len(self.threads):
            sites = {t.wait.site for t in at_barrier}
            if len(sites) > 1:
                raise Hazard(report.DIVERGENT, _split(at_barrier, "sync_threads"),
                             at_barrier[0].wait.site)
            self.epoch += 1
            for t in at_barrier:
                t.result, t.state = None, "ready"
            return self._order(at_barrier)
        raise Hazard(report.DEADLOCK, self._deadlock_text(live), live[0].wait.site
                     if live[0].wait else None)

    def _deadlock_text(self, live: list[Thread]) -> str:
        done = [t.tid for t in self.threads if t.state == "done"]
        groups: dict[tuple, list[int]] = {}
        for t in live:
            key = (t.wait.op or t.wait.kind, t.wait.site) if t.wait else ("?", report.UNKNOWN)
            groups.setdefault(key, []).append(t.tid)
        parts = [f"{threads_text(tids)} wait at {op} ({site.describe()})"
                 for (op, site), tids in groups.items()]
        if done:
            parts.append(f"{threads_text(done)} finished without reaching it")
        return f"CTA {self.block}: " + "; ".join(parts) + ": a barrier not every thread " \
                                                          "reaches never opens"


def _crash(t: Thread, exc: Exception) -> Hazard:
    from course.execute.oracle import CuteError

    what = "CuTe DSL refused a call" if isinstance(exc, CuteError) else \
        f"raised {type(exc).__name__}"
    return Hazard(report.CRASH, f"{threads_text([t.tid])} of CTA {t.cta.block} {what}: {exc}",
                  report.site_of_traceback(exc.__traceback__))


def _split(waiting: list[Thread], what: str) -> str:
    groups: dict[Site, list[int]] = {}
    for t in waiting:
        groups.setdefault(t.wait.site, []).append(t.tid)
    parts = [f"{threads_text(tids)} at {site.describe()}" for site, tids in groups.items()]
    return f"threads reach {what} at different lines: " + "; ".join(parts)


class Launch:
    """One kernel launch: grid, block, the kernel function and its arguments."""

    def __init__(self, fn: Callable, args: tuple, grid, block, options: Options):
        self.fn, self.args = fn, args
        self.grid = _dim3(grid)
        self.block = _dim3(block)
        self.options = options
        self.steps = 0
        self.smems: list[SharedMemory] = []
        threads = self.block[0] * self.block[1] * self.block[2]
        if not 1 <= threads <= 1024:
            raise Hazard(report.CRASH, f"a block of {threads} threads: the GPU takes 1 to 1024")

    def run(self) -> None:
        if _CURRENT is not None:
            raise report.Unmodelled("launching a kernel from inside a kernel")
        gx, gy, gz = self.grid
        for z, y, x in itertools.product(range(gz), range(gy), range(gx)):
            Cta(self, (x, y, z)).run(self.fn, self.args)


def _dim3(v) -> tuple[int, int, int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    v = [int(x) for x in v] + [1] * (3 - len(v))
    return v[0], v[1], v[2]


# ---------------------------------------------------------------- what a thread asks

def barrier(site: Site) -> None:
    thread().block(Wait("barrier", site, "sync_threads"))


def collective(op: str, site: Site, payload, run: Callable):
    """Wait until every lane of the warp comes here; run(waits) computes the op for all of
    them and returns each lane's result."""
    return thread().block(Wait("collective", site, op, payload, run))
