"""Notebook 12's kernel: a 1-CTA Blackwell GEMM on tcgen05 with its accumulator in TMEM.

C[M,N] = A[M,K] . B[N,K]^T, bf16 or fp16 in, fp32 accumulate, bf16 or fp16 out.
One CTA computes one 128 x N tile of C (N = 128 or 256):

    warp 4 (TMA)       global -> shared: a ring of `stages` buffers of A (128x64) and B (Nx64),
                       each stage guarded by a full and an empty mbarrier
    warp 5 (MMA)       one thread issues tcgen05.mma (128 x N x 16, 4 per stage) reading both
                       operands from shared memory, accumulating in tensor memory (TMEM);
                       tcgen05.commit releases each stage, and finally the accumulator
    warps 0-3 (epi)    TMEM -> registers (tcgen05.ld) -> bf16 -> shared -> global (TMA store)

TMEM holds the 128 x N fp32 accumulator: 128 lanes (one per row of the tile) by N
columns, allocated with tcgen05.alloc (a power of two of columns) and freed with
tcgen05.dealloc by warp 0 at the end.

Ragged shapes: TMA fills out-of-bounds rows/columns of A and B with zeros and clips the
store of C, so M, N and K need not be multiples of the tile; K and N must be multiples
of 8 (TMA needs 16-byte row strides), which run() checks.

The pieces notebook 13's kernels reuse live here too, in the order data flows through them:

    operands        torch pointers + sizes -> CuTe tensors (K-major A, B; row-major C)
    tiled MMA       one tcgen05.mma atom: 128xN (cta_group::1) or 256xN (cta_group::2)
    TMA atoms       global -> shared boxes for A and B, shared -> global for C
    tma_k_loop      the TMA warp filling the stage ring, one K-block per stage
    mma_k_loop      the MMA warp draining it into the TMEM accumulator
    epilogue_tile   TMEM -> registers (tcgen05.ld) -> bf16/fp16 -> shared -> TMA store

Warp roles are fixed: warps 0-3 are the epilogue (each may touch only its own 32-lane
quarter of TMEM), warp 4 the TMA producer, warp 5 the MMA issuer. 6 warps = 192 threads.
Notebook 13's kernels (kernels.cta_pair_gemm, then kernels.cta_pair_clc_gemm) build on
this one: CTA pairs first, then Cluster Launch Control with two accumulator slots.
"""
from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.memory import SmemAllocator, TmemAllocator
from cutlass.tensor_utils import LayoutEnum

from . import selftest
from .gemm_host import HALF_TYPES, GemmHost, Operands

# ---------------------------------------------------------------- fixed shape of the machine

EPILOGUE_WARPS = (0, 1, 2, 3)
TMA_WARP = 4
MMA_WARP = 5
THREADS_PER_CTA = 32 * 6
EPILOGUE_THREADS = 32 * len(EPILOGUE_WARPS)

TMEM_LANES = 128  # rows of tensor memory per SM
TMEM_COLUMNS = 512  # 32-bit columns per lane
TMEM_LANES_PER_WARP = 32  # warp w of a warpgroup may access lanes [32*(w%4), 32*(w%4)+32)

TILE_K = 64  # K elements per pipeline stage: one 128-byte swizzle row of 16-bit data
MMA_K = 16  # K elements per tcgen05.mma instruction (16-bit inputs)
TMA_ALIGN_ELEMENTS = 8  # TMA needs 16-byte strides: 8 elements of a 16-bit type

# Named barriers (bar.sync id, thread count) -- id 0 is __syncthreads.
EPILOGUE_SYNC_BARRIER = 1  # the 4 epilogue warps, around each staged TMA store
TMEM_ALLOC_BARRIER = 2  # MMA + epilogue warps, to read the TMEM base address
TMEM_USERS = 32 * (1 + len(EPILOGUE_WARPS))


