"""Notebook 15, second kernel: the CTA-pair GEMM, persistent under Cluster Launch Control.

C[M,N] = A[M,K] . B[N,K]^T, bf16 or fp16 in, fp32 accumulate, bf16 or fp16 out. It is
kernels.cta_pair_gemm (notebook 14's kernel on CTA pairs) with its tile scheduler replaced:

  CLC              persistent clusters: each cluster starts on the tile its blockIdx names,
                   then the leader's TMA warp asks the hardware for another with
                   clusterlaunchcontrol.try_cancel (a cluster not yet launched is cancelled
                   and its tile handed over); every warp of both CTAs reads the answer with
                   clusterlaunchcontrol.query_cancel. Ring stage/phase and accumulator slot
                   are carried across tiles, so the pipeline never drains at a seam.
  TMEM ping-pong   two accumulator slots (2 x N columns), so the epilogue drains tile t
                   from one slot while the MMA fills the other with tile t+1: persistence
                   only pays if the epilogue of one tile overlaps the main loop of the next.

The TMA warp doubles as the CLC requester, as in the cuda-oxide kernel notebook 15 reads.
The roles are kernels.cta_pair_gemm's; only the five scheduler methods and the shared
storage (the CLC answer and its barriers) are new. course.emulate.blackwell_gemm replays
this kernel's decomposition in numpy.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from . import selftest
from . import cta_pair_gemm as pair
from .cta_pair_gemm import Config, CtaPairGemm, pair_gemm_host
from .gemm_host import GemmTypes
from .sm100_parts import THREADS_PER_CTA

NEEDS, DTYPES = pair.NEEDS, pair.DTYPES  # as the pair kernel's, and its Config: only the
# scheduler changes

CLC_RESPONSE_BYTES = 16  # try_cancel writes an opaque 128-bit answer


class CtaPairClcGemm(CtaPairGemm):
    """The kernel for one (A/B, accumulator and C types, Config)."""

    acc_slots = 2  # TMEM ping-pong: epilogue of tile t overlaps the MMA of tile t+1

    def __init__(self, types: GemmTypes, config: Config = Config()):
        """The pair kernel's set-up, plus how many threads read each CLC answer."""
        super().__init__(types, config)
        # every thread of both CTAs reads each CLC answer, then frees the buffer
        self.clc_readers = THREADS_PER_CTA * self.tile.ctas

    def shared_storage(self):
        """The pair kernel's barriers plus the CLC answer and its full/empty barriers."""

        @cute.struct
        class Barriers:
            ab: cute.struct.MemRange[cutlass.Int64, self.stages * 2]  # full + empty per stage
            acc: cute.struct.MemRange[cutlass.Int64, self.acc_slots * 2]  # per TMEM slot
            clc: cute.struct.MemRange[cutlass.Int64, 2]  # CLC answer full + empty
            tmem_dealloc: cutlass.Int64  # the two CTAs agree before freeing TMEM
            tmem_base: cutlass.Int32
            clc_response: cute.struct.Align[
                cute.struct.MemRange[cutlass.Int32, 4], CLC_RESPONSE_BYTES
            ]

        return Barriers

    # ------------------------------------------------------------ the tile scheduler (CLC)
    def make_scheduler(self, bars, cta_layout_vmnk):
        """CLC answers: written by hardware into both CTAs, read by every warp of the pair."""
        clc_pipeline = pipeline.PipelineClcFetchAsync.create(
            barrier_storage=bars.clc.data_ptr(),
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.clc_readers),
            tx_count=CLC_RESPONSE_BYTES,
            cta_layout_vmnk=cta_layout_vmnk,
            defer_sync=True,
        )
        return clc_pipeline, bars.clc_response.data_ptr()

    def scheduler_states(self):
        """Where the requester and each reader stand in the one-slot ring of answers."""
        return (
            pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1),
            pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1),
        )

    @cute.jit
    def request_next_tile(self, scheduler, request_state, cta_rank):
        """Leader's TMA warp: ask the hardware to cancel a cluster not yet launched.

        clusterlaunchcontrol.try_cancel (multicast) writes the 16-byte answer into both
        CTAs' shared memory and completes each CTA's CLC full barrier.
        """
        # region request
        clc_pipeline, clc_response = scheduler
        if cta_rank == 0:
            clc_pipeline.producer_acquire(request_state)  # every reader freed the last answer
            barrier = clc_pipeline.producer_get_barrier(request_state)
            with cute.arch.elect_one():
                cute.arch.issue_clc_query(barrier, clc_response)
            request_state.advance()
        # endregion request
        return request_state

    @cute.jit
    def read_next_tile(self, scheduler, read_state):
        """Every warp of both CTAs: wait for the answer, decode it, free the buffer.

        clusterlaunchcontrol.query_cancel says whether a cluster was cancelled and, if so,
        the blockIdx of its first CTA: that cluster's tile is now ours. No answer = done.
        """
        clc_pipeline, clc_response = scheduler
        # region read
        clc_pipeline.consumer_wait(read_state)
        first_x, first_y, _, cancelled = cute.arch.clc_response(clc_response)
        cute.arch.fence_proxy("async.shared", space="cta")  # read before the next write
        clc_pipeline.consumer_release(read_state)
        read_state.advance()
        # endregion read
        return (first_x // self.tile.ctas, first_y, cancelled != 0), read_state

    @cute.jit
    def finish_requests(self, scheduler, request_state, cta_rank):
        """The leader waits until every reader freed the last answer before exiting."""
        clc_pipeline, _ = scheduler
        if cta_rank == 0:
            clc_pipeline.producer_tail(request_state)


# ---------------------------------------------------------------- the surface

GEMM = pair_gemm_host("cta_pair_clc_gemm", CtaPairClcGemm, Config)


# compile(dtype, config, out_dtype=) / artifacts(arch, dtype, config, out_dtype=) /
# run(a, b, out, config) / prepare(problem, config) / footprint(dtype, config): the step's
# surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare
footprint = GEMM.footprint


if __name__ == "__main__":
    raise SystemExit(selftest.gemm_main(GEMM, "cta_pair_clc_gemm", sizes=(4096, 8192)))
