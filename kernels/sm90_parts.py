"""The Hopper pieces steps 09-11 share: TMA loads of k-tiles into a ring of swizzled stages,
that ring as CuTe DSL's PipelineTmaAsync, and WGMMA's tiled MMA.

Notebook 09 introduces them (kernels/tma_gemm.py writes its ring by hand around them),
notebook 10 (kernels/wgmma_gemm.py) multiplies out of the ring with WGMMA, and notebook 11
(kernels/hopper_gemm.py) specializes warps around them. A k-tile is one 128-byte swizzle
row of A and B wide (`gemm_host.tile_k`: 64 elements of a 16-bit type, 128 of float8), so
one TMA box row is one swizzle row.

Functions here are traced inline into the kernels that call them (`@cute.jit` ones too: a
jit function called from a kernel is inlined), so where they live does not change the PTX.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.memory.smem import SmemAllocator

from .gemm_host import COPY_BYTES, elements, stage_bytes, tile_k
from .sm80_gemm import grouped_tile, row_copy, swizzled_rows

BARRIER_BYTES = 8  # one mbarrier
SWIZZLE_ALIGN = 1024  # a 128B-swizzled buffer starts on a 1024-byte boundary (8 rows of 128 B)


def cta_coordinates():
    """(thread index, block index, warp index): where this thread stands in the grid. The
    warp index is made warp-uniform, so branches on it do not diverge inside a warp."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    return tidx, bidx, cute.arch.make_warp_uniform(cute.arch.warp_idx())


@cute.jit
def prefetch_descriptors(warp: cutlass.Int32, atoms: cutlass.Constexpr):
    """Warp 0 pulls the TMA descriptors (tensor maps) into the cache before the first copy."""
    if warp == 0:
        for atom in atoms:
            cute.nvgpu.cpasync.prefetch_descriptor(atom)


def ring_smem_bytes(tile_m: int, tile_n: int, stages: int, c_bytes: int) -> int:
    """The ring (C's staging tile, `c_bytes` an element, reuses its space in the epilogue),
    the alignment of the 128B-swizzled buffers, and a full and an empty mbarrier per stage."""
    ring = stage_bytes(tile_m, tile_n) * stages
    return max(ring, tile_m * tile_n * c_bytes) + SWIZZLE_ALIGN + 2 * BARRIER_BYTES * stages


def staged_smem_layout(dtype, rows: int, stages: int):
    """(rows, tile_k, stages), K-major with the 128-byte swizzle that TMA writes (and that
    WGMMA's descriptors read in step 10)."""
    width = tile_k(dtype.width)
    atom = cute.nvgpu.warpgroup.make_smem_layout_atom(
        sm90_utils.get_smem_layout_atom(cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, dtype, width),
        dtype,
    )
    return cute.tile_to_shape(atom, (rows, width, stages), order=(0, 1, 2))


class OperandTma(NamedTuple):
    """One TMA atom (tensor map) per operand and the operand seen in TMA coordinates."""

    tma_a: cute.CopyAtom
    mA: cute.Tensor  # A (M, K) as TMA coordinates
    tma_b: cute.CopyAtom
    mB: cute.Tensor  # B (N, K) as TMA coordinates


def operand_tma(
    mA: cute.Tensor, mB: cute.Tensor, sA_layout, sB_layout, tile_m: int, tile_n: int
) -> OperandTma:
    """Host side: one tensor map per operand, boxes of (tile rows x tile_k) written into one
    stage of the swizzled ring."""
    g2s = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
    width = tile_k(mA.element_type.width)
    tma_a, tA = cute.nvgpu.cpasync.make_tiled_tma_atom(
        g2s, mA, cute.slice_(sA_layout, (None, None, 0)), (tile_m, width)
    )
    tma_b, tB = cute.nvgpu.cpasync.make_tiled_tma_atom(
        g2s, mB, cute.slice_(sB_layout, (None, None, 0)), (tile_n, width)
    )
    return OperandTma(tma_a, tA, tma_b, tB)


class KTileLoads(NamedTuple):
    """What the TMA copies of one k-tile need: each operand's tensor map (copy atom), its
    k-tiles in TMA coordinates and the ring's stage slots (from tma_k_tiles)."""

    tma_a: cute.CopyAtom
    tAgA: cute.Tensor  # ((TMA, REST), k_tiles): tAgA[None, j] is k-tile j of this CTA's A
    tAsA: cute.Tensor  # ((TMA, REST), STAGE): tAsA[None, s] is stage s of the A ring
    tma_b: cute.CopyAtom
    tBgB: cute.Tensor  # ((TMA, REST), k_tiles)
    tBsB: cute.Tensor  # ((TMA, REST), STAGE)