@dataclass(frozen=True)
class TileShape:
    """The work of one MMA instruction group (the 'MMA tile') and of each CTA in it."""

    mma_m: int  # rows of C one MMA covers: 128 (one CTA) or 256 (a CTA pair)
    n: int  # columns of C per tile
    k: int = TILE_K
    ctas: int = 1  # CTAs that share one MMA: 1 or 2

    @property
    def cta_m(self) -> int:
        return self.mma_m // self.ctas

    @property
    def mma_tiler(self) -> tuple[int, int, int]:
        return (self.mma_m, self.n, self.k)

    @property
    def cta_tile(self) -> tuple[int, int, int]:
        return (self.cta_m, self.n, self.k)


def tmem_columns_for(accumulator_columns: int) -> int:
    """Columns to allocate: TMEM is allocated in powers of two, at least 32, at most 512."""
    if accumulator_columns > TMEM_COLUMNS:
        raise ValueError(f"{accumulator_columns} accumulator columns exceed TMEM's {TMEM_COLUMNS}")
    cols = 32
    while cols < accumulator_columns:
        cols *= 2
    return cols


EPI_COLS = 32  # columns per epilogue sub-tile: one tcgen05.ld 32x32b.x32 per thread


def cta_footprint(tile: TileShape, stages: int, acc_slots: int, epi_stages: int,
              ab_bytes: int = 2, c_bytes: int = 2) -> dict:
    """What one CTA of a kernel holds, computed from its tile shapes (pure Python).

    Shared memory is the A/B ring plus the epilogue's staging buffers (the mbarriers and
    the TMEM address add a few hundred bytes, and alignment a little more).
    """
    a_stage = tile.cta_m * tile.k * ab_bytes
    b_stage = (tile.n // tile.ctas) * tile.k * ab_bytes
    return {
        "threads": THREADS_PER_CTA,
        "ctas_per_mma": tile.ctas,
        "mma": f"{tile.mma_m}x{tile.n}x{MMA_K}",
        "mma_per_k_block": tile.k // MMA_K,
        "stage_bytes": a_stage + b_stage,  # what this CTA's TMA copies deliver per stage
        "full_barrier_bytes": (a_stage + b_stage) * tile.ctas,  # what the leader expects
        "smem_ring_bytes": stages * (a_stage + b_stage),
        "smem_epilogue_bytes": epi_stages * tile.cta_m * EPI_COLS * c_bytes,
        "tmem_columns": tmem_columns_for(acc_slots * tile.n),
        "accumulator_slots": acc_slots,
    }


# ---------------------------------------------------------------- host side (inside @cute.jit)

def gemm_tensors(a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32):
    """A (M,K), B (N,K) K-major and C (M,N) row-major, from pointers and runtime sizes.

    Building layouts from Int32 sizes (not from a torch tensor) means one compile
    serves every shape. The leading strides are declared divisible by 8 elements
    (16 bytes) because TMA descriptors require it; run() checks it before launch.
    """
    k_stride = cute.assume(k, divby=TMA_ALIGN_ELEMENTS)
    n_stride = cute.assume(n, divby=TMA_ALIGN_ELEMENTS)
    a = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k_stride, 1)))
    b = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k_stride, 1)))
    c = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n_stride, 1)))
    return a, b, c


def make_tiled_mma(ab_dtype, acc_dtype, tile: TileShape) -> cute.TiledMma:
    """One tcgen05.mma atom of shape (mma_m, n, 16): A and B from shared memory, K-major."""
    op = tcgen05.MmaF16BF16Op(
        ab_dtype, acc_dtype, (tile.mma_m, tile.n, MMA_K),
        tcgen05.CtaGroup.TWO if tile.ctas == 2 else tcgen05.CtaGroup.ONE,
        tcgen05.OperandSource.SMEM,
        cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K)
    return cute.make_tiled_mma(op)


