"""The Blackwell pieces steps 14-16 share, in the order data flows through them.

    machine shape   warp roles (4 epilogue warps, a TMA warp, an MMA warp), TMEM's lanes and
                    columns, the named barriers
    tile shape      the MMA tile (128 x N on one CTA, 256 x N on a CTA pair) and each CTA's
                    part of it, one 128-byte swizzle row of A and B deep per stage
    tiled MMA       one tcgen05.mma atom: 128xN (cta_group::1) or 256xN (cta_group::2)
    TMA atoms       global -> shared boxes for A and B, shared -> global for C
    tma_k_loop      the TMA warp filling the stage ring, one k-tile per stage
    mma_k_loop      the MMA warp draining it into the TMEM accumulator
    epilogue_tile   TMEM -> registers (tcgen05.ld) -> C's type -> shared -> TMA store

kernels/tcgen05_gemm.py (notebook 14) puts them together on one CTA; kernels/cta_pair_gemm.py
and kernels/cta_pair_clc_gemm.py (notebook 15) on CTA pairs. Functions here are traced
inline into those kernels: where they live does not change the PTX.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.memory import TmemAllocator
from cutlass.tensor_utils import LayoutEnum

from .gemm_host import mma_k, stage_bytes

# ---------------------------------------------------------------- fixed shape of the machine

EPILOGUE_WARPS = (0, 1, 2, 3)
TMA_WARP = 4
MMA_WARP = 5
WARP_THREADS = 32
THREADS_PER_CTA = WARP_THREADS * (len(EPILOGUE_WARPS) + 2)  # + the TMA and the MMA warp
EPILOGUE_THREADS = WARP_THREADS * len(EPILOGUE_WARPS)

TMEM_COLUMNS = 512  # 32-bit columns per lane

# Named barriers (bar.sync id, thread count) -- id 0 is __syncthreads.
EPILOGUE_SYNC_BARRIER = 1  # the 4 epilogue warps, around each staged TMA store
TMEM_ALLOC_BARRIER = 2  # MMA + epilogue warps, to read the TMEM base address
TMEM_USERS = WARP_THREADS * (1 + len(EPILOGUE_WARPS))  # the MMA warp and the epilogue


@dataclass(frozen=True)
class TileShape:
    """The work of one MMA instruction group (the 'MMA tile') and of each CTA in it."""

    mma_m: int  # rows of C one MMA covers: 128 (one CTA) or 256 (a CTA pair)
    n: int  # columns of C per tile
    k: int  # K elements per stage: one 128-byte swizzle row (gemm_host.tile_k)
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


def cta_stage_bytes(tile: TileShape) -> int:
    """Bytes of A and B one stage holds in one CTA, what its TMA copies deliver: its rows
    of A and its share of B's rows, one 128-byte swizzle row each."""
    return stage_bytes(tile.cta_m, tile.n // tile.ctas)


def cta_footprint(
    tile: TileShape, stages: int, acc_slots: int, epi_stages: int, ab_bytes: int, c_bytes: int
) -> dict:
    """What one CTA of a kernel holds, computed from its tile shapes (pure Python).

    Shared memory is the A/B ring plus the epilogue's staging buffers (the mbarriers and
    the TMEM address add a few hundred bytes, and alignment a little more).
    """
    instruction_k = mma_k(8 * ab_bytes)
    return {
        "threads": THREADS_PER_CTA,
        "ctas_per_mma": tile.ctas,
        "mma": f"{tile.mma_m}x{tile.n}x{instruction_k}",
        "mma_per_k_block": tile.k // instruction_k,
        "stage_bytes": cta_stage_bytes(tile),  # what this CTA's TMA copies deliver per stage
        "full_barrier_bytes": cta_stage_bytes(tile) * tile.ctas,  # what the leader expects
        "smem_ring_bytes": stages * cta_stage_bytes(tile),
        "smem_epilogue_bytes": epi_stages * tile.cta_m * EPI_COLS * c_bytes,
        "tmem_columns": tmem_columns_for(acc_slots * tile.n),
        "accumulator_slots": acc_slots,
    }


# ---------------------------------------------------------------- host side (inside @cute.jit)


def make_tiled_mma(ab_dtype, acc_dtype, tile: TileShape) -> cute.TiledMma:
    """One tcgen05.mma atom of shape (mma_m, n, 16): A and B (16-bit) from shared memory,
    K-major."""
    op = tcgen05.MmaF16BF16Op(
        ab_dtype,
        acc_dtype,
        (tile.mma_m, tile.n, mma_k(ab_dtype.width)),
        tcgen05.CtaGroup.TWO if tile.ctas == 2 else tcgen05.CtaGroup.ONE,
        tcgen05.OperandSource.SMEM,
        cute.nvgpu.OperandMajorMode.K,
        cute.nvgpu.OperandMajorMode.K,
    )
    return cute.make_tiled_mma(op)


def make_operand_tma(
    a: cute.Tensor,
    b: cute.Tensor,
    tiled_mma: cute.TiledMma,
    tile: TileShape,
    stages: int,
    cluster_vmnk=None,
):
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
        tma_a = cute.nvgpu.make_tiled_tma_atom_A(
            op, a, a_smem, tile.mma_tiler, tiled_mma, cluster_vmnk
        )
        tma_b = cute.nvgpu.make_tiled_tma_atom_B(
            op, b, b_smem, tile.mma_tiler, tiled_mma, cluster_vmnk
        )
    return tma_a, tma_b


def make_stage_ring(
    barriers: cute.Pointer, stages: int, tx_count: int, cta_layout_vmnk: cute.Layout
) -> pipeline.PipelineTmaUmma:
    """The A/B stage ring: one TMA thread arms each stage's full barrier with `tx_count`
    bytes; the MMA warp's tcgen05.commit releases it (barrier init left to the caller's
    pipeline_init_arrive / wait)."""
    return pipeline.PipelineTmaUmma.create(
        barrier_storage=barriers,
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        tx_count=tx_count,
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=True,
    )


def make_accumulator_handoff(
    barriers: cute.Pointer, slots: int, cta_layout_vmnk: cute.Layout, ctas: int = 1
) -> pipeline.PipelineUmmaAsync:
    """The accumulator hand-off: the MMA warp's tcgen05.commit produces each of `slots`
    accumulators, the 4 epilogue warps of each of the `ctas` CTAs that share the MMA (a CTA
    pair: 2, releasing a slot on the leader's empty barrier) consume them (barrier init
    left to the caller's pipeline_init_arrive / wait)."""
    return pipeline.PipelineUmmaAsync.create(
        barrier_storage=barriers,
        num_stages=slots,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, len(EPILOGUE_WARPS) * ctas),
        cta_layout_vmnk=cta_layout_vmnk,
        defer_sync=True,
    )


