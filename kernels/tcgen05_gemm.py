"""Notebook 11's kernel: a 1-CTA Blackwell GEMM on tcgen05 with its accumulator in TMEM.

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

Notebook 12's CTA-pair kernel (kernels.cta_pair_clc_gemm) is this kernel plus CTA pairs,
two accumulator slots and Cluster Launch Control; the pieces both use live in
kernels.tcgen05_parts.
"""
from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import torch
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator, TmemAllocator

from . import tcgen05_parts as parts
from .common import (Artifacts, KernelInputError, compile_artifacts, compile_cached,
                     current_stream, cutlass_dtype, fake_stream, gmem_pointer, launch_arch,
                     require)
from .gemm_inputs import OUT_DTYPES, gemm_launch_arguments, validate_gemm

NEEDS = "sm_100a"
NAME = "tcgen05_gemm"
DTYPES = (torch.bfloat16, torch.float16)


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
        self.tile = parts.TileShape(mma_m=128, n=config.tile_n, ctas=1)
        self.stages = config.stages
        self.acc_slots = 1  # one tile per CTA: nothing to overlap the epilogue with
        self.epi_stages = 2
        self.tmem_columns = parts.tmem_columns_for(self.acc_slots * self.tile.n)

    def footprint(self) -> dict:
        """Threads, TMEM columns, bytes per stage and shared memory of one CTA."""
        return parts.footprint(self.tile, self.stages, self.acc_slots, self.epi_stages,
                               self.ab_dtype.width // 8, self.c_dtype.width // 8)

    # ------------------------------------------------------------ host
    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, stream: cuda.CUstream):
        if cutlass.const_expr(a_ptr.dtype != self.ab_dtype
                              or b_ptr.dtype != self.ab_dtype
                              or c_ptr.dtype != self.c_dtype):
            raise TypeError("pointer element types do not match the kernel's dtypes")
        a, b, c = parts.gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        tiled_mma = parts.make_tiled_mma(self.ab_dtype, self.acc_dtype, self.tile)
        cta_layout_vmnk = cute.make_layout((1, 1, 1, 1))  # no cluster: one CTA per MMA tile
        tma_a, tma_b = parts.make_operand_tma(a, b, tiled_mma, self.tile, self.stages)
        epi_tile, tma_c = parts.make_epilogue_tma(c, self.tile, self.epi_stages)
        grid = ((m + self.tile.cta_m - 1) // self.tile.cta_m,
                (n + self.tile.n - 1) // self.tile.n, 1)
        self.kernel(tiled_mma, tma_a, tma_b, tma_c, epi_tile, cta_layout_vmnk).launch(
            grid=grid, block=[parts.THREADS_PER_CTA, 1, 1], stream=stream)

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
        if warp_idx == parts.TMA_WARP:
            for tma in (tma_a, tma_b, tma_c):
                cpasync.prefetch_descriptor(tma.atom)

        # stage ring: TMA (one thread) produces, tcgen05.commit from the MMA warp consumes
        ab_pipeline = pipeline.PipelineTmaUmma.create(
            barrier_storage=bars.ab.data_ptr(), num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=parts.stage_bytes(self.ab_dtype, tma_a, tma_b),
            cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
        # accumulator hand-off: the MMA warp produces, each epilogue warp consumes
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=bars.acc.data_ptr(), num_stages=self.acc_slots,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                     len(parts.EPILOGUE_WARPS)),
            cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
        tmem = TmemAllocator(bars.tmem_base.ptr,
                             barrier_for_retrieve=pipeline.NamedBarrier(
                                 parts.TMEM_ALLOC_BARRIER, parts.TMEM_USERS),
                             allocator_warp_id=parts.EPILOGUE_WARPS[0])
        pipeline.pipeline_init_arrive()  # fence the mbarrier inits ...
        pipeline.pipeline_init_wait()  # ... and make them visible to the whole CTA

        sA, sB, sC = parts.allocate_operand_smem(smem, self.ab_dtype, self.c_dtype,
                                                 tma_a, tma_b, tma_c)
        tAgA, tBgB, tAsA, tBsB, tCrA, tCrB, tCgC, k_tiles = parts.partition_operands(
            tiled_mma, self.tile, tma_a, tma_b, tma_c, sA, sB,
            cta_layout_vmnk, (0, 0, 0, 0))
        acc_layout = parts.accumulator_layout(tiled_mma, self.tile, self.acc_slots)

        # TMEM: warp 0 allocates a power-of-two number of columns for the accumulator
        tmem.allocate(self.tmem_columns)  # tcgen05.alloc
        tmem.relinquish_alloc_permit()  # this CTA will allocate nothing else

        if warp_idx == parts.TMA_WARP:
            self.tma_role(tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ab_pipeline, k_tiles,
                          tile_m, tile_n)
        if warp_idx == parts.MMA_WARP:
            self.mma_role(tiled_mma, tmem, acc_layout, tCrA, tCrB, ab_pipeline, acc_pipeline,
                          k_tiles)
        if warp_idx < parts.TMA_WARP:
            self.epilogue_role(tidx, warp_idx, tmem, acc_layout, tma_c, sC, tCgC, epi_tile,
                               acc_pipeline, tile_m, tile_n)

    @cute.jit
    def tma_role(self, tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ab_pipeline, k_tiles,
                 tile_m, tile_n):
        """Warp 4: stream this CTA's K-blocks of A and B into the ring."""
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        ab_state = parts.tma_k_loop(tma_a, tma_b, tAgA[(None, tile_m, None)],
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
        ab_state = parts.mma_k_loop(tiled_mma, accumulators[(None, None, None, acc_state.index)],
                                    tCrA, tCrB, ab_pipeline, ab_state, k_tiles)
        acc_pipeline.producer_commit(acc_state)  # tcgen05.commit: fires when the MMAs finish

    @cute.jit
    def epilogue_role(self, tidx, warp_idx, tmem, acc_layout, tma_c, sC, tCgC, epi_tile,
                      acc_pipeline, tile_m, tile_n):
        """Warps 0-3: wait for the accumulator, drain it to C, free TMEM."""
        tmem.wait_for_alloc()
        tmem_ptr = tmem.retrieve_ptr(self.acc_dtype)
        accumulators = cute.make_tensor(tmem_ptr, acc_layout)
        c_pipeline = pipeline.PipelineTmaStore.create(
            num_stages=self.epi_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                     parts.EPILOGUE_THREADS))
        epi_barrier = pipeline.NamedBarrier(parts.EPILOGUE_SYNC_BARRIER, parts.EPILOGUE_THREADS)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer,
                                                 self.acc_slots)
        acc_pipeline.consumer_wait(acc_state)
        parts.epilogue_tile(tidx, warp_idx,
                            accumulators[((None, None), 0, 0, acc_state.index)], tma_c, sC,
                            tCgC[((None, None), 0, 0, tile_m, tile_n)], epi_tile, self.c_dtype,
                            epi_barrier, c_pipeline)
        with cute.arch.elect_one():
            acc_pipeline.consumer_release(acc_state)
        c_pipeline.producer_tail()  # every TMA store of C has read its staging buffer
        epi_barrier.arrive_and_wait()  # every epilogue warp is done with TMEM
        tmem.free(tmem_ptr)  # warp 0 only: tcgen05.dealloc


