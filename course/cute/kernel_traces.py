"""What CuTe DSL computes for the course's kernels, evaluated on a CPU (nothing is launched).

Each function builds a kernel's own pieces -- its TiledMMA, its local_tile and partitions,
its TMA atom, its tcgen05.ld copy -- inside a trace and reads back what CuTe made of them:
the layouts a thread sees, who owns which cell, the tensor map's description. The kernels
stay free of teaching code; the notebooks print and draw what these return.
"""
from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.hopper_helpers as sm90_utils
import torch
from cutlass.tensor_utils import LayoutEnum

from course.cute.algebra import coordinates, on_cpu
from course.models.ownership import Ownership
from kernels import mma_atom, naive_gemm, tcgen05_gemm, tma
from kernels.host import cutlass_dtype, gmem_pointer



# ---------------------------------------------------------------- notebook 02: the naive GEMM

def thread_trace(m: int = 256, n: int = 128, k: int = 32, thread: int = 0,
                 block: tuple[int, int] = (0, 0), config: naive_gemm.Config = naive_gemm.Config(),
                 a_major: str = "m", b_major: str = "n", dtype=torch.float32) -> dict:
    """What thread `thread` of CTA `block` sees, computed by CuTe DSL on a CPU.

    Runs the kernel's own partitioning functions in a host trace with static sizes
    (so every layout prints as numbers) and returns CuTe's printouts -- 'mA', 'gA',
    'tCgA' (K-slice 0), 'tCgC', 'tCrC' (the accumulator fragment), 'tiled_mma', ... --
    and the coordinates the thread touches: 'c_cells', the (row, col) of C held by
    each accumulator register in order, and 'a_rows' / 'b_rows', the rows of A and
    of B it loads (the same in every K-slice).
    """
    el = cutlass_dtype(dtype)
    return on_cpu(lambda a, b, c: _trace(a, b, c, m, n, k, thread, block, config, a_major,
                                         b_major), pointers=(el, el, el))


def _coords(t) -> list[tuple]:
    """The coordinates held by a partitioned identity tensor, in its element order."""
    return [tuple(int(v) for v in t[i]) for i in range(cute.size(t))]


