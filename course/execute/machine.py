"""The executor's GPU: a grid of clusters of CTAs; in each CTA, one greenlet per warp.

A launch runs its clusters one after another (a launch without `cluster=` has clusters of
one CTA); the CTAs of a cluster run together, their warps on one scheduler (`Cluster`), so
a warp may wait for a warp of another CTA (cluster barriers, remote mbarrier arrivals, TMA
multicast). Within a CTA each warp runs the kernel's own code on its own greenlet, its 32
lanes together (values that differ between lanes are course.execute.lanes.Lanes; branches
they take differently run masked, course.execute.simt). A warp runs until it blocks -- at
`sync_threads` (every warp of the CTA must arrive, with every lane), a named barrier (its
thread count), or until a condition holds (`block_until`: an mbarrier phase, the cluster
barrier) -- or finishes. Which warp runs next is a seeded choice: seed 0 runs warps in
order; other seeds shuffle them after every barrier, switch warps at shared-memory
accesses now and then, and let a cp.async or TMA copy land early or late. When no warp is
ready, blocked warps whose condition holds wake, a barrier every thread reached opens, or
the oldest async copy in flight lands (its bytes, then its mbarrier); when none of these
can happen, what they wait for is the verdict: a deadlock, named with who waits on what (a
barrier some threads never reach, an mbarrier phase with its parity and state).
Warp-wide instructions (ldmatrix, mma.sync) need all 32 lanes active, and get them: the
warp is one execution.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from greenlet import GreenletExit, greenlet

from course.execute import current, happens_before, hazards
from course.execute.lanes import Divergent, lanes
from course.execute.memory import SharedMemory
from course.execute.hazards import Hazard, Site, threads_text

WARP = 32
SMEM_CAPACITY = 232448  # bytes a CTA may use on sm_90 (227 KB)
MAX_STEPS = 2_000_000  # barriers and shared-memory accesses of one launch
# rounds in a row in which only pollers could go on, none saw its condition hold and nothing
# was in flight: their spin loops wait on what no one will bring (a deadlock)
IDLE_POLL_ROUNDS = 1000

# this process's CPU time when the running launch last made progress: CPU time, not the
# wall clock, so a machine busy with other work (CI's two cores, a class on one server) never
# makes a slow run look like a loop that does not advance
_PROGRESS = [time.process_time()]


def note_progress() -> None:
    """Something moved on: a warp woke from a wait that held or finished, a barrier opened,
    a cluster started. course.execute.runner's time limit counts from the last of these, so
    a slow kernel that moves on is never stopped, and a loop that never advances is."""
    _PROGRESS[0] = time.process_time()


def note(kind: str, detail: str, site) -> None:
    """A hazards.Note on the running launch (each kind and line once): what the kernel did
    that is no hazard, said beside the run's result, never raised."""
    from course.execute.hazards import Note

    notes = warp().cta.launch.notes
    if not any(n.kind == kind and n.site == site for n in notes):
        notes.append(Note(kind, detail, site))


def since_progress() -> float:
    """CPU seconds this process spent since the last progress (never more than the wall
    clock's: the time limit fires no sooner than it would by the wall clock)."""
    return time.process_time() - _PROGRESS[0]


# the running warp (course.execute.current: below memory, which asks it too)
current_warp = current.current_warp
warp = current.warp


@dataclass
class Options:
    """How one run goes: its interleaving seed and what it records."""

    seed: int = 0
    count_banks: bool = False
    preempt: float | None = None  # chance of a warp switch at a shared-memory access

    @property
    def preempt_chance(self) -> float:
        return (0.0 if self.seed == 0 else 0.05) if self.preempt is None else self.preempt


SYNC, NAMED, UNTIL, POLL = "sync_threads", "named barrier", "until", "poll"


