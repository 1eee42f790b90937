"""What CuTe DSL computes for the course's kernels, evaluated on a CPU (nothing is launched).

Each function builds a kernel's own pieces -- its TiledMMA, its local_tile and partitions,
its TMA atom, its tcgen05.ld copy -- inside a trace (course.cute.trace.on_cpu) and reads
back what CuTe made of them: the layouts a thread sees, who owns which cell (through
course.cute.partition_ownership), the tensor map's description. The kernels stay free of
teaching code; the notebooks print and draw what these return.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.hopper_helpers as sm90_utils
import torch
from cutlass.tensor_utils import LayoutEnum

from course.cute.partition_ownership import (
    mma_partitions,
    owner_pairs,
    owner_table,
    ownership,
    tiled_mma_pairs,
    tv_partitions,
)
from course.cute.trace import on_cpu
from course.models.ownership import Ownership
from kernels import mma_atom, naive_gemm, sm100_parts, tma
from kernels.gemm_host import tile_k
from kernels.host import cutlass_dtype


# ---------------------------------------------------------------- notebook 03: the naive GEMM


def thread_trace(
    m: int = 256,
    n: int = 128,
    k: int = 32,
    thread: int = 0,
    block: tuple[int, int] = (0, 0),
    config: naive_gemm.Config = naive_gemm.Config(),
    a_major: str = "m",
    b_major: str = "n",
    dtype=torch.float32,
) -> dict:
    """What thread `thread` of CTA `block` sees, computed by CuTe DSL on a CPU.

    Runs the kernel's own partitioning functions in a host trace with static sizes
    (so every layout prints as numbers) and returns CuTe's printouts -- 'mA', 'gA',
    'tCgA' (K-slice 0), 'tCgC', 'tCrC' (the accumulator fragment), 'tiled_mma', ... --
    and the coordinates the thread touches: 'c_cells', the (row, col) of C held by
    each accumulator register in order, and 'a_rows' / 'b_rows', the rows of A and
    of B it loads (the same in every K-slice).
    """
    el = cutlass_dtype(dtype)
    return on_cpu(
        lambda a, b, c: _trace(a, b, c, m, n, k, thread, block, config, a_major, b_major),
        pointers=(el, el, el),
    )


def _coords(t) -> list[tuple]:
    """The coordinates held by a partitioned identity tensor, in its element order, read
    element by element by CuTe itself: the reference the fast evaluation of
    course.cute.partition_ownership is tested against (tests/test_naive_gemm.py)."""
    return [tuple(int(v) for v in t[i]) for i in range(cute.size(t))]


def _trace(a_ptr, b_ptr, c_ptr, m, n, k, thread, block, config, a_major, b_major) -> dict:
    mA, mB, mC = naive_gemm.global_tensors(a_ptr, b_ptr, c_ptr, m, n, k, a_major, b_major)
    tiled_mma = naive_gemm.make_tiled_mma(config)
    gA, gB, gC = naive_gemm.cta_tiles(mA, mB, mC, config, *block)
    tCgA, tCgB, tCgC = naive_gemm.thread_partitions(tiled_mma, thread, gA, gB, gC)
    cA, cB, cC = naive_gemm.cta_tiles(
        cute.make_identity_tensor(mA.shape),
        cute.make_identity_tensor(mB.shape),
        cute.make_identity_tensor(mC.shape),
        config,
        *block,
    )
    tCcA, tCcB, tCcC = naive_gemm.thread_partitions(tiled_mma, thread, cA, cB, cC)
    tCrC = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
    a_cells = _coords(tCcA[None, None, None, 0])
    b_cells = _coords(tCcB[None, None, None, 0])
    return {
        "mA": str(mA.layout),
        "mB": str(mB.layout),
        "mC": str(mC.layout),
        "gA": str(gA.layout),
        "gB": str(gB.layout),
        "gC": str(gC.layout),
        "gA_k0": str(gA[None, None, 0].layout),
        "gB_k0": str(gB[None, None, 0].layout),
        "tCgA": str(tCgA[None, None, None, 0].layout),
        "tCgB": str(tCgB[None, None, None, 0].layout),
        "tCgA_all": str(tCgA.layout),
        "tCgB_all": str(tCgB.layout),
        "tCgC": str(tCgC.layout),
        "tCrC": str(tCrC.layout),
        "tiled_mma": str(tiled_mma),
        "tv_layout_C": str(tiled_mma.tv_layout_C_tiled),
        "grid": (-(-m // config.tile_m), -(-n // config.tile_n)),
        "k_tiles": cute.size(gA, mode=[2]),
        "c_cells": _coords(tCcC),
        "a_rows": sorted({row for row, _ in a_cells}),
        "b_rows": sorted({row for row, _ in b_cells}),
        "a_cells_k0": a_cells,
        "b_cells_k0": b_cells,
    }


def operand_ownership(operand: str = "C", config: naive_gemm.Config = naive_gemm.Config()):
    """Who holds each cell of the CTA's tile of `operand` ("A": BMxBK slice, "B": BNxBK,
    "C": BMxBN): course.models.ownership.Ownership from the kernel's own partition_A/B/C for
    every thread, evaluated by CuTe DSL on a CPU. A and B cells are held by 16 threads
    each (every thread that shares the rows): the Ownership records the replication."""
    shape = {
        "A": (config.tile_m, config.tile_k),
        "B": (config.tile_n, config.tile_k),
        "C": (config.tile_m, config.tile_n),
    }[operand]
    return ownership(
        shape,
        lambda: mma_partitions(naive_gemm.make_tiled_mma(config), operand, shape, config.threads),
        title=f"naive GEMM: one CTA's {operand} tile, partition_{operand}",
    )


def c_ownership(config: naive_gemm.Config = naive_gemm.Config()):
    """operand_ownership("C"): the map of the 128x128 accumulator tile."""
    return operand_ownership("C", config)


def cta_ownership(m: int = 256, n: int = 128, config: naive_gemm.Config = naive_gemm.Config()):
    """Which CTA (blockIdx.x + gridDim.x * blockIdx.y) computes each cell of C, from the
    kernel's own local_tile over a coordinate tensor, evaluated by CuTe DSL on a CPU.
    Cells of a tile past M or N belong to nobody (the kernel predicates them off)."""
    grid_m, grid_n = -(-m // config.tile_m), -(-n // config.tile_n)

    def tiles():
        coords = cute.make_identity_tensor((m, n))
        for cta in range(grid_m * grid_n):
            yield (
                cta,
                cute.local_tile(
                    coords,
                    tiler=config.cta_tiler,
                    coord=(cta % grid_m, cta // grid_m, None),
                    proj=(1, 1, None),
                ),
            )

    table = owner_table(tiles)  # rows (cta, value, row, col)
    inside = table[(table[:, 2] < m) & (table[:, 3] < n)]
    return Ownership.from_rows(
        (m, n),
        inside,
        title=f"C {m}x{n}: one CTA per {config.tile_m}x{config.tile_n} tile",
        thread_label="CTA",
    )


# ------------------------------------------------------------ notebooks 06 and 10: MMA fragments


def mma_atom_pairs(
    operand: str = "C",
    config: mma_atom.Config = mma_atom.Config(),
    dtype: torch.dtype = torch.bfloat16,
) -> list:
    """[((thread, value), (row, col)), ...] for operand A (M x K), B (N x K) or C (M x N),
    read from CuTe's own partitioning of a coordinate tensor (no GPU needed)."""
    m, n, k = config.shape_mnk
    shape = {"A": (m, k), "B": (n, k), "C": (m, n)}.get(operand)
    return tiled_mma_pairs(
        lambda: mma_atom.make_tiled_mma(cutlass_dtype(dtype), config),
        operand,
        shape,
        config.threads,
    )


