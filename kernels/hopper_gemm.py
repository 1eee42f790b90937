"""Notebook 11: the Hopper speed-of-light GEMM, one idea at a time.

Starting from notebook 10's TMA + WGMMA kernel, each Config flag adds one idea:

  specialization (always on here): warpgroup 0 only moves data -- one elected
      thread issues the TMA loads -- and gives its registers away (setmaxnreg 40);
      warpgroups 1-2 only do math and take them (setmaxnreg 232), cooperating on
      a 128 x 256 tile. Loads no longer wait behind the math that issues them.
  persistent: one CTA per SM walks many tiles (tile += clusters in the grid) in a
      grouped order, so launch and prologue costs are paid once, the ring stays
      full across tile boundaries, and CTAs running together share L2 panels.
  cluster_m=2: two CTAs on neighbouring SMs compute vertically adjacent tiles.
      They need the same B tile, so each loads half of it and TMA *multicasts*
      both halves into both CTAs' shared memory: B traffic from L2 halves. A
      consumer must then release a stage to both CTAs' producers.
  cluster_n=2: the same for A, between CTAs computing horizontally adjacent tiles
      (a 2 x 2 cluster multicasts both operands; a consumer releases a stage to
      the CTAs of its row and of its column).
  tma_store: the epilogue converts the accumulator and writes it to shared memory
      in 128 x 32 chunks (stmatrix) either way; with tma_store one thread hands each
      chunk to TMA, which stores it asynchronously while the next chunk is prepared,
      instead of all consumer threads copying it out 16 bytes at a time.
  pingpong: the two consumer warpgroups stop sharing a tile; each takes every
      other tile (128 x 128) of the CTA's sequence. Their k-tiles arrive one tile
      after the other through the same ring, so while one warpgroup runs its
      epilogue the other keeps the tensor cores busy with the next mainloop.

a_l2 / b_l2 (notebook 13): an L2 eviction priority on A's or B's TMA loads ("first" or "last");
none by default, and none of them made the kernel faster.

PRESETS names the ladder's steps; `Config()` is the final kernel. `pingpong_2x2` is an
experiment that did not pay: it multicasts both operands, but clusters of 4 leave 12 of an
H100's 132 SMs idle (notebook 11 shows the counters).
Operands as in notebooks 07 and 10: A (M,K), B (N,K) K-major, C (M,N) row-major.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
import torch
from cutlass.memory.smem import SmemAllocator

from . import selftest
from .gemm_host import HALF_TYPES, GemmHost, GemmTypes, LaunchExtra, gemm_tensors, host_int32
from .gemm_host import stage_bytes, tile_k
from .host import KernelInputError, max_active_clusters, smem_capacity
from .sm80_gemm import grouped_tile, row_copy, store_tile
from .sm90_parts import BARRIER_BYTES, SWIZZLE_ALIGN, cta_coordinates, prefetch_descriptors
from .sm90_parts import make_tma_ring, staged_smem_layout, wgmma_tiled_mma

NEEDS = "sm_90a"
DTYPES = HALF_TYPES
TILE_M = 128  # rows of a CTA tile: two consumer warpgroups of 64, or (pingpong) one of 128
CONSUMER_WARPGROUPS = 2
WARPGROUP_THREADS = 128
PRODUCER_REGS, CONSUMER_REGS = 40, 232
BARRIER_RESERVE = 2048  # shared memory set aside for mbarriers (the ring's, a subclass's)
# Named barriers (bar.sync ids; id 0 is __syncthreads):
EPILOGUE_BARRIER = 1  # the consumer threads sharing a C chunk (pingpong: + warpgroup, ids 1-2)
MAINLOOP_TURN_BARRIER = 3  # pingpong: warpgroup w waits on id 3 + w for its turn (ids 3-4)
# An L2 eviction priority for a TMA load: the 64-bit cache policy that PTX's createpolicy
# makes (the values of CUTLASS's CacheHintSm90). "normal" passes none.
L2_POLICIES = {"normal": None, "first": 0x12F0000000000000, "last": 0x14F0000000000000}


def load_op(sharers: int):
    """The TMA load of an operand tile that `sharers` CTAs of a cluster need: a multicast
    load (each loads 1/sharers of it, for all) when shared, else a plain one."""
    if sharers > 1:
        return cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp()
    return cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()


@dataclass(frozen=True)
class Config:
    tile_n: int = 256  # the CTA tile is TILE_M x tile_n (pingpong: each warpgroup's tile)
    cluster_m: int = 2  # CTAs per cluster along M (they share, and multicast, B)
    cluster_n: int = 1  # CTAs per cluster along N (they share, and multicast, A)
    persistent: bool = True
    tma_store: bool = True
    group_m: int = 8  # tile order: clusters walk groups of tile rows column by column
    stages: int = 0  # 0: as many as fit in shared memory; more than fit is refused
    epi_n: int = 32  # epilogue chunk width
    epi_stages: int = 4  # TMA-store buffers in flight (per consumer warpgroup)
    pingpong: bool = False  # consumer warpgroups on alternate tiles, not one shared tile
    a_l2: str = "normal"  # L2 eviction priority of A's loads: "normal", "first" or "last"
    b_l2: str = "normal"  # the same for B's

    def __post_init__(self):
        if self.pingpong and self.tile_n > 128:
            raise ValueError("pingpong tiles are at most 128 x 128 (a warpgroup's registers)")
        if self.tile_n % 32 or not 64 <= self.tile_n <= 256:
            raise ValueError("tile_n must be a multiple of 32 in [64, 256]")
        if self.cluster_m not in (1, 2, 4) or self.cluster_n not in (1, 2, 4):
            raise ValueError("cluster_m and cluster_n must be 1, 2 or 4")
        if self.cluster_size > 4:
            raise ValueError("at most 4 CTAs per cluster (cluster_m * cluster_n)")
        if self.tile_n % self.epi_n:
            raise ValueError("epi_n must divide tile_n")
        if self.stages == 1 or self.stages < 0:
            raise ValueError("stages: 0 (as many as fit) or at least 2")
        if {self.a_l2, self.b_l2} - set(L2_POLICIES):
            raise ValueError(f"a_l2 and b_l2 must be one of {sorted(L2_POLICIES)}")

    @property
    def tile_m(self) -> int:
        """Rows of the CTA tile: always TILE_M (the consumer warpgroups' accumulators)."""
        return TILE_M

    @property
    def cluster_split(self) -> int:
        """CTAs of a cluster that compute one tile together, each over a part of K: 1 here
        (a subclass splits K)."""
        return 1

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n * self.cluster_split

    def extra_smem_bytes(self) -> int:
        """Shared memory a subclass's kernel takes beside the ring and the epilogue: none."""
        return 0

    @property
    def threads(self) -> int:
        return WARPGROUP_THREADS * (1 + CONSUMER_WARPGROUPS)

    @property
    def epi_tile(self) -> tuple[int, int]:
        """One TMA-store chunk: a warpgroup's 64 rows when pingpong, else the tile's."""
        return (TILE_M // CONSUMER_WARPGROUPS if self.pingpong else TILE_M, self.epi_n)

    @property
    def epi_buffers(self) -> int:
        return self.epi_stages * (CONSUMER_WARPGROUPS if self.pingpong else 1)

    def epi_bytes(self, c_bytes: int) -> int:
        rows, cols = self.epi_tile
        return self.epi_buffers * rows * cols * c_bytes

    def ring_stages(self, c_bytes: int, arch: str = "sm_90a") -> int:
        """`stages`, or (stages = 0) as many as fit in `arch`'s shared memory beside the
        epilogue's buffers (C in elements of `c_bytes`), the swizzle's alignment and the
        barriers. A ring deeper than fits, or not even two stages, is refused."""
        fit = (
            smem_capacity(arch)
            - self.epi_bytes(c_bytes)
            - self.extra_smem_bytes()
            - SWIZZLE_ALIGN
            - BARRIER_RESERVE
        ) // stage_bytes(TILE_M, self.tile_n)
        if fit < 2 or self.stages > fit:
            raise KernelInputError(
                f"{self.stages or 'two'} stages of {TILE_M}x{self.tile_n} tiles do not fit in "
                f"{arch}'s shared memory beside {self.epi_bytes(c_bytes)} bytes of epilogue "
                f"buffers: {fit} do"
            )
        return self.stages or fit


PRESETS: dict[str, Config] = {
    "specialized": Config(persistent=False, cluster_m=1, tma_store=False),
    "persistent": Config(cluster_m=1, tma_store=False),
    "cluster": Config(tma_store=False),
    "tma_store": Config(),
    "pingpong": Config(tile_n=128, pingpong=True, epi_stages=2),
    "pingpong_2x2": Config(tile_n=128, pingpong=True, epi_stages=2, cluster_n=2),
}


class Schedule(NamedTuple):
    """Which tiles a CTA computes: its cluster takes work items cluster_id, cluster_id +
    clusters, ... of `work` blocks of cluster_m x cluster_n tiles (in the grouped order of
    cluster_rows x cluster_cols blocks); the CTA takes tile (rm, rn) of each block."""

    cluster_id: cutlass.Int32
    clusters: cutlass.Int32
    work: cutlass.Int32
    cluster_rows: cutlass.Int32
    cluster_cols: cutlass.Int32
    rm: cutlass.Int32  # this CTA's place in its cluster (rank = rm + rn * cluster_m)
    rn: cutlass.Int32
    split: cutlass.Int32  # which part of K this CTA adds up (0 unless a subclass splits K)


class SharedTiles(NamedTuple):
    """This CTA's shared memory: the A and B rings, C's staging buffers, and what a
    subclass allocated (`allocate_shared`)."""

    sA: cute.Tensor  # (bM, bK, STAGE)
    sB: cute.Tensor  # (bN, bK, STAGE)
    sC: cute.Tensor  # (EPI_M, EPI_N, buffer)
    more: tuple


class Work(NamedTuple):
    """One work item of a CTA: its tile of C and the k-tiles it adds up (all of them here;
    a part of them when a subclass splits K; never none: the consumers release the last
    k-tile's stage after their loop)."""

    tile_row: cutlass.Int32
    tile_col: cutlass.Int32
    k_first: cutlass.Int32
    k_count: cutlass.Int32


class COut(NamedTuple):
    """Where C goes: the tensor (16-byte stores), and its TMA atom and coordinates."""

    mC: cute.Tensor  # (M, N)
    tma_c: cute.CopyAtom
    mC_tma: cute.Tensor  # (M, N) as TMA coordinates


class HopperGemm:
    def __init__(self, types: GemmTypes, config: Config, arch: str = "sm_90a"):
        self.ab_dtype, self.acc_dtype, self.c_dtype = types
        self.cfg = config
        self.smem_capacity = smem_capacity(arch)  # the kernel takes all of it
        self.stages = config.ring_stages(self.c_dtype.width // 8, arch)
        self.tile = (TILE_M, config.tile_n)
        self.tile_k = tile_k(self.ab_dtype.width)
        self.epi_tile = config.epi_tile
        # bytes landing in THIS CTA's stage: its whole A and B tiles (parts of them
        # multicast by partner CTAs when clustered)
        self.tx_bytes = stage_bytes(TILE_M, config.tile_n)
        # warps that read (and so release) one stage: one warpgroup's when pingpong
        self.stage_readers = 4 * (1 if config.pingpong else CONSUMER_WARPGROUPS)

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, max_clusters: cutlass.Int32,
                 stream: cuda.CUstream):  # fmt: skip
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        self.launch_tiles(mA, mB, mC, max_clusters, stream, ())

    @cute.jit
    def launch_tiles(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
                     max_clusters: cutlass.Int32, stream: cuda.CUstream, extra: tuple):  # fmt: skip
        """The host side after the operands' tensors: tensor maps, the tiled MMA, the grid.
        `extra`: tensors a subclass's kernel reads besides A, B and C (none here)."""
        cfg = self.cfg
        m, n = mC.shape
        sA_layout = staged_smem_layout(self.ab_dtype, TILE_M, self.stages)
        sB_layout = staged_smem_layout(self.ab_dtype, cfg.tile_n, self.stages)
        sC_layout = sm90_utils.make_smem_layout_epi(
            self.c_dtype, cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, self.epi_tile, cfg.epi_buffers
        )

        tma_a, tA = cute.nvgpu.cpasync.make_tiled_tma_atom(
            load_op(cfg.cluster_n),
            mA,
            cute.slice_(sA_layout, (None, None, 0)),
            (TILE_M, self.tile_k),
            num_multicast=cfg.cluster_n,
        )
        tma_b, tB = cute.nvgpu.cpasync.make_tiled_tma_atom(
            load_op(cfg.cluster_m),
            mB,
            cute.slice_(sB_layout, (None, None, 0)),
            (cfg.tile_n, self.tile_k),
            num_multicast=cfg.cluster_m,
        )
        tma_c, tC = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(),
            mC,
            cute.slice_(sC_layout, (None, None, 0)),
            self.epi_tile,
        )

        tiled_mma = wgmma_tiled_mma(
            self.ab_dtype, self.acc_dtype, 1 if cfg.pingpong else CONSUMER_WARPGROUPS, cfg.tile_n
        )

        tiles_m = (m + TILE_M - 1) // TILE_M
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        cluster_rows = (tiles_m + cfg.cluster_m - 1) // cfg.cluster_m
        cluster_cols = (tiles_n + cfg.cluster_n - 1) // cfg.cluster_n
        clusters = self.grid_clusters(cluster_rows, cluster_cols, max_clusters)
        self.kernel(
            tma_a,
            tA,
            tma_b,
            tB,
            tma_c,
            tC,
            mC,
            tiled_mma,
            sA_layout,
            sB_layout,
            sC_layout,
            cluster_rows,
            cluster_cols,
            extra,
        ).launch(
            grid=[clusters * cfg.cluster_size, 1, 1],
            block=[cfg.threads, 1, 1],
            cluster=[cfg.cluster_size, 1, 1],
            smem=self.smem_capacity,
            min_blocks_per_mp=1,
            stream=stream,
        )

    @cute.jit
    def grid_clusters(
        self, cluster_rows: cutlass.Int32, cluster_cols: cutlass.Int32, max_clusters: cutlass.Int32
    ) -> cutlass.Int32:
        """Clusters to launch: one per work item, or (persistent) as many as can be resident."""
        clusters = self.work_items(cluster_rows, cluster_cols, max_clusters)
        if cutlass.const_expr(self.cfg.persistent):
            clusters = cutlass.min(clusters, max_clusters)
        return clusters

    @cute.jit
    def work_items(
        self, cluster_rows: cutlass.Int32, cluster_cols: cutlass.Int32, clusters: cutlass.Int32
    ) -> cutlass.Int32:
        """Work items of a grid of `clusters`: blocks of cluster_m x cluster_n tiles."""
        return cluster_rows * cluster_cols

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               tma_c: cute.CopyAtom, mC_tma: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
               sC_layout: cute.ComposedLayout, cluster_rows: cutlass.Int32,
               cluster_cols: cutlass.Int32, extra: tuple):  # fmt: skip
        cfg = self.cfg
        tidx, _, warp = cta_coordinates()
        warpgroup = warp // 4
        prefetch_descriptors(warp, (tma_a, tma_b, tma_c))
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        # this CTA's place in its cluster_m x cluster_n block of tiles (rank = rm + rn * cm)
        rm, rn = rank % cfg.cluster_m, (rank // cfg.cluster_m) % cfg.cluster_n
        split = rank // (cfg.cluster_m * cfg.cluster_n)  # 0 unless a subclass splits K
        cluster_layout = cute.make_layout((cfg.cluster_m, cfg.cluster_n, cfg.cluster_split))

        smem = SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, 2 * self.stages, byte_alignment=BARRIER_BYTES)
        sA = smem.allocate_tensor(self.ab_dtype, sA_layout.outer, SWIZZLE_ALIGN, sA_layout.inner)
        sB = smem.allocate_tensor(self.ab_dtype, sB_layout.outer, SWIZZLE_ALIGN, sB_layout.inner)
        sC = smem.allocate_tensor(self.c_dtype, sC_layout.outer, SWIZZLE_ALIGN, sC_layout.inner)
        more = self.allocate_shared(smem, tidx)

        # full[s]: the producer's expect_tx + tx_bytes; empty[s]: every consumer warp of
        # every CTA whose stage s this CTA's loads write into: its column (B multicast)
        # and its row (A multicast), itself counted once
        ring = make_tma_ring(
            barriers,
            self.stages,
            self.tx_bytes,
            self.stage_readers * (cfg.cluster_m + cfg.cluster_n - 1),
            cta_layout_vmnk=cute.make_layout((1, cfg.cluster_m, cfg.cluster_n, cfg.cluster_split)),
            defer_sync=True,
        )
        cluster_mn = (cfg.cluster_m * cfg.cluster_split, cfg.cluster_n)
        pipeline.pipeline_init_arrive(cluster_shape_mn=cluster_mn, is_relaxed=True)

        # per-CTA views of the operands: all k-tiles of every tile row / column
        # gA (bM, bK, tiles_m, k_tiles), gB (bN, bK, tiles_n, k_tiles)
        gA = cute.local_tile(mA, (TILE_M, self.tile_k), (None, None))
        gB = cute.local_tile(mB, (cfg.tile_n, self.tile_k), (None, None))
        k_tiles = cute.size(gA, mode=[3])
        # region multicast-slices
        # A: this CTA loads slice rn of its tile and multicasts it along its cluster row;
        # B: slice rm, multicast along its cluster column (a slice is the whole tile when
        # that dimension of the cluster is 1).
        # tAsA ((TMA, REST), STAGE), tAgA ((TMA, REST), tiles_m, k_tiles); B's alike
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
            tma_a,
            rn,
            cute.make_layout(cfg.cluster_n),
            cute.group_modes(sA, 0, 2),
            cute.group_modes(gA, 0, 2),
        )
        tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
            tma_b,
            rm,
            cute.make_layout(cfg.cluster_m),
            cute.group_modes(sB, 0, 2),
            cute.group_modes(gB, 0, 2),
        )
        a_mask = cute.make_layout_image_mask(cluster_layout, (rm, rn, split), mode=1)
        b_mask = cute.make_layout_image_mask(cluster_layout, (rm, rn, split), mode=0)
        # endregion multicast-slices

        pipeline.pipeline_init_wait(cluster_shape_mn=cluster_mn)

        # the persistent schedule: cluster c takes work items c, c + clusters, ...
        clusters = cute.arch.grid_dim()[0] // cfg.cluster_size
        schedule = Schedule(
            cute.arch.block_idx()[0] // cfg.cluster_size,
            clusters,
            self.work_items(cluster_rows, cluster_cols, clusters),
            cluster_rows,
            cluster_cols,
            rm,
            rn,
            split,
        )

        # region producer
        if warpgroup == 0:  # ----------------------------------------- producer
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp == 0:
                state = pipeline.make_pipeline_state(
                    pipeline.PipelineUserType.Producer, self.stages
                )
                item = schedule.cluster_id
                while item < schedule.work:
                    work = self.cta_work(item, schedule, k_tiles)
                    for kt in range(work.k_first, work.k_first + work.k_count):
                        ring.producer_acquire(state)
                        bar = ring.producer_get_barrier(state)
                        self.load_operand(
                            tma_a,
                            tAgA[None, work.tile_row, kt],
                            tAsA[None, state.index],
                            bar,
                            a_mask,
                            cfg.cluster_n,
                            L2_POLICIES[cfg.a_l2],
                        )
                        self.load_operand(
                            tma_b,
                            tBgB[None, work.tile_col, kt],
                            tBsB[None, state.index],
                            bar,
                            b_mask,
                            cfg.cluster_m,
                            L2_POLICIES[cfg.b_l2],
                        )
                        state.advance()
                    item += schedule.clusters
                ring.producer_tail(state)  # do not exit while partners still read
        # endregion producer
        else:  # ----------------------------------------------------------- consumers
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            self.consume(
                tiled_mma,
                ring,
                SharedTiles(sA, sB, sC, more),
                COut(mC, tma_c, mC_tma),
                schedule,
                k_tiles,
                warp,
                warpgroup - 1,
                tidx - WARPGROUP_THREADS,
                extra,
            )
        self.before_exit()

    @cute.jit
    def before_exit(self):
        """Every thread's last step: nothing here (a subclass may wait for its cluster)."""
        pass

    @cute.jit
    def allocate_shared(self, smem: SmemAllocator, tidx: cutlass.Int32) -> tuple:
        """A subclass's own shared memory (its mbarriers initialized by thread `tidx` 0,
        before the cluster syncs): none here."""
        return ()

    @cute.jit
    def cta_work(self, item: cutlass.Int32, schedule: Schedule, k_tiles: cutlass.Int32) -> Work:
        """Work item -> this CTA's tile (row, column) of C: the cluster's block of tiles in
        the grouped order, then this CTA's place in the block; all `k_tiles` k-tiles."""
        row, col = grouped_tile(
            item, schedule.cluster_rows, schedule.cluster_cols, self.cfg.group_m
        )
        row = row * self.cfg.cluster_m + schedule.rm
        if cutlass.const_expr(self.cfg.cluster_n > 1):
            col = col * self.cfg.cluster_n + schedule.rn
        return Work(row, col, cutlass.Int32(0), k_tiles)

    @cute.jit
    def load_operand(
        self,
        tma: cute.CopyAtom,
        src: cute.Tensor,
        dst: cute.Tensor,
        bar: cute.Pointer,
        mask: cutlass.Int16,
        sharers: cutlass.Constexpr,
        policy: cutlass.Constexpr = None,
    ):
        """One operand's k-tile into stage `dst`, multicast to the CTAs that share it; with an
        L2 cache `policy` (L2_POLICIES) when one is given."""
        hint = {}
        if cutlass.const_expr(policy is not None):
            hint = {"cache_policy": cutlass.Int64(policy)}
        if cutlass.const_expr(sharers > 1):
            cute.copy(tma, src, dst, tma_bar_ptr=bar, mcast_mask=mask, **hint)
        else:
            cute.copy(tma, src, dst, tma_bar_ptr=bar, **hint)

    @cute.jit
    def consume(
        self,
        tiled_mma: cute.TiledMma,
        ring: pipeline.PipelineTmaAsync,
        smem: SharedTiles,
        out: COut,
        schedule: Schedule,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        wg: cutlass.Int32,
        ctid: cutlass.Int32,
        extra: tuple,
    ):
        """The math warpgroups: mainloop over the ring, then the epilogue, tile by tile.
        `wg` is the consumer warpgroup (0 or 1), `ctid` the thread's index among the
        consumer threads.

        cooperative: both warpgroups share every tile (64 rows each).
        pingpong: warpgroup `wg` takes the CTA's tiles wg, wg+2, ...; the k-tiles of
        the other warpgroup's tiles pass through the ring in between and are skipped.
        The warpgroups also take turns at the mainloop (an ordered pair of named
        barriers): one's epilogue overlaps the other's mainloop, and -- essential for
        correctness -- a warpgroup never waits on a stage more than one phase ahead of
        the ring (mbarrier waits only compare phase *parity*).
        """
        cfg = self.cfg
        mC, sC = out.mC, smem.sC
        # the thread's index within the MMA (one warpgroup's when pingpong)
        mma_tid = ctid % WARPGROUP_THREADS if cutlass.const_expr(cfg.pingpong) else ctid
        thr_mma = tiled_mma.get_slice(mma_tid)
        # smem descriptors tCrA (MMA, MMA_M, MMA_K, STAGE) and tCrB (MMA, MMA_N, MMA_K, STAGE);
        # the accumulator acc (MMA, MMA_M, MMA_N) in registers
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(smem.sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(smem.sB))
        acc = cute.make_rmem_tensor(
            thr_mma.partition_C(cute.local_tile(mC, self.tile, (0, 0))).shape, self.acc_dtype
        )
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)

        # epilogue pieces, built once: stmatrix from accumulator registers into a ring
        # of chunks of shared memory, TMA stores from there
        sync_threads = (
            WARPGROUP_THREADS
            if cutlass.const_expr(cfg.pingpong)
            else WARPGROUP_THREADS * CONSUMER_WARPGROUPS
        )
        chunk_sync = pipeline.NamedBarrier(
            barrier_id=EPILOGUE_BARRIER + (wg if cutlass.const_expr(cfg.pingpong) else 0),
            num_threads=sync_threads,
        )
        store_warp = 4 + 4 * wg if cutlass.const_expr(cfg.pingpong) else 4
        chunk_cols = cfg.tile_n // cfg.epi_n
        chunks = chunk_cols * (TILE_M // self.epi_tile[0])
        first_buf = wg * cfg.epi_stages if cutlass.const_expr(cfg.pingpong) else 0
        stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), self.c_dtype)
        r2s = cute.make_tiled_copy_S(
            sm90_utils.get_smem_store_op(
                cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, self.c_dtype, self.acc_dtype
            ),
            cute.make_tiled_copy_C_atom(stmatrix, tiled_mma),
        )
        thr_r2s = r2s.get_slice(mma_tid)
        tRS_sC = thr_r2s.partition_D(sC)  # (R2S, R2S_M, R2S_N, buffers)
        acc_r2s = r2s.retile(acc)  # (R2S, R2S_M, R2S_N): the accumulator as stmatrix sources
        chunk_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
        # one chunk of the accumulator and of C, (R2S, R2S_M, R2S_N)
        chunk_acc = cute.make_rmem_tensor(chunk_shape, self.acc_dtype)
        chunk_out = cute.make_rmem_tensor(chunk_shape, self.c_dtype)
        per_chunk = cute.size(chunk_acc)
        copy_chunk = row_copy(self.c_dtype, sync_threads, cfg.epi_n)
        mma_tid_all = ctid % sync_threads  # index among the threads sharing a chunk
        stores = pipeline.PipelineTmaStore.create(
            num_stages=cfg.epi_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, sync_threads),
        )

        # region turns
        my_turn = pipeline.NamedBarrier(
            barrier_id=MAINLOOP_TURN_BARRIER + wg, num_threads=2 * WARPGROUP_THREADS
        )
        your_turn = pipeline.NamedBarrier(
            barrier_id=MAINLOOP_TURN_BARRIER + 1 - wg, num_threads=2 * WARPGROUP_THREADS
        )
        step = 1
        item = schedule.cluster_id
        if cutlass.const_expr(cfg.pingpong):
            step = 2
            item = schedule.cluster_id + wg * schedule.clusters
            if wg == 1:  # the first tile's k-tiles belong to warpgroup 0
                for _ in range(k_tiles):
                    read.advance()
                    release.advance()
        # endregion turns
        done = cutlass.Int32(0)
        while item < schedule.work:
            work = self.cta_work(item, schedule, k_tiles)
            tile_row, tile_col = work.tile_row, work.tile_col
            acc.fill(0.0)
            tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
            if cutlass.const_expr(cfg.pingpong):
                # region wait-for-turn
                if wg == 1 or done > 0:  # wait until the other warpgroup's mainloop is done
                    my_turn.arrive_and_wait()
                # endregion wait-for-turn
            at = TileAt(thr_mma, tile_row, tile_col, mC.shape, extra, work, smem.more, ctid)
            into = self.k_tile_accumulator(acc)  # what the wgmmas add into (here: acc)
            for kt in range(work.k_count):
                ring.consumer_wait(read)
                self.mma_k_tile(tiled_mma, into, tCrA, tCrB, read.index)
                read.advance()
                if kt > 0:  # k-tile kt-1 has been read by the tensor cores
                    cute.nvgpu.warpgroup.wait_group(1)
                    ring.consumer_release(release)
                    release.advance()
                self.after_k_tile(acc, into, kt, work.k_count, at)
            if cutlass.const_expr(cfg.pingpong):
                if item + schedule.clusters < schedule.work:  # the other has a next tile
                    your_turn.arrive()
            cute.nvgpu.warpgroup.wait_group(0)
            ring.consumer_release(release)
            release.advance()
            if cutlass.const_expr(cfg.pingpong):  # skip the other warpgroup's tile
                for _ in range(k_tiles):
                    read.advance()
                    release.advance()
            self.finish_accumulator(acc, at)

            if self.stores_tile(at):  # (a subclass may leave a tile to another CTA)
                # epilogue: chunk by chunk, registers -> shared memory (stmatrix) -> C. This
                # tile gC (bM, bN); its TMA views bSG_sC (TMA, buffer) and bSG_gC (TMA, chunks);
                # gC_chunks and cC_chunks ((EPI_M, EPI_N), chunks), of values and coordinates
                gC = cute.local_tile(
                    out.mC_tma if cutlass.const_expr(cfg.tma_store) else mC,
                    self.tile,
                    (tile_row, tile_col),
                )
                bSG_sC, bSG_gC = cute.nvgpu.cpasync.tma_partition(
                    out.tma_c,
                    0,
                    cute.make_layout(1),
                    cute.group_modes(sC, 0, 2),
                    cute.zipped_divide(gC, self.epi_tile),
                )
                gC_chunks = cute.zipped_divide(gC, self.epi_tile)
                cC_chunks = cute.zipped_divide(
                    cute.local_tile(
                        cute.make_identity_tensor(mC.shape), self.tile, (tile_row, tile_col)
                    ),
                    self.epi_tile,
                )
                epi = ChunkStore(
                    r2s,
                    tRS_sC,
                    chunk_sync,
                    warp,
                    store_warp,
                    out.tma_c,
                    bSG_sC,
                    bSG_gC,
                    copy_chunk,
                    sC,
                    gC_chunks,
                    cC_chunks,
                    mC.shape,
                    mma_tid_all,
                )
                for e in cutlass.range_constexpr(chunks):
                    for v in cutlass.range_constexpr(per_chunk):
                        chunk_acc[v] = acc_r2s[e * per_chunk + v]
                    chunk_out.store(chunk_acc.load().to(self.c_dtype))
                    buf = first_buf + (done * chunks + e) % cfg.epi_stages
                    self.store_chunk(chunk_out, buf, (e // chunk_cols, e % chunk_cols), epi, stores)
            done += 1
            item += step * schedule.clusters
        if cutlass.const_expr(cfg.tma_store):
            stores.producer_tail()

    @cute.jit
    def k_tile_accumulator(self, acc: cute.Tensor) -> cute.Tensor:
        """Where a tile's wgmmas accumulate: `acc` itself here (a subclass may give a
        temporary accumulator that `after_k_tile` adds into `acc`)."""
        return acc

    @cute.jit
    def after_k_tile(
        self,
        acc: cute.Tensor,
        into: cute.Tensor,
        kt: cutlass.Int32,
        k_tiles: cutlass.Int32,
        at: TileAt,
    ):
        """After k-tile kt's wgmmas were issued (and k-tile kt-1's stage released): nothing
        here. `at` says where the tile lies, for a subclass that needs it."""
        pass

    @cute.jit
    def mma_k_tile(
        self,
        tiled_mma: cute.TiledMma,
        acc: cute.Tensor,
        tCrA: cute.Tensor,
        tCrB: cute.Tensor,
        stage: cutlass.Int32,
    ):
        """One k-tile's wgmmas (stage `stage` of the ring) into `acc`, as one group."""
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, stage], tCrB[None, None, kb, stage], acc)
        cute.nvgpu.warpgroup.commit_group()

    def stores_tile(self, at: TileAt):
        """Whether this CTA stores the tile it computed: always, here."""
        return True

    @cute.jit
    def finish_accumulator(self, acc: cute.Tensor, at: TileAt):
        """The accumulator once the mainloop's wgmmas retired, before the epilogue converts
        it: nothing to do here (a subclass scales it)."""
        pass

    @cute.jit
    def store_chunk(
        self,
        chunk: cute.Tensor,
        buf: cutlass.Int32,
        at: cutlass.Constexpr,
        epi: ChunkStore,
        stores: pipeline.PipelineTmaStore,
    ):
        """One converted chunk of the accumulator: registers -> staging buffer `buf` of shared
        memory (stmatrix) -> chunk `at` (row, column) of C's tile; `stores` commits and waits
        for the TMA stores' bulk groups. A separate method so that a subclass can replace it."""
        cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
        # region tma-store
        if cutlass.const_expr(self.cfg.tma_store):
            # stmatrix writes must be visible to the TMA unit (async proxy)
            cute.arch.fence_proxy("async.shared", space="cta")
            epi.chunk_sync.arrive_and_wait()
            if epi.warp == epi.store_warp:
                cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
                stores.producer_commit()
                stores.producer_acquire()  # bound the stores in flight
            epi.chunk_sync.arrive_and_wait()
        # endregion tma-store
        else:  # every consumer thread copies 16-byte pieces, predicated at the edges
            epi.chunk_sync.arrive_and_wait()
            store_tile(
                epi.copy_chunk,
                epi.sC[None, None, buf],
                epi.gC_chunks[(None, None), at],
                epi.cC_chunks[(None, None), at],
                epi.shape,
                epi.tid,
            )
            epi.chunk_sync.arrive_and_wait()


