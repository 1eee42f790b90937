"""Notebook 12's kernel: the Blackwell CTA-pair GEMM with Cluster Launch Control.

C[M,N] = A[M,K] . B[N,K]^T, bf16 or fp16 in, fp32 accumulate, bf16 or fp16 out. It is
notebook 11's 1-CTA kernel (kernels.tcgen05_gemm) plus four ideas:

  CTA pairs        clusters of 2 CTAs. The leader (rank 0) issues ONE tcgen05.mma.cta_group::2
                   of shape 256 x N x 16 that reads A and B from both CTAs' shared memory and
                   writes rows 0-127 of the tile into the leader's TMEM, rows 128-255 into the
                   follower's. The follower issues no MMA: it loads and stores.
  barrier aliasing each CTA loads its own 128 rows of A and its half of B's rows with the
                   multicast form of the TMA copy (.multicast::cluster .cta_group::2): the
                   data lands in the issuing CTA, the completion (bytes) on the LEADER's
                   full barrier -- the PTX masks the barrier address with 0xFEFFFFF8 -- which
                   therefore expects both CTAs' bytes. tcgen05.commit with a 2-CTA mask frees
                   the stage in both CTAs at once. With one pair per cluster each copy's
                   multicast mask names only the issuing CTA (the cluster's VMNK layout is
                   (2,1,1,1): no second CTA along M or N shares a box); B is shared by the
                   paired MMA reading both halves, so no byte of A or B is loaded twice.
                   A wider cluster (e.g. 2x2) would multicast A to two pairs.
  TMEM ping-pong   two accumulator slots (2 x N columns), so the epilogue drains tile t
                   from one slot while the MMA fills the other with tile t+1.
  CLC              persistent clusters: each cluster starts on the tile its blockIdx names,
                   then the leader's TMA warp asks the hardware for another with
                   clusterlaunchcontrol.try_cancel (a cluster not yet launched is cancelled
                   and its tile handed over); every warp of both CTAs reads the answer with
                   clusterlaunchcontrol.query_cancel. Ring stage/phase and accumulator slot
                   are carried across tiles, so the pipeline never drains at a seam.

6 warps per CTA with fixed roles (4 epilogue, 1 TMA, 1 MMA), 4 stages of 64-wide K-blocks.
The TMA warp doubles as the CLC requester, as in the kernel notebook 12 reads.

Known race handled here: a 2-CTA tcgen05.dealloc must not run before the peer CTA's
tcgen05.alloc completed (NVIDIA/cutlass#3435) and a 2-CTA alloc needs the peer CTA to
be running (NVIDIA/cutlass#3316): allocation sits between two cluster barriers.

Ragged M/N/K are handled as in notebook 11 (TMA zero-fill and store clipping).
course.emulate.cta_pair replays this kernel's decomposition in numpy.
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
NAME = "cta_pair_clc_gemm"
DTYPES = (torch.bfloat16, torch.float16)
CLUSTER = (2, 1, 1)  # one CTA pair per cluster, along M
CLC_RESPONSE_BYTES = 16  # try_cancel writes an opaque 128-bit answer


@dataclass(frozen=True)
class Config:
    tile_n: int = 128  # columns of C per pair tile: 128 or 256 (the MMA is 256 x tile_n x 16)
    stages: int = 4  # depth of the shared-memory ring of A/B K-blocks

    def __post_init__(self):
        if self.tile_n not in (128, 256):
            raise ValueError("tile_n must be 128 or 256")
        if not 2 <= self.stages <= 8:
            raise ValueError("stages must be in [2, 8]")


class CtaPairClcGemm:
    """The kernel for one (input dtype, output dtype, Config)."""

    def __init__(self, ab_dtype, c_dtype, config: Config = Config()):
        # configuration
        self.ab_dtype = ab_dtype
        self.c_dtype = c_dtype
        self.acc_dtype = cutlass.Float32
        self.config = config
        # derived, all in one place
        self.tile = parts.TileShape(mma_m=256, n=config.tile_n, ctas=2)
        self.stages = config.stages
        self.acc_slots = 2  # TMEM ping-pong: epilogue of tile t overlaps the MMA of tile t+1
        self.epi_stages = 2
        self.tmem_columns = parts.tmem_columns_for(self.acc_slots * self.tile.n)
        self.cluster = CLUSTER
        # every warp of both CTAs reads each CLC answer, then frees the buffer
        self.clc_readers = 32 * 6 * self.tile.ctas

    def footprint(self) -> dict:
        """Threads, TMEM columns, bytes per stage and shared memory of one CTA."""
        return parts.footprint(self.tile, self.stages, self.acc_slots, self.epi_stages,
                               self.ab_dtype.width // 8, self.c_dtype.width // 8)

    # ------------------------------------------------------------ host
    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, stream: cuda.CUstream):
        if cutlass.const_expr(a_ptr.dtype != self.ab_dtype or b_ptr.dtype != self.ab_dtype
                              or c_ptr.dtype != self.c_dtype):
            raise TypeError("pointer element types do not match the kernel's dtypes")
        a, b, c = parts.gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        tiled_mma = parts.make_tiled_mma(self.ab_dtype, self.acc_dtype, self.tile)
        # (V, M, N, K) = (2 CTAs of a pair, 1, 1, 1): the cluster seen by the MMA
        cta_layout_vmnk = cute.tiled_divide(cute.make_layout(self.cluster), (tiled_mma.thr_id,))
        tma_a, tma_b = parts.make_operand_tma(a, b, tiled_mma, self.tile, self.stages,
                                              cta_layout_vmnk.shape)
        epi_tile, tma_c = parts.make_epilogue_tma(c, self.tile, self.epi_stages)
        # one cluster per pair tile; CLC lets early finishers take the tiles of late starters
        grid = (self.tile.ctas * ((m + self.tile.mma_m - 1) // self.tile.mma_m),
                (n + self.tile.n - 1) // self.tile.n, 1)
        self.kernel(tiled_mma, tma_a, tma_b, tma_c, epi_tile, cta_layout_vmnk).launch(
            grid=grid, block=[parts.THREADS_PER_CTA, 1, 1], cluster=list(self.cluster),
            stream=stream)

    # ------------------------------------------------------------ device
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cpasync.TmaInfo, tma_b: cpasync.TmaInfo,
               tma_c: cpasync.TmaInfo, epi_tile: cute.Tile, cta_layout_vmnk: cute.Layout):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cta_coord_vmnk = cta_layout_vmnk.get_flat_coord(cta_rank)
        is_leader = cta_coord_vmnk[0] == 0  # the CTA that issues the pair's MMA

        @cute.struct
        class Barriers:
            ab: cute.struct.MemRange[cutlass.Int64, self.stages * 2]  # full + empty per stage
            acc: cute.struct.MemRange[cutlass.Int64, self.acc_slots * 2]  # per TMEM slot
            clc: cute.struct.MemRange[cutlass.Int64, 2]  # CLC answer full + empty
            tmem_dealloc: cutlass.Int64  # the two CTAs agree before freeing TMEM
            tmem_base: cutlass.Int32
            clc_response: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 4],
                                            CLC_RESPONSE_BYTES]

        smem = SmemAllocator()
        bars = smem.allocate(Barriers)
        if warp_idx == parts.TMA_WARP:
            for tma in (tma_a, tma_b, tma_c):
                cpasync.prefetch_descriptor(tma.atom)

        # stage ring. Both CTAs' copies complete on the leader's full barrier, so it
        # expects the bytes of both; the leader's MMA commit frees the stage in both.
        ab_pipeline = pipeline.PipelineTmaUmma.create(
            barrier_storage=bars.ab.data_ptr(), num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=parts.stage_bytes(self.ab_dtype, tma_a, tma_b) * self.tile.ctas,
            cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
        # accumulator slots: the leader's MMA fills a slot in both CTAs; the 4 epilogue
        # warps of BOTH CTAs release it on the leader's empty barrier
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=bars.acc.data_ptr(), num_stages=self.acc_slots,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, len(parts.EPILOGUE_WARPS) * self.tile.ctas),
            cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
        # CLC answers: written by hardware into both CTAs, read by every warp of the pair
        clc_pipeline = pipeline.PipelineClcFetchAsync.create(
            barrier_storage=bars.clc.data_ptr(), num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.clc_readers),
            tx_count=CLC_RESPONSE_BYTES, cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
        tmem = TmemAllocator(bars.tmem_base.ptr,
                             barrier_for_retrieve=pipeline.NamedBarrier(
                                 parts.TMEM_ALLOC_BARRIER, parts.TMEM_USERS),
                             allocator_warp_id=parts.EPILOGUE_WARPS[0], is_two_cta=True,
                             two_cta_tmem_dealloc_mbar_ptr=bars.tmem_dealloc.ptr)
        # cluster barrier 1: every mbarrier of both CTAs is initialised, and the peer runs
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster[:2], is_relaxed=True)

        sA, sB, sC = parts.allocate_operand_smem(smem, self.ab_dtype, self.c_dtype,
                                                 tma_a, tma_b, tma_c)
        tAgA, tBgB, tAsA, tBsB, tCrA, tCrB, tCgC, k_tiles = parts.partition_operands(
            tiled_mma, self.tile, tma_a, tma_b, tma_c, sA, sB, cta_layout_vmnk, cta_coord_vmnk)
        acc_layout = parts.accumulator_layout(tiled_mma, self.tile, self.acc_slots)
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster[:2])

        # TMEM: warp 0 of each CTA allocates 2 x N columns (cta_group::2), then cluster
        # barrier 2, so no CTA can reach its dealloc before its peer's alloc is done.
        tmem.allocate(self.tmem_columns)
        tmem.relinquish_alloc_permit()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

        clc_response = bars.clc_response.data_ptr()
        first = self.home_tile()
        if warp_idx == parts.TMA_WARP:
            self.tma_role(tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ab_pipeline, clc_pipeline,
                          clc_response, k_tiles, cta_layout_vmnk, cta_coord_vmnk, cta_rank,
                          first)
        if warp_idx == parts.MMA_WARP:
            self.mma_role(tiled_mma, tmem, acc_layout, tCrA, tCrB, ab_pipeline, acc_pipeline,
                          clc_pipeline, clc_response, k_tiles, is_leader, first)
        if warp_idx < parts.TMA_WARP:
            self.epilogue_role(tidx, warp_idx, tmem, acc_layout, tma_c, sC, tCgC, epi_tile,
                               acc_pipeline, clc_pipeline, clc_response, first)

    # ------------------------------------------------------------ the tile scheduler (CLC)
    @cute.jit
    def home_tile(self):
        """The tile this cluster was launched for: its blockIdx, in pair units."""
        bidx, bidy, _ = cute.arch.block_idx()
        return bidx // self.tile.ctas, bidy, cutlass.Boolean(True)

    @cute.jit
    def request_next_tile(self, clc_pipeline, clc_state, clc_response):
        """Leader's TMA warp: ask the hardware to cancel a cluster not yet launched.

        clusterlaunchcontrol.try_cancel (multicast) writes the 16-byte answer into both
        CTAs' shared memory and completes each CTA's CLC full barrier.
        """
        clc_pipeline.producer_acquire(clc_state)  # every reader freed the previous answer
        barrier = clc_pipeline.producer_get_barrier(clc_state)
        with cute.arch.elect_one():
            cute.arch.issue_clc_query(barrier, clc_response)
        clc_state.advance()
        return clc_state

    @cute.jit
    def read_next_tile(self, clc_pipeline, clc_state, clc_response):
        """Every warp of both CTAs: wait for the answer, decode it, free the buffer.

        clusterlaunchcontrol.query_cancel says whether a cluster was cancelled and, if so,
        the blockIdx of its first CTA: that cluster's tile is now ours. No answer = done.
        """
        clc_pipeline.consumer_wait(clc_state)
        first_x, first_y, _, cancelled = cute.arch.clc_response(clc_response)
        cute.arch.fence_proxy("async.shared", space="cta")  # read before the next write
        clc_pipeline.consumer_release(clc_state)
        clc_state.advance()
        return (first_x // self.tile.ctas, first_y, cancelled != 0), clc_state

    # ------------------------------------------------------------ the three roles
    @cute.jit
    def tma_role(self, tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, ab_pipeline, clc_pipeline,
                 clc_response, k_tiles, cta_layout_vmnk, cta_coord_vmnk, cta_rank, first):
        """Warp 4: stream each tile's K-blocks; on the leader, also fetch the next tile."""
        mask_a = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode=2)
        mask_b = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode=1)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        clc_request = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        clc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        pair_m, tile_n, valid = first
        while valid:
            # the ring position (stage, phase) carries over from the previous tile
            ab_state = parts.tma_k_loop(tma_a, tma_b, tAgA[(None, pair_m, None)],
                                        tBgB[(None, tile_n, None)], tAsA, tBsB, ab_pipeline,
                                        ab_state, k_tiles, mask_a, mask_b)
            if cta_rank == 0:
                clc_request = self.request_next_tile(clc_pipeline, clc_request, clc_response)
            (pair_m, tile_n, valid), clc_state = self.read_next_tile(clc_pipeline, clc_state,
                                                                     clc_response)
        # before exiting, wait for the arrivals still aimed at this CTA's barriers:
        ab_pipeline.producer_tail(ab_state)  # the leader's last commits to our stages
        if cta_rank == 0:
            clc_pipeline.producer_tail(clc_request)  # every reader freed the last answer

    @cute.jit
    def mma_role(self, tiled_mma, tmem, acc_layout, tCrA, tCrB, ab_pipeline, acc_pipeline,
                 clc_pipeline, clc_response, k_tiles, is_leader, first):
        """Warp 5: on the leader, one 256 x N MMA tile per tile into alternating TMEM slots."""
        tmem.wait_for_alloc()
        accumulators = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                 self.acc_slots)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        clc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        pair_m, tile_n, valid = first
        while valid:
            if is_leader:
                acc_pipeline.producer_acquire(acc_state)  # the slot's last epilogue is done
                ab_state = parts.mma_k_loop(tiled_mma,
                                            accumulators[(None, None, None, acc_state.index)],
                                            tCrA, tCrB, ab_pipeline, ab_state, k_tiles)
                acc_pipeline.producer_commit(acc_state)  # tcgen05.commit to both CTAs
                acc_state.advance()  # the other slot, for the next tile
            (pair_m, tile_n, valid), clc_state = self.read_next_tile(clc_pipeline, clc_state,
                                                                     clc_response)
        if is_leader:
            acc_pipeline.producer_tail(acc_state)

    @cute.jit
    def epilogue_role(self, tidx, warp_idx, tmem, acc_layout, tma_c, sC, tCgC, epi_tile,
                      acc_pipeline, clc_pipeline, clc_response, first):
        """Warps 0-3: drain this CTA's 128 rows of each tile from its slot, then free TMEM."""
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
        clc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        pair_m, tile_n, valid = first
        while valid:
            acc_pipeline.consumer_wait(acc_state)
            parts.epilogue_tile(tidx, warp_idx,
                                accumulators[((None, None), 0, 0, acc_state.index)], tma_c, sC,
                                tCgC[((None, None), 0, 0, pair_m, tile_n)], epi_tile,
                                self.c_dtype, epi_barrier, c_pipeline)
            with cute.arch.elect_one():
                acc_pipeline.consumer_release(acc_state)  # on the leader's empty barrier
            acc_state.advance()
            (pair_m, tile_n, valid), clc_state = self.read_next_tile(clc_pipeline, clc_state,
                                                                     clc_response)
        c_pipeline.producer_tail()
        epi_barrier.arrive_and_wait()  # every epilogue warp is done with TMEM
        tmem.free(tmem_ptr)  # warp 0: handshake with the peer, then tcgen05.dealloc


# ---------------------------------------------------------------- the module's surface

def _kernel(ab: torch.dtype, out: torch.dtype, config: Config) -> CtaPairClcGemm:
    return CtaPairClcGemm(cutlass_dtype(ab), cutlass_dtype(out), config)


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