def _trace(a_ptr, b_ptr, c_ptr, m, n, k, thread, block, config, a_major, b_major) -> dict:
    mA, mB, mC = naive_gemm.global_tensors(a_ptr, b_ptr, c_ptr, m, n, k, a_major, b_major)
    tiled_mma = naive_gemm.make_tiled_mma(config)
    gA, gB, gC = naive_gemm.cta_tiles(mA, mB, mC, config, *block)
    tCgA, tCgB, tCgC = naive_gemm.thread_partitions(tiled_mma, thread, gA, gB, gC)
    cA, cB, cC = naive_gemm.cta_tiles(cute.make_identity_tensor(mA.shape), cute.make_identity_tensor(mB.shape),
                           cute.make_identity_tensor(mC.shape), config, *block)
    tCcA, tCcB, tCcC = naive_gemm.thread_partitions(tiled_mma, thread, cA, cB, cC)
    tCrC = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
    a_cells = _coords(tCcA[None, None, None, 0])
    b_cells = _coords(tCcB[None, None, None, 0])
    return {
        "mA": str(mA.layout), "mB": str(mB.layout), "mC": str(mC.layout),
        "gA": str(gA.layout), "gB": str(gB.layout), "gC": str(gC.layout),
        "gA_k0": str(gA[None, None, 0].layout), "gB_k0": str(gB[None, None, 0].layout),
        "tCgA": str(tCgA[None, None, None, 0].layout), "tCgB": str(tCgB[None, None, None, 0].layout),
        "tCgA_all": str(tCgA.layout), "tCgB_all": str(tCgB.layout), "tCgC": str(tCgC.layout),
        "tCrC": str(tCrC.layout), "tiled_mma": str(tiled_mma),
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
    shape = {"A": (config.tile_m, config.tile_k), "B": (config.tile_n, config.tile_k),
             "C": (config.tile_m, config.tile_n)}[operand]

    def job():
        tiled_mma = naive_gemm.make_tiled_mma(config)
        ident = cute.make_identity_tensor(shape)
        out = []
        for t in range(config.threads):
            thr = tiled_mma.get_slice(t)
            part = {"A": thr.partition_A, "B": thr.partition_B, "C": thr.partition_C}[operand]
            out.append(coordinates(part(ident)))
        return out

    per_thread = on_cpu(job)
    pairs = (((t, v), cell) for t, cells in enumerate(per_thread) for v, cell in enumerate(cells))
    return Ownership.from_pairs(shape, pairs, title=f"naive GEMM: one CTA's {operand} tile, "
                                                    f"partition_{operand}")


def c_ownership(config: naive_gemm.Config = naive_gemm.Config()):
    """operand_ownership("C"): the map of the 128x128 accumulator tile."""
    return operand_ownership("C", config)


def cta_ownership(m: int = 256, n: int = 128, config: naive_gemm.Config = naive_gemm.Config()):
    """Which CTA (blockIdx.x + gridDim.x * blockIdx.y) computes each cell of C, from the
    kernel's own local_tile over a coordinate tensor, evaluated by CuTe DSL on a CPU."""
    grid_m, grid_n = -(-m // config.tile_m), -(-n // config.tile_n)

    def job():
        ident = cute.make_identity_tensor((m, n))
        out = []
        for bn in range(grid_n):
            for bm in range(grid_m):
                gC = cute.local_tile(ident, tiler=config.cta_tiler, coord=(bm, bn, None),
                                     proj=(1, 1, None))
                out.append(coordinates(gC))
        return out

    pairs = []
    for cta, cells in enumerate(on_cpu(job)):
        pairs += [((cta, v), (r, c)) for v, (r, c) in enumerate(cells) if r < m and c < n]
    return Ownership.from_pairs((m, n), pairs, title=f"C {m}x{n}: one CTA per "
                                f"{config.tile_m}x{config.tile_n} tile", thread_label="CTA")


# ---------------------------------------------------------------- notebooks 05 and 09: MMA fragments

def partition_pairs(make_tiled_mma, shape, threads: int, operand: str,
                    arch: str | None = None) -> list:
    """[((thread, value), coord), ...]: where each thread's values of operand A, B or C
    sit in a tile of `shape`, read from CuTe's own partition of a coordinate tensor.
    `make_tiled_mma()` builds the TiledMMA inside the trace; `arch` names the target when
    the MMA exists only there (wgmma: sm_90a). Runs on a CPU (no launch)."""
    if operand not in ("A", "B", "C"):
        raise ValueError("operand must be 'A', 'B' or 'C'")
    out: list = []
    if arch is None:
        _collect_pairs(make_tiled_mma, tuple(shape), threads, operand, out)
    else:  # tracing happens during compilation; nothing is launched
        cute.compile(_collect_pairs, make_tiled_mma, tuple(shape), threads, operand, out,
                     options=f"--gpu-arch {arch}")
    return out


@cute.jit
def _collect_pairs(make_tiled_mma: cutlass.Constexpr, shape: cutlass.Constexpr,
                   threads: cutlass.Constexpr, operand: cutlass.Constexpr,
                   out: cutlass.Constexpr):
    tiled = make_tiled_mma()
    coords = cute.make_identity_tensor(shape)
    for t in cutlass.range_constexpr(threads):
        thr = tiled.get_slice(t)
        part = {"A": thr.partition_A, "B": thr.partition_B, "C": thr.partition_C}[operand](coords)
        for v in cutlass.range_constexpr(cute.size(part)):
            out.append(((t, v), tuple(part[v])))


def mma_atom_pairs(operand: str = "C", config: mma_atom.Config = mma_atom.Config(),
                    dtype: torch.dtype = torch.bfloat16) -> list:
    """[((thread, value), (row, col)), ...] for operand A (M x K), B (N x K) or C (M x N),
    read from CuTe's own partitioning of a coordinate tensor (no GPU needed)."""
    m, n, k = config.shape_mnk
    shape = {"A": (m, k), "B": (n, k), "C": (m, n)}.get(operand)
    return partition_pairs(lambda: mma_atom.make_tiled_mma(cutlass_dtype(dtype), config), shape or (0,),
                           config.threads, operand)


def wgmma_accumulator_pairs(tile_n: int = 64, dtype: torch.dtype = torch.bfloat16) -> list:
    """Where one warpgroup's m64 x tile_n fp32 accumulator lives: [((thread, value),
    (row, col)), ...], from CuTe's partition of the wgmma TiledMMA (no GPU needed)."""
    def tiled():
        return sm90_utils.make_trivial_tiled_mma(
            cutlass_dtype(dtype), cutlass_dtype(dtype), cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K, cutlass.Float32, (1, 1, 1), tiler_mn=(64, tile_n))
    return partition_pairs(tiled, (64, tile_n), 128, "C", arch="sm_90a")


# ---------------------------------------------------------------- notebook 07: TMA

@cute.jit
def _describe(ptr: cute.Pointer, rows: cutlass.Constexpr, cols: cutlass.Constexpr,
              dtype: cutlass.Constexpr, cfg: cutlass.Constexpr, out: cutlass.Constexpr):
    """Build the load atom exactly as TmaLoad does (static sizes, so they print) and
    record what CuTe made of it. Runs at trace time: nothing is launched."""
    mSrc = cute.make_tensor(ptr, cute.make_layout((rows, cols), stride=(cols, 1)))
    sl = tma.box_layout(dtype, cfg)
    atom, tSrc = cute.nvgpu.cpasync.make_tiled_tma_atom(
        cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), mSrc, sl, (cfg.box_rows, cfg.box_cols))
    boxes = cute.local_tile(tSrc, (cfg.box_rows, cfg.box_cols), (None, None))
    out["global tensor"] = str(mSrc)
    out["shared-memory box layout"] = str(sl)
    out["copy atom"] = str(atom)
    out["descriptor (atom type)"] = str(atom._trait.value.type)
    out["TMA tensor"] = str(tSrc)
    out["TMA tensor, tiled into boxes"] = str(boxes)
    out["box (1, 2)"] = str(boxes[(None, None, 1, 2)])


def cute_tensor_map(rows: int = 8192, cols: int = 8192, dtype: torch.dtype = torch.bfloat16,
                    config: tma.Config = tma.Config()) -> dict[str, str]:
    """What CuTe DSL builds for a (rows, cols) row-major tensor moved in `config`'s
    boxes: the layouts, the copy atom, the TMA tensor. CPU only, no GPU needed."""
    config.check(torch.tensor([], dtype=dtype).element_size())
    out: dict[str, str] = {}
    ptr = gmem_pointer(None, dtype)
    _describe(ptr, rows, cols, cutlass_dtype(dtype), config, out)
    return out


@cute.jit
def _swizzle_offsets(bits: cutlass.Constexpr, nbytes: cutlass.Constexpr, out: cutlass.Constexpr):
    byte_layout = cute.make_composed_layout(cute.make_swizzle(bits, 4, 3), 0,
                                            cute.make_layout(nbytes))
    for b in cutlass.range_constexpr(0, nbytes, 16):
        out.append(byte_layout(b))


def cute_swizzle_offsets(swizzle: int = 128, nbytes: int = 1024) -> list[int]:
    """CuTe's own Swizzle<B,4,3> evaluated on the byte offsets 0, 16, 32, ...: where
    each 16-byte chunk of a box goes (the model course.models.tensormap checks itself against)."""
    import warnings

    out: list[int] = []
    with warnings.catch_warnings():  # a long static loop, on purpose: it runs at trace time
        warnings.simplefilter("ignore")
        _swizzle_offsets(tma.SWIZZLE_BITS[swizzle], nbytes, out)
    return out


# ---------------------------------------------------------------- notebooks 11 and 12: tcgen05

def trace_for_sm100a(jit_fn) -> None:
    """Run a host-side @cute.jit function's trace with sm_100a as the target, on any
    machine: tcgen05 ops refuse to trace for another arch, and on a Hopper GPU CuTe DSL
    would otherwise target the GPU it finds. Compiling traces it; nothing is launched."""
    cute.compile(jit_fn, options="--gpu-arch sm_100a")


def epilogue_tmem_ownership(tile_n: int = 128, ctas: int = 1, threads=None) -> list:
    """((thread, value), (lane, column)) of every TMEM cell the epilogue reads, from CuTe.

    Builds the epilogue's accumulator view and tcgen05.ld tiled copy exactly as the
    kernels do (same helpers), then evaluates CuTe's layouts: value v of thread t is the
    v-th fp32 it loads across the sub-tiles of one tile. Runs on the CPU (no launch),
    about 0.1 s per thread: pass `threads` to evaluate only some of the 128.
    """
    pairs: list = []
    tile = tcgen05_gemm.TileShape(mma_m=128 * ctas, n=tile_n, ctas=ctas)

    @cute.jit
    def trace():
        tiled_mma = tcgen05_gemm.make_tiled_mma(cutlass.BFloat16, cutlass.Float32, tile)
        acc = cute.make_tensor(cute.make_ptr(cutlass.Float32, 0, cute.AddressSpace.tmem,
                                             assumed_align=16),
                               tcgen05_gemm.accumulator_layout(tiled_mma, tile, 1))[((None, None), 0, 0, 0)]
        epi_tile = sm100_utils.compute_epilogue_tile_shape(
            tile.cta_tile, ctas == 2, LayoutEnum.ROW_MAJOR, cutlass.BFloat16)
        acc_epi = cute.flat_divide(acc, epi_tile)
        load = tcgen05_gemm.make_epilogue_tmem_load(acc_epi[(None, None, 0, 0)])
        tv, (rows, cols) = load.layout_dst_tv_tiled, load.tiler_mn
        sub_m = cute.size(epi_tile[0])
        per_sub = cute.size(tv, mode=[1])
        for t in (range(cute.size(tv, mode=[0])) if threads is None else threads):
            for s in cutlass.range_constexpr(cute.size(acc_epi, mode=[3])):
                for v in cutlass.range_constexpr(per_sub):
                    i = tv((t, v))
                    address = acc_epi.layout((rows(i % sub_m), cols(i // sub_m), 0, s))
                    pairs.append(((t, s * per_sub + v), (address // 65536, address % 65536)))

    trace_for_sm100a(trace)
    return pairs


def pair_operand_rows(tile_n: int = 128) -> dict:
    """Which rows of the 256-row A and C tiles and the N-row B tile each CTA of a pair holds.

    Evaluated with CuTe's own partitioning of the cta_group::2 MMA (CPU, no launch):
    {v: {"A": (first, last), "B": ..., "C": ...}} for v = 0 (leader) and 1 (follower).
    """
    rows: dict = {}
    tile = tcgen05_gemm.TileShape(mma_m=256, n=tile_n, ctas=2)

    @cute.jit
    def trace():
        tiled_mma = tcgen05_gemm.make_tiled_mma(cutlass.BFloat16, cutlass.Float32, tile)
        for v in (0, 1):
            thr = tiled_mma.get_slice(v)
            views = {"A": thr.partition_A(cute.make_identity_tensor((tile.mma_m, tcgen05_gemm.TILE_K))),
                     "B": thr.partition_B(cute.make_identity_tensor((tile.n, tcgen05_gemm.TILE_K))),
                     "C": thr.partition_C(cute.make_identity_tensor((tile.mma_m, tile.n)))}
            rows[v] = {name: (view[0][0], view[cute.size(view) - 1][0])
                       for name, view in views.items()}

    trace_for_sm100a(trace)
    return rows