def make_operand_tma(a: cute.Tensor, b: cute.Tensor, tiled_mma: cute.TiledMma,
                     tile: TileShape, stages: int, cluster_vmnk=None):
    """Staged, swizzled smem layouts for A and B and the TMA atoms that fill them.

    With a CTA pair the copies use the multicast form with .cta_group::2, whose
    completion lands on the *leader* CTA's barrier (barrier aliasing).
    """
    a_smem = sm100_utils.make_smem_layout_a(tiled_mma, tile.mma_tiler, a.element_type, stages)
    b_smem = sm100_utils.make_smem_layout_b(tiled_mma, tile.mma_tiler, b.element_type, stages)
    if tile.ctas == 1:
        op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
        tma_a = cute.nvgpu.make_tiled_tma_atom_A(op, a, a_smem, tile.mma_tiler, tiled_mma)
        tma_b = cute.nvgpu.make_tiled_tma_atom_B(op, b, b_smem, tile.mma_tiler, tiled_mma)
    else:
        op = cpasync.CopyBulkTensorTileG2SMulticastOp(tcgen05.CtaGroup.TWO)
        tma_a = cute.nvgpu.make_tiled_tma_atom_A(op, a, a_smem, tile.mma_tiler, tiled_mma,
                                                 cluster_vmnk)
        tma_b = cute.nvgpu.make_tiled_tma_atom_B(op, b, b_smem, tile.mma_tiler, tiled_mma,
                                                 cluster_vmnk)
    return tma_a, tma_b


def make_stage_ring(barriers: cute.Pointer, stages: int, tx_count: int,
                    cta_layout_vmnk: cute.Layout) -> pipeline.PipelineTmaUmma:
    """The A/B stage ring: one TMA thread arms each stage's full barrier with `tx_count`
    bytes; the MMA warp's tcgen05.commit releases it (barrier init left to the caller's
    pipeline_init_arrive / wait)."""
    return pipeline.PipelineTmaUmma.create(
        barrier_storage=barriers, num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        tx_count=tx_count, cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)


def stage_bytes(ab_dtype, tma_a, tma_b) -> int:
    """Bytes one stage of A and B holds in one CTA (what its TMA copies deliver)."""
    return (cute.size_in_bytes(ab_dtype, cute.select(tma_a.smem_layout, mode=[0, 1, 2]))
            + cute.size_in_bytes(ab_dtype, cute.select(tma_b.smem_layout, mode=[0, 1, 2])))


def make_epilogue_tma(c: cute.Tensor, tile: TileShape, epi_stages: int):
    """The epilogue's sub-tile, its staged smem buffer and the TMA store atom for C."""
    c_layout = LayoutEnum.ROW_MAJOR
    epi_tile = sm100_utils.compute_epilogue_tile_shape(
        tile.cta_tile, tile.ctas == 2, c_layout, c.element_type)
    c_smem = sm100_utils.make_smem_layout_epi(c.element_type, c_layout, epi_tile, epi_stages)
    tma_c = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, c_smem, epi_tile)
    return epi_tile, tma_c


# ---------------------------------------------------------------- device side (inside @cute.kernel)

def allocate_operand_smem(smem, ab_dtype, c_dtype,
                          tma_a, tma_b, tma_c):
    """The stage ring for A and B and the epilogue's staging buffer, 128-byte aligned."""
    def alloc(dtype, layout):
        return smem.allocate_tensor(element_type=dtype, layout=layout.outer,
                                    byte_alignment=128, swizzle=layout.inner)
    return (alloc(ab_dtype, tma_a.smem_layout), alloc(ab_dtype, tma_b.smem_layout),
            alloc(c_dtype, tma_c.smem_layout))


