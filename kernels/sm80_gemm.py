"""Notebook 07: the SM80-style tiled GEMM, C = A . B^T with tensor cores (mma.sync).

Every idea the notebook adds to the naive kernel of notebook 03, in the order it
adds them:

  1. CTA tiles of C (bM x bN) walked over K in bK-wide k-tiles;
  2. cp.async copies global -> shared, 16 bytes per thread, coalesced along K;
  3. a multistage ring of shared-memory buffers (`stages` deep), so the loads of
     k-tile t+stages-1 fly while k-tile t is multiplied;
  4. swizzled shared-memory layouts (Swizzle<3,3,3>-family on bf16/fp16), so that
     the copies and the ldmatrix reads below are free of bank conflicts;
  5. ldmatrix shared -> registers, in exactly the fragment layout mma.sync wants;
  6. mma.sync m16n8k16 (fp32 accumulate) tiled over a grid of warps;
  7. an epilogue that converts, stages C through shared memory and stores it with
     coalesced 16-byte writes;
  8. predication, so M and N need not be tile multiples, and a K residue handled by
     making the *first* k-tile the partial one (the main loop then needs no K check);
  9. a grouped tile order, so CTAs running together share A and B panels in L2.

Operands: A (M,K) and B (N,K) K-major (row-major), C (M,N) row-major, bf16 or fp16
in and out, fp32 accumulation. K and N must be multiples of 8 (16-byte rows).

The pieces later steps reuse live here, where the course introduces them: the grouped
tile order, the swizzled row atom, the 16-byte row copies, the ldmatrix fragments of an
mma.sync TiledMMA and the epilogue through shared memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.memory.smem import SmemAllocator

from . import selftest
from .gemm_host import COPY_BYTES, HALF_TYPES, GemmHost, GemmTypes, elements, gemm_tensors
from .mma_atom import ATOM as MMA_SHAPE
from .mma_atom import tiled_mma as tiled_mma_sync

NEEDS = "sm_80+"
DTYPES = HALF_TYPES


@dataclass(frozen=True)
class Config:
    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    warps_m: int = 2  # warps tiled over the CTA tile's M ...
    warps_n: int = 4  # ... and N
    stages: int = 3  # shared-memory ring depth
    group_m: int = 8  # tile order: CTAs walk C in groups of this many tile rows

    def __post_init__(self):
        if self.stages < 2:
            raise ValueError("a multistage ring needs at least 2 stages")
        if self.tile_k % MMA_SHAPE[2] or self.tile_k not in (32, 64):
            raise ValueError("tile_k must be 32 or 64 (two or four k16 MMA steps)")
        if self.tile_m % (self.warps_m * MMA_SHAPE[0]):
            raise ValueError("tile_m must be a multiple of warps_m * 16")
        if self.tile_n % (self.warps_n * MMA_SHAPE[1] * 2):
            raise ValueError("tile_n must be a multiple of warps_n * 16")

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    def smem_bytes(self, ab_bytes: int, c_bytes: int | None = None) -> int:
        """Shared memory for the A/B ring (the epilogue reuses it for C, by default in A's
        type: `ab_bytes` per element)."""
        ring = (self.tile_m + self.tile_n) * self.tile_k * ab_bytes * self.stages
        return max(ring, self.tile_m * self.tile_n * (c_bytes or ab_bytes))


class Sm80Gemm:
    """One configuration of the kernel; call it (through cute.compile) to launch."""

    def __init__(self, types: GemmTypes, config: Config):
        self.ab_dtype, self.acc_dtype, self.c_dtype = types
        self.cfg = config
        self.tile = (config.tile_m, config.tile_n, config.tile_k)
        self.smem_bytes = config.smem_bytes(self.ab_dtype.width // 8, self.c_dtype.width // 8)

    # ------------------------------------------------------------- host side
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        cfg = self.cfg
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)

        # shared memory: per-stage swizzled A and B tiles; C reuses the space
        atom_ab = swizzled_rows(cfg.tile_k, elements(COPY_BYTES, self.ab_dtype.width))
        sA_layout = cute.tile_to_shape(atom_ab, (cfg.tile_m, cfg.tile_k, cfg.stages), (0, 1, 2))
        sB_layout = cute.tile_to_shape(atom_ab, (cfg.tile_n, cfg.tile_k, cfg.stages), (0, 1, 2))
        atom_c = swizzled_rows(64, elements(COPY_BYTES, self.c_dtype.width))
        sC_layout = cute.tile_to_shape(atom_c, (cfg.tile_m, cfg.tile_n), (0, 1))

        # global -> shared: 16-byte cp.async, consecutive threads along K (coalesced)
        g2s = cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL)
        copy_a = row_copy(self.ab_dtype, cfg.threads, cfg.tile_k, g2s)
        copy_b = row_copy(self.ab_dtype, cfg.threads, cfg.tile_k, g2s)
        # shared -> global for C: 16-byte pieces of rows
        copy_c = row_copy(self.c_dtype, cfg.threads, cfg.tile_n)

        # tensor cores: notebook 06's m16n8k16 atoms on a warps_m x warps_n grid, two n8
        # atoms per warp so one ldmatrix.x4 of B feeds both
        tiled_mma = tiled_mma_sync(
            self.ab_dtype, cfg.warps_m, cfg.warps_n, atoms_n_per_warp=2, acc_dtype=self.acc_dtype
        )

        tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        self.kernel(
            mA=mA,
            mB=mB,
            mC=mC,
            sA_layout=sA_layout,
            sB_layout=sB_layout,
            sC_layout=sC_layout,
            copy_a=copy_a,
            copy_b=copy_b,
            copy_c=copy_c,
            tiled_mma=tiled_mma,
            tiles_m=tiles_m,
            tiles_n=tiles_n,
        ).launch(
            grid=[tiles_m * tiles_n, 1, 1],
            block=[cfg.threads, 1, 1],
            smem=self.smem_bytes,
            stream=stream,
        )

    # ------------------------------------------------------------- device side
    @cute.kernel
    def kernel(
        self,
        mA: cute.Tensor,
        mB: cute.Tensor,
        mC: cute.Tensor,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sC_layout: cute.ComposedLayout,
        copy_a: cute.TiledCopy,
        copy_b: cute.TiledCopy,
        copy_c: cute.TiledCopy,
        tiled_mma: cute.TiledMma,
        tiles_m: cutlass.Int32,
        tiles_n: cutlass.Int32,
    ):
        cfg = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tile_row, tile_col = grouped_tile(bidx, tiles_m, tiles_n, cfg.group_m)
        coord = (tile_row, tile_col, None)

        # 1. this CTA's tiles: gA (bM,bK,k_tiles), gB (bN,bK,k_tiles), gC (bM,bN);
        #    shifted in K so the partial k-tile (if any) is the first one
        gA = cute.local_tile(mA, self.tile, coord, proj=(1, None, 1))
        gB = cute.local_tile(mB, self.tile, coord, proj=(None, 1, 1))
        gC = cute.local_tile(mC, self.tile, coord, proj=(1, 1, None))
        k_tiles = cute.size(gA, mode=[2])
        residue = cute.size(mA, mode=[1]) - k_tiles * cfg.tile_k  # <= 0
        gA = cute.domain_offset((0, residue, 0), gA)
        gB = cute.domain_offset((0, residue, 0), gB)
        # coordinate tensors mirror gA/gB and say which elements exist
        cA = cute.domain_offset(
            (0, residue, 0),
            cute.local_tile(
                cute.make_identity_tensor(mA.shape), self.tile, coord, proj=(1, None, 1)
            ),
        )
        cB = cute.domain_offset(
            (0, residue, 0),
            cute.local_tile(
                cute.make_identity_tensor(mB.shape), self.tile, coord, proj=(None, 1, 1)
            ),
        )

        smem = SmemAllocator()
        # sA (bM, bK, STAGE), sB (bN, bK, STAGE); sC (bM, bN) over the ring
        sA = smem.allocate_tensor(self.ab_dtype, sA_layout, 128)
        sB = smem.allocate_tensor(self.ab_dtype, sB_layout, 128)
        sC = cute.make_tensor(
            cute.recast_ptr(sA.iterator, sC_layout.inner, dtype=self.c_dtype), sC_layout.outer
        )

        # 2. partition the copies: each thread's 16-byte chunks of every stage
        thr_a, thr_b = copy_a.get_slice(tidx), copy_b.get_slice(tidx)
        tAgA = thr_a.partition_S(gA)  # (CPY, CPY_M, CPY_K, k_tiles)
        tAsA = thr_a.partition_D(sA)  # (CPY, CPY_M, CPY_K, STAGE)
        tAcA = thr_a.partition_S(cA)  # (CPY, CPY_M, CPY_K, k_tiles) of (m, k) coordinates
        tBgB = thr_b.partition_S(gB)  # (CPY, CPY_N, CPY_K, k_tiles)
        tBsB = thr_b.partition_D(sB)  # (CPY, CPY_N, CPY_K, STAGE)
        tBcB = thr_b.partition_S(cB)  # (CPY, CPY_N, CPY_K, k_tiles) of (n, k) coordinates
        # rows past M (N) never exist: one predicate per copied row, computed once
        pA = self.row_predicate(tAcA, cute.size(mA, mode=[0]))
        pB = self.row_predicate(tBcB, cute.size(mB, mode=[0]))

        # region prologue
        # 3. prologue: zero the ring (predicated-off copies leave zeros), then start
        #    stages-1 k-tiles; the first may be partial in K
        tAsA.fill(0)
        tBsB.fill(0)
        cute.arch.sync_threads()
        for kc in cutlass.range(cute.size(tAsA, mode=[2]), unroll_full=True):
            if cute.elem_less(-1, tAcA[0, 0, kc, 0][1]):  # K chunk exists (>= 0)?
                cute.copy(
                    copy_a,
                    tAgA[None, None, kc, 0],
                    tAsA[None, None, kc, 0],
                    pred=pA[None, None, kc],
                )
        for kc in cutlass.range(cute.size(tBsB, mode=[2]), unroll_full=True):
            if cute.elem_less(-1, tBcB[0, 0, kc, 0][1]):
                cute.copy(
                    copy_b,
                    tBgB[None, None, kc, 0],
                    tBsB[None, None, kc, 0],
                    pred=pB[None, None, kc],
                )
        cute.arch.cp_async_commit_group()
        next_k = cutlass.Int32(1)
        for s in cutlass.range(1, cfg.stages - 1, unroll_full=True):
            if next_k < k_tiles:
                cute.copy(
                    copy_a, tAgA[None, None, None, next_k], tAsA[None, None, None, s], pred=pA
                )
                cute.copy(
                    copy_b, tBgB[None, None, None, next_k], tBsB[None, None, None, s], pred=pB
                )
            next_k = next_k + 1
            cute.arch.cp_async_commit_group()
        # endregion prologue

        # region fragments
        # 5-6. fragments: ldmatrix views of shared memory and mma.sync registers
        f = ldmatrix_fragments(tiled_mma, sA, sB, gC, tidx, self.ab_dtype)
        self.mainloop(tiled_mma, f, copy_a, tAgA, tAsA, pA, copy_b, tBgB, tBsB, pB, k_tiles, next_k)
        # endregion fragments

        # 7. epilogue: registers -> shared (converted) -> coalesced 16-byte stores
        cute.arch.cp_async_wait_group(0)
        epilogue_through_smem(f.acc, f.thr_mma, sC, gC, mC, copy_c, (tile_row, tile_col), tidx)

    @cute.jit
    def mainloop(
        self,
        tiled_mma: cute.TiledMma,
        f: Fragments,
        copy_a: cute.TiledCopy,
        tAgA: cute.Tensor,
        tAsA: cute.Tensor,
        pA: cute.Tensor,
        copy_b: cute.TiledCopy,
        tBgB: cute.Tensor,
        tBsB: cute.Tensor,
        pB: cute.Tensor,
        k_tiles: cutlass.Int32,
        next_k: cutlass.Int32,
    ):
        """The multistage main loop over all k-tiles, accumulating into f.acc. The prologue
        has committed stages-1 groups of cp.async (k-tiles 0 .. stages-2); next_k is the
        first k-tile not issued yet. A separate method so that a subclass can replace it."""
        cfg = self.cfg
        s2r_a, tXsA, tXrA, s2r_b, tXsB, tXrB = f.s2r_a, f.tXsA, f.tXrA, f.s2r_b, f.tXsB, f.tXrB
        tCrA, tCrB, acc = f.tCrA, f.tCrB, f.acc
        k_blocks = cute.size(tCrA, mode=[2])

        # region main-loop
        # main loop: wait for k-tile t, prefetch its first k-block into registers,
        # then for each k-block: load the next one, issue the next k-tile's copies
        # into the stage freed last iteration, and multiply
        read = cutlass.Int32(0)
        write = cutlass.Int32(cfg.stages - 1)
        cute.arch.cp_async_wait_group(cfg.stages - 2)
        cute.arch.sync_threads()
        cute.copy(s2r_a, tXsA[None, None, 0, read], tXrA[None, None, 0])
        cute.copy(s2r_b, tXsB[None, None, 0, read], tXrB[None, None, 0])
        for t in range(k_tiles):
            for kb in cutlass.range(k_blocks, unroll_full=True):
                if kb == k_blocks - 1:  # this k-tile is in registers: move to the next
                    read = read + 1 if read + 1 < cfg.stages else cutlass.Int32(0)
                    cute.arch.cp_async_wait_group(cfg.stages - 2)
                    cute.arch.sync_threads()
                nxt = (kb + 1) % k_blocks
                cute.copy(s2r_a, tXsA[None, None, nxt, read], tXrA[None, None, nxt])
                cute.copy(s2r_b, tXsB[None, None, nxt, read], tXrB[None, None, nxt])
                if kb == 0:
                    if next_k < k_tiles:
                        cute.copy(
                            copy_a,
                            tAgA[None, None, None, next_k],
                            tAsA[None, None, None, write],
                            pred=pA,
                        )
                        cute.copy(
                            copy_b,
                            tBgB[None, None, None, next_k],
                            tBsB[None, None, None, write],
                            pred=pB,
                        )
                    next_k = next_k + 1
                    cute.arch.cp_async_commit_group()
                    write = write + 1 if write + 1 < cfg.stages else cutlass.Int32(0)
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
        # endregion main-loop

    def row_predicate(self, tXcX: cute.Tensor, rows: cutlass.Int32):
        """(copy rows x k-chunks) booleans: does this thread's copied row exist?
        (Plain Python, traced inline: its loops are static.)"""
        pred = cute.make_rmem_tensor(
            cute.make_layout(
                (tXcX.shape[0][1], cute.size(tXcX, mode=[1]), cute.size(tXcX, mode=[2])),
                stride=(cute.size(tXcX, mode=[1]), 1, 0),
            ),
            cutlass.Boolean,
        )
        for v in range(pred.shape[0]):
            for r in range(pred.shape[1]):
                pred[v, r, 0] = cute.elem_less(tXcX[(0, v), r, 0, 0][0], rows)
        return pred


# ------------------------------------------------------------------ the pieces later steps reuse


class Fragments(NamedTuple):
    """What ldmatrix_fragments returns: the MMA's register fragments and the ldmatrix copies
    that fill them from shared memory, one k-block at a time."""

    thr_mma: object
    tCrA: cute.Tensor  # (MMA, MMA_M, MMA_K): one stage's A fragment, k-block by k-block
    tCrB: cute.Tensor  # (MMA, MMA_N, MMA_K)
    acc: cute.Tensor  # (MMA, MMA_M, MMA_N) fp32 accumulators
    s2r_a: cute.TiledCopy  # ldmatrix.x4, shared -> registers, laid out as the MMA wants
    tXsA: cute.Tensor  # (CPY, CPY_M, CPY_K, STAGE): this thread's ldmatrix sources of sA
    tXrA: cute.Tensor  # (CPY, CPY_M, CPY_K): tCrA seen through the copy (retile)
    s2r_b: cute.TiledCopy
    tXsB: cute.Tensor  # (CPY, CPY_N, CPY_K, STAGE)
    tXrB: cute.Tensor  # (CPY, CPY_N, CPY_K)


def ldmatrix_fragments(
    tiled_mma: cute.TiledMma, sA: cute.Tensor, sB: cute.Tensor, gC: cute.Tensor, tidx, dtype
) -> Fragments:
    """This thread's A and B fragments (one stage of sA / sB) and zeroed accumulators, and
    ldmatrix.x4 copies laid out exactly as mma.sync wants its registers (retile views the
    fragments through the copy's thread-value layout). Traced inline in a kernel."""
    thr_mma = tiled_mma.get_slice(tidx)
    # registers for one stage: tCrA (MMA, MMA_M, MMA_K), tCrB (MMA, MMA_N, MMA_K); the
    # accumulator acc (MMA, MMA_M, MMA_N), shaped by this thread's part of gC
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA)[None, None, None, 0])
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB)[None, None, None, 0])
    acc = tiled_mma.make_fragment_C(thr_mma.partition_C(gC))
    acc.fill(0.0)
    ldsm = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(False, 4), dtype)
    s2r_a = cute.make_tiled_copy_A(ldsm, tiled_mma)
    s2r_b = cute.make_tiled_copy_B(ldsm, tiled_mma)
    thr_s2r_a, thr_s2r_b = s2r_a.get_slice(tidx), s2r_b.get_slice(tidx)
    return Fragments(
        thr_mma,
        tCrA,
        tCrB,
        acc,
        s2r_a,
        thr_s2r_a.partition_S(sA),
        thr_s2r_a.retile(tCrA),
        s2r_b,
        thr_s2r_b.partition_S(sB),
        thr_s2r_b.retile(tCrB),
    )