def tma_k_tiles(
    tma: OperandTma, sA: cute.Tensor, sB: cute.Tensor, tile_row, tile_col, tile_m: int, tile_n: int
) -> tuple[KTileLoads, cutlass.Int32]:
    """This CTA's k-tiles of A and B in TMA coordinates, and the stage slots they land in
    (tile (tile_row, tile_col) of C, tiles of tile_m x tile_n); and how many k-tiles."""
    width = tile_k(sA.element_type.width)
    gA = cute.local_tile(tma.mA, (tile_m, width), (tile_row, None))  # (bM, bK, k_tiles)
    gB = cute.local_tile(tma.mB, (tile_n, width), (tile_col, None))  # (bN, bK, k_tiles)
    # tAsA ((TMA, REST), STAGE) and tAgA ((TMA, REST), k_tiles): one CTA, no multicast
    tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
        tma.tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
    )
    tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
        tma.tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2)
    )
    return KTileLoads(tma.tma_a, tAgA, tAsA, tma.tma_b, tBgB, tBsB), cute.size(gA, mode=[2])


def make_tma_ring(
    barriers: cute.Pointer,
    stages: int,
    tx_bytes: int,
    consumer_warps: int,
    cta_layout_vmnk=None,
    defer_sync: bool = False,
    writers: int = 1,
) -> pipeline.PipelineTmaAsync:
    """The full/empty ring as CuTe DSL's PipelineTmaAsync: full[s] expects `writers`
    arrivals (the producer's expect_tx, and one per lane of any cp.async.mbarrier.arrive a
    step adds) plus `tx_bytes`; empty[s] one arrival per consumer warp (in a cluster,
    `cta_layout_vmnk` says whose; `defer_sync` leaves the cluster's sync to the caller, as
    CuTe DSL's own defaults otherwise do)."""
    return pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        barrier_storage=barriers,
        tx_count=tx_bytes,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, writers),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_warps),
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=defer_sync,
    )


def copy_k_tile(loads: KTileLoads, j, stage, bar: cute.Pointer) -> None:
    """Start the TMA copies of k-tile j of A and B into `stage`, their bytes counted on the
    mbarrier `bar` as they land. Called by a whole warp (the copy elects its own lane)."""
    cute.copy(loads.tma_a, loads.tAgA[None, j], loads.tAsA[None, stage], tma_bar_ptr=bar)
    cute.copy(loads.tma_b, loads.tBgB[None, j], loads.tBsB[None, stage], tma_bar_ptr=bar)


@cute.jit
def load_k_tile(
    ring: pipeline.PipelineTmaAsync,
    state: pipeline.PipelineState,
    tma_a: cute.CopyAtom,
    tAgA: cute.Tensor,
    tAsA: cute.Tensor,
    tma_b: cute.CopyAtom,
    tBgB: cute.Tensor,
    tBsB: cute.Tensor,
):
    """Wait until stage `state.index` is empty, arm its full barrier with the expected
    bytes, and start the two TMA copies of k-tile `state.count`. Called by a whole warp
    (the arguments after `state` are a KTileLoads, unpacked)."""
    ring.producer_acquire(state)
    copy_k_tile(
        KTileLoads(tma_a, tAgA, tAsA, tma_b, tBgB, tBsB),
        state.count,
        state.index,
        ring.producer_get_barrier(state),
    )


class SmemLayouts(NamedTuple):
    """The staged shared-memory layouts of the A and B rings and of C's staging tile."""

    sA: cute.ComposedLayout  # (bM, bK, STAGE)
    sB: cute.ComposedLayout  # (bN, bK, STAGE)
    sC: cute.ComposedLayout  # (bM, bN)


def ring_layouts(ab_dtype, c_dtype, tile_m: int, tile_n: int, stages: int) -> SmemLayouts:
    """Host side: the A and B rings as TMA writes them (128B-swizzled, `stages` deep) and C's
    staging tile over them (rows of 16-byte chunks swizzled as in step 07)."""
    atom_c = swizzled_rows(64, elements(COPY_BYTES, c_dtype.width))
    return SmemLayouts(
        staged_smem_layout(ab_dtype, tile_m, stages),
        staged_smem_layout(ab_dtype, tile_n, stages),
        cute.tile_to_shape(atom_c, (tile_m, tile_n), (0, 1)),
    )


def allocate_ring(smem: SmemAllocator, dtype, layouts: SmemLayouts, c_dtype):
    """The A and B rings (1024-byte aligned, as the 128B swizzle needs) and C's staging
    tile, which reuses the ring's space once the main loop is over."""
    sA = smem.allocate_tensor(dtype, layouts.sA.outer, SWIZZLE_ALIGN, layouts.sA.inner)
    sB = smem.allocate_tensor(dtype, layouts.sB.outer, SWIZZLE_ALIGN, layouts.sB.inner)
    sC = cute.make_tensor(
        cute.recast_ptr(sA.iterator, layouts.sC.inner, dtype=c_dtype), layouts.sC.outer
    )
    return sA, sB, sC


class RingTile(NamedTuple):
    """A PipelineTmaAsync ring in shared memory and this CTA's tile, ready to stream."""

    ring: pipeline.PipelineTmaAsync
    sA: cute.Tensor  # (bM, bK, STAGE)
    sB: cute.Tensor  # (bN, bK, STAGE)
    sC: cute.Tensor  # (bM, bN), over the ring
    tile_row: cutlass.Int32  # this CTA's tile of C, in tiles
    tile_col: cutlass.Int32
    loads: KTileLoads  # its k-tiles in TMA coordinates and the stage slots
    k_tiles: cutlass.Int32