def partition_operands(tiled_mma: cute.TiledMma, tile: TileShape,
                       tma_a: cpasync.TmaInfo, tma_b: cpasync.TmaInfo, tma_c: cpasync.TmaInfo,
                       sA: cute.Tensor, sB: cute.Tensor,
                       cta_layout_vmnk: cute.Layout, cta_coord_vmnk):
    """Views of A, B, C tiled by the MMA tile and partitioned for this CTA.

    Returned views keep the tile coordinates as trailing modes, so a role picks its
    current tile by slicing, e.g. `tAgA[(None, tile_m, None)]` is the (TMA view of the)
    K-loop over A's rows of tile_m. In a CTA pair, `get_slice(v)` picks this CTA's
    half of the 256-row MMA tile (v = 0 leader, 1 follower).
    """
    mA, mB, mC = tma_a.tma_tensor, tma_b.tma_tensor, tma_c.tma_tensor
    gA = cute.local_tile(mA, cute.select(tile.mma_tiler, mode=[0, 2]), (None, None))
    gB = cute.local_tile(mB, cute.select(tile.mma_tiler, mode=[1, 2]), (None, None))
    gC = cute.local_tile(mC, cute.select(tile.mma_tiler, mode=[0, 1]), (None, None))
    thr_mma = tiled_mma.get_slice(cta_coord_vmnk[0])
    tCgA = thr_mma.partition_A(gA)  # (MMA, MMA_M, MMA_K, tiles_m, k_tiles)
    tCgB = thr_mma.partition_B(gB)  # (MMA, MMA_N, MMA_K, tiles_n, k_tiles)
    tCgC = thr_mma.partition_C(gC)  # (MMA, MMA_M, MMA_N, tiles_m, tiles_n)
    tCrA = tiled_mma.make_fragment_A(sA)  # smem descriptors, (MMA, MMA_M, MMA_K, stage)
    tCrB = tiled_mma.make_fragment_B(sB)
    # TMA: a CTA's copy lands in the smem of every CTA named in its multicast mask
    tAsA, tAgA = cpasync.tma_partition(
        tma_a.atom, cta_coord_vmnk[2], cute.make_layout(cute.size(cta_layout_vmnk, mode=[2])),
        cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3))
    tBsB, tBgB = cpasync.tma_partition(
        tma_b.atom, cta_coord_vmnk[1], cute.make_layout(cute.size(cta_layout_vmnk, mode=[1])),
        cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3))
    k_tiles = cute.size(gA, mode=[3])
    return tAgA, tBgB, tAsA, tBsB, tCrA, tCrB, tCgC, k_tiles


def accumulator_layout(tiled_mma: cute.TiledMma, tile: TileShape, slots: int) -> cute.Layout:
    """TMEM layout of `slots` accumulators of this CTA: ((128, N), 1, 1, slots) fp32 cells.

    Each slot is 128 lanes x N columns; slot s starts at column s*N.
    """
    acc_shape = tiled_mma.partition_shape_C(cute.select(tile.mma_tiler, mode=[0, 1]))
    return tiled_mma.make_fragment_C(cute.append(acc_shape, slots)).layout


@cute.jit
def tma_k_loop(tma_a: cpasync.TmaInfo, tma_b: cpasync.TmaInfo,
               tAgA: cute.Tensor, tBgB: cute.Tensor, tAsA: cute.Tensor, tBsB: cute.Tensor,
               ab_pipeline: pipeline.PipelineTmaUmma, state: pipeline.PipelineState,
               k_tiles: cutlass.Int32, mask_a, mask_b) -> pipeline.PipelineState:
    """TMA warp: stream the K-blocks of one tile into the ring; return the ring position.

    For each K-block: wait until the stage is empty (the MMA has released it), arm the
    stage's full barrier with the bytes to expect, issue one TMA copy for A and one
    for B. The state (stage index, phase) is returned so the next tile continues
    the ring where this one stopped.
    """
    for k_block in cutlass.range(k_tiles, unroll=1):
        ab_pipeline.producer_acquire(state)
        barrier = ab_pipeline.producer_get_barrier(state)
        cute.copy(tma_a.atom, tAgA[(None, k_block)], tAsA[(None, state.index)],
                  tma_bar_ptr=barrier, mcast_mask=mask_a)
        cute.copy(tma_b.atom, tBgB[(None, k_block)], tBsB[(None, state.index)],
                  tma_bar_ptr=barrier, mcast_mask=mask_b)
        state.advance()
    return state


