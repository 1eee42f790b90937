"""Functional emulators of the two Blackwell GEMMs: the kernels' decomposition, run in numpy.

`emulate_tcgen05_gemm` replays kernels.tcgen05_gemm (one CTA per 128 x N tile) and
`emulate_cta_pair_clc_gemm` replays kernels.cta_pair_clc_gemm (clusters of 2 CTAs,
one 256 x N MMA per tile, two TMEM slots, Cluster Launch Control). Every warp of every
CTA is a generator doing what the kernel's warp does, in the kernel's order:

    TMA warp       wait empty[s] -> (leader) arm full[s] with the bytes of both CTAs ->
                   load its box of A and B into stage s, complete_tx on the LEADER's
                   full[s]; after a tile the leader's TMA warp asks CLC for the next one
    MMA warp       (leader) wait for a free accumulator slot, then per K-block wait
                   full[s], multiply the stage's A (both CTAs' halves) by its B (both
                   halves) into TMEM -- rows 0-127 into the leader's, 128-255 into the
                   follower's -- and commit empty[s] in both CTAs; commit the slot
    epilogue x 4   wait for the slot, read its own 32 TMEM lanes, round to bf16/fp16,
                   stage, one warp stores the 128 x 32 sub-tile (clipped at C's edge);
                   release the slot on the leader's empty barrier
    all warps      read each CLC answer, release it (32 arrivals per warp)

The barriers are the course's mbarrier model (course.models.mbarrier): counts, phases, byte
counts, multicast arrivals. Stage buffers and accumulator slots are tagged with the (tile,
K-block) they hold, so a ring or ping-pong bookkeeping error raises `RingCorruption` at
the first wrong read; a wrong count or phase deadlocks (`EmulatedDeadlock`). The result
records how many times each element of C was written, which cluster took which tile in
which order, the ring position at each K-block, and an event log (`Emulation.events`,
ordered by the scheduler's clock -- an order, not a time) from which `overlaps()` reads
whether the epilogue of one tile ran while the MMA of the next was issued.

What this proves and what it does not: that the decomposition (tiles, halves, K-loop,
ring, slots, CLC hand-out, clipping) covers C exactly once and computes A.B^T with fp32
accumulation and bf16/fp16 rounding. It does not time anything, and it models the
hardware's rules as documented, not the silicon. The values (C) are the executor's too:
course.execute.blackwell_runs runs the kernels' own code to the same bits; what only this
module gives is the counts and the order above, and a run with a broken CLC queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from course.emulate.clc import ClcHardware
from course.emulate.blackwell_memory import Tmem, round_to, tma_load, tma_store, tmem_alloc_columns
from course.emulate.warp_scheduler import NamedBarrier, Scheduler, sync_named, wait_barrier
from course.models.mbarrier import MBarrier, PipelineState

TILE_K = 64
EPI_COLS = 32  # columns per epilogue sub-tile (one tcgen05.ld 32x32b.x32)
EPILOGUE_WARPS = 4
WARPS_PER_CTA = 6
CLC_RESPONSE_BYTES = 16
# kernels.selftest.TOLERANCE by name (this layer may not import kernels; a test keeps them equal)
TOLERANCE = {"bfloat16": 8e-3, "float16": 1e-3, "float32": 1e-5}


class RingCorruption(RuntimeError):
    """A warp read a stage buffer or accumulator slot holding the wrong (tile, K-block)."""


@dataclass(frozen=True)
class KernelShape:
    """The emulated kernel, in the numbers the CuTe kernels use."""

    ctas: int  # CTAs per MMA tile: 1, or 2 for a CTA pair
    tile_n: int  # columns of C per tile
    stages: int = 4  # A/B ring depth
    acc_slots: int = 1  # TMEM accumulators (2 = ping-pong)
    persistent: bool = False  # clusters loop over tiles handed out by CLC
    out_dtype: str = "bfloat16"
    tile_k: int = TILE_K

    cta_m = 128

    def __post_init__(self):
        if self.ctas not in (1, 2) or self.tile_n % (8 * self.ctas) or self.tile_n % EPI_COLS:
            raise ValueError(f"unsupported kernel shape {self}")

    @property
    def mma_m(self) -> int:
        return self.cta_m * self.ctas

    @property
    def b_rows_per_cta(self) -> int:
        return self.tile_n // self.ctas

    @property
    def stage_bytes(self) -> int:
        """Bytes one CTA's TMA copies deliver per stage (16-bit inputs)."""
        return (self.cta_m + self.b_rows_per_cta) * self.tile_k * 2

    @property
    def tmem_columns(self) -> int:
        return tmem_alloc_columns(self.acc_slots * self.tile_n)

    def a_rows(self, tile_m: int, rank: int) -> int:
        """First row of A (and of C) that CTA `rank` of the MMA tile holds: 128 rows each."""
        return tile_m * self.mma_m + rank * self.cta_m

    def b_rows(self, tile_n: int, rank: int) -> int:
        """First row of B that CTA `rank` loads: each CTA of a pair loads half of B's rows."""
        return tile_n * self.tile_n + rank * self.b_rows_per_cta


