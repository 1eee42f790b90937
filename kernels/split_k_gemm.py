"""Notebook 13: split-K -- the CTAs of a cluster share one tile of C, each adding up a part of
K, and reduce their partial sums through distributed shared memory.

A GEMM with few tiles and a long K (1024 x 1024 x 16384: 32 tiles of 128 x 256) leaves most of
the 132 SMs idle, however fast each tile goes; so does the last, partly filled wave of a larger
problem. Split-K gives each tile to `split_k` CTAs of a cluster: CTA `s` adds up its share of
the k-tiles (part 0 the first ceil(K/split_k) of them, and so on), so a tile's work spreads over
`split_k` SMs. The partial sums must then meet. Here they meet in shared memory, never in
global memory: every CTA's shared memory is readable by every CTA of its cluster (distributed
shared memory, DSMEM). The accumulator is handed over a slice (`Config.handoff` elements per
thread) at a time, through two slots per CTA, so that a helper writes one slice while the
leader reads the other:

  CTA s > 0 (a helper): waits until its slot is free (`empty`), writes its slice into it (each
      thread its own elements) and arrives on the leader's `full` mbarrier for that slot;
  CTA 0 (the leader): waits on `full`, adds each helper's slice -- read through the cluster's
      address map (mapa, ld.shared::cluster) -- into its own accumulator and arrives on each
      helper's `empty`; then it runs the usual epilogue (only the leader stores the tile).

Two mbarriers per slot, no atomics, no workspace in global memory, no second kernel; and a
cluster barrier before any thread exits, so that no CTA's shared memory goes away while a
partner may still read it. Two ways to use it (`Config.split_tail`):

  every tile split (split_tail=False): for few tiles and a long K;
  only the last wave's tiles split (split_tail=True): the full waves run whole tiles, one per
      CTA, and the tiles left over are split, so a short last wave takes half the time.

Everything else is hopper_gemm's kernel (warp specialization, persistence, the TMA-store
epilogue, 128 x 256 tiles, B multicast along a 2 x 1 cluster when cluster_m = 2). The hand-off's
slots cost shared memory: the ring holds 3 stages, not 4, and the epilogue 2 store buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import torch
from cutlass.memory.smem import SmemAllocator

from . import dsmem, hopper_gemm, selftest
from . import sm90_parts as parts
from .gemm_host import GemmHost
from .hopper_gemm import BARRIERS, CONSUMER_REGS, CONSUMER_WARPGROUPS, PRODUCER_REGS, TILE_M
from .hopper_gemm import WARPGROUP_THREADS, HopperGemm
from .sm90_parts import OperandTma, OutputC, SharedTiles, SmemLayouts

NEEDS = hopper_gemm.NEEDS
DTYPES = hopper_gemm.DTYPES
CONSUMER_THREADS = WARPGROUP_THREADS * CONSUMER_WARPGROUPS
SLOTS = 2  # slices in flight: a helper writes one while the leader reads the other
HANDOFF_ALIGN = 16


@dataclass(frozen=True)
class Config(hopper_gemm.Config):
    split_k: int = 2  # CTAs of a cluster that share a tile, each adding up 1/split_k of K
    split_tail: bool = False  # split only the tiles of the last wave
    handoff: int = 16  # accumulator elements per thread in one slice of the hand-off
    epi_stages: int = 2  # (two TMA-store buffers, not four: room for the hand-off's slots)

    def __post_init__(self):
        if self.split_k not in (2, 3, 4):
            raise ValueError("split_k must be 2, 3 or 4 (CTAs of one cluster)")
        if self.pingpong:
            raise ValueError("split-K runs the cooperative consumers (pingpong=False)")
        if (TILE_M * self.tile_n // CONSUMER_THREADS) % (self.handoff * SLOTS):
            raise ValueError(
                f"the accumulator ({TILE_M * self.tile_n // CONSUMER_THREADS} elements per "
                f"thread) must split into pairs of {self.handoff}-element slices"
            )
        super().__post_init__()

    @property
    def cluster_mnk(self) -> tuple[int, int, int]:
        """split_k CTAs along K: copies of the cluster_m x cluster_n block, one per part."""
        return (self.cluster_m, self.cluster_n, self.split_k)

    def extra_smem_bytes(self) -> int:
        """The hand-off's slots: SLOTS slices of the fp32 accumulator (its four mbarriers
        fit in the shared memory set aside for the ring's, hopper_gemm.BARRIER_RESERVE)."""
        return SLOTS * CONSUMER_THREADS * self.handoff * 4