def ring_and_tile(
    cfg,
    ab_dtype,
    c_dtype,
    tx_bytes: int,
    consumer_warps: int,
    layouts: SmemLayouts,
    tma: OperandTma,
    bidx,
    tiles_m,
    tiles_n,
) -> RingTile:
    """Shared memory for a PipelineTmaAsync ring (the full/empty barrier pairs, then the A
    and B stages, C's staging tile over them), and CTA `bidx`'s tile in the grouped order
    with its k-tiles in TMA coordinates. Traced inline in a kernel."""
    smem = SmemAllocator()
    barriers = smem.allocate_array(cutlass.Int64, 2 * cfg.stages, byte_alignment=BARRIER_BYTES)
    sA, sB, sC = allocate_ring(smem, ab_dtype, layouts, c_dtype)
    ring = make_tma_ring(barriers, cfg.stages, tx_bytes, consumer_warps)
    tile_row, tile_col = grouped_tile(bidx, tiles_m, tiles_n, cfg.group_m)
    loads, k_tiles = tma_k_tiles(tma, sA, sB, tile_row, tile_col, cfg.tile_m, cfg.tile_n)
    return RingTile(ring, sA, sB, sC, tile_row, tile_col, loads, k_tiles)


def wgmma_tiled_mma(ab_dtype, acc_dtype, warpgroups: int, tile_n: int) -> cute.TiledMma:
    """wgmma m64 x tile_n x (32 bytes of K) with both operands K-major in shared memory, one
    atom per warpgroup stacked along M."""
    return sm90_utils.make_trivial_tiled_mma(
        ab_dtype,
        ab_dtype,
        cute.nvgpu.OperandMajorMode.K,
        cute.nvgpu.OperandMajorMode.K,
        acc_dtype,
        (warpgroups, 1, 1),
        tiler_mn=(64, tile_n),
    )


# ---------------------------------------------------------------- the SOL kernel's parts
# Step 11 (kernels/hopper_gemm.py) and the steps built on it (fp8_gemm, fused_gemm,
# split_k_gemm) write their kernel role by role from these: a producer warp streams
# k-tiles into the ring (multicast across a cluster), consumer warpgroups multiply out of
# it and store C chunk by chunk. A step's own idea is its own consumer (or schedule).


class ClusterPlace(NamedTuple):
    """This CTA's place in its cluster: (rm, rn) in the cluster_m x cluster_n block of tiles
    and rk, which copy of that block (the part of K it adds up; 0 unless K is split);
    rank = rm + rn * cluster_m + rk * cluster_m * cluster_n."""

    rm: cutlass.Int32
    rn: cutlass.Int32
    rk: cutlass.Int32


def cluster_place(cluster_mnk: tuple[int, int, int]) -> ClusterPlace:
    """Where this CTA sits in a cluster of shape `cluster_mnk` (CTAs along M, N and K)."""
    cm, cn, _ = cluster_mnk
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    return ClusterPlace(rank % cm, (rank // cm) % cn, rank // (cm * cn))


class SharedTiles(NamedTuple):
    """One CTA's shared memory of the SOL kernel: the A and B rings and C's staging buffers."""

    sA: cute.Tensor  # (bM, bK, STAGE)
    sB: cute.Tensor  # (bN, bK, STAGE)
    sC: cute.Tensor  # (EPI_M, EPI_N, buffer)


def allocate_shared_tiles(smem: SmemAllocator, ab_dtype, c_dtype, layouts: SmemLayouts, stages):
    """The ring's full/empty mbarriers, then its A and B stages and C's staging buffers,
    each 1024-byte aligned for the 128B swizzle: (barriers, SharedTiles)."""
    barriers = smem.allocate_array(cutlass.Int64, 2 * stages, byte_alignment=BARRIER_BYTES)
    sA = smem.allocate_tensor(ab_dtype, layouts.sA.outer, SWIZZLE_ALIGN, layouts.sA.inner)
    sB = smem.allocate_tensor(ab_dtype, layouts.sB.outer, SWIZZLE_ALIGN, layouts.sB.inner)
    sC = smem.allocate_tensor(c_dtype, layouts.sC.outer, SWIZZLE_ALIGN, layouts.sC.inner)
    return barriers, SharedTiles(sA, sB, sC)


def make_cluster_ring(
    barriers: cute.Pointer,
    stages: int,
    tx_bytes: int,
    stage_readers: int,
    cluster_mnk,
    stage_writers: int = 1,
) -> pipeline.PipelineTmaAsync:
    """The ring of a clustered CTA, its barriers' initialization fenced for the cluster.
    full[s]: `stage_writers` arrivals (the producer's expect_tx among them) + `tx_bytes`;
    empty[s]: `stage_readers` consumer warps of every CTA whose stage s this CTA's loads
    write into: its cluster column (B multicast) and its row (A multicast), itself counted
    once. The caller waits for the cluster
    (pipeline_init_wait) once its other set-up is done."""
    cm, cn, ck = cluster_mnk
    ring = make_tma_ring(
        barriers,
        stages,
        tx_bytes,
        stage_readers * (cm + cn - 1),
        cta_layout_vmnk=cute.make_layout((1, cm, cn, ck)),
        defer_sync=True,
        writers=stage_writers,
    )
    pipeline.pipeline_init_arrive(cluster_shape_mn=(cm * ck, cn), is_relaxed=True)
    return ring


class MulticastLoads(NamedTuple):
    """What the producer's TMA loads of one k-tile need: per operand the copy atom, every
    k-tile of every tile row (A) or column (B) of this CTA's slice, the ring's stage slots,
    and the CTAs the slice is multicast to."""

    tma_a: cute.CopyAtom
    tAgA: cute.Tensor  # ((TMA, REST), tiles_m, k_tiles)
    tAsA: cute.Tensor  # ((TMA, REST), STAGE)
    a_mask: cutlass.Int16  # the CTAs of this CTA's cluster row
    tma_b: cute.CopyAtom
    tBgB: cute.Tensor  # ((TMA, REST), tiles_n, k_tiles)
    tBsB: cute.Tensor  # ((TMA, REST), STAGE)
    b_mask: cutlass.Int16  # the CTAs of this CTA's cluster column


def multicast_k_tiles(
    tma: OperandTma, smem: SharedTiles, tile_mnk: tuple, place: ClusterPlace, cluster_mnk
) -> tuple[MulticastLoads, cutlass.Int32]:
    """A: this CTA loads slice rn of its tile and multicasts it along its cluster row; B:
    slice rm, multicast along its cluster column (a slice is the whole tile when that
    dimension of the cluster is 1). Returns the loads and how many k-tiles K has."""
    tile_m, tile_n, width = tile_mnk
    cm, cn, _ = cluster_mnk
    # gA (bM, bK, tiles_m, k_tiles), gB (bN, bK, tiles_n, k_tiles)
    gA = cute.local_tile(tma.mA, (tile_m, width), (None, None))
    gB = cute.local_tile(tma.mB, (tile_n, width), (None, None))
    k_tiles = cute.size(gA, mode=[3])
    tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
        tma.tma_a,
        place.rn,  # this CTA's slice of the A tile it multicasts
        cute.make_layout(cn),
        cute.group_modes(smem.sA, 0, 2),
        cute.group_modes(gA, 0, 2),
    )
    tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
        tma.tma_b,
        place.rm,  # this CTA's slice of the B tile it multicasts
        cute.make_layout(cm),
        cute.group_modes(smem.sB, 0, 2),
        cute.group_modes(gB, 0, 2),
    )
    cluster_layout = cute.make_layout(cluster_mnk)
    a_mask = cute.make_layout_image_mask(cluster_layout, tuple(place), mode=1)
    b_mask = cute.make_layout_image_mask(cluster_layout, tuple(place), mode=0)
    return MulticastLoads(tma.tma_a, tAgA, tAsA, a_mask, tma.tma_b, tBgB, tBsB, b_mask), k_tiles