def wgmma_accumulator_pairs(tile_n: int = 64, dtype: torch.dtype = torch.bfloat16) -> list:
    """Where one warpgroup's m64 x tile_n fp32 accumulator lives: [((thread, value),
    (row, col)), ...], from CuTe's partition of the wgmma TiledMMA (no GPU needed; traced
    for sm_90a, the only architecture with wgmma)."""

    def tiled():
        return sm90_utils.make_trivial_tiled_mma(
            cutlass_dtype(dtype),
            cutlass_dtype(dtype),
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
            cutlass.Float32,
            (1, 1, 1),
            tiler_mn=(64, tile_n),
        )

    return tiled_mma_pairs(tiled, "C", (64, tile_n), 128, arch="sm_90a")


# ---------------------------------------------------------------- notebook 08: TMA


def cute_tensor_map(
    rows: int = 8192,
    cols: int = 8192,
    dtype: torch.dtype = torch.bfloat16,
    config: tma.Config = tma.Config(),
) -> dict[str, str]:
    """What CuTe DSL builds for a (rows, cols) row-major tensor moved in `config`'s
    boxes: the layouts, the copy atom, the TMA tensor. CPU only, no GPU needed.

    The load atom is built exactly as TmaLoad builds it, with static sizes so they print."""
    config.check(torch.tensor([], dtype=dtype).element_size())
    element = cutlass_dtype(dtype)

    def describe(ptr):
        mSrc = cute.make_tensor(ptr, cute.make_layout((rows, cols), stride=(cols, 1)))
        sl = tma.box_layout(element, config)
        atom, tSrc = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(),
            mSrc,
            sl,
            (config.box_rows, config.box_cols),
        )
        boxes = cute.local_tile(tSrc, (config.box_rows, config.box_cols), (None, None))
        return {
            "global tensor": str(mSrc),
            "shared-memory box layout": str(sl),
            "copy atom": str(atom),
            "descriptor (atom type)": str(atom._trait.value.type),
            "TMA tensor": str(tSrc),
            "TMA tensor, tiled into boxes": str(boxes),
            "box (1, 2)": str(boxes[(None, None, 1, 2)]),
        }

    return on_cpu(describe, pointers=(element,))


