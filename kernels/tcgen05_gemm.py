"""Notebook 14's kernel: a 1-CTA Blackwell GEMM on tcgen05 with its accumulator in TMEM.

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

Warp roles are fixed: warps 0-3 are the epilogue (each may touch only its own 32-lane
quarter of TMEM), warp 4 the TMA producer, warp 5 the MMA issuer. 6 warps = 192 threads.
The pieces (tiled MMA, TMA atoms, the two k-loops, the epilogue) are kernels/sm100_parts.py's,
shared with notebook 15's kernels (kernels.cta_pair_gemm, then kernels.cta_pair_clc_gemm):
CTA pairs first, then Cluster Launch Control with two accumulator slots.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from . import selftest
from .gemm_host import HALF_TYPES, GemmHost, GemmTypes, Operands, gemm_tensors, tile_k
from .sm100_parts import MMA_WARP, THREADS_PER_CTA, TMA_WARP
from .sm100_parts import TileShape, accumulator_layout, allocate_operand_smem
from .sm100_parts import cta_footprint, cta_stage_bytes, epilogue_setup, epilogue_tile
from .sm100_parts import make_accumulator_handoff, make_tmem_allocator
from .sm100_parts import make_epilogue_tma, make_operand_tma, make_stage_ring, make_tiled_mma
from .sm100_parts import mma_k_loop, partition_operands, tma_k_loop, tmem_columns_for

NEEDS = "sm_100a"
DTYPES = HALF_TYPES
OPERANDS = Operands(ab_dtypes=DTYPES, c_dtypes=HALF_TYPES)  # fp32 accumulators, C in bf16 or fp16


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
    """The kernel for one (A/B, accumulator and C types, Config)."""

    ctas = 1  # CTAs that share one MMA: the MMA tile is 128 x tile_n
    acc_slots = 1  # one tile per CTA: nothing to overlap the epilogue with
    epi_stages = 2  # TMA-store staging buffers of the epilogue

    def __init__(self, types: GemmTypes, config: Config = Config()):
        # configuration
        self.ab_dtype, self.acc_dtype, self.c_dtype = types
        self.cfg = config
        # derived, all in one place
        self.tile = TileShape(
            mma_m=128 * self.ctas, n=config.tile_n, k=tile_k(self.ab_dtype.width), ctas=self.ctas
        )
        self.stages = config.stages
        self.tmem_columns = tmem_columns_for(self.acc_slots * self.tile.n)

    def footprint(self) -> dict:
        """Threads, TMEM columns, bytes per stage and shared memory of one CTA."""
        return cta_footprint(
            self.tile,
            self.stages,
            self.acc_slots,
            self.epi_stages,
            self.ab_dtype.width // 8,
            self.c_dtype.width // 8,
        )

    def check_pointers(self, a_ptr, b_ptr, c_ptr) -> None:
        """Refuse, while tracing, pointers of other element types than this kernel's."""
        if (a_ptr.dtype, b_ptr.dtype, c_ptr.dtype) != (self.ab_dtype, self.ab_dtype, self.c_dtype):
            raise TypeError("pointer element types do not match the kernel's dtypes")

    # ------------------------------------------------------------ host
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
        self.check_pointers(a_ptr, b_ptr, c_ptr)
        a, b, c = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        tiled_mma = make_tiled_mma(self.ab_dtype, self.acc_dtype, self.tile)
        cta_layout_vmnk = cute.make_layout((1, 1, 1, 1))  # no cluster: one CTA per MMA tile
        tma_a, tma_b = make_operand_tma(a, b, tiled_mma, self.tile, self.stages)
        epi_tile, tma_c = make_epilogue_tma(c, self.tile, self.epi_stages)
        grid = (
            (m + self.tile.cta_m - 1) // self.tile.cta_m,
            (n + self.tile.n - 1) // self.tile.n,
            1,
        )
        self.kernel(tiled_mma, tma_a, tma_b, tma_c, epi_tile, cta_layout_vmnk).launch(
            grid=grid, block=[THREADS_PER_CTA, 1, 1], stream=stream
        )

    # ------------------------------------------------------------ device
    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cpasync.TmaInfo,
        tma_b: cpasync.TmaInfo,
        tma_c: cpasync.TmaInfo,
        epi_tile: cute.Tile,
        cta_layout_vmnk: cute.Layout,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tile_row, tile_col, _ = cute.arch.block_idx()  # one CTA, one tile of C

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
        ring = make_stage_ring(
            bars.ab.data_ptr(), self.stages, cta_stage_bytes(self.tile), cta_layout_vmnk
        )
        # accumulator hand-off: the MMA warp produces, each epilogue warp consumes
        acc_pipeline = make_accumulator_handoff(
            bars.acc.data_ptr(), self.acc_slots, cta_layout_vmnk
        )
        tmem = make_tmem_allocator(bars.tmem_base.ptr)
        pipeline.pipeline_init_arrive()  # fence the mbarrier inits ...
        pipeline.pipeline_init_wait()  # ... and make them visible to the whole CTA

        sA, sB, sC = allocate_operand_smem(smem, self.ab_dtype, self.c_dtype, tma_a, tma_b, tma_c)
        views = partition_operands(
            tiled_mma, self.tile, tma_a, tma_b, tma_c, sA, sB, cta_layout_vmnk, (0, 0, 0, 0)
        )
        acc_layout = accumulator_layout(tiled_mma, self.tile, self.acc_slots)

        # TMEM: warp 0 allocates a power-of-two number of columns for the accumulator
        tmem.allocate(self.tmem_columns)  # tcgen05.alloc
        tmem.relinquish_alloc_permit()  # this CTA will allocate nothing else

        if warp_idx == TMA_WARP:
            self.tma_role(
                tma_a=tma_a,
                tma_b=tma_b,
                tAgA=views.tAgA,
                tBgB=views.tBgB,
                tAsA=views.tAsA,
                tBsB=views.tBsB,
                ring=ring,
                k_tiles=views.k_tiles,
                tile_row=tile_row,
                tile_col=tile_col,
            )
        if warp_idx == MMA_WARP:
            self.mma_role(
                tiled_mma=tiled_mma,
                tmem=tmem,
                acc_layout=acc_layout,
                tCrA=views.tCrA,
                tCrB=views.tCrB,
                ring=ring,
                acc_pipeline=acc_pipeline,
                k_tiles=views.k_tiles,
            )
        if warp_idx < TMA_WARP:
            self.epilogue_role(
                tidx=tidx,
                warp_idx=warp_idx,
                tmem=tmem,
                acc_layout=acc_layout,
                tma_c=tma_c,
                sC=sC,
                tCgC=views.tCgC,
                epi_tile=epi_tile,
                acc_pipeline=acc_pipeline,
                tile_row=tile_row,
                tile_col=tile_col,
            )

    @cute.jit
    def tma_role(self, tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ring, k_tiles, tile_row, tile_col):
        """Warp 4: stream this CTA's K-blocks of A and B into the ring."""
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        ab_state = tma_k_loop(
            tma_a,
            tma_b,
            tAgA[(None, tile_row, None)],
            tBgB[(None, tile_col, None)],
            tAsA,
            tBsB,
            ring,
            ab_state,
            k_tiles,
            None,
            None,
        )
        ring.producer_tail(ab_state)  # wait until the MMA has drained the ring

    @cute.jit
    def mma_role(self, tiled_mma, tmem, acc_layout, tCrA, tCrB, ring, acc_pipeline, k_tiles):
        """Warp 5: all K-blocks into the TMEM accumulator, then hand it to the epilogue."""
        tmem.wait_for_alloc()
        accumulators = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.acc_slots)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        acc_pipeline.producer_acquire(acc_state)
        ab_state = mma_k_loop(
            tiled_mma,
            accumulators[(None, None, None, acc_state.index)],
            tCrA,
            tCrB,
            ring,
            ab_state,
            k_tiles,
        )
        acc_pipeline.producer_commit(acc_state)  # tcgen05.commit: fires when the MMAs finish

    @cute.jit
    def epilogue_role(
        self,
        tidx,
        warp_idx,
        tmem,
        acc_layout,
        tma_c,
        sC,
        tCgC,
        epi_tile,
        acc_pipeline,
        tile_row,
        tile_col,
    ):
        """Warps 0-3: wait for the accumulator, drain it to C, free TMEM."""
        tmem_ptr, accumulators, c_pipeline, epi_barrier = epilogue_setup(
            tmem, acc_layout, self.acc_dtype, self.epi_stages
        )
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.acc_slots)
        acc_pipeline.consumer_wait(acc_state)
        epilogue_tile(
            tidx,
            warp_idx,
            accumulators[((None, None), 0, 0, acc_state.index)],
            tma_c,
            sC,
            tCgC[((None, None), 0, 0, tile_row, tile_col)],
            epi_tile,
            self.c_dtype,
            epi_barrier,
            c_pipeline,
            cutlass.Int32(0),
        )
        with cute.arch.elect_one():
            acc_pipeline.consumer_release(acc_state)
        c_pipeline.producer_tail()  # every TMA store of C has read its staging buffer
        epi_barrier.arrive_and_wait()  # every epilogue warp is done with TMEM
        tmem.free(tmem_ptr)  # warp 0 only: tcgen05.dealloc


# ---------------------------------------------------------------- the surface

GEMM = GemmHost(
    "tcgen05_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: Tcgen05Gemm(types, config),
    Config,
    OPERANDS,
)


# compile(dtype, config, out_dtype=) / artifacts(arch, dtype, config, out_dtype=) /
# run(a, b, out, config) / prepare(problem, config) / footprint(dtype, config): the step's
# surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare
footprint = GEMM.footprint


if __name__ == "__main__":
    raise SystemExit(selftest.gemm_main(GEMM, "tcgen05_gemm", sizes=(4096, 8192)))