class Work(NamedTuple):
    """One work item of a CTA: its tile of C and the k-tiles it adds up (never none: the
    consumers release the last k-tile's stage after their loop)."""

    tile_row: cutlass.Int32
    tile_col: cutlass.Int32
    k_first: cutlass.Int32
    k_count: cutlass.Int32


@dataclass(frozen=True)
class TileSchedule:
    """The persistent schedule: cluster `cluster_id` of `clusters` takes work items
    cluster_id, cluster_id + clusters, ... of `work`, each a cluster_m x cluster_n block of
    tiles in the grouped order of cluster_rows x cluster_cols blocks; the CTA computes tile
    (rm, rn) of each block over all of K. A dataclass: CuTe DSL carries its run-time
    fields through the kernel's loops and keeps its Python numbers (cluster_mn, group_m)."""

    cluster_id: cutlass.Int32
    clusters: cutlass.Int32
    work: cutlass.Int32
    cluster_rows: cutlass.Int32
    cluster_cols: cutlass.Int32
    place: ClusterPlace
    cluster_mn: tuple[int, int]  # CTAs of a block along M and N
    group_m: int  # block rows walked column by column


def cluster_tile(schedule: TileSchedule, block: cutlass.Int32):
    """Block -> this CTA's tile (row, column) of C: the block's place in the grouped order,
    then this CTA's place in the block."""
    cm, cn = schedule.cluster_mn
    row, col = grouped_tile(block, schedule.cluster_rows, schedule.cluster_cols, schedule.group_m)
    row = row * cm + schedule.place.rm
    if cn > 1:
        col = col * cn + schedule.place.rn
    return row, col


def whole_k_work(schedule: TileSchedule, item: cutlass.Int32, k_tiles: cutlass.Int32) -> Work:
    """Work item -> this CTA's tile and its k-tiles (all of them): hopper_gemm's `work_of`.
    (A function, not a method: kernel code passes the one its schedule needs to the roles,
    and the CPU executor runs module functions on its stand-ins.)"""
    row, col = cluster_tile(schedule, item)
    return Work(row, col, cutlass.Int32(0), k_tiles)


def clusters_in_grid(cluster_size: int):
    """(this CTA's cluster, clusters in the grid) of a 1-D grid of clusters."""
    clusters = cute.arch.grid_dim()[0] // cluster_size
    return cute.arch.block_idx()[0] // cluster_size, clusters


class L2Policies(NamedTuple):
    """The 64-bit L2 cache policies (createpolicy's values) of A's and B's TMA loads; None:
    no hint. Passed as a Constexpr: they are compile-time constants."""

    a: int | None
    b: int | None