def make_tmem_allocator(
    address_holder: cute.Pointer, pair_dealloc_barrier: cute.Pointer | None = None
) -> TmemAllocator:
    """TMEM allocated by epilogue warp 0, its address read by the MMA and epilogue warps. In
    a CTA pair (`pair_dealloc_barrier` given) each CTA's tcgen05.dealloc.cta_group::2 frees
    the columns of both, so it first waits on that mbarrier for its peer."""
    if pair_dealloc_barrier is None:
        return TmemAllocator(
            address_holder,
            barrier_for_retrieve=pipeline.NamedBarrier(TMEM_ALLOC_BARRIER, TMEM_USERS),
            allocator_warp_id=EPILOGUE_WARPS[0],
        )
    return TmemAllocator(
        address_holder,
        barrier_for_retrieve=pipeline.NamedBarrier(TMEM_ALLOC_BARRIER, TMEM_USERS),
        allocator_warp_id=EPILOGUE_WARPS[0],
        is_two_cta=True,
        two_cta_tmem_dealloc_mbar_ptr=pair_dealloc_barrier,
    )


def make_epilogue_tma(c: cute.Tensor, tile: TileShape, epi_stages: int):
    """The epilogue's sub-tile, its staged smem buffer and the TMA store atom for C."""
    c_layout = LayoutEnum.ROW_MAJOR
    epi_tile = sm100_utils.compute_epilogue_tile_shape(
        tile.cta_tile, tile.ctas == 2, c_layout, c.element_type
    )
    c_smem = sm100_utils.make_smem_layout_epi(c.element_type, c_layout, epi_tile, epi_stages)
    tma_c = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, c_smem, epi_tile)
    return epi_tile, tma_c


# ---------------------------------------------------------------- device side (inside @cute.kernel)