@cute.jit
def mma_k_loop(tiled_mma: cute.TiledMma, accumulator: cute.Tensor,
               tCrA: cute.Tensor, tCrB: cute.Tensor,
               ab_pipeline: pipeline.PipelineTmaUmma, state: pipeline.PipelineState,
               k_tiles: cutlass.Int32) -> pipeline.PipelineState:
    """MMA warp: multiply the K-blocks of one tile into `accumulator` (in TMEM).

    The first MMA of a tile overwrites the accumulator (ACCUMULATE=False), every
    later one adds to it. Each K-block of 64 is 4 tcgen05.mma of K=16. Releasing a
    stage is a tcgen05.commit to its empty barrier: it fires when these MMAs have
    finished reading shared memory, not when they were issued.
    """
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    for k_block in cutlass.range(k_tiles, unroll=1):
        ab_pipeline.consumer_wait(state)
        for kk in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            stage = (None, None, kk, state.index)
            cute.gemm(tiled_mma, accumulator, tCrA[stage], tCrB[stage], accumulator)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        ab_pipeline.consumer_release(state)
        state.advance()
    return state


def make_epilogue_tmem_load(acc_subtile: cute.Tensor) -> cute.TiledCopy:
    """tcgen05.ld 32x32b.x32 over one epilogue sub-tile (128 lanes x 32 columns).

    Thread t (0..127) of the 4 epilogue warps reads TMEM lane t, 32 consecutive columns:
    warp w gets lanes 32w..32w+31, the only quarter of TMEM a warp w may access.
    """
    atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32)
    return tcgen05.make_tmem_copy(atom, acc_subtile)


def epilogue_setup(tmem: TmemAllocator, acc_layout: cute.Layout, acc_dtype, epi_stages: int):
    """Epilogue warps, once: wait for the TMEM allocation and view the accumulators there;
    the TMA-store ring of staging buffers; the named barrier the 4 warps sync on.
    Returns (tmem_ptr, accumulators, c_pipeline, epi_barrier)."""
    tmem.wait_for_alloc()
    tmem_ptr = tmem.retrieve_ptr(acc_dtype)
    c_pipeline = pipeline.PipelineTmaStore.create(
        num_stages=epi_stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, EPILOGUE_THREADS))
    return (tmem_ptr, cute.make_tensor(tmem_ptr, acc_layout), c_pipeline,
            pipeline.NamedBarrier(EPILOGUE_SYNC_BARRIER, EPILOGUE_THREADS))


def staging_buffer(store, epi_stages: int):
    """The staging buffer of this CTA's `store`-th TMA store of C, counted over every tile
    the CTA has stored. PipelineTmaStore releases buffers in the order the stores were
    issued, so the count must run on across tiles: restarting it at 0 on each tile would
    write buffer 0 while the previous tile's last store may still read it, whenever a tile
    has a number of sub-tiles that is not a multiple of the stages (tests/test_tcgen05_gemm.py
    plays the ring both ways)."""
    return store % epi_stages