@cute.jit
def load_operand(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    mask: cutlass.Int16,
    sharers: cutlass.Constexpr,
    policy: cutlass.Constexpr = None,
):
    """One operand's k-tile into stage `dst`, multicast to the CTAs that share it; with an
    L2 cache `policy` when one is given."""
    hint = {}
    if cutlass.const_expr(policy is not None):
        hint = {"cache_policy": cutlass.Int64(policy)}
    if cutlass.const_expr(sharers > 1):
        cute.copy(tma, src, dst, tma_bar_ptr=bar, mcast_mask=mask, **hint)
    else:
        cute.copy(tma, src, dst, tma_bar_ptr=bar, **hint)


@cute.jit
def stream_k_tiles(
    ring: pipeline.PipelineTmaAsync,
    loads: MulticastLoads,
    schedule,
    work_of: cutlass.Constexpr,
    k_tiles: cutlass.Int32,
    stages: cutlass.Constexpr,
    cluster_mnk: cutlass.Constexpr,
    policies: cutlass.Constexpr,
    also: cutlass.Constexpr = None,
    also_inputs=None,
):
    """The producer warp: every work item's k-tiles of A and B into the ring, in the order
    the consumers read them (`work_of(schedule, item, k_tiles)` says which), then wait until the
    consumers of every CTA that shares this CTA's loads have released the last stages.
    `also(also_inputs, work, kt, stage, bar)`, where a step gives one, writes that step's own
    per-k-tile data into the stage too (the whole warp calls it, after the TMA loads)."""
    cm, cn, _ = cluster_mnk
    state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
    item = schedule.cluster_id
    while item < schedule.work:
        work = work_of(schedule, item, k_tiles)
        for kt in range(work.k_first, work.k_first + work.k_count):
            ring.producer_acquire(state)
            bar = ring.producer_get_barrier(state)
            load_operand(
                loads.tma_a,
                loads.tAgA[None, work.tile_row, kt],
                loads.tAsA[None, state.index],
                bar,
                loads.a_mask,
                cn,
                policies.a,
            )
            load_operand(
                loads.tma_b,
                loads.tBgB[None, work.tile_col, kt],
                loads.tBsB[None, state.index],
                bar,
                loads.b_mask,
                cm,
                policies.b,
            )
            if cutlass.const_expr(also is not None):
                also(also_inputs, work, kt, state.index, bar)
            state.advance()
        item += schedule.clusters
    ring.producer_tail(state)  # do not exit while partners still read


class MmaOperands(NamedTuple):
    """A consumer thread's side of the tiled MMA: its slice, the smem descriptors of every
    stage and its accumulator registers."""

    thr_mma: cute.core.ThrMma
    tCrA: cute.Tensor  # (MMA, MMA_M, MMA_K, STAGE): descriptors of A's stages
    tCrB: cute.Tensor  # (MMA, MMA_N, MMA_K, STAGE)
    acc: cute.Tensor  # (MMA, MMA_M, MMA_N) fp32 registers


def mma_operands(tiled_mma, mma_tid, smem: SharedTiles, mC: cute.Tensor, tile, acc_dtype):
    """Thread `mma_tid`'s slice of the MMA, its A and B descriptors and accumulator."""
    thr_mma = tiled_mma.get_slice(mma_tid)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(smem.sA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(smem.sB))
    acc = cute.make_rmem_tensor(
        thr_mma.partition_C(cute.local_tile(mC, tile, (0, 0))).shape, acc_dtype
    )
    return MmaOperands(thr_mma, tCrA, tCrB, acc)


@cute.jit
def mma_k_tile(
    tiled_mma,
    acc: cute.Tensor,
    tCrA: cute.Tensor,
    tCrB: cute.Tensor,
    stage,
    fresh: cute.TiledMma | None = None,
):
    """One k-tile's wgmmas (stage `stage` of the ring) into `acc`, as one group. fresh: a
    tiled MMA like tiled_mma with ACCUMULATE off, for the first wgmma, which then
    overwrites acc (scale-d 0) instead of adding into it: acc need not be cleared, and its
    registers pass from one k-tile to the next unchanged (an accumulator cleared with
    moves while another's wgmmas run is copied at a loop's back edge, and ptxas then
    serializes every wgmma: its warning C7514). A separate tiled MMA, made before the
    loops: one whose field is set inside a loop's helper escapes the tracer."""
    cute.nvgpu.warpgroup.fence()
    for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
        mma = fresh if fresh is not None and kb == 0 else tiled_mma
        cute.gemm(mma, acc, tCrA[None, None, kb, stage], tCrB[None, None, kb, stage], acc)
    cute.nvgpu.warpgroup.commit_group()


@cute.jit
def release_stage(ring: pipeline.PipelineTmaAsync, release: pipeline.PipelineState, pending):
    """Wait until at most `pending` wgmma groups are in flight, then release the oldest
    stage still held (its k-tile has been read by the tensor cores). Returns the advanced
    state: rebind it (a state advanced inside a helper is not seen by the caller's loops)."""
    cute.nvgpu.warpgroup.wait_group(pending)
    ring.consumer_release(release)
    release.advance()
    return release