# ---------------------------------------------------------------- the module's surface

def _kernel(ab: torch.dtype, out: torch.dtype, config: Config) -> Tcgen05Gemm:
    return Tcgen05Gemm(cutlass_dtype(ab), cutlass_dtype(out), config)


def _signature(ab: torch.dtype, out: torch.dtype, config: Config, stream) -> tuple:
    """The compile-time arguments: placeholder pointers and sizes (one compile, all shapes)."""
    one = cutlass.Int32(1)
    return (_kernel(ab, out, config), gmem_pointer(None, ab), gmem_pointer(None, ab),
            gmem_pointer(None, out), one, one, one, stream)


def compile(dtype: torch.dtype = torch.bfloat16, out_dtype: torch.dtype | None = None,
            config: Config = Config()):
    """The launchable kernel for this machine's GPU (compiled once per dtypes/config)."""
    require(NEEDS, NAME)
    out_dtype = out_dtype or dtype
    arch = launch_arch()
    return compile_cached((NAME, dtype, out_dtype, config), arch,
                          lambda: cute.compile(*_signature(dtype, out_dtype, config,
                                                           fake_stream()),
                                               options=f"--gpu-arch {arch}"))


def artifacts(arch: str = "sm_100a", dtype: torch.dtype = torch.bfloat16,
              out_dtype: torch.dtype | None = None, config: Config = Config()) -> Artifacts:
    """PTX and cubin for `arch` (an sm_100-family target), compiled here without a GPU."""
    out_dtype = out_dtype or dtype
    return compile_artifacts((NAME, dtype, out_dtype, config), arch,
                             *_signature(dtype, out_dtype, config, fake_stream()))


def footprint(dtype: torch.dtype = torch.bfloat16, out_dtype: torch.dtype | None = None,
              config: Config = Config()) -> dict:
    """What one CTA holds for this configuration (no compile, no GPU)."""
    return _kernel(dtype, out_dtype or dtype, config).footprint()


def launch(kernel, args: tuple) -> None:
    """Launch a compiled kernel on torch's current stream (the one line that needs the GPU)."""
    kernel(*args, current_stream())


def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None,
        config: Config = Config()) -> torch.Tensor:
    """C = A . B^T on a Blackwell GPU; validates everything before launching."""
    require(NEEDS, NAME)
    out = validate_gemm(a, b, out, kernel=NAME, dtypes=DTYPES)
    (m, k), n = a.shape, b.shape[0]
    if m == 0 or n == 0:
        return out
    if k == 0:  # no K-block: the accumulator would never be written
        return out.zero_()
    kernel = compile(a.dtype, out.dtype, config)
    launch(kernel, gemm_launch_arguments(a, b, out))
    return out


def prepare(problem, config: Config = Config()):
    """For course.bench's LADDER: check the problem, compile once, return gemm(a, b, c)."""
    if problem.dtype not in DTYPES or problem.c_dtype not in OUT_DTYPES:
        raise KernelInputError(f"{NAME} takes bf16/fp16 in and out, not {problem}")
    if problem.a_major != "k" or problem.b_major != "k":
        raise KernelInputError(f"{NAME} takes K-major A and B only")
    compile(problem.dtype, problem.c_dtype, config)
    return lambda a, b, c: run(a, b, c, config)