class TileAt(NamedTuple):
    """Where a consumer's accumulator lies in C, for the hooks of a subclass."""

    thr_mma: cute.core.ThrMma  # this thread's slice of the tiled MMA
    tile_row: cutlass.Int32
    tile_col: cutlass.Int32
    shape: tuple  # C's (M, N)
    extra: tuple  # the subclass's tensors (launch_tiles' `extra`)
    work: Work  # the work item (its k-tiles)
    more: tuple  # the subclass's shared memory (`allocate_shared`)
    ctid: cutlass.Int32  # the thread's index among the consumer threads


class ChunkStore(NamedTuple):
    """What storing one epilogue chunk needs, built by `consume` once per tile."""

    r2s: cute.TiledCopy  # stmatrix: registers -> shared memory
    tRS_sC: cute.Tensor  # this thread's stmatrix destinations, (R2S, R2S_M, R2S_N, buffer)
    chunk_sync: pipeline.NamedBarrier  # the consumer threads sharing a chunk
    warp: cutlass.Int32  # this thread's warp
    store_warp: cutlass.Int32  # the warp that issues the TMA stores
    tma_c: cute.CopyAtom  # TMA store: buffer b -> bSG_sC[None, b], chunk at -> bSG_gC[None, at]
    bSG_sC: cute.Tensor  # (TMA, buffer)
    bSG_gC: cute.Tensor  # (TMA, chunks)
    # without TMA stores: every consumer thread copies 16-byte pieces of buffer `buf`
    copy_chunk: cute.TiledCopy
    sC: cute.Tensor  # (EPI_M, EPI_N, buffer)
    gC_chunks: cute.Tensor  # ((EPI_M, EPI_N), chunks)
    cC_chunks: cute.Tensor  # ((EPI_M, EPI_N), chunks) of (m, n) coordinates
    shape: tuple
    tid: cutlass.Int32


# ------------------------------------------------------------------ the surface


def _persistent_grid(a: torch.Tensor, config: Config) -> tuple:
    """Clusters that can be resident at once on the operands' GPU (one CTA per SM, all of
    its shared memory): the persistent grid."""
    device = a.device.index if a.device.index is not None else torch.cuda.current_device()
    return (host_int32(max_active_clusters(device, config.cluster_size)),)


GEMM = GemmHost(
    "hopper_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: HopperGemm(types, config, arch),
    Config,
    extra=LaunchExtra(lambda config: (host_int32(1),), _persistent_grid),
)


# compile(dtype, config) / artifacts(arch, dtype, config) / run(a, b, out, config): the
# step's surface, from kernels.gemm_host
compile, artifacts, run = GEMM.compile, GEMM.artifacts, GEMM.run


def prepare(problem, config: Config = Config(), preset: str | None = None):
    """For a benchmark: compile once for `problem` (a preset names a step of the ladder)."""
    return GEMM.prepare(problem, PRESETS[preset] if preset is not None else config)


if __name__ == "__main__":
    raise SystemExit(selftest.presets_main(GEMM, PRESETS, sizes=(4096, 8192)))