@cute.jit
def issue_k_tile(tiled_mma, mma: MmaOperands, ring, read, into: cute.Tensor, fresh=None):
    """Wait for the next stage and issue its k-tile's wgmmas into `into`, one group
    (mma_k_tile, `fresh` its twin for the first wgmma). Returns (read advanced, the stage)."""
    ring.consumer_wait(read)
    stage = read.index
    mma_k_tile(tiled_mma, into, mma.tCrA, mma.tCrB, stage, fresh=fresh)
    read.advance()
    return read, stage


@cute.jit
def mainloop(tiled_mma, mma: MmaOperands, ring, read, release, k_count: cutlass.Int32):
    """One tile's k-tiles: wait for a stage, issue its wgmmas into the accumulator, and
    release the previous k-tile's stage once only this k-tile's wgmmas are in flight. The
    last stage stays held (release_stage(..., 0) after the loop). Returns (read, release)."""
    for kt in range(k_count):
        read, _ = issue_k_tile(tiled_mma, mma, ring, read, mma.acc)
        if kt > 0:  # k-tile kt-1 has been read by the tensor cores
            release = release_stage(ring, release, 1)
    return read, release


@cute.jit
def skip_k_tiles(read, release, k_tiles: cutlass.Int32):
    """Step both ring positions past another warpgroup's tile (pingpong)."""
    for _ in range(k_tiles):
        read.advance()
        release.advance()
    return read, release


class ConsumerGroup(NamedTuple):
    """The consumer threads that share an epilogue chunk: both warpgroups (a shared tile),
    or one (pingpong: each warpgroup its own tiles, barrier and staging buffers)."""

    threads: int  # how many
    tid: cutlass.Int32  # this thread's index among them
    warp: cutlass.Int32  # this thread's warp in the CTA
    store_warp: cutlass.Int32  # the warp that issues the group's TMA stores
    chunk_sync: pipeline.NamedBarrier  # their barrier around a chunk's staging buffer
    first_buf: cutlass.Int32  # the group's first staging buffer


def consumer_group(pingpong: bool, wg, warp, ctid, epilogue_barrier: int, epi_stages: int):
    """Consumer warpgroup `wg`'s chunk group; `ctid` the thread's index among all consumer
    threads (two warpgroups of 128, after the producer's)."""
    threads = 128 if pingpong else 256
    return ConsumerGroup(
        threads=threads,
        tid=ctid % threads,
        warp=warp,
        store_warp=4 + 4 * wg if pingpong else 4,
        chunk_sync=pipeline.NamedBarrier(
            barrier_id=epilogue_barrier + (wg if pingpong else 0), num_threads=threads
        ),
        first_buf=wg * epi_stages if pingpong else 0,
    )


class ChunkWriter(NamedTuple):
    """A consumer thread's epilogue pieces, built once: stmatrix from its accumulator
    registers into the staging buffers, a 16-byte copy out of them (without TMA stores),
    the TMA stores' bulk groups, and one chunk's registers."""

    r2s: cute.TiledCopy  # stmatrix: registers -> shared memory
    tRS_sC: cute.Tensor  # (R2S, R2S_M, R2S_N, buffer): this thread's stmatrix destinations
    acc_r2s: cute.Tensor  # (R2S, R2S_M, R2S_N): the accumulator as stmatrix sources
    chunk_acc: cute.Tensor  # (R2S, R2S_M, R2S_N): one chunk of the accumulator, fp32
    chunk_out: cute.Tensor  # the same chunk converted to C's type
    copy_chunk: cute.TiledCopy  # 16-byte pieces of a staging buffer to C (no TMA store)
    stores: pipeline.PipelineTmaStore  # the TMA stores' bulk groups in flight


def chunk_writer(tiled_mma, mma_tid, acc, sC, c_dtype, acc_dtype, group, epi_n, epi_stages):
    """The epilogue pieces of thread `mma_tid` of the MMA."""
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), c_dtype)
    r2s = cute.make_tiled_copy_S(
        sm90_utils.get_smem_store_op(cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, c_dtype, acc_dtype),
        cute.make_tiled_copy_C_atom(stmatrix, tiled_mma),
    )
    thr_r2s = r2s.get_slice(mma_tid)
    tRS_sC = thr_r2s.partition_D(sC)
    acc_r2s = r2s.retile(acc)
    chunk_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
    return ChunkWriter(
        r2s=r2s,
        tRS_sC=tRS_sC,
        acc_r2s=acc_r2s,
        chunk_acc=cute.make_rmem_tensor(chunk_shape, acc_dtype),
        chunk_out=cute.make_rmem_tensor(chunk_shape, c_dtype),
        copy_chunk=row_copy(c_dtype, group.threads, epi_n),
        stores=pipeline.PipelineTmaStore.create(
            num_stages=epi_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, group.threads),
        ),
    )


class OutputC(NamedTuple):
    """Where C goes: its TMA atom, C in TMA coordinates, and C itself (16-byte stores)."""

    tma_c: cute.CopyAtom
    mC_tma: cute.Tensor  # (M, N) as TMA coordinates
    mC: cute.Tensor  # (M, N)


