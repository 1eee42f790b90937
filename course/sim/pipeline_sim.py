"""Notebook 09's simulator: a TMA -> MMA ring of S stages, and an epilogue.

    from course.sim import pipeline_sim
    sim = pipeline_sim.simulate(stages=4, k_tiles=16, load_latency=600, mma_latency=200)
    sim.total_cycles, sim.utilisation      # cycles, tensor-core busy fraction
    sim.deadlock                           # None, or an explanation (print it)
    pipeline_sim.simulate(stages=4, bug="producer_parity").deadlock   # caught, explained

Results are data; course.viz.pipeline_pictures draws them (the timeline, a stage sweep).

The roles are written the way a CuTe DSL kernel writes them, with the same pipeline
bookkeeping (`PipelineState` index/phase/count, `producer_acquire` = wait on the empty
barrier + arrive.expect_tx on the full one, `consumer_wait`, `consumer_release`):

    TMA warp (producer)   for each k-tile: acquire a stage, issue the TMA copy into it;
                          the copy's complete_tx fills the stage's full barrier.
    MMA warp (consumer)   for each k-tile: wait until the stage is full, issue the MMA;
                          the MMA's commit arrives on the stage's empty barrier when the
                          tensor core has finished reading it (tcgen05.commit, or
                          warpgroup_wait then arrive on Hopper).
    epilogue warps        wait for the accumulator (acc full), drain it, free it.

Times are in cycles and illustrative; what matters is their ratios. One stage
serializes: total = k * (load + mma). With S stages each stage's round trip
(load + mma) is shared by S k-tiles, so the tensor core is never idle once
S >= load/mma + 1: total = load + k * mma (`predicted_cycles` has the exact formula).

Mistakes can be injected (`BUGS`); the simulator catches each one -- as a deadlock with
an explanation, or as a race (a hazard) -- instead of hanging.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course.sim.pipeline_diagnosis import Deadlock, diagnose
from course.sim.event_engine import (
    Arrive,
    Busy,
    CompleteTx,
    Engine,
    Hazard,
    Issue,
    Signal,
    SimulationFault,
    Wait,
    fmt_cycles,
)
from course.models.mbarrier import CONSUMER, PRODUCER, PipelineState, make_pipeline_state

BUGS: dict[str | None, str] = {
    None: "no bug: the protocol as CuTe DSL's PipelineTmaUmma runs it",
    "producer_parity": "the producer starts its phase bit at 0 instead of 1",
    "consumer_parity": "the consumer starts its phase bit at 1 instead of 0",
    "arrival_count": "the full barriers are initialised to expect 2 arrivals; only the "
    "producer arrives",
    "missing_arrive": "the MMA warp never releases a stage (no commit to the empty barrier)",
    "early_release": "the MMA warp releases each stage when it issues the MMA, before the "
    "tensor core has read it",
    "tx_bytes": "arrive.expect_tx announces 4 KiB more than the TMA copies deliver",
    "empty_count": "two consumer warpgroups release each stage, but the empty barriers are "
    "initialised to expect 1 arrival (runs with at least 2 consumers)",
}


_HAZARD_CAUSE = {
    "overwrite_before_read": "early_release",
    "lost_tile": "early_release",
    "double_write": "early_release",
    "read_before_write": "premature_full",
    "stale_read": "premature_full",
    "early_pass": "wrong_parity",
}

_RACE_CAUSES = {
    "wrong_parity": "a role got past a barrier before the phase its count needs had "
    "completed: its phase bit is out of step (a consumer starts at 0, a "
    "producer at 1, and both flip when the stage index wraps to 0).",
    "early_release": "a stage was handed back to the producer (its empty barrier "
    "completed) before the MMA reading it had finished, so the next TMA "
    "copy overwrote data still in use. Release a stage when the MMA is done "
    "with it (tcgen05.commit to the empty barrier; on Hopper after "
    "warpgroup_wait), and initialise empty barriers with one arrival per "
    "consumer.",
    "premature_full": "a stage's full barrier completed before its data had landed: the "
    "byte count given to arrive.expect_tx is too small, or the full barrier "
    "expects too few arrivals.",
    "barrier_misuse": "an mbarrier operation the hardware leaves undefined (see the fault).",
}


class Pipeline:
    """A ring of `stages` shared-memory buffers, each guarded by a full and an empty
    mbarrier -- the structure behind CuTe DSL's PipelineTmaAsync / PipelineTmaUmma.

    full[i]   completes when stage i holds data: `producers` arrivals (arrive.expect_tx)
              plus the announced bytes (the TMA copies' complete_tx).
    empty[i]  completes when stage i may be overwritten: `consumers` arrivals.
    """

    def __init__(
        self,
        engine: Engine,
        name: str,
        stages: int,
        tx_bytes: int = 0,
        producers: int = 1,
        consumers: int = 1,
        full_count: int | None = None,
        empty_count: int | None = None,
        buffers: bool = True,
    ):
        self.name, self.stages, self.tx_bytes = name, stages, tx_bytes
        self.full = [
            engine.barrier(full_count or producers, f"{name}.full[{i}]", producers)
            for i in range(stages)
        ]
        self.empty = [
            engine.barrier(empty_count or consumers, f"{name}.empty[{i}]", consumers)
            for i in range(stages)
        ]
        for f, e in zip(self.full, self.empty):
            engine.pair(f, e)
        self.buffers = (
            [engine.buffer(f"{name} stage {i}") for i in range(stages)] if buffers else []
        )

    # the producer side -----------------------------------------------------------------
    def producer_acquire(
        self, state: PipelineState, tx: int | None = None, arrive: bool = True, delay: float = 0
    ):
        """Wait until stage `state.index` is free, then arrive.expect_tx on its full barrier
        (skipped with arrive=False, e.g. a follower CTA whose leader arms the barrier)."""
        yield Wait(self.empty[state.index], state.phase, needs=state.round - 1)
        if arrive:
            yield Arrive(
                self.full[state.index], tx=self.tx_bytes if tx is None else tx, delay=delay
            )

    def producer_commit(self, state: PipelineState, delay: float = 0):
        """A plain arrive on the full barrier (producers without TMA bytes)."""
        yield Arrive(self.full[state.index], delay=delay)

    # the consumer side -----------------------------------------------------------------
    def consumer_wait(self, state: PipelineState):
        """Wait until stage `state.index` holds the data of this round."""
        yield Wait(self.full[state.index], state.phase, needs=state.round)

    def consumer_release(self, state: PipelineState, delay: float = 0):
        """Arrive on the empty barrier: this consumer is done with the stage."""
        yield Arrive(self.empty[state.index], delay=delay)

    def release_on_completion(self, state: PipelineState, delay: float = 0) -> Signal:
        """The effect to attach to an MMA: arrive on empty[i] when it has finished
        (tcgen05.commit). Attach it instead of calling consumer_release early."""
        return Signal(self.empty[state.index], delay=delay)


@dataclass(frozen=True)
class PipelineConfig:
    stages: int = 4
    k_tiles: int = 16
    load_latency: float = 600
    mma_latency: float = 200
    epilogue_latency: float = 0
    tiles: int = 1
    acc_stages: int = 1
    load_interval: float = 0
    tile_bytes: int = 32768
    consumers: int = 1
    bug: str | None = None

    def validate(self) -> None:
        for name in ("stages", "k_tiles", "tiles", "acc_stages", "tile_bytes", "consumers"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        for name in ("load_latency", "mma_latency", "epilogue_latency", "load_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.bug not in BUGS:
            raise ValueError(f"bug must be one of {list(BUGS)}, got {self.bug!r}")


def predicted_cycles(
    stages: int,
    k_tiles: int,
    load_latency: float,
    mma_latency: float,
    load_interval: float = 0,
    epilogue_latency: float = 0,
) -> float:
    """Cycles for one output tile, from the ring's arithmetic (exact in this model when
    load_interval is 0):

    * the tensor core is the bottleneck when S stages cover a stage's round trip,
      S * mma >= load + mma: then total = load + k * mma (only the first load shows);
    * otherwise the k-tiles go in groups of S, one group per round trip (load + mma):
      total = load + (groups - 1) * (load + mma) + (k-tiles of the last group) * mma.
      With 1 stage that is k * (load + mma): fully serialized.

    A load_interval (a bandwidth limit) adds the bound load + (k - 1) * interval + mma."""
    import math

    L, M, S, K = load_latency, mma_latency, stages, k_tiles
    if S * M >= L + M:
        total = L + K * M
    else:
        groups = math.ceil(K / S)
        total = L + (groups - 1) * (L + M) + (K - (groups - 1) * S) * M
    if load_interval:
        total = max(total, L + (K - 1) * load_interval + M)
    return total + epilogue_latency


def stages_to_hide_latency(load_latency: float, mma_latency: float) -> int:
    """The fewest stages with which the tensor core never waits for a load."""
    import math

    return max(1, math.ceil((load_latency + mma_latency) / mma_latency))


def _label(cfg: PipelineConfig, tile: int, k: int) -> str:
    return f"k{k}" if cfg.tiles == 1 else f"t{tile}.k{k}"


def _build(cfg: PipelineConfig, max_events: int) -> tuple[Engine, dict]:
    e = Engine(max_events=max_events)
    bug = cfg.bug
    n = cfg.consumers
    ab = Pipeline(
        e,
        "ab",
        cfg.stages,
        tx_bytes=cfg.tile_bytes,
        consumers=n,
        full_count=2 if bug == "arrival_count" else None,
        empty_count=1 if bug == "empty_count" else None,
    )
    acc = Pipeline(e, "acc", cfg.acc_stages, producers=n, buffers=False)
    tma = e.unit("TMA", label="TMA engine")
    tc = e.unit("tensor core")
    announced = cfg.tile_bytes + (4096 if bug == "tx_bytes" else 0)

    def producer():
        st = make_pipeline_state(PRODUCER, cfg.stages)
        if bug == "producer_parity":
            st.phase = 0
        for t in range(cfg.tiles):
            for k in range(cfg.k_tiles):
                yield from ab.producer_acquire(st, tx=announced)
                label = _label(cfg, t, k)
                yield Issue(
                    tma,
                    cfg.load_latency,
                    f"load {label}",
                    occupancy=cfg.load_interval,
                    writes=((ab.buffers[st.index], label),),
                    on_done=(CompleteTx(ab.full[st.index], cfg.tile_bytes),),
                    tag=label,
                )
                st.advance()

    def mma(c):
        """Consumer c of n. One consumer (Blackwell): issue the MMA, and let its commit
        free the stage when the tensor core is done (tcgen05.commit). Several consumer
        warpgroups (Hopper): each issues its 1/n share of the k-tile, waits for it
        (warpgroup_wait) and then arrives on the empty barrier itself."""
        st = make_pipeline_state(CONSUMER, cfg.stages)
        if bug == "consumer_parity":
            st.phase = 1
        acc_st = make_pipeline_state(PRODUCER, cfg.acc_stages)
        done = e.barrier(1, f"mma{c}.wgmma_done") if n > 1 else None
        issued = 0
        for t in range(cfg.tiles):
            yield from acc.producer_acquire(acc_st, arrive=False)  # a free TMEM slot
            for k in range(cfg.k_tiles):
                yield from ab.consumer_wait(st)
                label = _label(cfg, t, k)
                effects = []
                if bug == "early_release":
                    yield from ab.consumer_release(st)
                elif bug != "missing_arrive" and n == 1:
                    effects.append(ab.release_on_completion(st))
                if k == cfg.k_tiles - 1:
                    effects.append(Signal(acc.full[acc_st.index]))  # accumulator ready
                if n > 1:
                    effects.append(Signal(done))
                yield Issue(
                    tc,
                    cfg.mma_latency / n,
                    f"mma {label}" + (f"/{c}" if n > 1 else ""),
                    reads=((ab.buffers[st.index], label),),
                    on_done=tuple(effects),
                    tag=label,
                )
                if n > 1:
                    yield Wait(done, issued & 1, needs=issued)  # warpgroup_wait
                    issued += 1
                    if bug not in ("early_release", "missing_arrive"):
                        yield from ab.consumer_release(st)
                st.advance()
            acc_st.advance()

    def epilogue():
        st = make_pipeline_state(CONSUMER, cfg.acc_stages)
        for t in range(cfg.tiles):
            yield from acc.consumer_wait(st)
            if cfg.epilogue_latency:
                yield Busy(cfg.epilogue_latency, f"epilogue tile {t}", tag=t)
            yield from acc.consumer_release(st)
            st.advance()

    e.role("producer", producer(), label="TMA warp (producer)")
    for c in range(n):
        e.role(
            "mma" if n == 1 else f"mma{c}",
            mma(c),
            label="MMA warp (consumer)" if n == 1 else f"MMA warpgroup {c} (consumer)",
        )
    e.role("epilogue", epilogue(), label="epilogue warps")
    return e, {"ab": ab, "acc": acc, "tma": tma, "tc": tc}


@dataclass
class PipelineSim:
    """The result of one simulation; see the module docstring."""

    config: PipelineConfig
    engine: Engine = field(repr=False)
    parts: dict = field(repr=False)
    deadlock: Deadlock | None
    fault: SimulationFault | None
    hazards: list[Hazard]
    total_cycles: float
    utilisation: float

    @property
    def ok(self) -> bool:
        """Finished, no deadlock, no fault, no race."""
        return self.deadlock is None and self.fault is None and not self.hazards

    @property
    def consumed(self) -> list:
        """What each MMA actually found in its stage, in the order the MMAs ran."""
        ops = sorted(
            (o for o in self.engine.ops if o.unit is self.parts["tc"]), key=lambda o: o.start
        )
        return [o.got[0] for o in ops if o.got]  # ops cut off by a fault never started

    @property
    def consumed_by(self) -> dict[str, list]:
        """`consumed`, split by consumer role (each must see every k-tile in order)."""
        out: dict[str, list] = {}
        for o in sorted(
            (o for o in self.engine.ops if o.unit is self.parts["tc"] and o.got),
            key=lambda o: o.start,
        ):
            out.setdefault(o.issuer.name, []).append(o.got[0])
        return out

    @property
    def loaded(self) -> list:
        """The k-tiles the TMA copies wrote, in issue order."""
        return [o.tag for o in self.engine.ops if o.unit is self.parts["tma"]]

    @property
    def predicted_cycles(self) -> float:
        c = self.config
        return predicted_cycles(
            c.stages, c.k_tiles, c.load_latency, c.mma_latency, c.load_interval, c.epilogue_latency
        )

    def waits(self, role: str) -> float:
        """Cycles `role` ("producer", "mma" or "mma0".., "epilogue") spent waiting."""
        r = next(r for r in self.engine.roles if r.name == role)
        return sum(i.end - i.start for i in r.intervals if i.kind in ("wait", "blocked"))

    @property
    def cause(self) -> str | None:
        """The most likely mistake, as a short code (None for a clean run): a deadlock's
        cause (see course.sim.pipeline_diagnosis.CAUSES), or for races 'wrong_parity' (a wait passed
        before the phase its count needs), 'early_release' (a stage was overwritten while
        or before being read), 'premature_full' (a stage was read before its data
        landed), or 'barrier_misuse' (an undefined mbarrier operation). When several
        things went wrong, the earliest tells the story; the rest are consequences."""
        if any(h.kind == "early_pass" for h in self.hazards):
            return "wrong_parity"
        if self.deadlock is not None:
            return self.deadlock.cause
        events = [(h.time, _HAZARD_CAUSE[h.kind]) for h in self.hazards]
        if self.fault is not None:
            events.append((self.fault.time, self.fault.kind.replace(" ", "_")))
        return min(events)[1] if events else None

    def problems(self) -> list[str]:
        out = []
        if self.fault is not None:
            out.append(str(self.fault))
        if self.deadlock is not None:
            out.append(str(self.deadlock))
        out += [str(h) for h in self.hazards]
        if self.engine.hazard_count > len(self.hazards):
            out.append(f"... and {self.engine.hazard_count - len(self.hazards)} more hazards")
        return out

    def explain(self) -> str:
        """Everything that went wrong, in words ('' when the run is clean): the most
        likely cause first, then the deadlock / fault / races in detail."""
        cause = self.cause
        if cause is None:
            return ""
        lines = self.problems()
        from_races = self.deadlock is None or any(h.kind == "early_pass" for h in self.hazards)
        if cause in _RACE_CAUSES and from_races:
            lines.insert(0, f"Most likely cause ({cause.replace('_', ' ')}): {_RACE_CAUSES[cause]}")
        return "\n".join(lines)

    def summary(self) -> str:
        c = self.config
        head = (
            f"{c.stages} stage(s), {c.k_tiles} k-tiles x {c.tiles} tile(s), load "
            f"{fmt_cycles(c.load_latency)} / MMA {fmt_cycles(c.mma_latency)} cycles"
            + (f", {c.consumers} consumer warpgroups" if c.consumers > 1 else "")
        )
        if self.deadlock is not None:
            return f"{head}: {self.deadlock.summary}"
        if self.fault is not None:
            return f"{head}: stopped, {self.fault.kind}"
        s = (
            f"{head}: {fmt_cycles(self.total_cycles)} cycles, tensor core busy "
            f"{self.utilisation:.0%}"
        )
        if c.tiles == 1:
            s += f" (formula: {fmt_cycles(self.predicted_cycles)})"
        if self.hazards or self.engine.hazard_count:
            s += f"; {self.engine.hazard_count} race(s) detected"
        return s

    def _repr_html_(self) -> str:
        import html

        text = self.summary() + ("\n" + self.explain() if self.explain() else "")
        return f'<pre style="white-space:pre-wrap">{html.escape(text)}</pre>'


def simulate(
    stages: int = 4,
    k_tiles: int = 16,
    load_latency: float = 600,
    mma_latency: float = 200,
    epilogue_latency: float = 0,
    tiles: int = 1,
    acc_stages: int = 1,
    load_interval: float = 0,
    tile_bytes: int = 32768,
    consumers: int = 1,
    bug: str | None = None,
    max_events: int = 500_000,
) -> PipelineSim:
    """Simulate a TMA -> MMA pipeline of `stages` stages over `k_tiles` k-tiles per tile.

    load_latency   cycles from a TMA copy's issue to its bytes landing
    mma_latency    cycles the tensor core spends on one k-tile
    load_interval  minimum cycles between copies (a bandwidth limit; 0 = none)
    tiles          output tiles in a row (persistent); acc_stages = TMEM accumulators
    consumers      consumer warpgroups sharing each stage (each arrives on empty)
    bug            one of BUGS (None = correct)
    """
    if bug == "empty_count":
        consumers = max(consumers, 2)
    cfg = PipelineConfig(
        stages,
        k_tiles,
        load_latency,
        mma_latency,
        epilogue_latency,
        tiles,
        acc_stages,
        load_interval,
        tile_bytes,
        consumers,
        bug,
    )
    cfg.validate()
    engine, parts = _build(cfg, max_events)
    engine.run()
    total = engine.end_time
    busy = parts["tc"].busy_time(until=total)
    return PipelineSim(
        cfg,
        engine,
        parts,
        diagnose(engine),
        engine.fault,
        list(engine.hazards),
        total,
        busy / total if total else 0.0,
    )


def sweep(stages=range(1, 9), **kwargs) -> list[PipelineSim]:
    """One simulation per stage count (everything else fixed)."""
    return [simulate(stages=s, **kwargs) for s in stages]


@dataclass(frozen=True)
class Calibration:
    """Load and MMA latencies (in the units of the measurements) that best explain a
    measured stage sweep through `predicted_cycles`, and what they predict."""

    load_latency: float
    mma_latency: float
    k_tiles: int
    measured: dict
    predicted: dict
    max_error: float  # largest relative error over the measured points

    def describe(self, latency_unit: str = "", scale: float = 1.0, time_unit: str = "") -> str:
        """One line: the two latencies (times `scale`, in `latency_unit`), their ratio, and
        measured against predicted times (in `time_unit`) for every stage count."""
        rows = ", ".join(
            f"{s}: {self.measured[s]:.3g} vs {self.predicted[s]:.3g}" for s in sorted(self.measured)
        )
        return (
            f"load ~ {self.load_latency * scale:.3g}{latency_unit}, MMA ~ "
            f"{self.mma_latency * scale:.3g}{latency_unit} per k-tile (load/MMA = "
            f"{self.load_latency / self.mma_latency:.2f}); measured vs predicted"
            f"{' ' + time_unit.strip() if time_unit else ''} by stages: {rows}; worst error "
            f"{self.max_error:.0%}"
        )

    def __str__(self) -> str:
        return self.describe()


def calibrate(measured: dict, k_tiles: int) -> Calibration:
    """Fit the two latencies of the ring model to measured times {stages: time} of one
    k-loop (any unit): a search over the ratio load/MMA, with the scale fitted by least
    squares. Needs at least two stage counts, one of them shallow enough to be
    latency-bound (1 stage is best)."""
    if len(measured) < 2:
        raise ValueError("calibrate needs times for at least two stage counts")
    stages = sorted(measured)
    times = [measured[s] for s in stages]

    def fit(ratio):
        shape = [predicted_cycles(s, k_tiles, ratio, 1.0) for s in stages]
        mma = sum(t * f for t, f in zip(times, shape)) / sum(f * f for f in shape)
        return max(abs(mma * f - t) / t for f, t in zip(shape, times)), ratio, mma

    # load/MMA from 0.01 to 100, then a finer look around the best
    err, ratio, mma = min(fit(10 ** (-2 + 4 * i / 800)) for i in range(801))
    err, ratio, mma = min(fit(ratio * 10 ** (0.01 * (i - 200) / 200)) for i in range(401))
    predicted = {s: predicted_cycles(s, k_tiles, ratio * mma, mma) for s in range(1, 9)}
    return Calibration(ratio * mma, mma, k_tiles, dict(measured), predicted, err)


__all__ = [
    "BUGS",
    "Pipeline",
    "PipelineConfig",
    "PipelineSim",
    "simulate",
    "sweep",
    "predicted_cycles",
    "stages_to_hide_latency",
    "calibrate",
    "Calibration",
]