@dataclass
class Wait:
    """Why a warp is blocked: at sync_threads (SYNC), at a named barrier (NAMED, `named`
    is (id, threads)), or until a condition holds (UNTIL: an mbarrier phase, the cluster
    barrier), `what` saying which for a deadlock's verdict."""

    site: Site
    kind: str = SYNC
    until: Callable[[], bool] | None = None
    what: object = ""  # a str, or a function giving one (the state when it is read)
    named: tuple | None = None
    holds: Callable[[], bool] | None = None  # a poll's own condition (POLL; None: unknown)
    on: str = ""  # the mbarrier waited on, by its shared-memory name (a deadlock's cause)

    def describe(self) -> str:
        return self.what() if callable(self.what) else (self.what or f"at {self.kind}")

    def idle_poll(self) -> bool:
        """A poll whose condition still does not hold: waking it changes nothing."""
        return self.kind == POLL and self.holds is not None and not self.holds()


@dataclass
class NamedGeneration:
    """A named barrier's generation under way: its thread count, the threads arrived so far,
    the warps waiting at it (bar.sync, in arrival order) and what every arriver knew
    (bar.arrive's knowledge too: course.execute.happens_before)."""

    count: int
    arrived: int = 0
    waiters: list = field(default_factory=list)
    knows: dict = field(default_factory=dict)


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
        self.cluster_gen = 0  # cluster barriers this warp has arrived at
        self.bulk_pending: list = []  # TMA stores not committed yet
        self.bulk_groups: deque = deque()  # committed bulk groups, oldest first
        self.clock = 0  # synchronisation events so far (course.execute.happens_before)
        self.barriers = 0  # barriers passed: what orders this warp's lanes with each other
        self.knows: dict = {}  # other warps' clocks this warp is ordered after
        self.touched: dict = {}  # shared memory -> this warp's clock stamp per byte
        self.elected: Site | None = None  # the line of the elect_one the warp is inside

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
        happens_before.stamp(self, mem, unit_addresses, width)
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
    """One CTA's warps and shared memory."""

    def __init__(self, launch: "Launch", block: tuple[int, int, int]):
        self.launch, self.block = launch, block
        self.dim = launch.block
        self.rng = random.Random(hash((launch.options.seed, block)) & 0xFFFFFFFF)
        self.preempt = launch.options.preempt_chance
        self._smem: SharedMemory | None = None
        threads = self.dim[0] * self.dim[1] * self.dim[2]
        self.threads = threads
        all_tids = np.arange(threads, dtype=np.int64)
        self.warps = [
            Warp(self, w, all_tids[w * WARP : (w + 1) * WARP]) for w in range(-(-threads // WARP))
        ]
        self.scheduler: greenlet | None = None
        self.cluster: "Cluster | None" = None
        self.named: dict[int, NamedGeneration] = {}  # barrier id -> its generation under way
        self.named_released: list[Warp] = []  # waiters of completed generations, not woken yet
        self.rank = 0  # block index in the cluster

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

    def sync_resolve(self) -> list[Warp] | None:
        """Every live warp of this CTA waits at sync_threads: open it (the warps, in the
        seed's order); some wait there while others finished: the deadlock; else None."""
        live = [w for w in self.warps if w.state != "done"]
        at_sync = [w for w in live if w.wait is not None and w.wait.kind == SYNC]
        if not at_sync or len(at_sync) != len(live):
            return None
        if len(live) == len(self.warps):
            sites = {w.wait.site for w in live}
            if len(sites) > 1:
                raise Hazard(hazards.DIVERGENT, _split(live), live[0].wait.site)
            happens_before.join(live)
            return self._order(live)
        done = [w for w in self.warps if w.state == "done"]
        raise Hazard(
            hazards.DEADLOCK,
            f"CTA {self.block}: {_tids(at_sync)} wait at sync_threads "
            f"({at_sync[0].wait.site.describe()}); {_tids(done)} finished without "
            f"reaching it: a barrier not every thread reaches never opens",
            at_sync[0].wait.site,
        )

    def named_arrive(self, w: Warp, bid: int, count: int, waits: bool, site: Site) -> None:
        """w's threads arrive at named barrier `bid` (bar.sync if `waits`, else bar.arrive).
        The arrival that brings the generation to `count` threads completes it: it releases
        exactly the warps that waited in it (later arrivals belong to the next generation)
        and hands them what every arriver knew."""
        gen = self.named.setdefault(bid, NamedGeneration(count))
        if gen.count != count:
            raise Hazard(
                hazards.DIVERGENT,
                f"named barrier {bid} reached with a count of {count} threads while "
                f"{gen.arrived} threads wait there with a count of {gen.count}",
                site,
            )
        gen.arrived += w.width
        happens_before.arrived(w, gen.knows)
        if waits:
            gen.waiters.append(w)
        if gen.arrived >= gen.count:
            del self.named[bid]
            # the warps that waited are ordered after every arriver; threads outside the
            # barrier are not (the Blackwell epilogue's 4 warps hand shared memory to the
            # TMA store across such a barrier)
            for x in gen.waiters:
                happens_before.released(x, gen.knows)
            self.named_released.extend(gen.waiters)

    def named_resolve(self) -> list[Warp]:
        """Warps released by named barriers (bar.sync id, count) whose generation completed:
        wake them, in the seed's order as sync_threads."""
        released, self.named_released = self.named_released, []
        return self._order(sorted(released, key=lambda w: w.index))

    def _order(self, warps):
        warps = list(warps)
        if self.launch.options.seed:
            self.rng.shuffle(warps)
        return warps


class Cluster:
    """The CTAs of one cluster, run together: their warps share one scheduler, so a warp of
    one CTA may wait for another CTA (cluster barriers, remote mbarriers, multicast). A
    launch without clusters runs clusters of one CTA. Async copies in flight (TMA) are
    the cluster's: they land when no warp can go on (or, under other seeds, early)."""

    def __init__(self, launch: "Launch", blocks: list[tuple[int, int, int]], index: tuple):
        self.launch, self.index = launch, index
        self.ctas = [Cta(launch, b) for b in blocks]
        for rank, cta in enumerate(self.ctas):
            cta.cluster, cta.rank = self, rank
        self.scheduler: greenlet | None = None
        self.inflight: deque = deque()  # async operations with a .land() method, oldest first
        self.arrivals: dict[int, int] = {}  # cluster barrier generation -> warps arrived
        self.rng = self.ctas[0].rng
        self.idle_rounds = 0  # rounds in a row in which only idle pollers could go on

    @property
    def warps(self) -> list[Warp]:
        return [w for cta in self.ctas for w in cta.warps]

    def run(self, fn, args: tuple) -> None:
        self.scheduler = greenlet.getcurrent()
        note_progress()
        for cta in self.ctas:
            cta.scheduler = self.scheduler
        for w in self.warps:
            w.glet = greenlet(lambda w=w: self._body(w, fn, args), parent=self.scheduler)
        ready = deque(self.ctas[0]._order(self.warps))
        try:
            while True:
                while ready:
                    w = ready.popleft()
                    if w.state == "done":
                        continue
                    w.state = "running"
                    current.set_warp(w)
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
                        current.set_warp(None)
                    if w.state == "ready":  # switched away at an access: back of the queue
                        ready.append(w)
                    if self.inflight and self.launch.options.seed and self.rng.random() < 0.1:
                        self.inflight.popleft().land()  # under other seeds: early landings
                woken = self._resolve()
                if woken is None:
                    break
                for w in woken:
                    w.state = "ready"
                ready.extend(woken)
        finally:
            for cta in self.ctas:
                cta._stop_all()
        while self.inflight:
            self.inflight.popleft().land()
        for cta in self.ctas:
            cta._land_the_rest()
        self._exit()

    def _exit(self) -> None:
        """Every warp finished: each CTA exits, and what it leaves behind is a hazard (a TMA
        store whose bulk group no wait_group retired, a tcgen05.commit's arrival never
        waited on, TMEM still allocated)."""
        for cta in self.ctas:
            for check in self.launch.at_exit:
                check(cta)

    def _body(self, w: Warp, fn, args):
        try:
            fn(*args)
        finally:
            w.state = "done"
            note_progress()

    def _resolve(self) -> list[Warp] | None:
        """No warp is ready: wake those whose condition now holds (an mbarrier phase, the
        cluster barrier), open a sync_threads or named barrier every thread reached, land
        the oldest async copy in flight; with none of these, the deadlock or the end."""
        while True:
            live = [w for w in self.warps if w.state != "done"]
            if not live:
                return None
            woken = [w for w in live if w.wait.kind in (UNTIL, POLL) and w.wait.until()]
            for cta in self.ctas:
                woken.extend(cta.named_resolve())
                woken.extend(cta.sync_resolve() or [])
            if woken:
                if self.inflight and all(w.wait.kind == POLL for w in woken):
                    self.inflight.popleft().land()  # only pollers can go on: time passes
                self._count_idle(woken, live)
                return woken
            if self.inflight:
                self.inflight.popleft().land()
                continue
            raise _deadlock(live, [w for w in self.warps if w.state == "done"])

    def _count_idle(self, woken: list[Warp], live: list[Warp]) -> None:
        """Only pollers can go on, none sees its condition hold, and nothing is in flight:
        an idle round. IDLE_POLL_ROUNDS of them in a row (the pollers' loops did nothing
        that woke anyone) is a deadlock, named now rather than by the time limit."""
        if self.inflight or not all(w.wait.idle_poll() for w in woken):
            self.idle_rounds = 0
            if not all(w.wait.kind == POLL for w in woken):
                note_progress()
            return
        self.idle_rounds += 1
        if self.idle_rounds >= IDLE_POLL_ROUNDS:
            raise _deadlock(live, [w for w in self.warps if w.state == "done"])

    def cluster_arrive(self, w: Warp) -> None:
        w.cluster_gen += 1
        self.arrivals[w.cluster_gen] = self.arrivals.get(w.cluster_gen, 0) + 1
        if self.arrivals[w.cluster_gen] == len(self.warps):
            happens_before.join(self.warps)  # every thread of the cluster passed it


def _tids(warps: list[Warp]) -> str:
    return threads_text(np.concatenate([w.tids for w in warps]).tolist())


def _split(warps: list[Warp]) -> str:
    groups: dict[Site, list[Warp]] = {}
    for w in warps:
        groups.setdefault(w.wait.site, []).append(w)
    parts = [f"{_tids(ws)} at {site.describe()}" for site, ws in groups.items()]
    return "threads reach sync_threads at different lines: " + "; ".join(parts)


def _deadlock(live: list[Warp], done: list[Warp]) -> Hazard:
    """No warp can go on and nothing is in flight: who waits for what, and who finished."""
    parts, waits = _who_waits(live)
    tail = f"; {_tids(done)} finished" if done else ""
    return Hazard(
        hazards.DEADLOCK,
        "no thread can go on: " + "; ".join(parts) + tail + " (nothing is in flight that could "
        "complete what they wait for)",
        live[0].wait.site,
        hazards.Cause(
            hazards.BLOCKED,
            _ctas(live),
            expected=tuple(sorted({w.wait.on for w in live if w.wait.on})),
            observed=tuple(waits),
        ),
    )


def _who_waits(blocked: list[Warp]) -> tuple[list[str], tuple]:
    """What each blocked warp waits on: sentences (warps grouped by CTA, wait and line) and
    the same as data, (CTA block, warp index, what, line) per warp."""
    groups: dict = {}
    waits = []
    for w in blocked:
        what = w.wait.describe()
        waits.append((w.cta.block, w.index, what, w.wait.site))
        groups.setdefault((w.cta.block, what, w.wait.site), []).append(w)
    parts = [
        f"{_tids(ws)} of CTA {block} wait {what} ({site.describe()})"
        for (block, what, site), ws in groups.items()
    ]
    return parts, tuple(waits)


def _ctas(warps: list[Warp]) -> str:
    return "CTAs " + ", ".join(str(b) for b in sorted({w.cta.block for w in warps}))


def livelock(frame, seconds: float) -> Hazard:
    """The time ran out with a warp still running (a loop that never advances: a CLC loop
    that never moves to its next tile, a spin on a value nobody writes): the loop's line
    (the kernel line `frame` was running), the running warp and what the others wait on."""
    site = hazards.site_in(frame)
    w = current.current_warp()
    if w is None:
        return Hazard(
            hazards.HANG,
            f"still running after {seconds:g} s without progress on the CPU executor, in "
            f"host code: a loop that does not end?",
            site,
            hazards.Cause(hazards.LIVELOCK, "the host code"),
        )
    others = [x for x in w.cta.cluster.warps if x is not w and x.state == "blocked"]
    parts, waits = _who_waits(others)
    return Hazard(
        hazards.HANG,
        f"warp {w.index} of CTA {w.cta.block} still runs the loop at {site.describe()} after "
        f"{seconds:g} s without progress on the CPU executor: a loop that never advances"
        + "".join(f"; {p}" for p in parts),
        site,
        hazards.Cause(hazards.LIVELOCK, f"warp {w.index} of CTA {w.cta.block}", observed=waits),
    )


def block_until(until: Callable[[], bool], what: str, site: Site, on: str = "") -> None:
    """Block the current warp until `until()` holds (checked when no warp is ready, and again
    when the warp resumes: warps woken before it may have changed what it waits for); `on`:
    the mbarrier it waits on, if it is one."""
    while not until():
        warp().block(Wait(site, UNTIL, until, what, on=on))


def poll(what, site: Site, holds: Callable[[], bool] | None = None, on: str = "") -> None:
    """A poll that found its condition `holds` false (mbarrier.test_wait in a spin loop): the
    warp lets the others run, and resumes when none is ready (an async copy may land first);
    pollers that keep finding it false with nothing else going on are a deadlock."""
    w = warp()
    w.block(Wait(site, POLL, lambda: True, what, holds=holds, on=on))


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

    def __init__(self, fn, args: tuple, grid, block, options: Options, cluster=(1, 1, 1),
                 at_exit: tuple = ()):  # fmt: skip
        """at_exit: what each CTA's exit checks, each called with the CTA (the units' own
        checks, given by the launcher: course.execute.launches.AT_EXIT)."""
        self.fn, self.args = fn, args
        self.at_exit = tuple(at_exit)
        self.grid = _dim3(grid)
        self.block = _dim3(block)
        self.cluster = _dim3(cluster)
        if any(g % c for g, c in zip(self.grid, self.cluster)):
            raise Hazard(
                hazards.CRASH,
                f"a grid of {self.grid} is not a whole number of {self.cluster} clusters",
            )
        if self.cluster[0] * self.cluster[1] * self.cluster[2] > 16:
            raise Hazard(
                hazards.CRASH, f"a cluster of {self.cluster}: at most 16 CTAs (8 portable)"
            )
        self.options = options
        self.steps = 0
        self.smems: list[SharedMemory] = []
        self.cancelled: list = []  # clusters CLC cancelled (course.execute.launch_control)
        self.notes: list = []  # hazards.Note: what the run did that is no hazard (note())
        threads = self.block[0] * self.block[1] * self.block[2]
        if not 1 <= threads <= 1024:
            raise Hazard(hazards.CRASH, f"a block of {threads} threads: the GPU takes 1 to 1024")

    def run(self) -> None:
        if current.current_warp() is not None:
            raise hazards.Unmodelled("launching a kernel from inside a kernel")
        (gx, gy, gz), (cx, cy, cz) = self.grid, self.cluster
        # clusters not started yet: Cluster Launch Control may cancel them
        # (course.execute.launch_control)
        self.pending = deque(
            (x, y, z)
            for z, y, x in itertools.product(range(gz // cz), range(gy // cy), range(gx // cx))
        )
        while self.pending:
            x, y, z = self.pending.popleft()
            blocks = [
                (x * cx + i, y * cy + j, z * cz + k)
                for k, j, i in itertools.product(range(cz), range(cy), range(cx))
            ]
            Cluster(self, blocks, (x, y, z)).run(self.fn, self.args)


def _dim3(v) -> tuple[int, int, int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    v = [int(x) for x in v] + [1] * (3 - len(v))
    return v[0], v[1], v[2]


# an instruction CuTe DSL lowers with its own elect.sync (membermask 0xffffffff) around it
SELF_ELECTED = (
    "{} (CuTe DSL issues it through its own elect.sync: the whole warp calls it, never "
    "inside elect_one)"
)


def collective(operation: str, site: Site, needs: str = "the whole warp", lanes32=False) -> Warp:
    """The current warp at an instruction its lanes issue together: a .sync.aligned one
    (ldmatrix, mma.sync, wgmma, tcgen05.ld, tcgen05.alloc), elect.sync itself, or one CuTe
    DSL wraps in its own elect.sync (a TMA copy, tcgen05.mma, tcgen05.cp: its docs say
    never to put them inside elect_one). Reached by part of the warp -- inside elect_one,
    behind a branch on the lane -- it waits on the GPU for lanes that never come (the
    H200 hangs): a COLLECTIVE hazard with who came, who was expected and where.
    `lanes32`: the instruction also needs all 32 lanes to exist (a whole warp's fragments)."""
    w = warp()
    if w.full() and (w.width == WARP or not lanes32):
        return w
    came = tuple(int(t) for t in w.active_tids())
    first = int(w.tids[0])
    expected = tuple(range(first, first + WARP)) if lanes32 else tuple(int(t) for t in w.tids)
    cause = hazards.Cause(hazards.PART_OF_THE_LANES, operation, expected, came)
    missing = [t for t in expected if t not in set(came)]
    how = (
        f"inside the elect_one at {w.elected.describe()}"
        if w.elected is not None
        else "behind a branch the lanes of the warp take differently"
    )
    raise Hazard(
        hazards.COLLECTIVE,
        f"{operation} needs {needs}, but warp {w.index} of CTA {w.cta.block} reaches it "
        f"with {threads_text(came)} only, {threads_text(missing)} not ({how}): on a "
        f"GPU it waits for lanes that never come (a hang) or its result is undefined",
        site,
        cause,
    )


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
    cta = w.cta
    if 0 in cta.named:  # a bar.arrive on barrier 0 began this generation: count with it
        cta.named_arrive(w, 0, cta.threads, True, site)
        w.block(_named_wait(0, cta.threads, site))
        return
    w.block(Wait(site))


def named_barrier(barrier_id: int, threads: int, site: Site, wait: bool = True) -> None:
    """bar.sync id, threads: blocks until `threads` threads (whole warps) have arrived;
    bar.arrive (wait=False): counts this warp's threads towards it and goes on."""
    w = warp()
    cta, bid, threads = w.cta, int(barrier_id), int(threads)
    if bid == 0 and threads == cta.threads and wait:
        barrier(site)  # bar.sync 0 with every thread: sync_threads
        return
    if threads % WARP or not 0 < threads <= w.cta.threads:
        raise Hazard(
            hazards.CRASH,
            f"a named barrier of {threads} threads: a multiple of 32, at most the CTA's "
            f"{w.cta.threads}",
            site,
        )
    if not w.full():
        raise Hazard(hazards.DEADLOCK, "a named barrier reached by part of a warp", site)
    if bid == 0 and threads == cta.threads:  # warps already at sync_threads arrived first
        for x in cta.warps:
            if x.state == "blocked" and x.wait.kind == SYNC:
                x.wait.kind, x.wait.named = NAMED, (0, threads)
                x.wait.what = f"at named barrier 0 ({threads} threads)"
                cta.named_arrive(x, 0, threads, True, x.wait.site)
    cta.named_arrive(w, bid, threads, wait, site)
    if wait:
        w.block(_named_wait(bid, threads, site))


def _named_wait(bid: int, threads: int, site: Site) -> Wait:
    return Wait(
        site, NAMED, named=(bid, threads), what=f"at named barrier {bid} ({threads} threads)"
    )
