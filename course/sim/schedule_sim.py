"""Notebook 15's simulator: many SMs, CTA pairs, static vs CLC scheduling, TMEM slots.

    from course.sim import schedule_sim
    s = schedule_sim.simulate(sms=8, cluster=2, stages=4, acc_slots=2, scheduler="clc")
    s.total_cycles, s.utilisation, s.per_sm_utilisation
    print(schedule_sim.handshake_lesson())   # a deep pipeline hides the pair's handshake
    print(schedule_sim.pingpong_lesson())    # two TMEM accumulators hide the epilogue
    print(schedule_sim.scheduler_lesson())   # CLC balances uneven work, static does not

Results are data; course.viz.schedule_pictures draws them (the per-SM timeline by tile,
each lesson's chart).

It extends course.sim.pipeline_sim (same engine, mbarriers and Pipeline rings) to the
kernel of notebook 15 (the seed's `gemm_sol_clc_multicast_4_stage_pipeline`):

* The output is a grid of 128x128 CTA tiles. With `cluster=2` two CTAs on two SMs form
  a pair that computes a 256x128 tile with one paired MMA (cta_group::2) issued by the
  leader; each CTA loads its 128 rows of A and half of B (the shared operand), so a
  pair moves 3/4 of the bytes two lone CTAs would.
* The pair's handshake, as the seed builds it: both CTAs' TMA copies complete on the
  LEADER's full barrier (the follower's through the cluster, `handshake_latency`
  later: the barrier-aliasing trick); only the leader arms it with arrive.expect_tx
  for the bytes of both CTAs; the leader's MMA commit is multicast to both CTAs' empty
  barriers (the follower's again `handshake_latency` later). The follower's TMA warp
  waits on its own empty barrier before refilling its stage. Per stage and round trip
  the follower pays 2 x handshake_latency on top of load + MMA: with enough stages in
  flight that is hidden, with few it is not.
* TMEM holds `acc_slots` accumulators. The MMA warp takes a free slot (acc empty)
  before the first MMA of a tile and commits acc full after the last; the epilogue
  warps of both CTAs drain their halves and free the slot on the leader. With 2 slots
  the epilogue of tile n overlaps the MMAs of tile n+1 (ping-pong).
* Scheduling. "static": one persistent cluster per SM pair, tiles c, c+G, c+2G, ...
  "clc": Cluster Launch Control: the grid has one cluster per tile; as many start as
  there are free SM pairs; when a cluster's TMA warp has issued its tile's loads it
  sends clusterlaunchcontrol.try_cancel (`clc_latency`), which cancels the launch of
  the lowest not-yet-launched cluster and hands its tile over, or fails when none is
  left; the answer reaches every warp of the pair through a small mbarrier ring
  (PipelineClcFetchAsync). "launch": no persistence, one cluster per tile, each new
  launch on a freed SM pair costs `launch_latency`.
* SMs can be busy with other work at the start (`sm_busy_until`), and tiles can carry
  different amounts of work (`tile_k`, k-chunks per tile): that is where dynamic
  scheduling pays.
* Loads share one memory system of `bytes_per_cycle` per SM (None: unlimited), served
  in the order they are issued; issuing one costs the TMA warp `tma_issue_cycles`.

Cycle counts are illustrative (chosen so an M256 paired k-chunk of 256 cycles is fed
by loads of ~500 cycles), not measured: the simulator shows mechanisms and trends.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from course.sim.pipeline_diagnosis import Deadlock, diagnose
from course.sim.event_engine import (
    Arrive,
    Busy,
    Call,
    CompleteTx,
    Effect,
    Engine,
    Hazard,
    Issue,
    Signal,
    SimulationFault,
    fmt_cycles,
)
from course.models.mbarrier import CONSUMER, PRODUCER, make_pipeline_state
from course.sim.pipeline_sim import Pipeline

SCHEDULERS = ("static", "clc", "launch")
CLC_RESPONSE_BYTES = 16


@dataclass(frozen=True)
class ScheduleConfig:
    sms: int = 8
    cluster: int = 2
    tiles_m: int = 8
    tiles_n: int = 4
    k_tiles: int = 8
    tile_k: tuple | None = None
    stages: int = 4
    acc_slots: int = 2
    scheduler: str = "clc"
    load_latency: float = 500
    mma_latency: float = 256
    epilogue_latency: float = 800
    handshake_latency: float = 100
    clc_latency: float = 200
    launch_latency: float = 600
    tma_issue_cycles: float = 32
    bytes_per_cycle: float | None = 110
    a_bytes: int = 16384
    b_bytes: int = 16384
    sm_busy_until: tuple = ()

    @property
    def clusters(self) -> int:
        """Cluster slots: SM pairs (cluster=2) or SMs."""
        return self.sms // self.cluster

    @property
    def units(self) -> int:
        """Work units: 256x128 pair tiles (cluster=2) or 128x128 tiles."""
        return (self.tiles_m // self.cluster) * self.tiles_n

    def k_of(self, unit: int) -> int:
        return self.tile_k[unit] if self.tile_k is not None else self.k_tiles

    def validate(self) -> None:
        if self.cluster not in (1, 2):
            raise ValueError(
                f"cluster must be 1 (single CTAs) or 2 (CTA pairs), got {self.cluster!r}"
            )
        for name in ("sms", "tiles_m", "tiles_n", "k_tiles", "stages", "acc_slots"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.sms % self.cluster or self.tiles_m % self.cluster:
            raise ValueError(
                f"with cluster={self.cluster}, sms ({self.sms}) and tiles_m "
                f"({self.tiles_m}) must be multiples of {self.cluster}"
            )
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler must be one of {SCHEDULERS}, got {self.scheduler!r}")
        if self.tile_k is not None and (len(self.tile_k) != self.units or min(self.tile_k) < 1):
            raise ValueError(
                f"tile_k needs {self.units} entries >= 1 (one per "
                f"{'pair ' if self.cluster == 2 else ''}tile)"
            )
        if len(self.sm_busy_until) > self.sms:
            raise ValueError("sm_busy_until has more entries than SMs")


def uneven_work(
    units: int, k_tiles: int, heavy: float = 0.25, factor: int = 3, seed: int = 0
) -> tuple:
    """k-chunks per tile where a fraction `heavy` of the tiles (picked at random, reproducibly)
    carry `factor` times the work: think grouped GEMMs or causal attention blocks."""
    rng = random.Random(seed)
    heavy_ones = set(rng.sample(range(units), max(1, round(heavy * units))))
    return tuple(k_tiles * factor if u in heavy_ones else k_tiles for u in range(units))


# --------------------------------------------------------------------------------------
# The simulated kernel
# --------------------------------------------------------------------------------------


@dataclass
class TileRecord:
    """One epilogue write: which tile, by which CTA on which SM, when it finished."""

    unit: int
    sm: int
    cluster_id: int
    start: float
    end: float


class _Kernel:
    """Builds roles for each launched cluster and runs the grid on one Engine."""

    def __init__(self, cfg: ScheduleConfig, max_events: int):
        self.cfg = cfg
        self.e = Engine(max_events=max_events)
        bw = cfg.bytes_per_cycle
        self.memory = self.e.unit("memory", label="memory system")
        self.bw_total = bw * cfg.sms if bw else None
        self.clc = self.e.unit("CLC", label="cluster launch control")
        self.tensor = [self.e.unit(f"tensor core slot {c}") for c in range(cfg.clusters)]
        busy = list(cfg.sm_busy_until) + [0] * (cfg.sms - len(cfg.sm_busy_until))
        self.sm_busy = busy
        self.slot_free = [
            max(busy[c * cfg.cluster + r] for r in range(cfg.cluster)) for c in range(cfg.clusters)
        ]
        self.pending = list(range(cfg.units))  # clusters (tiles) not launched yet
        self.tiles: list[TileRecord] = []
        self.launches: list[tuple[int, int, float]] = []  # (slot, first unit, time)
        self.queries: list[tuple[float, float, int | None]] = []
        self.mma_chunks: dict[int, int] = {}
        self.launched = 0

    # -- launching -------------------------------------------------------------------
    def start(self) -> None:
        cfg = self.cfg
        if cfg.scheduler == "static":
            for c in range(cfg.clusters):
                seq = list(range(c, cfg.units, cfg.clusters))
                if seq:
                    self.pending = [u for u in self.pending if u not in seq]
                    self._launch(c, seq, self.slot_free[c])
        else:
            for c in sorted(range(cfg.clusters), key=lambda c: (self.slot_free[c], c)):
                self.e.at(self.slot_free[c], lambda c=c: self._launch_next(c))

    def _launch_next(self, slot: int) -> None:
        if self.pending:
            self._launch(slot, [self.pending.pop(0)], self.e.now)

    def _cancel_next(self) -> int | None:
        """clusterlaunchcontrol.try_cancel: cancel the lowest pending cluster's launch."""
        return self.pending.pop(0) if self.pending else None

    def _launch(self, slot: int, tiles: list[int], at: float) -> None:
        """Start one cluster on SM slot `slot`. `tiles` is its static tile list (static
        scheduling), or [its own tile] (clc / launch: further tiles come from CLC)."""
        cfg, e = self.cfg, self.e
        cid = self.launched
        self.launched += 1
        self.launches.append((slot, tiles[0], at))
        n = cfg.cluster
        h = cfg.handshake_latency if n == 2 else 0
        tag = f"c{cid}"
        sms = [slot * n + r for r in range(n)]
        bytes_cta = cfg.a_bytes + cfg.b_bytes // n
        ab = [
            Pipeline(e, f"{tag}.sm{sms[r]}.ab", cfg.stages, tx_bytes=bytes_cta * n)
            for r in range(n)
        ]
        acc = [
            Pipeline(e, f"{tag}.sm{sms[r]}.acc", cfg.acc_slots, consumers=n, buffers=False)
            for r in range(n)
        ]
        dynamic = cfg.scheduler == "clc"
        readers = 3 if n == 1 else 5  # warps that read each CLC answer
        sched = (
            [
                Pipeline(e, f"{tag}.sm{sms[r]}.clc", 2, consumers=readers, buffers=False)
                for r in range(n)
            ]
            if dynamic
            else []
        )
        answers = [[None, None] for _ in range(n)]
        tensor = self.tensor[slot]
        alive = {"roles": 0}
        load_occ = bytes_cta / self.bw_total if self.bw_total else 0

        def static_next(tile):
            seq = tiles
            i = seq.index(tile)
            return seq[i + 1] if i + 1 < len(seq) else None

        def read_answer(r, st):
            """A consumer of the CLC ring: wait for the answer, read it, free the slot."""
            yield from sched[r].consumer_wait(st)
            idx = st.index
            tile = yield Call(lambda _e: answers[r][idx])
            yield Arrive(sched[0].empty[idx], delay=h if r else 0)
            st.advance()
            return tile

        def next_tile(r, tile, st):
            if cfg.scheduler == "static":
                return static_next(tile)
            if cfg.scheduler == "launch":
                return None
            return (yield from read_answer(r, st))

        def query(pst):
            """The leader's TMA warp asks CLC for the next tile (try_cancel, multicast)."""
            idx = pst.index
            yield from sched[0].producer_acquire(pst, arrive=False)
            for r in range(n):
                yield Arrive(sched[r].full[idx], tx=CLC_RESPONSE_BYTES, delay=h if r else 0)
            issued = e.now

            def respond(_e, idx=idx, issued=issued):
                won = self._cancel_next()
                self.queries.append((issued, _e.now, won))
                for r in range(n):
                    answers[r][idx] = won

            done = [Effect(respond)] + [
                CompleteTx(sched[r].full[idx], CLC_RESPONSE_BYTES, delay=h if r else 0)
                for r in range(n)
            ]
            yield Issue(
                self.clc, cfg.clc_latency, "try_cancel", occupancy=0, on_done=tuple(done), tag="clc"
            )
            pst.advance()

        def finished(_e):
            alive["roles"] -= 1
            if alive["roles"] == 0 and cfg.scheduler == "launch":
                e.at(e.now + cfg.launch_latency, lambda: self._launch_next(slot))

        def tma_warp(r):
            st = make_pipeline_state(PRODUCER, cfg.stages)
            pst = make_pipeline_state(PRODUCER, 2)
            cst = make_pipeline_state(CONSUMER, 2)
            tile = tiles[0]
            while tile is not None:
                for k in range(cfg.k_of(tile)):
                    idx = st.index
                    # the leader arms its full barrier for the bytes of the whole pair;
                    # the follower only waits until its own stage is free
                    yield from ab[r].producer_acquire(st, arrive=(r == 0))
                    if cfg.tma_issue_cycles:
                        yield Busy(cfg.tma_issue_cycles, "issue")
                    yield Issue(
                        self.memory,
                        cfg.load_latency,
                        f"load T{tile}.k{k}",
                        occupancy=load_occ,
                        writes=((ab[r].buffers[idx], (tile, k)),),
                        on_done=(CompleteTx(ab[0].full[idx], bytes_cta, delay=h if r else 0),),
                        tag=tile,
                    )
                    st.advance()
                if dynamic and r == 0:
                    yield from query(pst)
                tile = yield from next_tile(r, tile, cst)
            yield Call(finished)

        def mma_warp():
            st = make_pipeline_state(CONSUMER, cfg.stages)
            acc_st = make_pipeline_state(PRODUCER, cfg.acc_slots)
            cst = make_pipeline_state(CONSUMER, 2)
            tile = tiles[0]
            while tile is not None:
                a = acc_st.index
                yield from acc[0].producer_acquire(acc_st, arrive=False)  # a free TMEM slot
                kt = cfg.k_of(tile)
                for k in range(kt):
                    idx = st.index
                    yield from ab[0].consumer_wait(st)
                    # tcgen05.commit, multicast: frees the stage in both CTAs
                    done = [ab[r].release_on_completion(st, delay=h if r else 0) for r in range(n)]
                    if k == kt - 1:
                        done += [Signal(acc[r].full[a], delay=h if r else 0) for r in range(n)]
                    yield Issue(
                        tensor,
                        cfg.mma_latency,
                        f"mma T{tile}.k{k}",
                        reads=tuple((ab[r].buffers[idx], (tile, k)) for r in range(n)),
                        on_done=tuple(done),
                        tag=tile,
                    )
                    self.mma_chunks[tile] = self.mma_chunks.get(tile, 0) + 1
                    st.advance()
                acc_st.advance()
                tile = yield from next_tile(0, tile, cst)
            yield Call(finished)

        def epilogue(r):
            st = make_pipeline_state(CONSUMER, cfg.acc_slots)
            cst = make_pipeline_state(CONSUMER, 2)
            tile = tiles[0]
            while tile is not None:
                yield from acc[r].consumer_wait(st)
                t0 = e.now
                yield Busy(cfg.epilogue_latency, f"epilogue T{tile}", tag=tile)
                self.tiles.append(TileRecord(tile, sms[r], cid, t0, e.now))
                yield Arrive(acc[0].empty[st.index], delay=h if r else 0)  # free the slot
                st.advance()
                tile = yield from next_tile(r, tile, cst)
            yield Call(finished)

        for r in range(n):
            e.role(
                f"{tag}.sm{sms[r]}.tma",
                tma_warp(r),
                group=f"SM {sms[r]}",
                label=f"SM {sms[r]} TMA warp",
                start=at,
            )
            e.role(
                f"{tag}.sm{sms[r]}.epilogue",
                epilogue(r),
                group=f"SM {sms[r]}",
                label=f"SM {sms[r]} epilogue",
                start=at,
            )
            alive["roles"] += 2
        e.role(
            f"{tag}.sm{sms[0]}.mma",
            mma_warp(),
            group=f"SM {sms[0]}",
            label=f"SM {sms[0]} MMA warp",
            start=at,
        )
        alive["roles"] += 1