class ChunkStore(NamedTuple):
    """What storing one epilogue chunk of a tile needs (`store_chunk`'s `epi`)."""

    r2s: cute.TiledCopy  # stmatrix: registers -> shared memory
    tRS_sC: cute.Tensor  # this thread's stmatrix destinations, (R2S, R2S_M, R2S_N, buffer)
    chunk_sync: pipeline.NamedBarrier  # the consumer threads sharing a chunk
    warp: cutlass.Int32  # this thread's warp
    store_warp: cutlass.Int32  # the warp that issues the TMA stores
    tma_c: (
        cute.CopyAtom
    )  # TMA store: buffer b -> bSG_sC[None, b], chunk coord -> bSG_gC[None, coord]
    bSG_sC: cute.Tensor  # (TMA, buffer)
    bSG_gC: cute.Tensor  # (TMA, chunks)
    # without TMA stores: every consumer thread copies 16-byte pieces of buffer `buf`
    copy_chunk: cute.TiledCopy
    sC: cute.Tensor  # (EPI_M, EPI_N, buffer)
    gC_chunks: cute.Tensor  # ((EPI_M, EPI_N), chunks)
    cC_chunks: cute.Tensor  # ((EPI_M, EPI_N), chunks) of (m, n) coordinates
    shape: tuple
    tid: cutlass.Int32


def chunk_store(
    out: OutputC,
    sC,
    writer: ChunkWriter,
    group: ConsumerGroup,
    tile,
    tile_row,
    tile_col,
    epi_tile,
    tma_store: bool,
) -> ChunkStore:
    """Tile (tile_row, tile_col) of C seen chunk by chunk: gC (bM, bN) of C (or of its TMA
    coordinates); its TMA views bSG_sC (TMA, buffer) and bSG_gC (TMA, chunks); gC_chunks and
    cC_chunks ((EPI_M, EPI_N), chunks), of values and coordinates."""
    mC = out.mC
    gC = cute.local_tile(out.mC_tma if tma_store else mC, tile, (tile_row, tile_col))
    bSG_sC, bSG_gC = cute.nvgpu.cpasync.tma_partition(
        out.tma_c,
        0,
        cute.make_layout(1),
        cute.group_modes(sC, 0, 2),
        cute.zipped_divide(gC, epi_tile),
    )
    cC = cute.local_tile(cute.make_identity_tensor(mC.shape), tile, (tile_row, tile_col))
    return ChunkStore(
        r2s=writer.r2s,
        tRS_sC=writer.tRS_sC,
        chunk_sync=group.chunk_sync,
        warp=group.warp,
        store_warp=group.store_warp,
        tma_c=out.tma_c,
        bSG_sC=bSG_sC,
        bSG_gC=bSG_gC,
        copy_chunk=writer.copy_chunk,
        sC=sC,
        gC_chunks=cute.zipped_divide(gC, epi_tile),
        cC_chunks=cute.zipped_divide(cC, epi_tile),
        shape=mC.shape,
        tid=group.tid,
    )


