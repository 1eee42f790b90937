"""Notebook 09: TMA + mbarrier ring + WGMMA. The first Hopper-native GEMM of the ladder.

What changes from the SM80 kernel of notebook 06:

  * loads: one elected thread of warp 0 issues TMA bulk tensor copies (a whole bM x 64 tile per
    instruction); they land already 128B-swizzled, and their completion is counted
    in bytes on the stage's *full* mbarrier (expect_tx), so no thread waits on copies
    it did not issue and no cp.async groups are needed;
  * reuse: consumers *release* a stage by arriving on its *empty* mbarrier once the
    tensor cores have finished reading it; the producer waits on that before
    overwriting (PipelineTmaAsync: full/empty pairs, index + phase bookkeeping);
  * math: wgmma.mma_async, issued by a whole warpgroup (4 warps, 128 threads), reads
    A and B straight from shared memory through matrix descriptors; there is no
    ldmatrix and no register copy of the operands. A warpgroup owns 64 rows of C;
    bM = 128 uses two warpgroups;
  * the wgmma of k-tile t is left in flight (wait_group(1)) while k-tile t+1 is
    issued, and stage t is released only once it has completed.

The epilogue is notebook 06's: registers -> swizzled shared memory -> 16-byte stores.
Notebook 10 adds warp specialization, persistence, clusters and a TMA-store epilogue.
"""
from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
import torch
from cutlass.memory.smem import SmemAllocator

from .common import (Artifacts, compile_artifacts, compile_cached, cutlass_dtype, fake_stream, gmem_pointer, launch_arch, require)
from .gemm_parts import (TN_DTYPES, grouped_tile, launch_tn, operand_tensors, row_copy,
                         store_tile, swizzled_rows)

NEEDS = "sm_90a"
DTYPES = TN_DTYPES
TILE_K = 64  # one 128-byte swizzle atom of bf16 along K


@dataclass(frozen=True)
class Config:
    tile_m: int = 128  # 64 per consumer warpgroup
    tile_n: int = 256
    stages: int = 4
    group_m: int = 8

    def __post_init__(self):
        if self.tile_m not in (64, 128, 192, 256):
            raise ValueError("tile_m must be 64, 128, 192 or 256 (64 rows per warpgroup)")
        if self.tile_n % 16 or not 16 <= self.tile_n <= 256:
            raise ValueError("tile_n must be a multiple of 16 in [16, 256] (wgmma N)")
        if self.stages < 2:
            raise ValueError("the ring needs at least 2 stages")
        if self.smem_bytes(2) > 227 * 1024:
            raise ValueError(f"{self.smem_bytes(2)} bytes of shared memory is over 227 KB")

    @property
    def warpgroups(self) -> int:
        return self.tile_m // 64

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups

    def stage_bytes(self, elem_bytes: int) -> int:
        return (self.tile_m + self.tile_n) * TILE_K * elem_bytes

    def smem_bytes(self, elem_bytes: int) -> int:
        ring = self.stage_bytes(elem_bytes) * self.stages
        return max(ring, self.tile_m * self.tile_n * elem_bytes) + 1024 + 2 * 8 * self.stages


def staged_smem_layout(dtype, rows: int, stages: int):
    """(rows, 64, stages), K-major with the 128-byte swizzle that TMA writes and
    wgmma's descriptors read."""
    atom = cute.nvgpu.warpgroup.make_smem_layout_atom(
        sm90_utils.get_smem_layout_atom(cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, dtype, TILE_K), dtype)
    return cute.tile_to_shape(atom, (rows, TILE_K, stages), order=(0, 1, 2))