def allocate_operand_smem(smem, ab_dtype, c_dtype, tma_a, tma_b, tma_c):
    """The stage ring for A and B and the epilogue's staging buffer, 128-byte aligned:
    sA (MMA, MMA_M, MMA_K, STAGE), sB (MMA, MMA_N, MMA_K, STAGE), sC (EPI_M, EPI_N, buffer)."""

    def alloc(dtype, layout):
        return smem.allocate_tensor(
            element_type=dtype, layout=layout.outer, byte_alignment=128, swizzle=layout.inner
        )

    return (
        alloc(ab_dtype, tma_a.smem_layout),
        alloc(ab_dtype, tma_b.smem_layout),
        alloc(c_dtype, tma_c.smem_layout),
    )


class OperandViews(NamedTuple):
    """A, B and C tiled by the MMA tile and partitioned for this CTA (partition_operands)."""

    tAgA: cute.Tensor  # ((TMA, REST), tiles_m, k_tiles): A's k-tiles, TMA view
    tBgB: cute.Tensor  # ((TMA, REST), tiles_n, k_tiles)
    tAsA: cute.Tensor  # ((TMA, REST), STAGE): the A ring's stages, TMA view
    tBsB: cute.Tensor  # ((TMA, REST), STAGE)
    tCrA: cute.Tensor  # (MMA, MMA_M, MMA_K, STAGE): smem descriptors of A, per stage
    tCrB: cute.Tensor  # (MMA, MMA_N, MMA_K, STAGE)
    tCgC: cute.Tensor  # (MMA, MMA_M, MMA_N, tiles_m, tiles_n): C, MMA view
    k_tiles: cutlass.Int32


def partition_operands(
    tiled_mma: cute.TiledMma,
    tile: TileShape,
    tma_a: cpasync.TmaInfo,
    tma_b: cpasync.TmaInfo,
    tma_c: cpasync.TmaInfo,
    sA: cute.Tensor,
    sB: cute.Tensor,
    cta_layout_vmnk: cute.Layout,
    cta_coord_vmnk,
) -> OperandViews:
    """Views of A, B, C tiled by the MMA tile and partitioned for this CTA.

    Returned views keep the tile coordinates as trailing modes, so a role picks its
    current tile by slicing, e.g. `tAgA[(None, tile_row, None)]` is the (TMA view of the)
    K-loop over A's rows of tile row `tile_row`. In a CTA pair, `get_slice(v)` picks this
    CTA's half of the 256-row MMA tile (v = 0 leader, 1 follower).
    """
    mA, mB, mC = tma_a.tma_tensor, tma_b.tma_tensor, tma_c.tma_tensor
    # gA (MMA_TILE_M, bK, tiles_m, k_tiles), gB (bN, bK, tiles_n, k_tiles),
    # gC (MMA_TILE_M, bN, tiles_m, tiles_n)
    gA = cute.local_tile(mA, cute.select(tile.mma_tiler, mode=[0, 2]), (None, None))
    gB = cute.local_tile(mB, cute.select(tile.mma_tiler, mode=[1, 2]), (None, None))
    gC = cute.local_tile(mC, cute.select(tile.mma_tiler, mode=[0, 1]), (None, None))
    thr_mma = tiled_mma.get_slice(cta_coord_vmnk[0])
    tCgA = thr_mma.partition_A(gA)  # (MMA, MMA_M, MMA_K, tiles_m, k_tiles)
    tCgB = thr_mma.partition_B(gB)  # (MMA, MMA_N, MMA_K, tiles_n, k_tiles)
    tCgC = thr_mma.partition_C(gC)  # (MMA, MMA_M, MMA_N, tiles_m, tiles_n)
    tCrA = tiled_mma.make_fragment_A(sA)  # smem descriptors, (MMA, MMA_M, MMA_K, STAGE)
    tCrB = tiled_mma.make_fragment_B(sB)  # (MMA, MMA_N, MMA_K, STAGE)
    # TMA: a CTA's copy lands in the smem of every CTA named in its multicast mask.
    # tAsA ((TMA, REST), STAGE), tAgA ((TMA, REST), tiles_m, k_tiles); B's alike
    tAsA, tAgA = cpasync.tma_partition(
        tma_a.atom,
        cta_coord_vmnk[2],
        cute.make_layout(cute.size(cta_layout_vmnk, mode=[2])),
        cute.group_modes(sA, 0, 3),
        cute.group_modes(tCgA, 0, 3),
    )
    tBsB, tBgB = cpasync.tma_partition(
        tma_b.atom,
        cta_coord_vmnk[1],
        cute.make_layout(cute.size(cta_layout_vmnk, mode=[1])),
        cute.group_modes(sB, 0, 3),
        cute.group_modes(tCgB, 0, 3),
    )
    k_tiles = cute.size(gA, mode=[3])
    return OperandViews(tAgA, tBgB, tAsA, tBsB, tCrA, tCrB, tCgC, k_tiles)


