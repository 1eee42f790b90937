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

from typing import NamedTuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.memory.smem import SmemAllocator

from .gemm_host import COPY_BYTES, elements, stage_bytes, tile_k
from .sm80_gemm import grouped_tile, swizzled_rows

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
) -> pipeline.PipelineTmaAsync:
    """The full/empty ring as CuTe DSL's PipelineTmaAsync: full[s] expects one arrival
    (the producer's expect_tx) plus `tx_bytes`; empty[s] one arrival per consumer warp
    (in a cluster, `cta_layout_vmnk` says whose; `defer_sync` leaves the cluster's sync to
    the caller, as CuTe DSL's own defaults otherwise do)."""
    return pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        barrier_storage=barriers,
        tx_count=tx_bytes,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
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