class WgmmaGemm:
    def __init__(self, dtype: type[cutlass.Numeric], config: Config):
        self.dtype = dtype
        self.cfg = config
        self.tile = (config.tile_m, config.tile_n, TILE_K)
        self.tx_bytes = config.stage_bytes(dtype.width // 8)

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, stream: cuda.CUstream):
        cfg = self.cfg
        mA, mB, mC = operand_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        sA_layout = staged_smem_layout(self.dtype, cfg.tile_m, cfg.stages)
        sB_layout = staged_smem_layout(self.dtype, cfg.tile_n, cfg.stages)
        sC_layout = cute.tile_to_shape(swizzled_rows(64, 8), (cfg.tile_m, cfg.tile_n), (0, 1))

        # TMA: one descriptor per operand, boxes of (tile rows x 64)
        g2s = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
        tma_a, tA = cute.nvgpu.cpasync.make_tiled_tma_atom(
            g2s, mA, cute.slice_(sA_layout, (None, None, 0)), (cfg.tile_m, TILE_K))
        tma_b, tB = cute.nvgpu.cpasync.make_tiled_tma_atom(
            g2s, mB, cute.slice_(sB_layout, (None, None, 0)), (cfg.tile_n, TILE_K))

        # wgmma m64 x tile_n x k16, one atom per warpgroup stacked along M
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype, self.dtype, cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K, cutlass.Float32,
            (cfg.warpgroups, 1, 1), tiler_mn=(64, cfg.tile_n))
        copy_c = row_copy(self.dtype, cfg.threads, cfg.tile_n)

        tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        self.kernel(tma_a, tA, tma_b, tB, mC, tiled_mma, copy_c, sA_layout, sB_layout,
                    sC_layout, tiles_m, tiles_n).launch(
            grid=[tiles_m * tiles_n, 1, 1], block=[cfg.threads, 1, 1],
            smem=cfg.smem_bytes(self.dtype.width // 8), stream=stream)

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom,
               mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               copy_c: cute.TiledCopy, sA_layout: cute.ComposedLayout,
               sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout,
               tiles_m: cutlass.Int32, tiles_n: cutlass.Int32):
        cfg = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

        # shared memory: full/empty barrier pairs, then the A and B rings
        smem = SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, 2 * cfg.stages, byte_alignment=8)
        sA = smem.allocate_tensor(self.dtype, sA_layout.outer, 1024, sA_layout.inner)
        sB = smem.allocate_tensor(self.dtype, sB_layout.outer, 1024, sB_layout.inner)
        sC = cute.make_tensor(cute.recast_ptr(sA.iterator, sC_layout.inner, dtype=self.dtype),
                              sC_layout.outer)

        # full[s]: one arrival (the TMA thread's expect_tx) + tx_bytes of data;
        # empty[s]: one arrival per consumer warp
        ring = pipeline.PipelineTmaAsync.create(
            num_stages=cfg.stages, barrier_storage=barriers, tx_count=self.tx_bytes,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cfg.threads // 32))

        tile_m, tile_n = grouped_tile(bidx, tiles_m, tiles_n, cfg.group_m)
        gA = cute.local_tile(mA, (cfg.tile_m, TILE_K), (tile_m, None))  # (bM, 64, k_tiles)
        gB = cute.local_tile(mB, (cfg.tile_n, TILE_K), (tile_n, None))
        k_tiles = cute.size(gA, mode=[2])
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
            tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))

        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))  # smem descriptors
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        gC = cute.local_tile(mC, (cfg.tile_m, cfg.tile_n), (tile_m, tile_n))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gC).shape, cutlass.Float32)
        acc.fill(0.0)
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)

        produce = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, cfg.stages)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, cfg.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, cfg.stages)

        # prologue: warp 0 (one elected lane inside the pipeline calls) fills up to
        # `stages` k-tiles ahead. The whole warp takes this branch: TMA issue and
        # expect_tx elect a lane themselves, and a lone diverged lane would break them.
        if warp == 0:
            for _ in range(cutlass.min(cfg.stages, k_tiles)):
                self.load(ring, produce, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)
                produce.advance()

        k_blocks = cute.size(tCrA, mode=[2])
        for t in range(k_tiles):
            ring.consumer_wait(read)  # TMA bytes of k-tile t have landed
            cute.nvgpu.warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                          tCrB[None, None, kb, read.index], acc)
            cute.nvgpu.warpgroup.commit_group()
            read.advance()
            if t > 0:  # k-tile t-1's wgmmas are done reading: hand its stage back
                cute.nvgpu.warpgroup.wait_group(1)
                ring.consumer_release(release)
                release.advance()
                if warp == 0:
                    if produce.count < k_tiles:
                        self.load(ring, produce, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB)
                        produce.advance()
        cute.nvgpu.warpgroup.wait_group(0)

        # epilogue: registers -> shared (converted) -> global, all threads
        cute.arch.sync_threads()
        out = cute.make_fragment_like(acc, self.dtype)
        out.store(acc.load().to(self.dtype))
        cute.autovec_copy(out, thr_mma.partition_C(sC))
        cute.arch.sync_threads()
        cC = cute.local_tile(cute.make_identity_tensor(mC.shape), (cfg.tile_m, cfg.tile_n),
                             (tile_m, tile_n))
        store_tile(copy_c, sC, gC, cC, mC.shape, tidx)

    @cute.jit
    def load(self, ring: pipeline.PipelineTmaAsync, state: pipeline.PipelineState,
             tma_a: cute.CopyAtom, tAgA: cute.Tensor, tAsA: cute.Tensor, tma_b: cute.CopyAtom,
             tBgB: cute.Tensor, tBsB: cute.Tensor):
        """Wait until stage `state.index` is empty, arm its full barrier with the
        expected bytes, and start the two TMA copies of k-tile `state.count`."""
        ring.producer_acquire(state)
        bar = ring.producer_get_barrier(state)
        cute.copy(tma_a, tAgA[None, state.count], tAsA[None, state.index], tma_bar_ptr=bar)
        cute.copy(tma_b, tBgB[None, state.count], tBsB[None, state.index], tma_bar_ptr=bar)


# ------------------------------------------------------------------ Python surface

def _signature(dtype: torch.dtype, config: Config, stream):
    p = gmem_pointer(None, dtype)
    eight = cutlass.Int32(8)
    return (WgmmaGemm(cutlass_dtype(dtype), config), p, p, p, eight, eight, eight, stream)


def compile(dtype: torch.dtype = torch.bfloat16, config: Config = Config()):
    require(NEEDS, "wgmma_gemm")
    return compile_cached(("wgmma_gemm", dtype, config), launch_arch(),
                          lambda: cute.compile(*_signature(dtype, config, fake_stream())))


def artifacts(arch: str = "sm_90a", dtype: torch.dtype = torch.bfloat16,
              config: Config = Config()) -> Artifacts:
    return compile_artifacts(("wgmma_gemm", dtype, config), arch,
                             *_signature(dtype, config, fake_stream()))


def run(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None,
        config: Config = Config()) -> torch.Tensor:
    """C = A . B^T with TMA and WGMMA; validates every input before launching."""
    require(NEEDS, "wgmma_gemm")
    return launch_tn(lambda dtype: compile(dtype, config), a, b, c)


def prepare(problem, config: Config = Config()):
    compile(problem.dtype, config)
    return lambda a, b, c: run(a, b, c, config)