@cute.jit
def epilogue_tile(tidx: cutlass.Int32, warp_idx: cutlass.Int32,
                  accumulator: cute.Tensor, tma_c: cpasync.TmaInfo, sC: cute.Tensor,
                  gC: cute.Tensor, epi_tile: cute.Tile, c_dtype: cutlass.Constexpr,
                  epi_barrier: pipeline.NamedBarrier, c_pipeline: pipeline.PipelineTmaStore,
                  stores_before: cutlass.Int32):
    """Epilogue warps: drain one CTA's 128 x N accumulator to C, one sub-tile at a time.
    `stores_before` counts the TMA stores this CTA issued for earlier tiles; returns the
    count after this tile's.

    TMEM -> registers: tcgen05.ld 32x32b, so thread t of epilogue warp w reads TMEM lane
    32*w + t (row 32*w + t of the tile), 32 consecutive columns per instruction.
    registers -> shared: convert fp32 to the output type, store into one of two staging
    buffers. shared -> global: one thread issues a TMA store; TMA clips the rows and
    columns that fall outside C, which is how ragged M and N are handled.
    """
    # (EPI_M, EPI_N, sub-tiles along M, sub-tiles along N)
    acc_epi = cute.flat_divide(accumulator, epi_tile)
    gC_epi = cute.flat_divide(gC, epi_tile)
    tmem_load = make_epilogue_tmem_load(acc_epi[(None, None, 0, 0)])
    thr_load = tmem_load.get_slice(tidx)
    tTR_tAcc = thr_load.partition_S(acc_epi)  # (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    tTR_gC = thr_load.partition_D(gC_epi)
    tTR_rAcc = cute.make_rmem_tensor(tTR_gC[(None, None, None, 0, 0)].shape, cutlass.Float32)

    store_atom = sm100_utils.get_smem_store_op(LayoutEnum.ROW_MAJOR, c_dtype,
                                               cutlass.Float32, tmem_load)
    smem_store = cute.make_tiled_copy_D(store_atom, tmem_load)
    thr_store = smem_store.get_slice(tidx)
    tRS_sC = thr_store.partition_D(sC)
    tRS_rAcc = smem_store.retile(tTR_rAcc)
    tRS_rC = cute.make_rmem_tensor(tRS_rAcc.shape, c_dtype)

    # TMA view of the staging buffer and of this tile of C, one entry per sub-tile
    tCsC, tCgC = cpasync.tma_partition(tma_c.atom, 0, cute.make_layout(1),
                                       cute.group_modes(sC, 0, 2),
                                       cute.group_modes(gC_epi, 0, 2))
    tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
    tCgC = cute.group_modes(tCgC, 1, cute.rank(tCgC))
    subtiles = cute.size(tTR_tAcc, mode=[3])
    epi_stages = cute.size(tCsC, mode=[1])
    for sub in cutlass.range(subtiles):
        cute.copy(tmem_load, tTR_tAcc[(None, None, None, sub)], tTR_rAcc)  # tcgen05.ld
        cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld: the registers are filled
        tRS_rC.store(tRS_rAcc.load().to(c_dtype))
        buffer = staging_buffer(stores_before + sub, epi_stages)
        cute.copy(smem_store, tRS_rC, tRS_sC[(None, None, None, buffer)])
        cute.arch.fence_view_async_shared()  # make the smem writes visible to TMA
        epi_barrier.arrive_and_wait()
        if warp_idx == EPILOGUE_WARPS[0]:
            cute.copy(tma_c.atom, tCsC[(None, buffer)], tCgC[(None, sub)])
            c_pipeline.producer_commit()
            c_pipeline.producer_acquire()  # the buffer written next is free again
        epi_barrier.arrive_and_wait()
    return stores_before + subtiles


# ---------------------------------------------------------------- the kernel



@dataclass(frozen=True)
class Config:
    tile_n: int = 128  # columns of C per CTA: 128 or 256 (the MMA is 128 x tile_n x 16)
    stages: int = 4  # depth of the shared-memory ring of A/B K-blocks

    def __post_init__(self):
        if self.tile_n not in (128, 256):
            raise ValueError("tile_n must be 128 or 256")
        if not 2 <= self.stages <= 8:
            raise ValueError("stages must be in [2, 8]")