@cute.jit
def store_accumulator(
    writer: ChunkWriter,
    epi: ChunkStore,
    store_chunk,
    c_dtype,
    chunk_grid: cutlass.Constexpr,
    first_buf,
    tiles_done,
    epi_stages: cutlass.Constexpr,
):
    """The epilogue of one tile: chunk by chunk (a `chunk_grid` of rows x columns), the
    accumulator converted to C's type, then `store_chunk(chunk, buf, (row, col), epi,
    stores)` from registers through staging buffer `buf` to C. The buffers are used in
    turn across tiles (`tiles_done` tiles before this one)."""
    rows, cols = chunk_grid
    per_chunk = cute.size(writer.chunk_acc)
    for e in cutlass.range_constexpr(rows * cols):
        for v in cutlass.range_constexpr(per_chunk):
            writer.chunk_acc[v] = writer.acc_r2s[e * per_chunk + v]
        writer.chunk_out.store(writer.chunk_acc.load().to(c_dtype))
        buf = first_buf + (tiles_done * (rows * cols) + e) % epi_stages
        store_chunk(writer.chunk_out, buf, (e // cols, e % cols), epi, writer.stores)


@dataclass(frozen=True)
class Turns:
    """Pingpong: consumer warpgroup `wg` takes the CTA's tiles wg, wg + 2, ... and the two
    take turns at the mainloop (an ordered pair of named barriers): one's epilogue
    overlaps the other's mainloop, and -- essential for correctness -- a warpgroup never
    waits on a stage more than one phase ahead of the ring (mbarrier waits only compare
    phase *parity*). Cooperative (pingpong False): both share every tile, no turns."""

    pingpong: bool
    wg: cutlass.Int32
    mine: pipeline.NamedBarrier  # waited on before this warpgroup's mainloop
    yours: pipeline.NamedBarrier  # arrived on after it, for the other warpgroup
    step: int  # work items between two of this warpgroup's tiles, in clusters


def turns(pingpong: bool, wg, turn_barrier: int) -> Turns:
    """Warpgroup `wg`'s turns; its barrier is turn_barrier + wg, the other's the next id."""
    return Turns(
        pingpong=pingpong,
        wg=wg,
        mine=pipeline.NamedBarrier(barrier_id=turn_barrier + wg, num_threads=256),
        yours=pipeline.NamedBarrier(barrier_id=turn_barrier + 1 - wg, num_threads=256),
        step=2 if pingpong else 1,
    )


@cute.jit
def first_item(turn: Turns, schedule, read, release, k_tiles: cutlass.Int32):
    """This warpgroup's first work item, and the ring positions at its first k-tile
    (pingpong: warpgroup 1 starts past warpgroup 0's first tile). Returns (item, read,
    release)."""
    item = schedule.cluster_id
    if cutlass.const_expr(turn.pingpong):
        item = schedule.cluster_id + turn.wg * schedule.clusters
        if turn.wg == 1:  # the first tile's k-tiles belong to warpgroup 0
            read, release = skip_k_tiles(read, release, k_tiles)
    return item, read, release


@cute.jit
def start_tile(tiled_mma, acc: cute.Tensor, turn: Turns, tiles_done):
    """Before a tile's mainloop: a zero accumulator that the wgmmas add into, and
    (pingpong) this warpgroup's turn, once the other's mainloop is done."""
    acc.fill(0.0)
    tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
    if cutlass.const_expr(turn.pingpong):
        if turn.wg == 1 or tiles_done > 0:
            turn.mine.arrive_and_wait()


@cute.jit
def end_mainloop(ring, read, release, turn: Turns, item, schedule, k_tiles: cutlass.Int32):
    """After a tile's mainloop: (pingpong) hand the turn to the other warpgroup if it has a
    tile left, wait for the last wgmmas and release their stage, and (pingpong) step past
    the other warpgroup's next tile. Returns (read, release)."""
    if cutlass.const_expr(turn.pingpong):
        if item + schedule.clusters < schedule.work:  # the other has a next tile
            turn.yours.arrive()
    release = release_stage(ring, release, 0)
    if cutlass.const_expr(turn.pingpong):
        read, release = skip_k_tiles(read, release, k_tiles)
    return read, release


class TilePlace(NamedTuple):
    """Where a consumer's accumulator lies in C, and the step's own operands: what code
    that works on the accumulator element by element needs."""

    thr_mma: cute.core.ThrMma  # this thread's slice of the tiled MMA
    tile_row: cutlass.Int32
    tile_col: cutlass.Int32
    shape: tuple  # C's (M, N)
    inputs: tuple  # the step's operands beside A, B and C (a NamedTuple of the step's)
    work: Work  # the work item (its k-tiles)
    ctid: cutlass.Int32  # the thread's index among the consumer threads


def tile_place(me: "Consumer", work: Work, shape, inputs, ctid) -> TilePlace:
    """Consumer `me`'s place in C for work item `work` (C of `shape`), with the step's
    `inputs`."""
    return TilePlace(
        thr_mma=me.mma.thr_mma,
        tile_row=work.tile_row,
        tile_col=work.tile_col,
        shape=shape,
        inputs=inputs,
        work=work,
        ctid=ctid,
    )


def accumulator_coordinates(place: TilePlace, tile) -> cute.Tensor:
    """The (m, n) of C each accumulator element of this thread holds: the tile's identity
    tensor, partitioned like the accumulator, (MMA, MMA_M, MMA_N)."""
    return place.thr_mma.partition_C(
        cute.local_tile(
            cute.make_identity_tensor(place.shape), tile, (place.tile_row, place.tile_col)
        )
    )


class Consumer(NamedTuple):
    """A consumer thread's pieces, built once before its first tile (consumer_pieces)."""

    mma_tid: cutlass.Int32  # its index within the MMA (one warpgroup's when pingpong)
    mma: MmaOperands
    group: ConsumerGroup
    writer: ChunkWriter
    turn: Turns


def consumer_pieces(
    kernel, tiled_mma, shared: SharedTiles, mC, wg, warp, ctid, barriers: tuple[int, int]
) -> Consumer:
    """The pieces of consumer warpgroup `wg`'s thread `ctid` (among the consumer threads)
    of a SOL-style `kernel` (its cfg, tile and types); `barriers`: the named-barrier ids of
    the epilogue's chunks and of the mainloop's turns."""
    cfg = kernel.cfg
    epilogue_barrier, turn_barrier = barriers
    mma_tid = ctid % 128 if cfg.pingpong else ctid
    mma = mma_operands(tiled_mma, mma_tid, shared, mC, kernel.tile, kernel.acc_dtype)
    group = consumer_group(cfg.pingpong, wg, warp, ctid, epilogue_barrier, cfg.epi_stages)
    writer = chunk_writer(
        tiled_mma,
        mma_tid,
        mma.acc,
        shared.sC,
        c_dtype=kernel.c_dtype,
        acc_dtype=kernel.acc_dtype,
        group=group,
        epi_n=cfg.epi_n,
        epi_stages=cfg.epi_stages,
    )
    return Consumer(mma_tid, mma, group, writer, turns(cfg.pingpong, wg, turn_barrier))


def wait_for_cluster_init(cluster_mnk) -> None:
    """Wait until every CTA of the cluster has initialized its barriers (make_cluster_ring
    arrived for this one): only then may a multicast load or a remote arrive reach them."""
    cm, cn, ck = cluster_mnk
    pipeline.pipeline_init_wait(cluster_shape_mn=(cm * ck, cn))