def accumulator_layout(tiled_mma: cute.TiledMma, tile: TileShape, slots: int) -> cute.Layout:
    """TMEM layout of `slots` accumulators of this CTA: ((128, N), 1, 1, slots) fp32 cells.

    Each slot is 128 lanes x N columns; slot s starts at column s*N.
    """
    acc_shape = tiled_mma.partition_shape_C(cute.select(tile.mma_tiler, mode=[0, 1]))
    return tiled_mma.make_fragment_C(cute.append(acc_shape, slots)).layout


@cute.jit
def tma_k_loop(
    tma_a: cpasync.TmaInfo,
    tma_b: cpasync.TmaInfo,
    tAgA: cute.Tensor,
    tBgB: cute.Tensor,
    tAsA: cute.Tensor,
    tBsB: cute.Tensor,
    ring: pipeline.PipelineTmaUmma,
    state: pipeline.PipelineState,
    k_tiles: cutlass.Int32,
    mask_a,
    mask_b,
) -> pipeline.PipelineState:
    """TMA warp: stream the K-blocks of one tile into the ring; return the ring position.

    For each K-block: wait until the stage is empty (the MMA has released it), arm the
    stage's full barrier with the bytes to expect, issue one TMA copy for A and one
    for B. The state (stage index, phase) is returned so the next tile continues
    the ring where this one stopped.
    """
    for k_block in cutlass.range(k_tiles, unroll=1):
        ring.producer_acquire(state)
        barrier = ring.producer_get_barrier(state)
        cute.copy(
            tma_a.atom,
            tAgA[(None, k_block)],
            tAsA[(None, state.index)],
            tma_bar_ptr=barrier,
            mcast_mask=mask_a,
        )
        cute.copy(
            tma_b.atom,
            tBgB[(None, k_block)],
            tBsB[(None, state.index)],
            tma_bar_ptr=barrier,
            mcast_mask=mask_b,
        )
        state.advance()
    return state


@cute.jit
def mma_k_loop(
    tiled_mma: cute.TiledMma,
    accumulator: cute.Tensor,
    tCrA: cute.Tensor,
    tCrB: cute.Tensor,
    ring: pipeline.PipelineTmaUmma,
    state: pipeline.PipelineState,
    k_tiles: cutlass.Int32,
) -> pipeline.PipelineState:
    """MMA warp: multiply the K-blocks of one tile into `accumulator` (in TMEM).

    The first MMA of a tile overwrites the accumulator (ACCUMULATE=False), every
    later one adds to it. Each K-block (one 128-byte swizzle row: 64 elements of a 16-bit
    type) is 4 tcgen05.mma of 32 bytes of K (16 elements). Releasing a
    stage is a tcgen05.commit to its empty barrier: it fires when these MMAs have
    finished reading shared memory, not when they were issued.
    """
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    for k_block in cutlass.range(k_tiles, unroll=1):
        ring.consumer_wait(state)
        for kk in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            stage = (None, None, kk, state.index)
            cute.gemm(tiled_mma, accumulator, tCrA[stage], tCrB[stage], accumulator)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        ring.consumer_release(state)
        state.advance()
    return state


def make_epilogue_tmem_load(acc_subtile: cute.Tensor) -> cute.TiledCopy:
    """tcgen05.ld 32x32b.x32 over one epilogue sub-tile (128 lanes x 32 columns).

    Thread t (0..127) of the 4 epilogue warps reads TMEM lane t, 32 consecutive columns:
    warp w gets lanes 32w..32w+31, the only quarter of TMEM a warp w may access.
    """
    atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32)
    return tcgen05.make_tmem_copy(atom, acc_subtile)


class EpilogueSetup(NamedTuple):
    """What the epilogue warps hold from their set-up to the end (epilogue_setup)."""

    tmem_ptr: cute.Pointer  # the accumulators' TMEM address, to free it at the end
    accumulators: cute.Tensor  # ((128, N), 1, 1, slots) fp32 cells in TMEM
    c_pipeline: pipeline.PipelineTmaStore  # the staging buffers' TMA stores
    epi_barrier: pipeline.NamedBarrier  # the 4 epilogue warps