def tcgen05_gemm_shape(
    tile_n: int = 128, stages: int = 4, out_dtype: str = "bfloat16"
) -> KernelShape:
    """kernels.tcgen05_gemm: one CTA per tile, one accumulator, no CLC."""
    return KernelShape(1, tile_n, stages, acc_slots=1, persistent=False, out_dtype=out_dtype)


def cta_pair_gemm_shape(
    tile_n: int = 128, stages: int = 4, out_dtype: str = "bfloat16"
) -> KernelShape:
    """kernels.cta_pair_gemm: CTA pairs, one TMEM slot, one tile per cluster (no CLC)."""
    return KernelShape(2, tile_n, stages, acc_slots=1, persistent=False, out_dtype=out_dtype)


def cta_pair_clc_gemm_shape(
    tile_n: int = 128, stages: int = 4, out_dtype: str = "bfloat16"
) -> KernelShape:
    """kernels.cta_pair_clc_gemm: CTA pairs, two TMEM slots, persistent under CLC."""
    return KernelShape(2, tile_n, stages, acc_slots=2, persistent=True, out_dtype=out_dtype)


@dataclass(frozen=True)
class TileRecord:
    """One tile as a cluster took it."""

    cluster: int  # index of the running cluster (launch order)
    tile: tuple[int, int]  # (tile_m, tile_n) in MMA tiles
    order: int  # 0 = this cluster's home tile, then 1, 2 ... as CLC handed them out
    source: str  # "home" (its own blockIdx) or "clc" (taken from a cancelled cluster)
    acc_slot: int  # TMEM slot its accumulator used
    first_stage: int  # ring position of its first K-block: the ring carries across tiles
    first_phase: int


@dataclass(frozen=True)
class RingEntry:
    """One K-block through the stage ring, as the TMA warp issued it."""

    cluster: int
    tile: tuple[int, int]
    k_block: int
    stage: int
    phase: int


@dataclass(frozen=True)
class Event:
    """One thing a warp did, stamped with the scheduler's clock (an order, not a time)."""

    clock: int
    cluster: int
    cta: int
    warp: str  # "tma", "mma", "epilogue0".."epilogue3"
    what: str  # "load", "mma", "commit", "store", "release" (a TMEM slot), "request" (CLC)
    tile: tuple | None
    detail: dict


@dataclass(frozen=True)
class EmulationCheck:
    exactly_once: bool
    unwritten: int
    overwritten: int
    duplicate_tiles: list
    missing_tiles: list
    rel_error: float
    tol: float

    @property
    def ok(self) -> bool:
        return (
            self.exactly_once
            and not self.duplicate_tiles
            and not self.missing_tiles
            and self.rel_error <= self.tol
        )

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        parts = [f"rel. error {self.rel_error:.2e} (tolerance {self.tol:.0e})"]
        if self.exactly_once:
            parts.append("every element of C written exactly once")
        else:
            parts.append(
                f"{self.unwritten} elements never written, "
                f"{self.overwritten} written more than once"
            )
        if self.duplicate_tiles:
            parts.append(f"tiles computed twice: {self.duplicate_tiles}")
        if self.missing_tiles:
            parts.append(f"tiles never computed: {self.missing_tiles}")
        return f"{verdict}: " + "; ".join(parts)