PRESETS: dict[str, Config] = {
    # the SOL kernel's 2 x 1 cluster (B multicast), each CTA of the pair doubled along K:
    # clusters of 4
    "split_k2": Config(),
    # no multicast, four CTAs per tile
    "split_k4": Config(split_k=4, cluster_m=1),
    # whole tiles until the last wave, whose tiles are split in two; clusters of 2 (an H100's or
    # H200's 132 SMs hold only 30 clusters of 4)
    "split_tail": Config(cluster_m=1, split_tail=True),
}


class SplitWork(NamedTuple):
    """hopper_gemm.Work and where the tile's partial sums go."""

    tile_row: cutlass.Int32
    tile_col: cutlass.Int32
    k_first: cutlass.Int32
    k_count: cutlass.Int32
    part: cutlass.Int32  # -1: a whole tile; else which part of K (0: the leader's)
    round: cutlass.Int32  # how many split tiles this cluster did before this one
    leader: cutlass.Int32  # the rank (in the cluster) of the CTA that stores the tile
    discard: cutlass.Int32  # 1: a part without k-tiles of its own (K < split_k k-tiles)


@dataclass(frozen=True)
class SplitSchedule(parts.TileSchedule):
    """hopper_gemm's persistent schedule with split tiles: from block `split_from` on (0, or
    with split_tail the first block of the last wave) a work item is one block whose tiles
    the cluster's split_k CTAs share, each adding up a part of K (place.rk); before it, a
    work item is split_k whole blocks, one per group of CTAs with the same rk."""

    split_k: int = 2
    split_from: cutlass.Int32 = 0


@cute.jit
def split_work(schedule: SplitSchedule, item: cutlass.Int32, k_tiles: cutlass.Int32) -> SplitWork:
    """Work item -> this CTA's tile, its k-tiles, and its part in the tile's reduction."""
    # region split-schedule
    splits = schedule.split_k
    first = schedule.split_from
    whole_items = first // splits
    block = item * splits + schedule.place.rk  # a whole block per group of CTAs
    k_first, k_count = cutlass.Int32(0), k_tiles
    part, rounds, discard = cutlass.Int32(-1), cutlass.Int32(0), cutlass.Int32(0)
    if item >= whole_items:  # one block for the cluster; this CTA's part of its k-tiles
        block = first + item - whole_items
        part = schedule.place.rk
        k_first = (part * k_tiles + splits - 1) // splits  # ceil: part 0 is never empty
        k_count = ((part + 1) * k_tiles + splits - 1) // splits - k_first
        if k_count == 0:  # fewer k-tiles than parts: run k-tile 0 (the ring stays in
            k_first, k_count, discard = 0, 1, 1  # step) and hand over zeros
        rounds = (item - whole_items) // schedule.clusters
    # endregion split-schedule
    row, col = parts.cluster_tile(schedule, block)
    cm, _ = schedule.cluster_mn
    leader = schedule.place.rm + schedule.place.rn * cm  # part 0, the same place
    return SplitWork(row, col, k_first, k_count, part, rounds, leader, discard)


class Handoff(NamedTuple):
    """The hand-off of partial sums in this CTA's shared memory."""

    bars: cute.Pointer  # full[slot] (the leader's: helpers wrote a slice), then empty[slot]
    slots: cute.Tensor  # (consumer thread, element of a slice, slot)


