"""Notebook 10: step 09's TMA + PipelineTmaAsync ring, with WGMMA in place of mma.sync.

What changes from kernels/tma_gemm.py with `ring="pipeline"` (loads, ring, tile order and
epilogue are imported from it and from step 07):

  * math: wgmma.mma_async, issued by a whole warpgroup (4 warps, 128 threads), reads
    A and B straight from shared memory through matrix descriptors; there is no
    ldmatrix and no register copy of the operands. A warpgroup owns 64 rows of C;
    bM = 128 uses two warpgroups;
  * asynchrony: the wgmma of k-tile t is left in flight (commit_group, wait_group(1))
    while k-tile t+1 is issued, so a stage is released only once the tensor cores have
    finished reading it: one k-tile later than step 09 releases it.

Notebook 11 adds warp specialization, persistence, clusters and a TMA-store epilogue.
The TMA ring, the tile order and WGMMA's tiled MMA are kernels/sm90_parts.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from . import selftest
from .gemm_host import HALF_TYPES, GemmHost, GemmTypes, gemm_tensors
from .gemm_host import stage_bytes
from .sm80_gemm import epilogue_through_smem, row_copy
from .sm90_parts import OperandTma, SmemLayouts, cta_coordinates, load_k_tile, operand_tma
from .sm90_parts import prefetch_descriptors, ring_and_tile, ring_smem_bytes
from .sm90_parts import ring_layouts, wgmma_tiled_mma

WARPGROUP_ROWS = 64  # rows of C one warpgroup's wgmma covers (m64)

NEEDS = "sm_90a"
DTYPES = HALF_TYPES


@dataclass(frozen=True)
class Config:
    tile_m: int = 128  # 64 per consumer warpgroup
    tile_n: int = 256
    stages: int = 4
    group_m: int = 8

    def __post_init__(self):
        if self.tile_m % WARPGROUP_ROWS or not WARPGROUP_ROWS <= self.tile_m <= 256:
            raise ValueError("tile_m must be 64, 128, 192 or 256 (64 rows per warpgroup)")
        if self.tile_n % 16 or not 16 <= self.tile_n <= 256:
            raise ValueError("tile_n must be a multiple of 16 in [16, 256] (wgmma N)")
        if self.stages < 2:
            raise ValueError("the ring needs at least 2 stages")

    @property
    def warpgroups(self) -> int:
        return self.tile_m // WARPGROUP_ROWS

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups

    @property
    def stage_bytes(self) -> int:
        """Bytes one k-tile of A and B brings into a stage (rows of 128 bytes)."""
        return stage_bytes(self.tile_m, self.tile_n)

    def smem_bytes(self, elem_bytes: int) -> int:
        """The ring and its barriers, C's staging tile in elements of `elem_bytes` over it."""
        return ring_smem_bytes(self.tile_m, self.tile_n, self.stages, elem_bytes)


