"""Notebook 06: the SM80-style tiled GEMM, C = A . B^T with tensor cores (mma.sync).

Every idea the notebook adds to the naive kernel of notebook 02, in the order it
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
"""
from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.memory.smem import SmemAllocator

from .gemm_parts import (TN_DTYPES, grouped_tile, launch_tn, operand_tensors, row_copy,
                         store_tile, swizzled_rows)
from .common import (Artifacts, compile_artifacts, compile_cached, fake_stream, gmem_pointer, launch_arch, require)

NEEDS = "sm_80+"
DTYPES = TN_DTYPES
MMA_SHAPE = (16, 8, 16)  # mma.sync.m16n8k16


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
        if self.smem_bytes(2) > 227 * 1024:
            raise ValueError(f"{self.smem_bytes(2)} bytes of shared memory is over the 227 KB limit")

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    def smem_bytes(self, elem_bytes: int) -> int:
        """Shared memory for the A/B ring (the epilogue reuses it for C)."""
        ring = (self.tile_m + self.tile_n) * self.tile_k * elem_bytes * self.stages
        return max(ring, self.tile_m * self.tile_n * elem_bytes)


class Sm80Gemm:
    """One configuration of the kernel; call it (through cute.compile) to launch."""

    def __init__(self, dtype: type[cutlass.Numeric], config: Config):
        self.dtype = dtype
        self.cfg = config
        self.tile = (config.tile_m, config.tile_n, config.tile_k)
        self.copy_elems = 128 // dtype.width  # 8 bf16 per 16-byte cp.async

    # ------------------------------------------------------------- host side
    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, stream: cuda.CUstream):
        cfg = self.cfg
        mA, mB, mC = operand_tensors(a_ptr, b_ptr, c_ptr, m, n, k)

        # shared memory: per-stage swizzled A and B tiles; C reuses the space
        atom_ab = swizzled_rows(cfg.tile_k, self.copy_elems)
        sA_layout = cute.tile_to_shape(atom_ab, (cfg.tile_m, cfg.tile_k, cfg.stages), (0, 1, 2))
        sB_layout = cute.tile_to_shape(atom_ab, (cfg.tile_n, cfg.tile_k, cfg.stages), (0, 1, 2))
        atom_c = swizzled_rows(64, self.copy_elems)
        sC_layout = cute.tile_to_shape(atom_c, (cfg.tile_m, cfg.tile_n), (0, 1))

        # global -> shared: 16-byte cp.async, consecutive threads along K (coalesced)
        g2s = cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL)
        copy_a = row_copy(self.dtype, cfg.threads, cfg.tile_k, g2s)
        copy_b = row_copy(self.dtype, cfg.threads, cfg.tile_k, g2s)
        # shared -> global for C: 16-byte pieces of rows
        copy_c = row_copy(self.dtype, cfg.threads, cfg.tile_n)

        # tensor cores: m16n8k16 atoms on a warps_m x warps_n grid; N doubled so one
        # ldmatrix.x4 feeds two n8 atoms
        mma_op = cute.nvgpu.warp.MmaF16BF16Op(self.dtype, cutlass.Float32, MMA_SHAPE)
        tiled_mma = cute.make_tiled_mma(
            mma_op, cute.make_layout((cfg.warps_m, cfg.warps_n, 1)),
            permutation_mnk=(cfg.warps_m * MMA_SHAPE[0], cfg.warps_n * MMA_SHAPE[1] * 2,
                             MMA_SHAPE[2]))

        tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        self.kernel(mA, mB, mC, sA_layout, sB_layout, sC_layout, copy_a, copy_b, copy_c,
                    tiled_mma, tiles_m, tiles_n).launch(
            grid=[tiles_m * tiles_n, 1, 1], block=[cfg.threads, 1, 1],
            smem=cfg.smem_bytes(self.dtype.width // 8), stream=stream)

    # ------------------------------------------------------------- device side
    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
               sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
               sC_layout: cute.ComposedLayout, copy_a: cute.TiledCopy, copy_b: cute.TiledCopy,
               copy_c: cute.TiledCopy, tiled_mma: cute.TiledMma, tiles_m: cutlass.Int32,
               tiles_n: cutlass.Int32):
        cfg = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        tile_m, tile_n = grouped_tile(bidx, tiles_m, tiles_n, cfg.group_m)
        coord = (tile_m, tile_n, None)

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
        cA = cute.domain_offset((0, residue, 0), cute.local_tile(
            cute.make_identity_tensor(mA.shape), self.tile, coord, proj=(1, None, 1)))
        cB = cute.domain_offset((0, residue, 0), cute.local_tile(
            cute.make_identity_tensor(mB.shape), self.tile, coord, proj=(None, 1, 1)))

        smem = SmemAllocator()
        sA = smem.allocate_tensor(self.dtype, sA_layout, 128)
        sB = smem.allocate_tensor(self.dtype, sB_layout, 128)
        sC = cute.make_tensor(cute.recast_ptr(sA.iterator, sC_layout.inner, dtype=self.dtype),
                              sC_layout.outer)

        # 2. partition the copies: each thread's 16-byte chunks of every stage
        thr_a, thr_b = copy_a.get_slice(tidx), copy_b.get_slice(tidx)
        tAgA, tAsA, tAcA = thr_a.partition_S(gA), thr_a.partition_D(sA), thr_a.partition_S(cA)
        tBgB, tBsB, tBcB = thr_b.partition_S(gB), thr_b.partition_D(sB), thr_b.partition_S(cB)
        # rows past M (N) never exist: one predicate per copied row, computed once
        pA = self.row_predicate(tAcA, cute.size(mA, mode=[0]))
        pB = self.row_predicate(tBcB, cute.size(mB, mode=[0]))

        # 3. prologue: zero the ring (predicated-off copies leave zeros), then start
        #    stages-1 k-tiles; the first may be partial in K
        tAsA.fill(0)
        tBsB.fill(0)
        cute.arch.sync_threads()
        for kc in cutlass.range(cute.size(tAsA, mode=[2]), unroll_full=True):
            if cute.elem_less(-1, tAcA[0, 0, kc, 0][1]):  # K chunk exists (>= 0)?
                cute.copy(copy_a, tAgA[None, None, kc, 0], tAsA[None, None, kc, 0],
                          pred=pA[None, None, kc])
        for kc in cutlass.range(cute.size(tBsB, mode=[2]), unroll_full=True):
            if cute.elem_less(-1, tBcB[0, 0, kc, 0][1]):
                cute.copy(copy_b, tBgB[None, None, kc, 0], tBsB[None, None, kc, 0],
                          pred=pB[None, None, kc])
        cute.arch.cp_async_commit_group()
        next_k = cutlass.Int32(1)
        for s in cutlass.range(1, cfg.stages - 1, unroll_full=True):
            if next_k < k_tiles:
                cute.copy(copy_a, tAgA[None, None, None, next_k], tAsA[None, None, None, s], pred=pA)
                cute.copy(copy_b, tBgB[None, None, None, next_k], tBsB[None, None, None, s], pred=pB)
            next_k = next_k + 1
            cute.arch.cp_async_commit_group()

        # 5-6. fragments: ldmatrix views of shared memory and mma.sync registers
        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA)[None, None, None, 0])
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB)[None, None, None, 0])
        acc = tiled_mma.make_fragment_C(thr_mma.partition_C(gC))
        acc.fill(0.0)
        ldsm = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(False, 4), self.dtype)
        s2r_a = cute.make_tiled_copy_A(ldsm, tiled_mma)
        s2r_b = cute.make_tiled_copy_B(ldsm, tiled_mma)
        thr_s2r_a, thr_s2r_b = s2r_a.get_slice(tidx), s2r_b.get_slice(tidx)
        tXsA, tXrA = thr_s2r_a.partition_S(sA), thr_s2r_a.retile(tCrA)
        tXsB, tXrB = thr_s2r_b.partition_S(sB), thr_s2r_b.retile(tCrB)
        k_blocks = cute.size(tCrA, mode=[2])

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
                        cute.copy(copy_a, tAgA[None, None, None, next_k],
                                  tAsA[None, None, None, write], pred=pA)
                        cute.copy(copy_b, tBgB[None, None, None, next_k],
                                  tBsB[None, None, None, write], pred=pB)
                    next_k = next_k + 1
                    cute.arch.cp_async_commit_group()
                    write = write + 1 if write + 1 < cfg.stages else cutlass.Int32(0)
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)

        # 7. epilogue: registers -> shared (converted) -> coalesced 16-byte stores
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        out = cute.make_fragment_like(acc, self.dtype)
        out.store(acc.load().to(self.dtype))
        cute.autovec_copy(out, thr_mma.partition_C(sC))
        cute.arch.sync_threads()
        cC = cute.local_tile(cute.make_identity_tensor(mC.shape), self.tile, coord,
                             proj=(1, 1, None))
        store_tile(copy_c, sC, gC, cC, mC.shape, tidx)

    def row_predicate(self, tXcX: cute.Tensor, rows: cutlass.Int32):
        """(copy rows x k-chunks) booleans: does this thread's copied row exist?
        (Plain Python, traced inline: its loops are static.)"""
        pred = cute.make_rmem_tensor(
            cute.make_layout((tXcX.shape[0][1], cute.size(tXcX, mode=[1]),
                              cute.size(tXcX, mode=[2])),
                             stride=(cute.size(tXcX, mode=[1]), 1, 0)), cutlass.Boolean)
        for v in range(pred.shape[0]):
            for r in range(pred.shape[1]):
                pred[v, r, 0] = cute.elem_less(tXcX[(0, v), r, 0, 0][0], rows)
        return pred