class SplitKGemm(HopperGemm):
    """hopper_gemm's kernel with each (or each last-wave) tile split over a cluster's CTAs:
    its own kernel body (the hand-off's shared memory, a cluster barrier before exit), its
    own schedule (SplitSchedule) and its own consumer (the reduction through DSMEM)."""

    @cute.jit
    def split_blocks_from(self, blocks: cutlass.Int32, clusters: cutlass.Int32) -> cutlass.Int32:
        """The first block of cluster_m x cluster_n tiles that is split: 0, or (split_tail)
        the first of the last wave of a grid of `clusters` clusters (split_k blocks per
        cluster, one per group of CTAs, before it)."""
        first = cutlass.Int32(0)
        if cutlass.const_expr(self.cfg.split_tail):
            per_wave = clusters * self.cfg.split_k
            first = blocks // per_wave * per_wave
        return first

    @cute.jit
    def work_items(
        self, cluster_rows: cutlass.Int32, cluster_cols: cutlass.Int32, clusters: cutlass.Int32
    ) -> cutlass.Int32:
        """Before the split blocks a work item is split_k whole blocks (one per group of
        CTAs with the same part of K); after, one block split over the cluster."""
        blocks = cluster_rows * cluster_cols
        first = self.split_blocks_from(blocks, clusters)
        return first // self.cfg.split_k + blocks - first

    @cute.kernel
    def kernel(
        self,
        operands: OperandTma,
        out: OutputC,
        tiled_mma: cute.TiledMma,
        layouts: SmemLayouts,
        cluster_rows: cutlass.Int32,
        cluster_cols: cutlass.Int32,
        inputs: tuple,
    ):
        cfg = self.cfg
        tidx, _, warp = parts.cta_coordinates()
        warpgroup = warp // 4
        parts.prefetch_descriptors(warp, (operands.tma_a, operands.tma_b, out.tma_c))
        place = parts.cluster_place(cfg.cluster_mnk)

        smem = SmemAllocator()
        barriers, shared = parts.allocate_shared_tiles(
            smem, self.ab_dtype, self.c_dtype, layouts, self.stages
        )
        handoff = self.allocate_handoff(smem, tidx)
        ring = parts.make_cluster_ring(
            barriers, self.stages, self.tx_bytes, self.stage_readers, cfg.cluster_mnk
        )
        loads, k_tiles = parts.multicast_k_tiles(
            operands, shared, (TILE_M, cfg.tile_n, self.tile_k), place, cfg.cluster_mnk
        )
        parts.wait_for_cluster_init(cfg.cluster_mnk)

        cluster_id, clusters = parts.clusters_in_grid(cfg.cluster_size)
        schedule = SplitSchedule(
            cluster_id=cluster_id,
            clusters=clusters,
            work=self.work_items(cluster_rows, cluster_cols, clusters),
            cluster_rows=cluster_rows,
            cluster_cols=cluster_cols,
            place=place,
            cluster_mn=(cfg.cluster_m, cfg.cluster_n),
            group_m=cfg.group_m,
            split_k=cfg.split_k,
            split_from=self.split_blocks_from(cluster_rows * cluster_cols, clusters),
        )

        if warpgroup == 0:  # ----------------------------------------- producer
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp == 0:
                parts.stream_k_tiles(
                    ring,
                    loads,
                    schedule,
                    work_of=split_work,
                    k_tiles=k_tiles,
                    stages=self.stages,
                    cluster_mnk=cfg.cluster_mnk,
                    policies=self.l2_policies,
                )
        else:  # ----------------------------------------------------------- consumers
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            self.consumer_role(
                tiled_mma,
                ring,
                shared,
                out,
                schedule,
                k_tiles=k_tiles,
                warp=warp,
                wg=warpgroup - 1,
                ctid=tidx - WARPGROUP_THREADS,
                handoff=handoff,
            )
        # a CTA's shared memory must outlive every read of it from the cluster (a leader's
        # reads come before its arrival; the threads that exited already count as arrived)
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

    @cute.jit
    def allocate_handoff(self, smem: SmemAllocator, tidx: cutlass.Int32) -> Handoff:
        """The hand-off's mbarriers -- full[slot]: the helpers' threads have written a slice
        into that slot (in the leader); empty[slot]: the leader's threads have read this
        CTA's slot -- and SLOTS slots of (consumer thread, element of the slice), the
        threads adjacent so that a warp's reads and writes are contiguous. Thread 0
        initializes the barriers before the cluster syncs."""
        bars = smem.allocate_array(cutlass.Int64, 2 * SLOTS, byte_alignment=HANDOFF_ALIGN)
        slots = smem.allocate_tensor(
            self.acc_dtype,
            cute.make_layout(
                (CONSUMER_THREADS, self.cfg.handoff, SLOTS),
                stride=(1, CONSUMER_THREADS, CONSUMER_THREADS * self.cfg.handoff),
            ),
            HANDOFF_ALIGN,
        )
        if tidx == 0:
            for slot in cutlass.range_constexpr(SLOTS):
                cute.arch.mbarrier_init(bars + slot, (self.cfg.split_k - 1) * CONSUMER_THREADS)
                cute.arch.mbarrier_init(bars + SLOTS + slot, CONSUMER_THREADS)
        return Handoff(bars, slots)

    @cute.jit
    def consumer_role(
        self,
        tiled_mma: cute.TiledMma,
        ring: pipeline.PipelineTmaAsync,
        shared: SharedTiles,
        out: OutputC,
        schedule: SplitSchedule,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        wg: cutlass.Int32,
        ctid: cutlass.Int32,
        handoff: Handoff,
    ):
        """hopper_gemm's cooperative consumer; a split tile's partial sums meet in its
        leader (reduce_partial_sums), and only the leader stores the tile."""
        cfg = self.cfg
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        me = parts.consumer_pieces(self, tiled_mma, shared, out.mC, wg, warp, ctid, BARRIERS)
        item = schedule.cluster_id
        done = cutlass.Int32(0)
        while item < schedule.work:
            work = split_work(schedule, item, k_tiles)
            parts.start_tile(tiled_mma, me.mma.acc, me.turn, done)
            read, release = parts.mainloop(tiled_mma, me.mma, ring, read, release, work.k_count)
            release = parts.release_stage(ring, release, 0)
            self.reduce_partial_sums(me.mma.acc, work, handoff, ctid)
            if work.part <= 0:  # a whole tile, or the leader of a split one
                self.store_tile(out, shared, me, work, done)
            done += 1
            item += schedule.clusters
        if cutlass.const_expr(cfg.tma_store):
            me.writer.stores.producer_tail()

    @cute.jit
    def reduce_partial_sums(
        self, acc: cute.Tensor, work: SplitWork, handoff: Handoff, ctid: cutlass.Int32
    ):
        """A split tile: the helpers hand their partial sums to the leader, which adds them,
        a slice of `handoff` elements per thread at a time."""
        # region dsmem-reduction
        bars, slots = handoff
        per = self.cfg.handoff  # elements per thread in a slice
        if work.discard == 1:
            acc.fill(0.0)
        slices = cute.size(acc) // per
        others = self.cfg.cluster_m * self.cfg.cluster_n  # rank distance between parts
        for e in cutlass.range_constexpr(slices):
            slot = e % SLOTS
            # the how-manieth use of this slot: the parity of the phase it waits on
            use = (work.round * slices + e) // SLOTS
            full, empty = bars + slot, bars + SLOTS + slot
            mine = slots[ctid, None, slot]  # (per,): this thread's, the same in every CTA
            if work.part > 0:  # a helper: wait until the leader has read this slot
                cute.arch.mbarrier_wait(empty, (use & 1) ^ 1)
                cute.arch.fence_acq_rel_cluster()
                for v in cutlass.range_constexpr(per):
                    mine[v] = acc[e * per + v]
                dsmem.arrive(full, work.leader)  # on the leader's barrier
            if work.part == 0:  # the leader: every helper's slice, read through DSMEM
                cute.arch.mbarrier_wait(full, use & 1)
                cute.arch.fence_acq_rel_cluster()
                for p in cutlass.range_constexpr(1, self.cfg.split_k):
                    theirs = cute.arch.map_dsmem_ptr(mine.iterator, work.leader + p * others)
                    for v in cutlass.range_constexpr(per):
                        theirs_v = dsmem.load(theirs + mine.layout(v), self.acc_dtype)
                        acc[e * per + v] = acc[e * per + v] + theirs_v
                for p in cutlass.range_constexpr(1, self.cfg.split_k):
                    dsmem.arrive(empty, work.leader + p * others)
        # endregion dsmem-reduction


# ------------------------------------------------------------------ the surface


GEMM = GemmHost(
    "split_k_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: SplitKGemm(types, config, arch),
    Config,
    extra=hopper_gemm.PERSISTENT_GRID,
)
compile, artifacts, run = GEMM.compile, GEMM.artifacts, GEMM.run


# ragged edges; a K of one k-tile (every part but one empty); few tiles and a long K; a
# problem whose last wave is partly filled
CHECK_SHAPES = (
    (129, 264, 400),
    (200, 136, 64),
    (1000, 1016, 520),
    (1024, 1024, 16384),
    (3000, 5000, 4096),
)


def check(shapes=CHECK_SHAPES, presets=None, dtype=torch.bfloat16, seed: int = 0) -> list[tuple]:
    """Each preset (default: all) against torch on each (m, n, k), C poisoned first:
    (preset, (m, n, k), relative error, within the tolerance), for a GPU."""

    def launch(config, a, b, out, g):
        run(a, b, out, config)
        return a.double() @ b.double().t()

    return selftest.check_presets(presets or PRESETS, shapes, launch, dtype, seed)


if __name__ == "__main__":
    raise SystemExit(selftest.presets_main(GEMM, PRESETS, sizes=(1024, 4096)))