@dataclass
class ScheduleSim:
    """The result of one schedule simulation; see the module docstring."""

    config: ScheduleConfig
    kernel: _Kernel = field(repr=False)
    deadlock: Deadlock | None
    fault: SimulationFault | None
    hazards: list[Hazard]
    total_cycles: float

    @property
    def engine(self) -> Engine:
        return self.kernel.e

    @property
    def ok(self) -> bool:
        return self.deadlock is None and self.fault is None and not self.hazards

    @property
    def per_sm_utilisation(self) -> list[float]:
        """Fraction of the run each SM's tensor core spent on MMAs (a paired MMA keeps
        both SMs of the pair busy)."""
        cfg, t = self.config, self.total_cycles
        out = []
        for sm in range(cfg.sms):
            unit = self.kernel.tensor[sm // cfg.cluster]
            out.append(unit.busy_time(until=t) / t if t else 0.0)
        return out

    @property
    def utilisation(self) -> float:
        """Mean tensor-core utilisation over all SMs."""
        u = self.per_sm_utilisation
        return sum(u) / len(u)

    @property
    def tiles(self) -> list[TileRecord]:
        return list(self.kernel.tiles)

    def tiles_written(self) -> dict[int, int]:
        """Epilogue writes per work unit (a pair tile is written by both CTAs)."""
        out: dict[int, int] = {}
        for rec in self.kernel.tiles:
            out[rec.unit] = out.get(rec.unit, 0) + 1
        return out

    @property
    def mma_chunks(self) -> dict[int, int]:
        """k-chunks multiplied per work unit."""
        return dict(self.kernel.mma_chunks)

    @property
    def clc_queries(self) -> int:
        return len(self.kernel.queries)

    def explain(self) -> str:
        parts = []
        if self.fault is not None:
            parts.append(str(self.fault))
        if self.deadlock is not None:
            parts.append(str(self.deadlock))
        parts += [str(h) for h in self.hazards]
        return "\n".join(parts)

    def summary(self) -> str:
        c = self.config
        pair = "CTA pairs" if c.cluster == 2 else "single CTAs"
        head = (
            f"{c.scheduler} scheduling, {c.sms} SMs as {pair}, {c.stages} stages, "
            f"{c.acc_slots} TMEM slot(s)"
        )
        if not self.ok:
            return f"{head}: " + (
                self.deadlock.summary
                if self.deadlock
                else str(self.fault)
                if self.fault
                else "races detected"
            )
        u = self.per_sm_utilisation
        return (
            f"{head}: {fmt_cycles(self.total_cycles)} cycles, tensor cores busy "
            f"{self.utilisation:.0%} (SMs from {min(u):.0%} to {max(u):.0%})"
        )


def simulate(
    sms: int = 8,
    cluster: int = 2,
    tiles_m: int = 8,
    tiles_n: int = 4,
    k_tiles: int = 8,
    stages: int = 4,
    acc_slots: int = 2,
    scheduler: str = "clc",
    max_events: int = 2_000_000,
    **kwargs,
) -> ScheduleSim:
    """Simulate the whole grid; keyword arguments are ScheduleConfig's fields."""
    cfg = ScheduleConfig(
        sms=sms,
        cluster=cluster,
        tiles_m=tiles_m,
        tiles_n=tiles_n,
        k_tiles=k_tiles,
        stages=stages,
        acc_slots=acc_slots,
        scheduler=scheduler,
        **kwargs,
    )
    cfg.validate()
    kernel = _Kernel(cfg, max_events)
    kernel.start()
    kernel.e.run()
    return ScheduleSim(
        cfg, kernel, diagnose(kernel.e), kernel.e.fault, list(kernel.e.hazards), kernel.e.end_time
    )


# --------------------------------------------------------------------------------------
# The seed document's lessons, as small tables
# --------------------------------------------------------------------------------------


@dataclass
class Lesson:
    """A small experiment: rows of numbers and the claim they support. `kind` names the
    experiment (course.viz.schedule_pictures.lesson draws each kind's chart)."""

    kind: str  # "handshake", "pingpong" or "scheduler"
    title: str
    columns: list[str]
    formats: list[str]  # per column: "" (as is), "cycles", "%", "x"
    rows: list[list]
    claim: str
    sims: dict = field(repr=False, default_factory=dict)

    def column(self, name: str) -> list:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def table(self) -> str:
        cells = [[_cell(v, f) for v, f in zip(r, self.formats)] for r in self.rows]
        widths = [max(len(str(c)), *(len(r[i]) for r in cells)) for i, c in enumerate(self.columns)]
        line = "  ".join(str(c).rjust(w) for c, w in zip(self.columns, widths))
        body = ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
        return "\n".join([self.title, line, *body, self.claim])

    def __str__(self) -> str:
        return self.table()


def _cell(v, fmt: str) -> str:
    if fmt == "cycles":
        return f"{v:,.0f}"
    if fmt == "%":
        return f"{v:+.0%}" if v < 0 else f"{v:.0%}"
    if fmt == "x":
        return f"{v:.2f}x"
    return str(v)


def handshake_lesson(stages=(1, 2, 3, 4, 6), **kw) -> Lesson:
    """CTA pairs with their per-stage cluster handshake vs the same pairs with a free
    handshake vs single CTAs, across pipeline depths: the argument that the pair (and its
    multicast) loses while the pipeline is shallow and wins once it is deep enough to hide
    the handshake, as a model whose outcome depends on `handshake_latency`."""
    base = dict(scheduler="static", acc_slots=2) | kw
    rows, sims = [], {}
    for s in stages:
        pair = simulate(cluster=2, stages=s, **base)
        free = simulate(cluster=2, stages=s, **(base | {"handshake_latency": 0}))
        single = simulate(cluster=1, stages=s, **base)
        sims[s] = (pair, free, single)
        rows.append(
            [
                s,
                single.total_cycles,
                pair.total_cycles,
                free.total_cycles,
                pair.total_cycles / free.total_cycles - 1,
                single.total_cycles / pair.total_cycles,
            ]
        )
    h = simulate(**base).config.handshake_latency
    claim = (
        f"The handshake ({fmt_cycles(h)} cycles each way) costs "
        f"{rows[0][4]:.0%} at {rows[0][0]} stage(s) and {rows[-1][4]:.0%} at "
        f"{rows[-1][0]}: a deep pipeline hides it, a shallow one does not."
    )

    return Lesson(
        "handshake",
        "Cluster handshake vs pipeline depth",
        [
            "stages",
            "single CTAs",
            "CTA pairs",
            "pairs, free handshake",
            "handshake cost",
            "pair speed-up",
        ],
        ["", "cycles", "cycles", "cycles", "%", "x"],
        rows,
        claim,
        sims,
    )


def pingpong_lesson(epilogue_latencies=(0, 400, 800, 1600), **kw) -> Lesson:
    """One TMEM accumulator vs two (ping-pong), as the epilogue grows."""
    base = dict(scheduler="static") | kw
    rows, sims = [], {}
    for ep in epilogue_latencies:
        one = simulate(acc_slots=1, epilogue_latency=ep, **base)
        two = simulate(acc_slots=2, epilogue_latency=ep, **base)
        sims[ep] = (one, two)
        rows.append(
            [
                ep,
                one.total_cycles,
                two.total_cycles,
                one.utilisation,
                two.utilisation,
                one.total_cycles / two.total_cycles,
            ]
        )
    claim = (
        "With one accumulator the MMA warp waits for every epilogue; with two, the "
        "epilogue of tile n runs under the MMAs of tile n+1 "
        f"({rows[-1][5]:.2f}x faster at an epilogue of {rows[-1][0]} cycles)."
    )

    return Lesson(
        "pingpong",
        "TMEM accumulators vs epilogue length",
        ["epilogue", "1 slot", "2 slots", "util 1 slot", "util 2 slots", "speed-up"],
        ["", "cycles", "cycles", "%", "%", "x"],
        rows,
        claim,
        sims,
    )


def scheduler_lesson(seeds=range(8), **kw) -> Lesson:
    """Static persistent vs CLC vs one-launch-per-tile, on three workloads: even tiles,
    uneven tiles (the mean over random workloads, one per seed: a greedy in-order
    scheduler like CLC can still be unlucky when a heavy tile comes last, so a single
    draw proves little), and two SMs busy with other work at the start."""
    base = dict(sms=8, cluster=2, tiles_m=8, tiles_n=6, k_tiles=8) | kw
    units = ScheduleConfig(
        **{k: v for k, v in base.items() if k in ScheduleConfig.__dataclass_fields__}
    ).units
    busy = max(8, base["k_tiles"]) * 256 * 4
    workloads = {
        "even tiles": [{}],
        "uneven tiles": [{"tile_k": uneven_work(units, base["k_tiles"], seed=s)} for s in seeds],
        "2 SMs busy at start": [{"sm_busy_until": (busy, busy)}],
    }
    rows, sims = [], {}
    for name, extras in workloads.items():
        res = {s: [simulate(scheduler=s, **(base | extra)) for extra in extras] for s in SCHEDULERS}
        sims[name] = res
        mean = {s: sum(r.total_cycles for r in res[s]) / len(res[s]) for s in SCHEDULERS}
        ratios = [a.total_cycles / b.total_cycles for a, b in zip(res["static"], res["clc"])]
        rows.append(
            [
                name if len(extras) == 1 else f"{name} (mean of {len(extras)})",
                mean["static"],
                mean["clc"],
                mean["launch"],
                sum(ratios) / len(ratios),
                min(ratios),
                max(ratios),
            ]
        )
    uneven = rows[1]
    claim = (
        "CLC hands tiles to whichever SM pair is free, so late SMs and uneven work "
        "balance out (on uneven tiles static takes "
        f"{uneven[4]:.2f}x as long as CLC on average, between {uneven[5]:.2f}x and "
        f"{uneven[6]:.2f}x across the random workloads); "
        "static round-robin leaves some pairs with more work; a launch per tile pays "
        "its start-up and cannot overlap one tile's epilogue with the next."
    )

    return Lesson(
        "scheduler",
        "Tile scheduling",
        ["workload", "static", "clc", "launch", "static / clc", "worst", "best"],
        ["", "cycles", "cycles", "cycles", "x", "x", "x"],
        rows,
        claim,
        sims,
    )


__all__ = [
    "ScheduleConfig",
    "ScheduleSim",
    "SCHEDULERS",
    "simulate",
    "uneven_work",
    "handshake_lesson",
    "pingpong_lesson",
    "scheduler_lesson",
    "Lesson",
    "TileRecord",
]