def epilogue_through_smem(
    acc: cute.Tensor,
    thr_mma,
    sC: cute.Tensor,
    gC: cute.Tensor,
    mC: cute.Tensor,
    copy_c: cute.TiledCopy,
    tile_coord,
    tidx,
) -> None:
    """Registers -> shared memory (converted to C's type, sC's, in the MMA's layout) -> the
    tile gC of C (at `tile_coord`, in tiles) in 16-byte pieces of rows, predicated at the
    edges of C. Every thread of the CTA takes part; the A/B ring must no longer be read (sC
    may alias it)."""
    cute.arch.sync_threads()
    out = cute.make_fragment_like(acc, sC.element_type)
    out.store(acc.load().to(sC.element_type))
    cute.autovec_copy(out, thr_mma.partition_C(sC))
    cute.arch.sync_threads()
    cC = cute.local_tile(cute.make_identity_tensor(mC.shape), gC.shape, tile_coord)
    store_tile(copy_c, sC, gC, cC, mC.shape, tidx)


@cute.jit
def grouped_tile(
    tile: cutlass.Int32, tiles_m: cutlass.Int32, tiles_n: cutlass.Int32, group: cutlass.Constexpr
):
    """Linear tile id -> (row, column) of the tile in C's grid of tiles: `group` tile rows
    walked column by column.
    (course.models.tile_order.grouped_tile is the same function in plain Python.)"""
    per_group = group * tiles_n
    first_m = (tile // per_group) * group
    rows = cutlass.min(tiles_m - first_m, group)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


def swizzled_rows(width: int, copy_elems: int):
    """8 rows x `width` elements, swizzled so the 16-byte chunks (`copy_elems` elements) of
    consecutive rows fall in different banks (Swizzle<B,3,3> on 16-bit elements)."""
    bits = min(3, int(math.log2(width // copy_elems)))
    atom = cute.make_layout((8, width), stride=(width, 1))
    return cute.make_composed_layout(cute.make_swizzle(bits, 3, 3), 0, atom)


def row_copy(dtype, threads: int, width: int, atom_op=None):
    """A tiled copy moving rows of a `width`-wide tile in 16-byte pieces."""
    elems = elements(COPY_BYTES, dtype.width)
    op = atom_op if atom_op is not None else cute.nvgpu.CopyUniversalOp()
    atom = cute.make_copy_atom(op, dtype, num_bits_per_copy=COPY_BYTES * 8)
    chunks = width // elems
    thr = cute.make_layout((threads // chunks, chunks), stride=(chunks, 1))
    return cute.make_tiled_copy_tv(atom, thr, cute.make_layout((1, elems)))


@cute.jit
def store_tile(
    copy_c: cute.TiledCopy,
    sC: cute.Tensor,
    gC: cute.Tensor,
    cC: cute.Tensor,
    shape_mn,
    tidx: cutlass.Int32,
):
    """Shared -> global for one C tile; cC holds each element's (m, n) coordinate."""
    thr = copy_c.get_slice(tidx)
    tCsC = thr.partition_S(sC)  # (CPY, CPY_M, CPY_N)
    tCgC = thr.partition_D(gC)  # (CPY, CPY_M, CPY_N)
    tCcC = thr.partition_S(cC)  # (CPY, CPY_M, CPY_N) of (m, n) coordinates
    regs = cute.make_fragment_like(tCsC)
    cute.autovec_copy(tCsC, regs)
    for r in cutlass.range(cute.size(tCgC, mode=[1]), unroll_full=True):
        for c in cutlass.range(cute.size(tCgC, mode=[2]), unroll_full=True):
            if cute.elem_less(tCcC[0, r, c], shape_mn):
                cute.copy(copy_c, regs[None, r, c], tCgC[None, r, c])


# ------------------------------------------------------------------ the surface

GEMM = GemmHost(
    "sm80_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: Sm80Gemm(types, config),
    Config,
)


# compile(dtype, config) / artifacts(arch, dtype, config) / run(a, b, out, config) /
# prepare(problem, config): the step's surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare


if __name__ == "__main__":
    raise SystemExit(selftest.gemm_main(GEMM, "sm80_gemm"))