class WgmmaGemm:
    load_k_tile = staticmethod(load_k_tile)  # step 09's TMA load: the main loop's refill

    def __init__(self, types: GemmTypes, config: Config):
        self.ab_dtype, self.acc_dtype, self.c_dtype = types
        self.cfg = config
        self.tx_bytes = config.stage_bytes
        self.smem_bytes = config.smem_bytes(self.c_dtype.width // 8)

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
        sA_layout, sB_layout, sC_layout = ring_layouts(
            self.ab_dtype, self.c_dtype, cfg.tile_m, cfg.tile_n, cfg.stages
        )

        # TMA (step 09): one descriptor per operand, boxes of (tile rows x tile_k)
        tma = operand_tma(mA, mB, sA_layout, sB_layout, cfg.tile_m, cfg.tile_n)

        # wgmma m64 x tile_n x k16 (16-bit types), one atom per warpgroup stacked along M
        tiled_mma = wgmma_tiled_mma(self.ab_dtype, self.acc_dtype, cfg.warpgroups, cfg.tile_n)
        copy_c = row_copy(self.c_dtype, cfg.threads, cfg.tile_n)

        tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        self.kernel(
            tma_a=tma.tma_a,
            mA=tma.mA,
            tma_b=tma.tma_b,
            mB=tma.mB,
            mC=mC,
            tiled_mma=tiled_mma,
            copy_c=copy_c,
            sA_layout=sA_layout,
            sB_layout=sB_layout,
            sC_layout=sC_layout,
            tiles_m=tiles_m,
            tiles_n=tiles_n,
        ).launch(
            grid=[tiles_m * tiles_n, 1, 1],
            block=[cfg.threads, 1, 1],
            smem=self.smem_bytes,
            stream=stream,
        )

    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mC: cute.Tensor,
        tiled_mma: cute.TiledMma,
        copy_c: cute.TiledCopy,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sC_layout: cute.ComposedLayout,
        tiles_m: cutlass.Int32,
        tiles_n: cutlass.Int32,
    ):
        cfg = self.cfg
        tidx, bidx, warp = cta_coordinates()
        prefetch_descriptors(warp, (tma_a, tma_b))

        # step 09's ring: full[s] one arrival (the TMA thread's expect_tx) + tx_bytes of
        # data; empty[s] one arrival per consumer warp. And this CTA's tile.
        tile = ring_and_tile(
            cfg,
            self.ab_dtype,
            self.c_dtype,
            self.tx_bytes,
            cfg.threads // 32,
            SmemLayouts(sA_layout, sB_layout, sC_layout),
            OperandTma(tma_a, mA, tma_b, mB),
            bidx,
            tiles_m,
            tiles_n,
        )
        ring, k_tiles = tile.ring, tile.k_tiles

        thr_mma = tiled_mma.get_slice(tidx)
        # smem descriptors, not registers: tCrA (MMA, MMA_M, MMA_K, STAGE) and tCrB
        # (MMA, MMA_N, MMA_K, STAGE); this tile of C gC (bM, bN), the accumulator acc
        # (MMA, MMA_M, MMA_N) in registers
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(tile.sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(tile.sB))
        gC = cute.local_tile(mC, (cfg.tile_m, cfg.tile_n), (tile.tile_row, tile.tile_col))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gC).shape, self.acc_dtype)
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
                load_k_tile(ring, produce, *tile.loads)
                produce.advance()

        self.mainloop(
            tiled_mma,
            acc,
            tCrA,
            tCrB,
            ring,
            read,
            release,
            produce,
            k_tiles,
            warp,
            tuple(tile.loads),
        )
        cute.nvgpu.warpgroup.wait_group(0)

        # epilogue (step 07's): registers -> shared (converted) -> global, all threads
        epilogue_through_smem(
            acc, thr_mma, tile.sC, gC, mC, copy_c, (tile.tile_row, tile.tile_col), tidx
        )

    @cute.jit
    def mainloop(
        self,
        tiled_mma: cute.TiledMma,
        acc: cute.Tensor,
        tCrA: cute.Tensor,
        tCrB: cute.Tensor,
        ring: pipeline.PipelineTmaAsync,
        read: pipeline.PipelineState,
        release: pipeline.PipelineState,
        produce: pipeline.PipelineState,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        loads: tuple,
    ):
        """Every k-tile t: wait for its stage, issue its wgmmas and leave them in flight;
        once k-tile t-1's wgmmas are done reading, hand its stage back and let warp 0 refill
        it (`loads`: self.load_k_tile's TMA arguments). The prologue has filled the ring up to
        `produce`. A separate method so that a subclass can replace it."""
        # region k-tile-loop
        k_blocks = cute.size(tCrA, mode=[2])
        for t in range(k_tiles):
            ring.consumer_wait(read)  # TMA bytes of k-tile t have landed
            cute.nvgpu.warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(
                    tiled_mma,
                    acc,
                    tCrA[None, None, kb, read.index],
                    tCrB[None, None, kb, read.index],
                    acc,
                )
            cute.nvgpu.warpgroup.commit_group()
            read.advance()
            if t > 0:  # k-tile t-1's wgmmas are done reading: hand its stage back
                cute.nvgpu.warpgroup.wait_group(1)
                ring.consumer_release(release)
                release.advance()
                if warp == 0:
                    if produce.count < k_tiles:
                        self.load_k_tile(ring, produce, *loads)
                        produce.advance()
        # endregion k-tile-loop


# ------------------------------------------------------------------ the surface

GEMM = GemmHost(
    "wgmma_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: WgmmaGemm(types, config),
    Config,
)


# compile(dtype, config) / artifacts(arch, dtype, config) / run(a, b, out, config) /
# prepare(problem, config): the step's surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare


if __name__ == "__main__":
    raise SystemExit(selftest.gemm_main(GEMM, "wgmma_gemm", sizes=(4096, 8192)))