@dataclass
class Emulation:
    """What an emulated run produced."""

    shape: KernelShape
    m: int
    n: int
    k: int
    c: np.ndarray  # float32 holding out_dtype values; NaN where never written
    writes: np.ndarray  # how many stores hit each element
    tiles: list[TileRecord]
    ring: list[RingEntry]
    clc_log: list
    clusters: int  # clusters (or CTAs) that ran
    warp_steps: int
    events: list = field(default_factory=list)

    @property
    def grid_tiles(self) -> tuple[int, int]:
        return (math.ceil(self.m / self.shape.mma_m), math.ceil(self.n / self.shape.tile_n))

    @property
    def exactly_once(self) -> bool:
        return bool((self.writes == 1).all())

    def check(self, a: np.ndarray, b: np.ndarray) -> EmulationCheck:
        """Exactly-once coverage, tile bookkeeping and the numbers, against A.B^T in float64."""
        ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64).T
        taken = [t.tile for t in self.tiles]
        all_tiles = [(i, j) for j in range(self.grid_tiles[1]) for i in range(self.grid_tiles[0])]
        duplicates = sorted({t for t in taken if taken.count(t) > 1})
        missing = sorted(set(all_tiles) - set(taken))
        out = self.c.astype(np.float64)
        if not np.isfinite(out).all():
            err = math.inf
        else:
            denom = np.linalg.norm(ref)
            err = (
                float(np.linalg.norm(out - ref) / denom)
                if denom
                else float(np.linalg.norm(out) != 0) * math.inf
            )
        return EmulationCheck(
            self.exactly_once,
            int((self.writes == 0).sum()),
            int((self.writes > 1).sum()),
            duplicates,
            missing,
            err,
            TOLERANCE[self.shape.out_dtype],
        )

    def overlaps(self) -> list[tuple[int, tuple, tuple]]:
        """(cluster, tile t, tile t+1) where the MMA of t+1 began before the last store of t.

        That is the point of TMEM ping-pong: with two accumulator slots the MMA warp fills
        one while the epilogue drains the other. With one slot this list is empty.
        """
        first_mma, last_store = {}, {}
        for ev in self.events:
            key = (ev.cluster, ev.tile)
            if ev.what == "mma":
                first_mma.setdefault(key, ev.clock)
            elif ev.what == "store":
                last_store[key] = ev.clock
        out = []
        for cluster, tiles in self.tiles_by_cluster().items():
            for t0, t1 in zip(tiles, tiles[1:]):
                if first_mma[(cluster, t1)] < last_store[(cluster, t0)]:
                    out.append((cluster, t0, t1))
        return out

    def tiles_by_cluster(self) -> dict[int, list[tuple[int, int]]]:
        """cluster -> the tiles it computed, in order."""
        out: dict[int, list] = {}
        for t in sorted(self.tiles, key=lambda r: (r.cluster, r.order)):
            out.setdefault(t.cluster, []).append(t.tile)
        return out


# ---------------------------------------------------------------- the emulated machine


@dataclass
class _Cta:
    """One CTA's shared memory, barriers and tensor memory."""

    shape: KernelShape
    name: str
    smem_a: list = field(default_factory=list)
    smem_b: list = field(default_factory=list)
    stage_tag: list = field(default_factory=list)  # (tile, k_block) each stage holds
    slot_tag: list = field(default_factory=list)  # tile each accumulator slot holds

    def __post_init__(self):
        s = self.shape
        self.smem_a = [None] * s.stages
        self.smem_b = [None] * s.stages
        self.stage_tag = [None] * s.stages
        self.slot_tag = [None] * s.acc_slots
        readers = 32 * WARPS_PER_CTA * s.ctas  # every thread of the pair reads each answer
        self.ab_full = [MBarrier(1, f"{self.name}.ab_full[{i}]") for i in range(s.stages)]
        self.ab_empty = [MBarrier(1, f"{self.name}.ab_empty[{i}]") for i in range(s.stages)]
        self.acc_full = [MBarrier(1, f"{self.name}.acc_full[{i}]") for i in range(s.acc_slots)]
        self.acc_empty = [
            MBarrier(EPILOGUE_WARPS * s.ctas, f"{self.name}.acc_empty[{i}]")
            for i in range(s.acc_slots)
        ]
        self.clc_full = MBarrier(1, f"{self.name}.clc_full")
        self.clc_empty = MBarrier(readers, f"{self.name}.clc_empty")
        self.clc_response = None
        self.epi_sync = NamedBarrier(f"{self.name}.epilogue_bar", EPILOGUE_WARPS)
        self.staging = [np.zeros((s.cta_m, EPI_COLS), np.float32) for _ in range(2)]
        self.tmem = Tmem(f"{self.name}.tmem")
        self.tmem_base = None


