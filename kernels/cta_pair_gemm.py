"""Notebook 15, first kernel: notebook 14's tcgen05 GEMM on CTA pairs.

C[M,N] = A[M,K] . B[N,K]^T, bf16 or fp16 in, fp32 accumulate, bf16 or fp16 out. It is
kernels.tcgen05_gemm plus one idea, the CTA pair:

  CTA pairs        clusters of 2 CTAs. The leader (rank 0) issues ONE tcgen05.mma.cta_group::2
                   of shape 256 x N x 16 that reads A and B from both CTAs' shared memory and
                   writes rows 0-127 of the tile into the leader's TMEM, rows 128-255 into the
                   follower's. The follower issues no MMA: it loads and stores.
  barrier aliasing each CTA loads its own 128 rows of A and its half of B's rows with the
                   multicast form of the TMA copy (.multicast::cluster .cta_group::2): the
                   data lands in the issuing CTA, the completion (bytes) on the LEADER's
                   full barrier, which therefore expects both CTAs' bytes. tcgen05.commit
                   with a 2-CTA mask frees the stage in both CTAs at once. With one pair per
                   cluster each copy's multicast mask names only the issuing CTA (the
                   cluster's VMNK layout is (2,1,1,1): no second CTA along M or N shares a
                   box); B is shared by the paired MMA reading both halves, so no byte of A
                   or B is loaded twice. A wider cluster (e.g. 2x2) would multicast A.
  paired TMEM      both CTAs allocate the accumulator's columns with tcgen05.alloc
                   .cta_group::2; a 2-CTA tcgen05.dealloc must not run before the peer CTA's
                   alloc completed (NVIDIA/cutlass#3435) and a 2-CTA alloc needs the peer to be
                   running (NVIDIA/cutlass#3316): allocation sits between two cluster barriers.

One cluster computes one 256 x N tile and exits. The roles are nevertheless written as
loops over the tiles a tile scheduler hands out (here: the cluster's own tile, then
nothing), so kernels.cta_pair_clc_gemm replaces only the scheduler: Cluster Launch
Control, with two accumulator slots so the epilogue of one tile overlaps the next.

6 warps per CTA with fixed roles (4 epilogue, 1 TMA, 1 MMA), 4 stages of 64-wide K-blocks.
Ragged M/N/K are handled as in notebook 14 (TMA zero-fill and store clipping).
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from . import selftest
from .gemm_host import GemmHost, gemm_tensors
from .sm100_parts import MMA_WARP, THREADS_PER_CTA, TMA_WARP
from .sm100_parts import accumulator_layout, allocate_operand_smem
from .sm100_parts import cta_stage_bytes, epilogue_setup, epilogue_tile
from .sm100_parts import make_accumulator_handoff, make_epilogue_tma, make_operand_tma
from .sm100_parts import make_stage_ring, make_tiled_mma, make_tmem_allocator
from .sm100_parts import mma_k_loop, partition_operands, tma_k_loop

# Config: tile_n, columns of C per pair tile, 128 or 256 (the MMA is 256 x tile_n x 16);
# stages, the depth of the A/B ring. The same knobs as notebook 14's kernel, so its Config.
from .tcgen05_gemm import DTYPES as DTYPES
from .tcgen05_gemm import OPERANDS, Config, Tcgen05Gemm

NEEDS = "sm_100a"
CLUSTER = (2, 1, 1)  # one CTA pair per cluster, along M


class CtaPairGemm(Tcgen05Gemm):
    """The kernel for one (A/B, accumulator and C types, Config): notebook 14's set-up
    (footprint, pointer checks) on a CTA pair."""

    ctas = 2  # CTAs that share one MMA: the MMA tile is 256 x tile_n, 128 rows each
    acc_slots = 1  # one tile per cluster: nothing to overlap the epilogue with
    cluster = CLUSTER

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
        # (V, M, N, K) = (2 CTAs of a pair, 1, 1, 1): the cluster seen by the MMA
        cta_layout_vmnk = cute.tiled_divide(cute.make_layout(self.cluster), (tiled_mma.thr_id,))
        tma_a, tma_b = make_operand_tma(
            a, b, tiled_mma, self.tile, self.stages, cta_layout_vmnk.shape
        )
        epi_tile, tma_c = make_epilogue_tma(c, self.tile, self.epi_stages)
        # one cluster per pair tile (with CLC, early finishers take the tiles of late starters)
        grid = (
            self.tile.ctas * ((m + self.tile.mma_m - 1) // self.tile.mma_m),
            (n + self.tile.n - 1) // self.tile.n,
            1,
        )
        self.kernel(tiled_mma, tma_a, tma_b, tma_c, epi_tile, cta_layout_vmnk).launch(
            grid=grid, block=[THREADS_PER_CTA, 1, 1], cluster=list(self.cluster), stream=stream
        )

    # ------------------------------------------------------------ device
    def shared_storage(self):
        """The barriers and small values the kernel keeps in shared memory."""

        @cute.struct
        class Barriers:
            ab: cute.struct.MemRange[cutlass.Int64, self.stages * 2]  # full + empty per stage
            acc: cute.struct.MemRange[cutlass.Int64, self.acc_slots * 2]  # per TMEM slot
            tmem_dealloc: cutlass.Int64  # the two CTAs agree before freeing TMEM
            tmem_base: cutlass.Int32

        return Barriers

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
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cta_coord_vmnk = cta_layout_vmnk.get_flat_coord(cta_rank)
        is_leader = cta_coord_vmnk[0] == 0  # the CTA that issues the pair's MMA

        smem = SmemAllocator()
        bars = smem.allocate(self.shared_storage())
        if warp_idx == TMA_WARP:
            for tma in (tma_a, tma_b, tma_c):
                cpasync.prefetch_descriptor(tma.atom)

        # stage ring. Both CTAs' copies complete on the leader's full barrier, so it
        # expects the bytes of both; the leader's MMA commit frees the stage in both.
        ring = make_stage_ring(
            bars.ab.data_ptr(),
            self.stages,
            cta_stage_bytes(self.tile) * self.tile.ctas,
            cta_layout_vmnk,
        )
        # accumulator slots: the leader's MMA fills a slot in both CTAs; the 4 epilogue
        # warps of BOTH CTAs release it on the leader's empty barrier
        acc_pipeline = make_accumulator_handoff(
            bars.acc.data_ptr(), self.acc_slots, cta_layout_vmnk, ctas=self.tile.ctas
        )
        scheduler = self.make_scheduler(bars, cta_layout_vmnk)
        tmem = make_tmem_allocator(bars.tmem_base.ptr, pair_dealloc_barrier=bars.tmem_dealloc.ptr)
        # cluster barrier 1: every mbarrier of both CTAs is initialised, and the peer runs
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster[:2], is_relaxed=True)

        sA, sB, sC = allocate_operand_smem(smem, self.ab_dtype, self.c_dtype, tma_a, tma_b, tma_c)
        views = partition_operands(
            tiled_mma, self.tile, tma_a, tma_b, tma_c, sA, sB, cta_layout_vmnk, cta_coord_vmnk
        )
        acc_layout = accumulator_layout(tiled_mma, self.tile, self.acc_slots)
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster[:2])

        # TMEM: warp 0 of each CTA allocates the accumulators' columns (cta_group::2), then
        # cluster barrier 2, so no CTA can reach its dealloc before its peer's alloc is done.
        tmem.allocate(self.tmem_columns)
        tmem.relinquish_alloc_permit()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

        first = self.home_tile()
        if warp_idx == TMA_WARP:
            self.tma_role(
                tma_a=tma_a,
                tma_b=tma_b,
                tAgA=views.tAgA,
                tBgB=views.tBgB,
                tAsA=views.tAsA,
                tBsB=views.tBsB,
                ring=ring,
                scheduler=scheduler,
                k_tiles=views.k_tiles,
                cta_layout_vmnk=cta_layout_vmnk,
                cta_coord_vmnk=cta_coord_vmnk,
                cta_rank=cta_rank,
                first=first,
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
                scheduler=scheduler,
                k_tiles=views.k_tiles,
                is_leader=is_leader,
                first=first,
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
                scheduler=scheduler,
                first=first,
            )

    # ------------------------------------------------------------ the tile scheduler
    # One tile per cluster. kernels.cta_pair_clc_gemm overrides these five methods.
    def make_scheduler(self, bars, cta_layout_vmnk):
        """What the roles need to ask for more tiles: nothing here."""
        return None

    @cute.jit
    def home_tile(self):
        """The tile this cluster was launched for: its blockIdx, in pair units."""
        bidx, bidy, _ = cute.arch.block_idx()
        return bidx // self.tile.ctas, bidy, cutlass.Boolean(True)

    def scheduler_states(self):
        """(requesting, reading) positions in the scheduler's answers: none here."""
        return cutlass.Int32(0), cutlass.Int32(0)

    @cute.jit
    def request_next_tile(self, scheduler, request_state, cta_rank):
        """The TMA warp asks for the next tile: there is none to ask for."""
        return request_state

    @cute.jit
    def read_next_tile(self, scheduler, read_state):
        """Every warp learns its next tile: none, the cluster is done."""
        return (cutlass.Int32(0), cutlass.Int32(0), cutlass.Boolean(False)), read_state

    @cute.jit
    def finish_requests(self, scheduler, request_state, cta_rank):
        """Wait for what the requests still have in flight before exiting: nothing here."""
        return

    # ------------------------------------------------------------ the three roles
    @cute.jit
    def tma_role(
        self,
        tma_a,
        tma_b,
        tAgA,
        tBgB,
        tAsA,
        tBsB,
        ring,
        scheduler,
        k_tiles,
        cta_layout_vmnk,
        cta_coord_vmnk,
        cta_rank,
        first,
    ):
        """Warp 4: stream each tile's K-blocks; on the leader, also fetch the next tile."""
        mask_a = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode=2)
        mask_b = cpasync.create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode=1)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        request_state, read_state = self.scheduler_states()
        # region tile-loop
        pair_row, tile_col, valid = first
        while valid:
            # the ring position (stage, phase) carries over from the previous tile
            ab_state = tma_k_loop(
                tma_a,
                tma_b,
                tAgA[(None, pair_row, None)],
                tBgB[(None, tile_col, None)],
                tAsA,
                tBsB,
                ring,
                ab_state,
                k_tiles,
                mask_a,
                mask_b,
            )
            request_state = self.request_next_tile(scheduler, request_state, cta_rank)
            (pair_row, tile_col, valid), read_state = self.read_next_tile(scheduler, read_state)
        # endregion tile-loop
        # before exiting, wait for the arrivals still aimed at this CTA's barriers:
        ring.producer_tail(ab_state)  # the leader's last commits to our stages
        self.finish_requests(scheduler, request_state, cta_rank)

    @cute.jit
    def mma_role(
        self,
        tiled_mma,
        tmem,
        acc_layout,
        tCrA,
        tCrB,
        ring,
        acc_pipeline,
        scheduler,
        k_tiles,
        is_leader,
        first,
    ):
        """Warp 5: on the leader, one 256 x N MMA tile per tile into the next TMEM slot."""
        tmem.wait_for_alloc()
        accumulators = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.acc_slots)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        _, read_state = self.scheduler_states()
        # region tile-loop
        pair_row, tile_col, valid = first
        while valid:
            if is_leader:
                acc_pipeline.producer_acquire(acc_state)  # the slot's last epilogue is done
                ab_state = mma_k_loop(
                    tiled_mma,
                    accumulators[(None, None, None, acc_state.index)],
                    tCrA,
                    tCrB,
                    ring,
                    ab_state,
                    k_tiles,
                )
                acc_pipeline.producer_commit(acc_state)  # tcgen05.commit to both CTAs
                acc_state.advance()  # the next slot, for the next tile
            (pair_row, tile_col, valid), read_state = self.read_next_tile(scheduler, read_state)
        if is_leader:
            acc_pipeline.producer_tail(acc_state)
        # endregion tile-loop

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
        scheduler,
        first,
    ):
        """Warps 0-3: drain this CTA's 128 rows of each tile from its slot, then free TMEM."""
        tmem_ptr, accumulators, c_pipeline, epi_barrier = epilogue_setup(
            tmem, acc_layout, self.acc_dtype, self.epi_stages
        )
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.acc_slots)
        _, read_state = self.scheduler_states()
        # region tile-loop
        pair_row, tile_col, valid = first
        stores = cutlass.Int32(0)  # TMA stores issued so far: picks the staging buffers
        while valid:
            acc_pipeline.consumer_wait(acc_state)
            stores = epilogue_tile(
                tidx,
                warp_idx,
                accumulators[((None, None), 0, 0, acc_state.index)],
                tma_c,
                sC,
                tCgC[((None, None), 0, 0, pair_row, tile_col)],
                epi_tile,
                self.c_dtype,
                epi_barrier,
                c_pipeline,
                stores,
            )
            with cute.arch.elect_one():
                acc_pipeline.consumer_release(acc_state)  # on the leader's empty barrier
            acc_state.advance()
            (pair_row, tile_col, valid), read_state = self.read_next_tile(scheduler, read_state)
        c_pipeline.producer_tail()
        epi_barrier.arrive_and_wait()  # every epilogue warp is done with TMEM
        tmem.free(tmem_ptr)  # warp 0: handshake with the peer, then tcgen05.dealloc
        # endregion tile-loop


# ---------------------------------------------------------------- the surface


def pair_gemm_host(name: str, kernel_class, config_type) -> GemmHost:
    """The surface of a CTA-pair GEMM step (this one and kernels.cta_pair_clc_gemm)."""
    return GemmHost(
        name,
        NEEDS,
        lambda types, config, arch, a_major, b_major: kernel_class(types, config),
        config_type,
        OPERANDS,
    )


GEMM = pair_gemm_host("cta_pair_gemm", CtaPairGemm, Config)


# compile(dtype, config, out_dtype=) / artifacts(arch, dtype, config, out_dtype=) /
# run(a, b, out, config) / prepare(problem, config) / footprint(dtype, config): the step's
# surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare
footprint = GEMM.footprint


if __name__ == "__main__":
    raise SystemExit(selftest.gemm_main(GEMM, "cta_pair_gemm", sizes=(4096, 8192)))
