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

pdl (notebook 13): programmatic dependent launch; the grid may start while the kernel before
it in the stream finishes, and every thread waits (griddepcontrol.wait) for that kernel's
grid to complete before the roles touch A, B or C.
a_l2 / b_l2 (notebook 13): an L2 eviction priority on A's or B's TMA loads ("first" or "last");
none by default, and none of them made the kernel faster.

PRESETS names the ladder's steps; `Config()` is the final kernel. `pingpong_2x2` is an
experiment that did not pay: it multicasts both operands, but clusters of 4 leave 12 of an
H100's 132 SMs idle (notebook 11 shows the counters).
Operands as in notebooks 07 and 10: A (M,K), B (N,K) K-major, C (M,N) row-major.
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

from . import selftest
from . import sm90_parts as parts
from .gemm_host import HALF_TYPES, GemmHost, GemmTypes, LaunchExtra, gemm_tensors, host_int32
from .gemm_host import stage_bytes, tile_k
from .host import KernelInputError, max_active_clusters, smem_capacity
from .sm80_gemm import store_tile
from .sm90_parts import SWIZZLE_ALIGN, ChunkStore, OperandTma, OutputC, SharedTiles
from .sm90_parts import SmemLayouts, staged_smem_layout, wgmma_tiled_mma

NEEDS = "sm_90a"
DTYPES = HALF_TYPES
TILE_M = 128  # rows of a CTA tile: two consumer warpgroups of 64, or (pingpong) one of 128
CONSUMER_WARPGROUPS = 2
WARPGROUP_THREADS = 128
PRODUCER_REGS, CONSUMER_REGS = 40, 232
PRODUCER_LANES = 32  # the producer warp's lanes
BARRIER_RESERVE = 2048  # shared memory set aside for mbarriers (the ring's, a subclass's)
# Named barriers (bar.sync ids; id 0 is __syncthreads):
EPILOGUE_BARRIER = 1  # the consumer threads sharing a C chunk (pingpong: + warpgroup, ids 1-2)
MAINLOOP_TURN_BARRIER = 3  # pingpong: warpgroup w waits on id 3 + w for its turn (ids 3-4)
BARRIERS = (EPILOGUE_BARRIER, MAINLOOP_TURN_BARRIER)
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
    # programmatic dependent launch: this grid may start while the previous kernel in the
    # stream finishes (its prologue under that kernel's tail); griddepcontrol.wait holds
    # every thread until the previous grid completed and its memory is visible
    pdl: bool = False

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
    def cluster_mnk(self) -> tuple[int, int, int]:
        """The cluster's shape in CTAs along M, N and K (all of K in each CTA here)."""
        return (self.cluster_m, self.cluster_n, 1)

    @property
    def cluster_size(self) -> int:
        cm, cn, ck = self.cluster_mnk
        return cm * cn * ck

    def extra_smem_bytes(self) -> int:
        """Shared memory the kernel takes beside the ring and the epilogue: none here."""
        return 0

    def stage_extra_bytes(self) -> int:
        """Bytes a ring stage holds beside its A and B tiles (a step's own per-k-tile data,
        written by the producer with them): none here."""
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
        ) // (stage_bytes(TILE_M, self.tile_n) + self.stage_extra_bytes())
        if fit < 2 or self.stages > fit:
            extra = self.stage_extra_bytes()
            own = f" (and {extra} bytes of the step's own data each)" if extra else ""
            raise KernelInputError(
                f"{self.stages or 'two'} stages of {TILE_M}x{self.tile_n} tiles{own} do not fit in "
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


class HopperGemm:
    """The kernel for one (A/B, accumulator and C types, Config): a producer warpgroup and
    two consumer warpgroups, written role by role from kernels.sm90_parts."""

    def __init__(self, types: GemmTypes, config: Config, arch: str = "sm_90a"):
        # configuration
        self.ab_dtype, self.acc_dtype, self.c_dtype = types
        self.cfg = config
        # derived, all in one place
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
        self.l2_policies = parts.L2Policies(L2_POLICIES[config.a_l2], L2_POLICIES[config.b_l2])

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
        max_clusters: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        self.launch(mA, mB, mC, max_clusters, stream, inputs=())

    @cute.jit
    def launch(
        self,
        mA: cute.Tensor,
        mB: cute.Tensor,
        mC: cute.Tensor,
        max_clusters: cutlass.Int32,
        stream: cuda.CUstream,
        inputs: tuple,
    ):
        """The host side after the operands' tensors: tensor maps, the tiled MMA, the grid.
        `inputs`: the step's own operands beside A, B and C, for its consumer (none here)."""
        cfg = self.cfg
        m, n = mC.shape
        layouts = SmemLayouts(
            sA=staged_smem_layout(self.ab_dtype, TILE_M, self.stages),
            sB=staged_smem_layout(self.ab_dtype, cfg.tile_n, self.stages),
            sC=sm90_utils.make_smem_layout_epi(
                self.c_dtype,
                cutlass.tensor_utils.LayoutEnum.ROW_MAJOR,
                self.epi_tile,
                cfg.epi_buffers,
            ),
        )
        tma_a, tA = cute.nvgpu.cpasync.make_tiled_tma_atom(
            load_op(cfg.cluster_n),
            mA,
            cute.slice_(layouts.sA, (None, None, 0)),
            (TILE_M, self.tile_k),
            num_multicast=cfg.cluster_n,
        )
        tma_b, tB = cute.nvgpu.cpasync.make_tiled_tma_atom(
            load_op(cfg.cluster_m),
            mB,
            cute.slice_(layouts.sB, (None, None, 0)),
            (cfg.tile_n, self.tile_k),
            num_multicast=cfg.cluster_m,
        )
        tma_c, tC = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(),
            mC,
            cute.slice_(layouts.sC, (None, None, 0)),
            self.epi_tile,
        )
        tiled_mma = self.make_tiled_mma()

        tiles_m = (m + TILE_M - 1) // TILE_M
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        cluster_rows = (tiles_m + cfg.cluster_m - 1) // cfg.cluster_m
        cluster_cols = (tiles_n + cfg.cluster_n - 1) // cfg.cluster_n
        clusters = self.grid_clusters(cluster_rows, cluster_cols, max_clusters)
        self.kernel(
            OperandTma(tma_a, tA, tma_b, tB),
            OutputC(tma_c, tC, mC),
            tiled_mma,
            layouts,
            cluster_rows,
            cluster_cols,
            inputs,
        ).launch(
            grid=[clusters * cfg.cluster_size, 1, 1],
            block=[cfg.threads, 1, 1],
            cluster=[cfg.cluster_size, 1, 1],
            smem=self.smem_capacity,
            min_blocks_per_mp=1,
            stream=stream,
            use_pdl=cfg.pdl,
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

    # ------------------------------------------------------------ device
    @cute.kernel
    def kernel(
        self,
        operands: OperandTma,
        out: OutputC,
        tiled_mma: cute.TiledMma,
        layouts: SmemLayouts,
        cluster_rows: cutlass.Int32,
        cluster_cols: cutlass.Int32,
        inputs: tuple,
    ):
        cfg = self.cfg
        tidx, _, warp = parts.cta_coordinates()
        warpgroup = warp // 4
        parts.prefetch_descriptors(warp, (operands.tma_a, operands.tma_b, out.tma_c))
        place = parts.cluster_place(cfg.cluster_mnk)

        smem = SmemAllocator()
        barriers, shared = parts.allocate_shared_tiles(
            smem, self.ab_dtype, self.c_dtype, layouts, self.stages
        )
        inputs = self.stage_inputs(smem, inputs, out.mC.shape)
        ring = parts.make_cluster_ring(
            barriers,
            self.stages,
            self.tx_bytes,
            self.stage_readers,
            cfg.cluster_mnk,
            stage_writers=self.stage_writers,
        )
        loads, k_tiles = parts.multicast_k_tiles(
            operands, shared, (TILE_M, cfg.tile_n, self.tile_k), place, cfg.cluster_mnk
        )
        parts.wait_for_cluster_init(cfg.cluster_mnk)
        # region pdl
        if cutlass.const_expr(cfg.pdl):
            # the next kernel may launch now (a hint: it waits in its own griddepcontrol.wait);
            # this one touches A, B and C, which the previous kernel may write, only after
            # the previous grid is complete
            cute.arch.griddepcontrol_launch_dependents()
            cute.arch.griddepcontrol_wait()
        # endregion pdl

        cluster_id, clusters = parts.clusters_in_grid(cfg.cluster_size)
        schedule = parts.TileSchedule(
            cluster_id=cluster_id,
            clusters=clusters,
            work=self.work_items(cluster_rows, cluster_cols, clusters),
            cluster_rows=cluster_rows,
            cluster_cols=cluster_cols,
            place=place,
            cluster_mn=(cfg.cluster_m, cfg.cluster_n),
            group_m=cfg.group_m,
        )

        # region roles
        if warpgroup == 0:  # ----------------------------------------- producer
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp == 0:
                parts.stream_k_tiles(
                    ring,
                    loads,
                    schedule,
                    work_of=parts.whole_k_work,
                    k_tiles=k_tiles,
                    stages=self.stages,
                    cluster_mnk=cfg.cluster_mnk,
                    policies=self.l2_policies,
                    also=self.stage_extra,
                    also_inputs=inputs,
                )
        else:  # ----------------------------------------------------------- consumers
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            self.consumer_role(
                tiled_mma,
                ring,
                shared,
                out,
                schedule,
                k_tiles=k_tiles,
                warp=warp,
                wg=warpgroup - 1,
                ctid=tidx - WARPGROUP_THREADS,
                inputs=inputs,
            )
        # endregion roles

    def make_tiled_mma(self) -> cute.TiledMma:
        """This configuration's wgmma tiled MMA: an atom per consumer warpgroup stacked along
        M (pingpong: one, each warpgroup its own tile)."""
        warpgroups = 1 if self.cfg.pingpong else CONSUMER_WARPGROUPS
        return wgmma_tiled_mma(self.ab_dtype, self.acc_dtype, warpgroups, self.cfg.tile_n)

    def stage_inputs(self, smem: SmemAllocator, inputs: tuple, c_shape) -> tuple:
        """The step's operands as its roles see them, with any shared memory the producer
        fills per ring stage (`stage_extra_bytes`) allocated beside the ring (C of
        `c_shape`): unchanged here."""
        return inputs

    # what the producer writes into a stage beside A and B, a jit method called as
    # stage_extra(inputs, work, kt, stage, full_barrier) by its whole warp: nothing here
    stage_extra = None

    @property
    def stage_writers(self) -> int:
        """Arrivals that fill one stage: the producer's expect_tx, and where the step writes
        its own data into the stage (`stage_extra`), one cp.async.mbarrier.arrive.noinc per
        lane of the producer warp."""
        return 1 + (PRODUCER_LANES if self.stage_extra is not None else 0)

    @cute.jit
    def consumer_role(
        self,
        tiled_mma: cute.TiledMma,
        ring: pipeline.PipelineTmaAsync,
        shared: SharedTiles,
        out: OutputC,
        schedule: parts.TileSchedule,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        wg: cutlass.Int32,
        ctid: cutlass.Int32,
        inputs: tuple,
    ):
        """Consumer warpgroup `wg` (0 or 1; `ctid` the thread's index among the consumer
        threads): tile by tile, the mainloop over the ring, then the epilogue.
        Cooperative: both warpgroups share every tile (64 rows each); pingpong: each takes
        every other tile and they take turns at the mainloop (sm90_parts.Turns)."""
        cfg = self.cfg
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        me = parts.consumer_pieces(self, tiled_mma, shared, out.mC, wg, warp, ctid, BARRIERS)
        item, read, release = parts.first_item(me.turn, schedule, read, release, k_tiles)
        done = cutlass.Int32(0)
        while item < schedule.work:
            work = parts.whole_k_work(schedule, item, k_tiles)
            parts.start_tile(tiled_mma, me.mma.acc, me.turn, done)
            read, release = parts.mainloop(tiled_mma, me.mma, ring, read, release, work.k_count)
            read, release = parts.end_mainloop(
                ring, read, release, me.turn, item, schedule, k_tiles
            )
            self.store_tile(out, shared, me, work, done)
            done += 1
            item += me.turn.step * schedule.clusters
        if cutlass.const_expr(cfg.tma_store):
            me.writer.stores.producer_tail()

    @cute.jit
    def store_tile(
        self,
        out: OutputC,
        shared: SharedTiles,
        me: parts.Consumer,
        work: parts.Work,
        done: cutlass.Int32,
    ):
        """The epilogue of one tile, chunk by chunk through `store_chunk` (`done` tiles of
        this warpgroup before it: the staging buffers go round across tiles)."""
        epi = parts.chunk_store(
            out,
            shared.sC,
            me.writer,
            me.group,
            tile=self.tile,
            tile_row=work.tile_row,
            tile_col=work.tile_col,
            epi_tile=self.epi_tile,
            tma_store=self.cfg.tma_store,
        )
        parts.store_accumulator(
            me.writer,
            epi,
            store_chunk=self.store_chunk,
            c_dtype=self.c_dtype,
            chunk_grid=self.chunk_grid,
            first_buf=me.group.first_buf,
            tiles_done=done,
            epi_stages=self.cfg.epi_stages,
        )

    @property
    def chunk_grid(self) -> tuple[int, int]:
        """A tile's epilogue chunks, (rows, columns) of them."""
        return (TILE_M // self.epi_tile[0], self.cfg.tile_n // self.cfg.epi_n)

    @cute.jit
    def store_chunk(
        self,
        chunk: cute.Tensor,
        buf: cutlass.Int32,
        coord: cutlass.Constexpr,
        epi: ChunkStore,
        stores: pipeline.PipelineTmaStore,
    ):
        """One converted chunk of the accumulator: registers -> staging buffer `buf` of shared
        memory (stmatrix) -> chunk `coord` (row, column) of C's tile; `stores` commits and waits
        for the TMA stores' bulk groups. Notebook 11's exercise writes this method."""
        cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
        if cutlass.const_expr(self.cfg.tma_store):
            # region tma-store
            # stmatrix writes must be visible to the TMA unit (async proxy)
            cute.arch.fence_proxy("async.shared", space="cta")
            epi.chunk_sync.arrive_and_wait()
            if epi.warp == epi.store_warp:
                cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, coord])
                stores.producer_commit()
                stores.producer_acquire()  # bound the stores in flight
            epi.chunk_sync.arrive_and_wait()
            # endregion tma-store
        else:  # every consumer thread copies 16-byte pieces, predicated at the edges
            epi.chunk_sync.arrive_and_wait()
            store_tile(
                epi.copy_chunk,
                epi.sC[None, None, buf],
                epi.gC_chunks[(None, None), coord],
                epi.cC_chunks[(None, None), coord],
                epi.shape,
                epi.tid,
            )
            epi.chunk_sync.arrive_and_wait()