@dataclass
class _Run:
    """Everything the warps of one emulated launch share."""

    shape: KernelShape
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    writes: np.ndarray
    clc: ClcHardware | None
    k_blocks: int
    tiles: list = field(default_factory=list)
    ring: list = field(default_factory=list)
    events: list = field(default_factory=list)
    sched: Scheduler | None = None

    def log(self, cluster, cta, warp, what, tile, **detail) -> None:
        self.events.append(Event(self.sched.clock, cluster, cta, warp, what, tile, detail))


def full_barrier_bytes(shape: KernelShape) -> int:
    """What the leader arms each stage's full barrier with: the bytes of BOTH CTAs' copies,
    since barrier aliasing makes every copy of the pair complete on the leader's barrier."""
    return shape.stage_bytes * shape.ctas


def _tile_of(response, ctas: int):
    return (response.first_ctaid_x // ctas, response.first_ctaid_y), response.cancelled


def _read_next_tile(run: _Run, ctas: list[_Cta], rank: int, state: PipelineState):
    """Every warp: wait for the CLC answer in its CTA, decode it, free the buffer (on CTA 0)."""
    yield wait_barrier(ctas[rank].clc_full, state.phase)
    tile, valid = _tile_of(ctas[rank].clc_response, run.shape.ctas)
    ctas[0].clc_empty.arrive(32)
    state.advance()
    return tile, valid


def _next_tile(run, ctas, rank, clc_state):
    if run.shape.persistent:
        return (yield from _read_next_tile(run, ctas, rank, clc_state))
    return None, False  # one tile per CTA


def _request_next_tile(run: _Run, ctas: list[_Cta], cluster: int, state: PipelineState):
    """The leader's TMA warp: try_cancel; the answer lands in both CTAs (multicast)."""
    yield wait_barrier(ctas[0].clc_empty, state.phase)
    for cta in ctas:
        cta.clc_full.arrive(tx=CLC_RESPONSE_BYTES)
    response = run.clc.try_cancel(cluster)
    run.log(cluster, 0, "tma", "request", None, response=response)
    for cta in ctas:
        cta.clc_response = response
        cta.clc_full.complete_tx(CLC_RESPONSE_BYTES)
    state.advance()


def _tma_warp(run: _Run, ctas: list[_Cta], rank: int, cluster: int, home):
    s = run.shape
    me, leader = ctas[rank], ctas[0]
    ab = PipelineState.producer(s.stages)
    clc_request = PipelineState.producer(1)
    clc_state = PipelineState.consumer(1)
    tile, valid = home, True
    while valid:
        (tm, tn) = tile
        for kb in range(run.k_blocks):
            yield wait_barrier(me.ab_empty[ab.index], ab.phase)
            if rank == 0:  # only the leader's full barrier is armed: it expects both CTAs
                leader.ab_full[ab.index].arrive(tx=full_barrier_bytes(s))
            k0 = kb * s.tile_k
            me.smem_a[ab.index] = tma_load(run.a, s.a_rows(tm, rank), k0, s.cta_m, s.tile_k)
            me.smem_b[ab.index] = tma_load(
                run.b, s.b_rows(tn, rank), k0, s.b_rows_per_cta, s.tile_k
            )
            me.stage_tag[ab.index] = (tile, kb)
            # barrier aliasing: the bytes complete on the leader's barrier, not our own
            leader.ab_full[ab.index].complete_tx(s.stage_bytes)
            run.log(cluster, rank, "tma", "load", tile, k_block=kb, stage=ab.index, phase=ab.phase)
            if rank == 0:
                run.ring.append(RingEntry(cluster, tile, kb, ab.index, ab.phase))
            ab.advance()
            yield None
        if s.persistent and rank == 0:
            yield from _request_next_tile(run, ctas, cluster, clc_request)
        tile, valid = yield from _next_tile(run, ctas, rank, clc_state)
    for _ in range(s.stages):  # producer tail: the last commits have reached our barriers
        yield wait_barrier(me.ab_empty[ab.index], ab.phase)
        ab.advance()
    if s.persistent and rank == 0:
        yield wait_barrier(ctas[0].clc_empty, clc_request.phase)


def _mma_warp(run: _Run, ctas: list[_Cta], rank: int, cluster: int, home):
    s = run.shape
    leader = ctas[0]
    acc = PipelineState.producer(s.acc_slots)
    ab = PipelineState.consumer(s.stages)
    clc_state = PipelineState.consumer(1)
    tile, valid = home, True
    order = 0
    while valid:
        if rank == 0:  # only the leader issues the (pair's) MMA
            yield wait_barrier(leader.acc_empty[acc.index], acc.phase)
            slot = acc.index
            run.tiles.append(
                TileRecord(
                    cluster, tile, order, "home" if order == 0 else "clc", slot, ab.index, ab.phase
                )
            )
            for kb in range(run.k_blocks):
                yield wait_barrier(leader.ab_full[ab.index], ab.phase)
                for cta in ctas:
                    if cta.stage_tag[ab.index] != (tile, kb):
                        raise RingCorruption(
                            f"{cta.name} stage {ab.index} holds {cta.stage_tag[ab.index]}, "
                            f"the MMA of tile {tile} expected K-block {kb}"
                        )
                a_tile = np.concatenate([c.smem_a[ab.index] for c in ctas])  # mma_m x 64
                b_tile = np.concatenate([c.smem_b[ab.index] for c in ctas])  # tile_n x 64
                product = a_tile @ b_tile.T  # fp32 products, fp32 accumulation
                for r, cta in enumerate(ctas):  # rows 128r.. land in CTA r's TMEM
                    cta.tmem.write(
                        cta.tmem_base + slot * s.tile_n,
                        product[r * s.cta_m : (r + 1) * s.cta_m],
                        accumulate=kb > 0,
                    )
                for cta in ctas:  # tcgen05.commit, multicast to the pair: stage is free
                    cta.ab_empty[ab.index].arrive()
                run.log(cluster, 0, "mma", "mma", tile, k_block=kb, stage=ab.index, slot=slot)
                ab.advance()
                yield None
            for cta in ctas:
                cta.slot_tag[slot] = tile
                cta.acc_full[slot].arrive()  # tcgen05.commit: the accumulator is complete
            run.log(cluster, 0, "mma", "commit", tile, slot=slot)
            acc.advance()
        order += 1
        tile, valid = yield from _next_tile(run, ctas, rank, clc_state)
    if rank == 0:  # producer tail: every epilogue has released its last slot
        for _ in range(s.acc_slots - 1):
            acc.advance()
        yield wait_barrier(leader.acc_empty[acc.index], acc.phase)


def _epilogue_warp(run: _Run, ctas: list[_Cta], rank: int, cluster: int, warp: int, home):
    s = run.shape
    me, leader = ctas[rank], ctas[0]
    acc = PipelineState.consumer(s.acc_slots)
    clc_state = PipelineState.consumer(1)
    tile, valid = home, True
    lane0 = 32 * warp
    while valid:
        yield wait_barrier(me.acc_full[acc.index], acc.phase)
        slot = acc.index
        if me.slot_tag[slot] != tile:
            raise RingCorruption(
                f"{me.name} slot {slot} holds tile {me.slot_tag[slot]}, "
                f"epilogue warp {warp} expected {tile}"
            )
        row0 = s.a_rows(tile[0], rank)
        for sub in range(s.tile_n // EPI_COLS):
            col0 = me.tmem_base + slot * s.tile_n + sub * EPI_COLS
            values = me.tmem.read(warp, lane0, col0, EPI_COLS)  # tcgen05.ld 32x32b.x32
            buffer = me.staging[sub % 2]
            buffer[lane0 : lane0 + 32] = round_to(values, s.out_dtype)
            yield from sync_named(me.epi_sync)
            if warp == 0:  # one thread stores the 128 x 32 sub-tile (TMA clips at C's edge)
                tma_store(run.c, run.writes, row0, tile[1] * s.tile_n + sub * EPI_COLS, buffer)
                run.log(
                    cluster,
                    rank,
                    "epilogue0",
                    "store",
                    tile,
                    sub_tile=sub,
                    slot=slot,
                    rows=(row0, row0 + s.cta_m),
                )
            yield from sync_named(me.epi_sync)
        leader.acc_empty[slot].arrive()  # elect_one: one arrival per warp, on the leader
        run.log(cluster, rank, f"epilogue{warp}", "release", tile, slot=slot)
        acc.advance()
        tile, valid = yield from _next_tile(run, ctas, rank, clc_state)
    yield from sync_named(me.epi_sync)
    if warp == 0:
        me.tmem.dealloc(me.tmem_base, s.tmem_columns)


def emulate_gemm(
    a,
    b,
    shape: KernelShape,
    resident_clusters: int | None = None,
    seed: int | None = None,
    clc=ClcHardware,
) -> Emulation:
    """Emulate any KernelShape (e.g. a CTA pair with one accumulator slot, for contrast)."""
    return _emulate(a, b, shape, resident_clusters, seed, clc)


def _emulate(
    a, b, shape: KernelShape, resident_clusters: int | None, seed: int | None, clc_factory
) -> Emulation:
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb or k < 1 or m < 1 or n < 1:
        raise ValueError(f"need A (M,K) and B (N,K) with the same K >= 1, got {a.shape}, {b.shape}")
    tiles_m, tiles_n = math.ceil(m / shape.mma_m), math.ceil(n / shape.tile_n)
    # clusters in launch order: blockIdx.x (along M) fastest
    cluster_ids = [(tm * shape.ctas, tn) for tn in range(tiles_n) for tm in range(tiles_m)]
    resident = (
        len(cluster_ids) if resident_clusters is None else min(resident_clusters, len(cluster_ids))
    )
    if not shape.persistent:
        resident = len(cluster_ids)  # one tile per CTA: every CTA of the grid runs
    clc = clc_factory(cluster_ids, resident) if shape.persistent else None
    c = np.full((m, n), np.nan, np.float32)
    run = _Run(shape, a, b, c, np.zeros((m, n), np.int64), clc, math.ceil(k / shape.tile_k))
    sched = Scheduler(seed=seed)
    run.sched = sched
    launched = clc.launched if clc is not None else cluster_ids
    for cluster, (x, y) in enumerate(launched):
        ctas = [_Cta(shape, f"cluster{cluster}.cta{r}") for r in range(shape.ctas)]
        for cta in ctas:  # between two cluster barriers in the kernel
            cta.tmem_base = cta.tmem.alloc(shape.tmem_columns)
            cta.tmem.relinquish()
        home = (x // shape.ctas, y)
        for r in range(shape.ctas):
            tag = f"cluster{cluster}.cta{r}"
            sched.spawn(f"{tag}.tma", _tma_warp(run, ctas, r, cluster, home))
            sched.spawn(f"{tag}.mma", _mma_warp(run, ctas, r, cluster, home))
            for w in range(EPILOGUE_WARPS):
                sched.spawn(f"{tag}.epilogue{w}", _epilogue_warp(run, ctas, r, cluster, w, home))
    sched.run()
    return Emulation(
        shape,
        m,
        n,
        k,
        c,
        run.writes,
        run.tiles,
        run.ring,
        clc.log if clc is not None else [],
        len(launched),
        sum(w.steps for w in sched.warps),
        run.events,
    )


def emulate_tcgen05_gemm(
    a, b, tile_n: int = 128, stages: int = 4, out_dtype: str = "bfloat16", seed: int | None = None
) -> Emulation:
    """Replay kernels.tcgen05_gemm on A (M,K) and B (N,K): C = A.B^T."""
    return _emulate(a, b, tcgen05_gemm_shape(tile_n, stages, out_dtype), None, seed, ClcHardware)


def emulate_cta_pair_gemm(
    a, b, tile_n: int = 128, stages: int = 4, out_dtype: str = "bfloat16", seed: int | None = None
) -> Emulation:
    """Replay kernels.cta_pair_gemm on A (M,K) and B (N,K): C = A.B^T."""
    return _emulate(a, b, cta_pair_gemm_shape(tile_n, stages, out_dtype), None, seed, ClcHardware)


def emulate_cta_pair_clc_gemm(
    a,
    b,
    tile_n: int = 128,
    stages: int = 4,
    out_dtype: str = "bfloat16",
    resident_clusters: int | None = 2,
    seed: int | None = None,
    clc=ClcHardware,
) -> Emulation:
    """Replay kernels.cta_pair_clc_gemm on A (M,K) and B (N,K): C = A.B^T.

    resident_clusters: how many clusters the emulated GPU runs at once (the rest are
    handed out by CLC); a B200 would hold 74 pairs, a small number makes stealing visible.
    clc: the launch-queue model (course.emulate.clc.ClcHardware, or a broken one).
    """
    return _emulate(
        a, b, cta_pair_clc_gemm_shape(tile_n, stages, out_dtype), resident_clusters, seed, clc
    )


def random_operands(m: int, n: int, k: int, dtype: str = "bfloat16", seed: int = 0):
    """Standard-normal A (M,K) and B (N,K) rounded to `dtype`, as float32 arrays."""
    rng = np.random.default_rng(seed)
    return (
        round_to(rng.standard_normal((m, k), dtype=np.float32), dtype),
        round_to(rng.standard_normal((n, k), dtype=np.float32), dtype),
    )