def cute_swizzle_offsets(swizzle: int = 128, nbytes: int = 1024) -> list[int]:
    """CuTe's own Swizzle<B,4,3> evaluated on the byte offsets 0, 16, 32, ...: where
    each 16-byte chunk of a box goes (the model course.models.tensormap checks itself against)."""

    def offsets():
        byte_layout = cute.make_composed_layout(
            cute.make_swizzle(tma.SWIZZLE_BITS[swizzle], 4, 3), 0, cute.make_layout(nbytes)
        )
        return [int(byte_layout(b)) for b in range(0, nbytes, 16)]

    return on_cpu(offsets)


# ---------------------------------------------------------------- notebooks 14 and 15: tcgen05

TMEM_LANE = 1 << 16  # a TMEM address is lane << 16 | column


def epilogue_tmem_ownership(tile_n: int = 128, ctas: int = 1, threads=None) -> list:
    """((thread, value), (lane, column)) of every TMEM cell the epilogue reads, from CuTe.

    Builds the epilogue's accumulator view and tcgen05.ld tiled copy exactly as the
    kernels do (same helpers) and partitions the accumulator's TMEM addresses with the
    copy's TV layout: value v of thread t is the v-th fp32 it loads across the sub-tiles
    of one tile. Traced for sm_100a on the CPU (no launch); `threads` picks some of the 128.
    """
    tile = sm100_parts.TileShape(mma_m=128 * ctas, n=tile_n, k=tile_k(16), ctas=ctas)

    def views():
        tiled_mma = sm100_parts.make_tiled_mma(cutlass.BFloat16, cutlass.Float32, tile)
        layout = sm100_parts.accumulator_layout(tiled_mma, tile, 1)
        tmem = cute.make_tensor(
            cute.make_ptr(cutlass.Float32, 0, cute.AddressSpace.tmem, assumed_align=16), layout
        )
        addresses = cute.make_tensor(0, layout)  # the same cells, holding their addresses
        epi_tile = sm100_utils.compute_epilogue_tile_shape(
            tile.cta_tile, ctas == 2, LayoutEnum.ROW_MAJOR, cutlass.BFloat16
        )
        acc_epi = cute.flat_divide(tmem[((None, None), 0, 0, 0)], epi_tile)
        load = sm100_parts.make_epilogue_tmem_load(acc_epi[(None, None, 0, 0)])
        address_epi = cute.flat_divide(addresses[((None, None), 0, 0, 0)], epi_tile)
        for s in range(cute.size(address_epi, mode=[3])):  # sub-tile after sub-tile
            yield from tv_partitions(
                address_epi[(None, None, 0, s)], load.layout_dst_tv_tiled, load.tiler_mn, threads
            )

    return owner_pairs(views, arch="sm_100a", cell=lambda address: divmod(address, TMEM_LANE))


def pair_operand_rows(tile_n: int = 128) -> dict:
    """Which rows of the 256-row A and C tiles and the N-row B tile each CTA of a pair holds.

    Evaluated with CuTe's own partitioning of the cta_group::2 MMA (traced for sm_100a on a
    CPU, no launch): {v: {"A": (first, last), "B": ..., "C": ...}} for v = 0 (leader) and
    1 (follower), the rows of its first and last value.
    """
    tile = sm100_parts.TileShape(mma_m=256, n=tile_n, k=tile_k(16), ctas=2)  # bf16
    shapes = {"A": (tile.mma_m, tile.k), "B": (tile.n, tile.k), "C": (tile.mma_m, tile.n)}
    rows: dict = {0: {}, 1: {}}
    for name, shape in shapes.items():
        table = owner_table(
            lambda: mma_partitions(
                sm100_parts.make_tiled_mma(cutlass.BFloat16, cutlass.Float32, tile), name, shape, 2
            ),
            arch="sm_100a",
        )
        for v in rows:
            held = table[table[:, 0] == v]  # (v, value, row, col) in value order
            rows[v][name] = (int(held[0, 2]), int(held[-1, 2]))
    return rows