class Tcgen05Gemm:
    """The kernel for one (input dtype, output dtype, Config)."""

    def __init__(self, ab_dtype, c_dtype, config: Config = Config()):
        # configuration
        self.ab_dtype = ab_dtype
        self.c_dtype = c_dtype
        self.acc_dtype = cutlass.Float32
        self.config = config
        # derived, all in one place
        self.tile = TileShape(mma_m=128, n=config.tile_n, ctas=1)
        self.stages = config.stages
        self.acc_slots = 1  # one tile per CTA: nothing to overlap the epilogue with
        self.epi_stages = 2
        self.tmem_columns = tmem_columns_for(self.acc_slots * self.tile.n)

    def footprint(self) -> dict:
        """Threads, TMEM columns, bytes per stage and shared memory of one CTA."""
        return cta_footprint(self.tile, self.stages, self.acc_slots, self.epi_stages,
                               self.ab_dtype.width // 8, self.c_dtype.width // 8)

    # ------------------------------------------------------------ host
    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, stream: cuda.CUstream):
        if cutlass.const_expr(a_ptr.dtype != self.ab_dtype
                              or b_ptr.dtype != self.ab_dtype
                              or c_ptr.dtype != self.c_dtype):
            raise TypeError("pointer element types do not match the kernel's dtypes")
        a, b, c = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        tiled_mma = make_tiled_mma(self.ab_dtype, self.acc_dtype, self.tile)
        cta_layout_vmnk = cute.make_layout((1, 1, 1, 1))  # no cluster: one CTA per MMA tile
        tma_a, tma_b = make_operand_tma(a, b, tiled_mma, self.tile, self.stages)
        epi_tile, tma_c = make_epilogue_tma(c, self.tile, self.epi_stages)
        grid = ((m + self.tile.cta_m - 1) // self.tile.cta_m,
                (n + self.tile.n - 1) // self.tile.n, 1)
        self.kernel(tiled_mma, tma_a, tma_b, tma_c, epi_tile, cta_layout_vmnk).launch(
            grid=grid, block=[THREADS_PER_CTA, 1, 1], stream=stream)

    # ------------------------------------------------------------ device
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cpasync.TmaInfo, tma_b: cpasync.TmaInfo,
               tma_c: cpasync.TmaInfo, epi_tile: cute.Tile, cta_layout_vmnk: cute.Layout):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tile_m, tile_n, _ = cute.arch.block_idx()  # one CTA, one tile of C

        @cute.struct
        class Barriers:
            ab: cute.struct.MemRange[cutlass.Int64, self.stages * 2]  # full + empty per stage
            acc: cute.struct.MemRange[cutlass.Int64, self.acc_slots * 2]  # full + empty
            tmem_base: cutlass.Int32  # where tcgen05.alloc writes the TMEM address

        smem = SmemAllocator()
        bars = smem.allocate(Barriers)
        if warp_idx == TMA_WARP:
            for tma in (tma_a, tma_b, tma_c):
                cpasync.prefetch_descriptor(tma.atom)

        # stage ring: TMA (one thread) produces, tcgen05.commit from the MMA warp consumes
        ab_pipeline = make_stage_ring(bars.ab.data_ptr(), self.stages,
                                      stage_bytes(self.ab_dtype, tma_a, tma_b), cta_layout_vmnk)
        # accumulator hand-off: the MMA warp produces, each epilogue warp consumes
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=bars.acc.data_ptr(), num_stages=self.acc_slots,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                     len(EPILOGUE_WARPS)),
            cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
        tmem = TmemAllocator(bars.tmem_base.ptr,
                             barrier_for_retrieve=pipeline.NamedBarrier(
                                 TMEM_ALLOC_BARRIER, TMEM_USERS),
                             allocator_warp_id=EPILOGUE_WARPS[0])
        pipeline.pipeline_init_arrive()  # fence the mbarrier inits ...
        pipeline.pipeline_init_wait()  # ... and make them visible to the whole CTA

        sA, sB, sC = allocate_operand_smem(smem, self.ab_dtype, self.c_dtype,
                                                 tma_a, tma_b, tma_c)
        tAgA, tBgB, tAsA, tBsB, tCrA, tCrB, tCgC, k_tiles = partition_operands(
            tiled_mma, self.tile, tma_a, tma_b, tma_c, sA, sB,
            cta_layout_vmnk, (0, 0, 0, 0))
        acc_layout = accumulator_layout(tiled_mma, self.tile, self.acc_slots)

        # TMEM: warp 0 allocates a power-of-two number of columns for the accumulator
        tmem.allocate(self.tmem_columns)  # tcgen05.alloc
        tmem.relinquish_alloc_permit()  # this CTA will allocate nothing else

        if warp_idx == TMA_WARP:
            self.tma_role(tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ab_pipeline, k_tiles,
                          tile_m, tile_n)
        if warp_idx == MMA_WARP:
            self.mma_role(tiled_mma, tmem, acc_layout, tCrA, tCrB, ab_pipeline, acc_pipeline,
                          k_tiles)
        if warp_idx < TMA_WARP:
            self.epilogue_role(tidx, warp_idx, tmem, acc_layout, tma_c, sC, tCgC, epi_tile,
                               acc_pipeline, tile_m, tile_n)

    @cute.jit
    def tma_role(self, tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ab_pipeline, k_tiles,
                 tile_m, tile_n):
        """Warp 4: stream this CTA's K-blocks of A and B into the ring."""
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        ab_state = tma_k_loop(tma_a, tma_b, tAgA[(None, tile_m, None)],
                                    tBgB[(None, tile_n, None)], tAsA, tBsB, ab_pipeline,
                                    ab_state, k_tiles, None, None)
        ab_pipeline.producer_tail(ab_state)  # wait until the MMA has drained the ring

    @cute.jit
    def mma_role(self, tiled_mma, tmem, acc_layout, tCrA, tCrB, ab_pipeline, acc_pipeline, k_tiles):
        """Warp 5: all K-blocks into the TMEM accumulator, then hand it to the epilogue."""
        tmem.wait_for_alloc()
        accumulators = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                 self.acc_slots)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        acc_pipeline.producer_acquire(acc_state)
        ab_state = mma_k_loop(tiled_mma, accumulators[(None, None, None, acc_state.index)],
                                    tCrA, tCrB, ab_pipeline, ab_state, k_tiles)
        acc_pipeline.producer_commit(acc_state)  # tcgen05.commit: fires when the MMAs finish

    @cute.jit
    def epilogue_role(self, tidx, warp_idx, tmem, acc_layout, tma_c, sC, tCgC, epi_tile,
                      acc_pipeline, tile_m, tile_n):
        """Warps 0-3: wait for the accumulator, drain it to C, free TMEM."""
        tmem_ptr, accumulators, c_pipeline, epi_barrier = epilogue_setup(
            tmem, acc_layout, self.acc_dtype, self.epi_stages)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer,
                                                 self.acc_slots)
        acc_pipeline.consumer_wait(acc_state)
        epilogue_tile(tidx, warp_idx,
                            accumulators[((None, None), 0, 0, acc_state.index)], tma_c, sC,
                            tCgC[((None, None), 0, 0, tile_m, tile_n)], epi_tile, self.c_dtype,
                            epi_barrier, c_pipeline, cutlass.Int32(0))
        with cute.arch.elect_one():
            acc_pipeline.consumer_release(acc_state)
        c_pipeline.producer_tail()  # every TMA store of C has read its staging buffer
        epi_barrier.arrive_and_wait()  # every epilogue warp is done with TMEM
        tmem.free(tmem_ptr)  # warp 0 only: tcgen05.dealloc


# ---------------------------------------------------------------- the surface

NEEDS = "sm_100a"
DTYPES = HALF_TYPES
OPERANDS = Operands(dtypes=DTYPES, out_dtypes=HALF_TYPES)  # fp32 accumulators, C in bf16 or fp16

GEMM = GemmHost("tcgen05_gemm", NEEDS, lambda ab, c, config, arch, a_major, b_major:
                Tcgen05Gemm(ab, c, config), Config, OPERANDS)


# compile(dtype, config, out_dtype=) / artifacts(arch, dtype, config, out_dtype=) /
# run(a, b, out, config) / prepare(problem, config) / footprint(dtype, config): the step's
# surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare
footprint = GEMM.footprint


if __name__ == "__main__":
    raise SystemExit(selftest.gemm_main(GEMM, "tcgen05_gemm", sizes=(4096, 8192)))