# ------------------------------------------------------------------ the surface


def _persistent_grid(a: torch.Tensor, config: Config) -> tuple:
    """Clusters that can be resident at once on the operands' GPU (one CTA per SM, all of
    its shared memory): the persistent grid."""
    device = a.device.index if a.device.index is not None else torch.cuda.current_device()
    return (host_int32(max_active_clusters(device, config.cluster_size)),)


# the persistent kernels' one extra argument, max_clusters: 1 to compile with, the GPU's
# count of resident clusters to launch with
PERSISTENT_GRID = LaunchExtra(lambda config: (host_int32(1),), _persistent_grid)

GEMM = GemmHost(
    "hopper_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: HopperGemm(types, config, arch),
    Config,
    extra=PERSISTENT_GRID,
)


# compile(dtype, config) / artifacts(arch, dtype, config) / run(a, b, out, config): the
# step's surface, from kernels.gemm_host
compile, artifacts, run = GEMM.compile, GEMM.artifacts, GEMM.run


def prepare(problem, config: Config = Config(), preset: str | None = None):
    """For a benchmark: compile once for `problem` (a preset names a step of the ladder)."""
    return GEMM.prepare(problem, PRESETS[preset] if preset is not None else config)


if __name__ == "__main__":
    raise SystemExit(selftest.presets_main(GEMM, PRESETS, sizes=(4096, 8192)))