def epilogue_setup(
    tmem: TmemAllocator, acc_layout: cute.Layout, acc_dtype, epi_stages: int
) -> EpilogueSetup:
    """Epilogue warps, once: wait for the TMEM allocation and view the accumulators there;
    the TMA-store ring of staging buffers; the named barrier the 4 warps sync on."""
    tmem.wait_for_alloc()
    tmem_ptr = tmem.retrieve_ptr(acc_dtype)
    c_pipeline = pipeline.PipelineTmaStore.create(
        num_stages=epi_stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, EPILOGUE_THREADS),
    )
    return EpilogueSetup(
        tmem_ptr,
        cute.make_tensor(tmem_ptr, acc_layout),
        c_pipeline,
        pipeline.NamedBarrier(EPILOGUE_SYNC_BARRIER, EPILOGUE_THREADS),
    )


def staging_buffer(store, epi_stages: int):
    """The staging buffer of this CTA's `store`-th TMA store of C, counted over every tile
    the CTA has stored. PipelineTmaStore releases buffers in the order the stores were
    issued, so the count must run on across tiles: restarting it at 0 on each tile would
    write buffer 0 while the previous tile's last store may still read it, whenever a tile
    has a number of sub-tiles that is not a multiple of the stages (tests/test_tcgen05_gemm.py
    plays the ring both ways)."""
    return store % epi_stages


@cute.jit
def epilogue_tile(
    tidx: cutlass.Int32,
    warp_idx: cutlass.Int32,
    accumulator: cute.Tensor,
    tma_c: cpasync.TmaInfo,
    sC: cute.Tensor,
    gC: cute.Tensor,
    epi_tile: cute.Tile,
    c_dtype: cutlass.Constexpr,
    epi_barrier: pipeline.NamedBarrier,
    c_pipeline: pipeline.PipelineTmaStore,
    stores_before: cutlass.Int32,
):
    """Epilogue warps: drain one CTA's 128 x N accumulator to C, one sub-tile at a time.
    `stores_before` counts the TMA stores this CTA issued for earlier tiles; returns the
    count after this tile's.

    TMEM -> registers: tcgen05.ld 32x32b, so thread t of epilogue warp w reads TMEM lane
    32*w + t (row 32*w + t of the tile), 32 consecutive columns per instruction.
    registers -> shared: convert the accumulator to C's type, store into one of the
    staging buffers. shared -> global: one thread issues a TMA store; TMA clips the rows and
    columns that fall outside C, which is how ragged M and N are handled.
    """
    # (EPI_M, EPI_N, sub-tiles along M, sub-tiles along N)
    acc_epi = cute.flat_divide(accumulator, epi_tile)
    gC_epi = cute.flat_divide(gC, epi_tile)
    tmem_load = make_epilogue_tmem_load(acc_epi[(None, None, 0, 0)])
    thr_load = tmem_load.get_slice(tidx)
    tTR_tAcc = thr_load.partition_S(acc_epi)  # (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    tTR_gC = thr_load.partition_D(gC_epi)  # (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    # one sub-tile of the accumulator in registers, (T2R, T2R_M, T2R_N)
    tTR_rAcc = cute.make_rmem_tensor(
        tTR_gC[(None, None, None, 0, 0)].shape, accumulator.element_type
    )

    store_atom = sm100_utils.get_smem_store_op(
        LayoutEnum.ROW_MAJOR, c_dtype, accumulator.element_type, tmem_load
    )
    smem_store = cute.make_tiled_copy_D(store_atom, tmem_load)
    thr_store = smem_store.get_slice(tidx)
    tRS_sC = thr_store.partition_D(sC)  # (R2S, R2S_M, R2S_N, buffer)
    tRS_rAcc = smem_store.retile(tTR_rAcc)  # (R2S, R2S_M, R2S_N)
    tRS_rC = cute.make_rmem_tensor(tRS_rAcc.shape, c_dtype)

    # TMA view of the staging buffer and of this tile of C, one entry per sub-tile:
    # (TMA, buffer) and (TMA, EPI_M, EPI_N)
    tCsC, tCgC = cpasync.tma_partition(
        tma_c.atom,
        0,
        cute.make_layout(1),
        cute.group_modes(sC, 0, 2),
        cute.group_modes(gC_epi, 0, 2),
    )
    # (T2R, T2R_M, T2R_N, sub-tiles) and (TMA, sub-tiles): the sub-tiles counted in one mode
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