# ------------------------------------------------------------------ Python surface

def _signature(dtype: torch.dtype, config: Config, stream):
    from .common import cutlass_dtype

    p = gmem_pointer(None, dtype)
    one = cutlass.Int32(8)
    return (Sm80Gemm(cutlass_dtype(dtype), config), p, p, p, one, one, one, stream)


def compile(dtype: torch.dtype = torch.bfloat16, config: Config = Config()):
    """The launchable kernel for this machine's GPU (compiled once per dtype/config)."""
    require(NEEDS, "sm80_gemm")
    return compile_cached(("sm80_gemm", dtype, config), launch_arch(),
                          lambda: cute.compile(*_signature(dtype, config, fake_stream())))


def artifacts(arch: str = "sm_80", dtype: torch.dtype = torch.bfloat16,
              config: Config = Config()) -> Artifacts:
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return compile_artifacts(("sm80_gemm", dtype, config), arch,
                             *_signature(dtype, config, fake_stream()))


def run(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None,
        config: Config = Config()) -> torch.Tensor:
    """C = A . B^T on tensor cores; validates every input before launching."""
    require(NEEDS, "sm80_gemm")
    return launch_tn(lambda dtype: compile(dtype, config), a, b, c)


def prepare(problem, config: Config = Config()):
    """For course.bench: compile once for `problem`'s dtype, return gemm(a, b, c)."""
    compile(problem.dtype, config)
    return lambda a, b, c: run(a, b, c, config)
