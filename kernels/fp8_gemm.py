"""Notebook 12: FP8 on Hopper -- notebook 11's kernel with float8 operands and their scales.

A and B in float8 (e4m3: 3 mantissa bits, to +-448; e5m2: 2 bits, to +-57344) hold a
tensor's values only after dividing them by a scale; the GEMM multiplies the scales back
in. Everything else is hopper_gemm's kernel (warp specialization, persistence, clusters,
the TMA ring and the TMA-store epilogue): a k-tile is still one 128-byte swizzle row, now
128 float8 wide, and one wgmma takes K = 32 (`gemm_host.tile_k`, `mma_k`). This step adds
the scales (`Config.scales`):

  "tensor": one float32 scale per operand, shapes (1,): C = (A . B^T) * a_scale * b_scale,
      multiplied into the accumulator before the epilogue converts it.
  "row": a_scale (M,) and b_scale (N,): C[m, n] = acc[m, n] * a_scale[m] * b_scale[n],
      in the same place.
  "block" (DeepSeek-V3's recipe): a_scale (M, ceil(K/128)) for 1 x 128 blocks of A,
      b_scale (ceil(N/128), ceil(K/128)) for 128 x 128 blocks of B. A scale changes every
      k-tile, so it cannot wait for the epilogue: each k-tile's wgmmas accumulate into a
      temporary fp32 accumulator, which is *promoted* once they retired --
      acc += tmp * a_scale[m, kt] * b_scale[n // 128, kt] -- and cleared. A CTA tile 256
      wide spans two blocks of B: each accumulator element reads its own column's block.
  promote_every ("tensor"/"row"): the same temporary accumulator, added into the main one
      (unscaled) every `promote_every` k-tiles: the tensor cores add fp8 products into
      their accumulator with fewer bits than fp32 (NVIDIA's 2xacc example), so a long K
      loses precision; promoting bounds how many k-tiles share that accumulator. None: no
      promotion.

  prefetch_scales ("block"): each k-tile's scales are loaded into registers that many
      k-tiles ahead of its promotion, instead of under the k-tile's own wgmmas.

  overlap_group ("block"): two temporary accumulators used in turn, the k-loop unrolled in
      groups of that many k-tiles: a k-tile is promoted while the next one's wgmmas run.

PRESETS names one configuration per mode, "block_prefetch", "block_staged" and
"block_overlapped" the steps measured after "block" (notebook 12 says what was tried and
what each step paid). A second accumulator
needs registers: a 128 x 256 tile's two (256 fp32 values a thread) do not fit, so the
promoting presets use 128 x 128 tiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import torch

from . import hopper_gemm, selftest
from .gemm_host import FLOAT8_TYPES, ExtraOperands, GemmHost, Operands, gemm_tensors, tile_k
from .fp8_scales import SCALE_BLOCK, SCALE_MODES, check_scales, dequantize, quantize, scale_shapes
from . import sm90_parts as parts
from .hopper_gemm import BARRIERS, HopperGemm
from .sm90_parts import OutputC, SharedTiles, TilePlace, accumulator_coordinates

NEEDS = hopper_gemm.NEEDS
DTYPES = FLOAT8_TYPES
C_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
MAX_PREFETCH = 4  # k-tiles of block scales held in registers ahead of their promotion
MAX_OVERLAP_GROUP = 8  # k-tiles of one unrolled group (overlap_group): code size
SCALE_BYTES = 4  # a float32 scale
LANES = hopper_gemm.PRODUCER_LANES  # the producer warp's lanes, which stage the scales
# release_sync "warpgroup": a named barrier per consumer warpgroup, the ids after the
# mainloop's turn barriers (hopper_gemm's 1-4): 5 + the warpgroup
SCALES_READ_BARRIER = hopper_gemm.MAINLOOP_TURN_BARRIER + hopper_gemm.CONSUMER_WARPGROUPS
RELEASE_SYNCS = ("warp", "warpgroup")


def b_blocks_per_tile(tile_n: int) -> int:
    """A bound on the 128-row blocks of B (of B's scales) one tile_n-wide tile spans: one
    more than it covers when tile_n is not a multiple of 128, where a tile may start
    mid-block (a 224-wide one can span three; a 192-wide one, starting at 0 or 64, two)."""
    return -(-tile_n // SCALE_BLOCK) + (1 if tile_n % SCALE_BLOCK else 0)


def tile_offsets(tile_n: int) -> tuple[int, ...]:
    """Where in a 128-column block of B a tile_n-wide tile can start (its left column mod
    128, over every tile column), 0 first: (0,) for multiples of 128, (0, 64) for 192."""
    return tuple(sorted({t * tile_n % SCALE_BLOCK for t in range(SCALE_BLOCK)}))


@dataclass(frozen=True)
class Config(hopper_gemm.Config):
    scales: str = "tensor"  # "tensor" | "row" | "block"
    promote_every: int | None = None  # tensor/row: k-tiles per promotion (None: never)
    # block scales: how many k-tiles ahead each k-tile's scales are loaded into registers
    # (0: under the k-tile's own wgmmas, as the exercise's after_k_tile loads them)
    prefetch_scales: int = 0
    # block scales: the producer stages each k-tile's scales in shared memory with its tiles
    stage_scales: bool = False
    # block scales: two temporary accumulators and the k-loop unrolled in groups of this
    # many k-tiles, each promoted while the next one's wgmmas run, all but a group's last
    # (promote_groups); 0: one k-tile at a time
    overlap_group: int = 0
    # stage_scales: how the lanes' reads of a stage's scales are ordered before its release
    # by one lane ("warp": bar.warp.sync; "warpgroup": a named barrier; scales_read)
    release_sync: str = "warp"

    def __post_init__(self):
        super().__post_init__()
        if self.scales not in SCALE_MODES:
            raise ValueError(f"scales must be one of {SCALE_MODES}, got {self.scales!r}")
        if self.promote_every is not None:
            if self.scales == "block":
                raise ValueError("block scales promote every k-tile: leave promote_every None")
            if self.promote_every < 1:
                raise ValueError("promote_every: None or at least 1 k-tile")
        if self.prefetch_scales and self.scales != "block":
            raise ValueError("prefetch_scales is for block scales (scales='block')")
        if not 0 <= self.prefetch_scales <= MAX_PREFETCH:
            raise ValueError(f"prefetch_scales: 0 to {MAX_PREFETCH} k-tiles ahead")
        if self.stage_scales and (self.scales != "block" or self.prefetch_scales):
            raise ValueError(
                "stage_scales is for block scales without prefetch_scales (a stage's scales "
                "are there only once its full barrier completes)"
            )
        if self.overlap_group and (self.scales != "block" or self.prefetch_scales or self.pingpong):
            # (unscaled, promote_every=1, it ran at 44% of the tensorwise kernel on an H200:
            # ptxas moves the additions in among the next k-tile's wgmmas; pingpong's turns
            # are end_mainloop's, which promote_groups does without)
            raise ValueError(
                "overlap_group is for block scales without prefetch_scales or pingpong (a "
                "promotion every k-tile whose scales are read for it, on a shared tile)"
            )
        if self.release_sync not in RELEASE_SYNCS:
            raise ValueError(f"release_sync must be one of {RELEASE_SYNCS}")
        if self.release_sync != "warp" and not self.stage_scales:
            raise ValueError("release_sync orders the reads of staged scales: stage_scales=True")
        if self.overlap_group == 1 or not 0 <= self.overlap_group <= MAX_OVERLAP_GROUP:
            raise ValueError(f"overlap_group: 0 (off) or 2 to {MAX_OVERLAP_GROUP} k-tiles")

    def stage_extra_bytes(self) -> int:
        """stage_scales: a stage holds the tile's TILE_M scales of A and its blocks' of B."""
        if not self.stage_scales:
            return 0
        return (hopper_gemm.TILE_M + b_blocks_per_tile(self.tile_n)) * SCALE_BYTES

    @property
    def promotion_interval(self) -> int | None:
        """k-tiles per promotion: 1 for block scales, promote_every otherwise (None: none)."""
        return 1 if self.scales == "block" else self.promote_every


PRESETS: dict[str, Config] = {
    "tensor": Config(),
    "row": Config(scales="row"),
    "block": Config(scales="block", tile_n=128),
    "block_prefetch": Config(scales="block", tile_n=128, prefetch_scales=1),
    "block_staged": Config(scales="block", tile_n=128, stage_scales=True),
    "block_overlapped": Config(scales="block", tile_n=128, stage_scales=True, overlap_group=4),
    "tensor_promoted": Config(promote_every=4, tile_n=128),
}


class Scales(NamedTuple):
    """The scales of A and B (the kernel's own operands beside A, B and C)."""

    a: cute.Tensor  # (1,) | (M,) | (M, KB), KB = ceil(K/128)
    b: cute.Tensor  # (1,) | (N,) | (NB, KB), NB = ceil(N/128)


def tile_origin(c_shape, tile, tile_row, tile_col):
    """The (m, n) of C where tile (tile_row, tile_col) starts, as CuTe's tiling of C places
    it, which is also where its TMA loads and its accumulator's coordinates lie. On the GPU,
    C's extents are run-time values and that is (tile_row * TILE_M, tile_col * tile_n) even
    for a cluster partner past C's edge (its loads are zero-filled, its stores clipped), and
    on the CPU executor, which holds a jit's Int32 extents dynamic as CuTe DSL does. Where C's
    extents are static Python ints, CuTe puts such a partner on tile 0 (a mode of one tile
    gets stride 0): its scales follow its tile either way."""
    return cute.local_tile(cute.make_identity_tensor(c_shape), tile, (tile_row, tile_col))[0]


class StagedScales(NamedTuple):
    """The scales with their ring stages in shared memory (stage_scales): what the roles
    see; in promote_k_tiles, staged_a/b are one stage's, (TILE_M,) and (NBT,)."""

    a: cute.Tensor  # (M, KB)
    b: cute.Tensor  # (NB, KB)
    staged_a: cute.Tensor  # (TILE_M, STAGE): the tile's rows' scales of each stage's k-tile
    staged_b: cute.Tensor  # (NBT, STAGE): the blocks of B the tile spans, NBT = b_blocks_per_tile
    c_shape: tuple  # C's (M, N): where the producer's tiles lie (tile_origin)


class KTile(NamedTuple):
    """A k-tile whose wgmmas were issued (GroupSteps.issue): its index in K and its stage."""

    kt: cutlass.Int32
    stage: cutlass.Int32


class GroupSteps:
    """The three steps of a promotion under the next k-tile's wgmmas (overlap_group), as
    Fp8Gemm.promote_group takes them; one object per group of k-tiles, made inside the
    k-loop, so its ring positions are the loop's own (read it back after the group).

    issue(tmp): wait for the next k-tile's stage and issue its wgmmas into `tmp`, one
        wgmma group; its first wgmma overwrites tmp (ACCUMULATE off). Returns its KTile.
    scales(k): that k-tile's block scale of each accumulator element (their loads start).
    promote(tmp, scales): acc += tmp * scales, element by element, then release the
        oldest stage still held (its k-tile's scales have been read). No wait: the caller
        retires tmp's wgmma group first (cute.nvgpu.warpgroup.wait_group).
    """

    def __init__(self, gemm, tiled_mma, fresh, mma, ring, read, release, place, first):
        self.gemm, self.tiled_mma, self.fresh, self.mma = gemm, tiled_mma, fresh, mma
        self.ring, self.read, self.release, self.place = ring, read, release, place
        self.next_kt = first  # the k-tile the next issue() takes

    @cute.jit
    def issue(self, tmp: cute.Tensor) -> KTile:
        kt = self.next_kt
        self.read, stage = parts.issue_k_tile(
            self.tiled_mma, self.mma, self.ring, self.read, tmp, self.fresh
        )
        self.next_kt = kt + 1
        return KTile(kt, stage)

    @cute.jit
    def scales(self, k: KTile) -> list:
        return self.gemm.k_tile_scales(k.kt, self.gemm.at_stage(self.place, k.stage))

    @cute.jit
    def promote(self, tmp: cute.Tensor, scales: list):
        self.gemm.promote(self.mma.acc, tmp, scales, clear=False)
        self.gemm.scales_read(self.place)
        self.ring.consumer_release(self.release)
        self.release.advance()


class Fp8Gemm(HopperGemm):
    """hopper_gemm's kernel with float8 A and B and their scales (`Config.scales`): its own
    consumer, which promotes a temporary accumulator and applies the scales."""

    def __init__(self, types, config: Config, arch: str = "sm_90a"):
        super().__init__(types, config, arch)
        assert self.tile_k == SCALE_BLOCK == tile_k(8)  # one k-tile: one block of scales
        self.b_blocks = b_blocks_per_tile(config.tile_n)
        self.offsets = tile_offsets(config.tile_n)
        self._element_blocks = None  # element_blocks, worked out at the first trace
        if config.stage_scales:  # every lane of the producer warp arrives once per stage
            self.stage_extra = self.copy_scales_into_stage

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
        a_scale_ptr: cute.Pointer,
        b_scale_ptr: cute.Pointer,
        stream: cuda.CUstream,
    ):
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        # mSA, mSB: (1,) and (1,) | (M,) and (N,) | (M, KB) and (NB, KB), KB = ceil(K/128)
        mSA = cute.make_tensor(a_scale_ptr, cute.make_layout(1))
        mSB = cute.make_tensor(b_scale_ptr, cute.make_layout(1))
        if cutlass.const_expr(self.cfg.scales == "row"):
            mSA = cute.make_tensor(a_scale_ptr, cute.make_layout(m))
            mSB = cute.make_tensor(b_scale_ptr, cute.make_layout(n))
        if cutlass.const_expr(self.cfg.scales == "block"):
            kb = (k + SCALE_BLOCK - 1) // SCALE_BLOCK
            nb = (n + SCALE_BLOCK - 1) // SCALE_BLOCK
            mSA = cute.make_tensor(a_scale_ptr, cute.make_layout((m, kb), stride=(kb, 1)))
            mSB = cute.make_tensor(b_scale_ptr, cute.make_layout((nb, kb), stride=(kb, 1)))
        self.launch(mA, mB, mC, max_clusters, stream, inputs=Scales(mSA, mSB))

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
        inputs: Scales,
    ):
        """hopper_gemm's consumer with the scales: promoting (block scales, or
        promote_every), each tile's wgmmas add into a temporary accumulator that is promoted
        into the tile's (promote_k_tiles; with overlap_group, two of them, promote_groups);
        tensor and row scales are multiplied in before the epilogue (scale_accumulator)."""
        cfg = self.cfg
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        me = parts.consumer_pieces(self, tiled_mma, shared, out.mC, wg, warp, ctid, BARRIERS)
        item, read, release = parts.first_item(me.turn, schedule, read, release, k_tiles)
        fresh = None  # overlap_group: the tiled MMA of a k-tile's first wgmma (mma_k_tile's)
        if cutlass.const_expr(cfg.overlap_group > 0):
            fresh = self.make_tiled_mma()
            fresh.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, False)
        done = cutlass.Int32(0)
        while item < schedule.work:
            work = parts.whole_k_work(schedule, item, k_tiles)
            parts.start_tile(tiled_mma, me.mma.acc, me.turn, done)
            place = parts.tile_place(me, work, out.mC.shape, inputs, ctid)
            if cutlass.const_expr(cfg.promotion_interval is None):
                read, release = parts.mainloop(tiled_mma, me.mma, ring, read, release, work.k_count)
            elif cutlass.const_expr(cfg.overlap_group > 0):  # releases every stage it reads
                read, release = self.promote_groups(
                    tiled_mma, fresh, me.mma, ring, read, release, place
                )
            else:
                read, release = self.promote_k_tiles(tiled_mma, me.mma, ring, read, release, place)
            if cutlass.const_expr(cfg.overlap_group == 0):
                read, release = parts.end_mainloop(
                    ring, read, release, me.turn, item, schedule, k_tiles
                )
            self.scale_accumulator(me.mma.acc, place)
            self.store_tile(out, shared, me, work, done)
            done += 1
            item += me.turn.step * schedule.clusters
        if cutlass.const_expr(cfg.tma_store):
            me.writer.stores.producer_tail()

    @cute.jit
    def promote_k_tiles(
        self,
        tiled_mma: cute.TiledMma,
        mma: parts.MmaOperands,
        ring: pipeline.PipelineTmaAsync,
        read: pipeline.PipelineState,
        release: pipeline.PipelineState,
        place: TilePlace,
    ):
        """The mainloop with a temporary accumulator `tmp` beside the tile's: each k-tile's
        wgmmas add into tmp, and `after_k_tile` promotes it (with prefetch_scales,
        `promote_ahead`, the scales read k-tiles before). Returns (read, release)."""
        tmp = cute.make_rmem_tensor(mma.acc.shape, self.acc_dtype)
        tmp.fill(0.0)
        k_count = place.work.k_count
        ahead = self.scales_ahead(mma.acc, k_count, place)
        for kt in range(k_count):
            read, stage = parts.issue_k_tile(tiled_mma, mma, ring, read, tmp)
            if kt > 0:  # k-tile kt-1 has been read by the tensor cores
                release = parts.release_stage(ring, release, 1)
            if cutlass.const_expr(self.cfg.prefetch_scales > 0):
                self.promote_ahead(mma.acc, tmp, ahead, kt, k_count, place)
            else:  # (stage_scales: the stage, released only after the next k-tile's wgmmas)
                self.after_k_tile(mma.acc, tmp, kt, k_count, self.at_stage(place, stage))
                self.scales_read(place)  # before the stage's release (next k-tile, end_mainloop)
        return read, release

    @cute.jit
    def scales_read(self, place: TilePlace):
        """stage_scales: every lane of the warp has read its stage's scales before the stage
        is released. ring.consumer_release arrives on the stage's empty barrier from one
        signalling lane of the warp, and that arrive's release orders only that lane's own
        loads; release_sync "warp" orders the other lanes' ld.shared before it with a
        bar.warp.sync (the PTX ISA's bar.warp.sync orders memory among the threads taking
        part), so the producer's cp.async of a later k-tile's scales into the stage cannot
        overtake them. Racecheck's reports on the wrapped scale stages (H200, 2026-12-04)
        are the same with and without it: it is here for the memory model, not for a
        measured failure. Where the warp is converged ptxas emits no instruction for it (the
        SASS of block_staged and block_overlapped has no WARPSYNC: CuTe DSL 4.8.1, read on
        the CPU), so racecheck, which instruments the SASS, sees the same code either way.
        release_sync "warpgroup" orders them with a named barrier over the consumer
        warpgroup instead (a BAR.SYNC, which racecheck does see): the try for a
        racecheck-clean ring, its cost not yet timed."""
        if cutlass.const_expr(self.cfg.stage_scales):
            if cutlass.const_expr(self.cfg.release_sync == "warpgroup"):
                pipeline.NamedBarrier(
                    barrier_id=SCALES_READ_BARRIER + place.ctid // hopper_gemm.WARPGROUP_THREADS,
                    num_threads=hopper_gemm.WARPGROUP_THREADS,
                ).arrive_and_wait()
            else:
                cute.arch.sync_warp()

    @cute.jit
    def promote_groups(
        self,
        tiled_mma: cute.TiledMma,
        fresh: cute.TiledMma,
        mma: parts.MmaOperands,
        ring: pipeline.PipelineTmaAsync,
        read: pipeline.PipelineState,
        release: pipeline.PipelineState,
        place: TilePlace,
    ):
        """The promoting mainloop with two temporary accumulators used in turn: the k-loop
        in groups of overlap_group k-tiles, each one `promote_group`'s (unrolled), and the
        k-tiles past the last whole group in groups of one. Every stage read is released
        here (end_mainloop is not called). Returns (read, release)."""
        group = self.cfg.overlap_group
        tmps = [cute.make_rmem_tensor(mma.acc.shape, self.acc_dtype) for _ in range(2)]
        k_count = place.work.k_count
        whole = k_count // group * group  # k-tiles in whole groups
        for first in range(0, whole, group):
            steps = GroupSteps(self, tiled_mma, fresh, mma, ring, read, release, place, first)
            self.promote_group(steps, tmps, group)
            read, release = steps.read, steps.release  # carried to the next group
        for kt in range(whole, k_count):
            steps = GroupSteps(self, tiled_mma, fresh, mma, ring, read, release, place, kt)
            self.promote_group(steps, tmps, 1)
            read, release = steps.read, steps.release
        return read, release

    @cute.jit
    def promote_group(self, steps: GroupSteps, tmps: list, group: int):
        """`group` k-tiles (a Python int), unrolled, each promoted under the next one's
        wgmmas: k-tile j + 1's wgmmas are issued into the other temporary accumulator before
        k-tile j is waited for (wait_group(1)) and promoted, so a warpgroup's own wgmmas run
        under all its promotions but the group's last (wait_group(0)). Each group ends with
        nothing in flight: ptxas serializes every wgmma of the kernel (its warning C7514,
        "non wgmma instructions reading accumulator registers") where wgmmas into two
        accumulators are in flight across a loop's back edge, though the same code
        straight-line runs them asynchronously. A k-tile's first wgmma overwrites its
        accumulator (GroupSteps.issue), so no promotion needs to clear one. Notebook 12's
        second exercise writes this method."""
        # region overlap
        k_tiles = [steps.issue(tmps[0])]
        for j in cutlass.range_constexpr(group):
            if cutlass.const_expr(j + 1 < group):  # the next k-tile's wgmmas first
                k_tiles.append(steps.issue(tmps[(j + 1) % 2]))
            scales = steps.scales(k_tiles[j])  # their loads under way
            cute.nvgpu.warpgroup.wait_group(1 if j + 1 < group else 0)  # k-tile j retired
            steps.promote(tmps[j % 2], scales)
        # endregion overlap

    def at_stage(self, place: TilePlace, stage: cutlass.Int32) -> TilePlace:
        """stage_scales: `place` with the staged scales of ring stage `stage` alone (the
        k-tile the consumers read there); otherwise `place`."""
        if not self.cfg.stage_scales:
            return place
        scales = place.inputs
        return place._replace(
            inputs=scales._replace(
                staged_a=scales.staged_a[None, stage], staged_b=scales.staged_b[None, stage]
            )
        )

    def stage_inputs(self, smem, inputs, c_shape):
        """stage_scales: the scales with their ring stages in shared memory, StagedScales."""
        if not self.cfg.stage_scales:
            return inputs
        align = 16  # cp.async's destinations: any 4-byte-aligned address; 16 keeps it tidy
        staged_a = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout((self.tile[0], self.stages)), align
        )
        staged_b = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout((self.b_blocks, self.stages)), align
        )
        return StagedScales(inputs.a, inputs.b, staged_a, staged_b, c_shape)

    @cute.jit
    def copy_scales_into_stage(
        self,
        scales: StagedScales,
        work: parts.Work,
        kt: cutlass.Int32,
        stage: cutlass.Int32,
        full: cute.Pointer,
    ):
        """The producer warp, after k-tile kt's TMA loads into `stage`: that k-tile's scales
        of the tile's rows of A (4 a lane) and of its blocks of B (a lane each) into the
        stage, with 4-byte cp.async; then each lane's cp.async.mbarrier.arrive.noinc on the
        stage's full barrier, which completes only once they landed. Rows past M copy the
        last row's scale (their A holds TMA's zeros), blocks past N the last block's."""
        lane = cute.arch.lane_idx()
        rows, blocks = scales.a.shape[0], scales.b.shape[0]
        top, left = tile_origin(scales.c_shape, self.tile, work.tile_row, work.tile_col)
        g2s = cute.make_copy_atom(
            cute.nvgpu.cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32
        )
        for j in cutlass.range_constexpr(self.tile[0] // LANES):
            r = lane + j * LANES
            row = cutlass.min(top + r, rows - 1)
            cute.copy(
                g2s,
                cute.local_tile(scales.a[row, None], (1,), (kt,)),
                cute.local_tile(scales.staged_a[None, stage], (1,), (r,)),
            )
        if lane < self.b_blocks:
            block = cutlass.min(left // SCALE_BLOCK + lane, blocks - 1)
            cute.copy(
                g2s,
                cute.local_tile(scales.b[block, None], (1,), (kt,)),
                cute.local_tile(scales.staged_b[None, stage], (1,), (lane,)),
            )
        cute.arch.cp_async_mbarrier_arrive_noinc(full)

    @cute.jit
    def scales_ahead(self, acc: cute.Tensor, k_count: cutlass.Int32, place: TilePlace) -> list:
        """prefetch_scales sets of scale registers shaped like acc, holding k-tiles 0, 1,
        ...'s scales (none without prefetch_scales)."""
        ahead = [
            cute.make_rmem_tensor(acc.shape, self.acc_dtype)
            for _ in range(self.cfg.prefetch_scales)
        ]
        for j in cutlass.range_constexpr(self.cfg.prefetch_scales):
            self.load_scales(ahead[j], cutlass.min(j, k_count - 1), place)
        return ahead

    @cute.jit
    def promote_ahead(
        self,
        acc: cute.Tensor,
        tmp: cute.Tensor,
        ahead: list,
        kt: cutlass.Int32,
        k_tiles: cutlass.Int32,
        place: TilePlace,
    ):
        """after_k_tile with the scales read prefetch_scales k-tiles ahead: wait for k-tile
        kt's wgmmas and promote tmp with ahead[0] (k-tile kt's scales, loaded while an
        earlier k-tile was promoted), move every set down one and load k-tile
        kt + prefetch_scales's into the last. Measured (notebook 12): one k-tile ahead gains
        2 to 4 points, more gain nothing; what the loads still cost is where they go, not
        how long they take."""
        cute.nvgpu.warpgroup.wait_group(0)
        self.promote(acc, tmp, ahead[0])
        for j in cutlass.range_constexpr(1, self.cfg.prefetch_scales):
            ahead[j - 1].store(ahead[j].load())
        later = cutlass.min(kt + self.cfg.prefetch_scales, k_tiles - 1)
        self.load_scales(ahead[self.cfg.prefetch_scales - 1], later, place)

    @cute.jit
    def load_scales(self, into: cute.Tensor, kt: cutlass.Int32, place: TilePlace):
        """k-tile kt's scale of each accumulator element, into registers."""
        scales = self.k_tile_scales(kt, place)
        for i in cutlass.range_constexpr(cute.size(into)):
            into[i] = scales[i]

    @cute.jit
    def after_k_tile(
        self,
        acc: cute.Tensor,
        tmp: cute.Tensor,
        kt: cutlass.Int32,
        k_tiles: cutlass.Int32,
        place: TilePlace,
    ):
        """After every `promotion_interval`-th k-tile and after the last, wait for the
        wgmmas in flight and promote `tmp` into `acc`. Block scales are read *before* the
        wait, while this k-tile's wgmmas still run: read after it, their latency would stall
        the tensor cores every k-tile. Notebook 12's exercise writes this method."""
        # region promotion
        # due after every `promotion_interval`-th k-tile and after the last one (0: either)
        if cutlass.min((kt + 1) % self.cfg.promotion_interval, k_tiles - 1 - kt) == 0:
            scales = self.k_tile_scales(kt, place)  # block scales: loads in flight
            cute.nvgpu.warpgroup.wait_group(0)  # tmp holds the k-tiles' sums now
            self.promote(acc, tmp, scales)
        # endregion promotion

    @cute.jit
    def k_tile_scales(self, kt: cutlass.Int32, place: TilePlace) -> list:
        """Block scales: a_scale[m, kt] * b_scale[n // 128, kt] for each accumulator element
        of this thread (tensor/row scales: none, []). A thread's elements lie on two rows per
        64-row atom and, across a tile, in a few blocks of B (element_blocks): one scale is
        read per row and per block, and one product made per pair, so however wide the tile,
        a handful of registers carry the scales across the wait, not one per element."""
        # region k-tile-scales
        scales = []
        if cutlass.const_expr(self.cfg.scales == "block"):
            tCcC = self.coordinates(place)  # (MMA, MMA_M, MMA_N) of (m, n)
            top, left = tile_origin(place.shape, self.tile, place.tile_row, place.tile_col)
            first = left // SCALE_BLOCK  # the tile's first block of B
            if cutlass.const_expr(self.cfg.stage_scales):
                # this k-tile's stage in shared memory: the tile's rows', its blocks' of B
                sa, sb = place.inputs.staged_a, place.inputs.staged_b  # (TILE_M,), (NBT,)
                sbs = [sb[j] for j in range(self.b_blocks)]

                def a_scale(row):
                    return sa[row - top]
            else:
                mSA, mSB = place.inputs.a, place.inputs.b
                rows, blocks = mSA.shape[0], mSB.shape[0]
                # B's scales of the blocks this tile spans (past N's edge: the last block,
                # whose columns hold zeros there and are never stored)
                sbs = [mSB[cutlass.min(first + j, blocks - 1), kt] for j in range(self.b_blocks)]

                def a_scale(row):
                    # rows past C's edge hold zeros (TMA filled A with them): an existing one
                    return mSA[cutlass.min(row, rows - 1), kt]

            offset = left % SCALE_BLOCK  # where the tile starts in its first block of B
            row_scale, block_scale, product = {}, {}, {}  # by row, by blocks, by both
            keys = self.element_blocks()
            for i in cutlass.range_constexpr(cute.size(tCcC)):
                row0, blocks_at = keys[i]  # thread 0's row; the element's block per offset
                if cutlass.const_expr(row0 not in row_scale):
                    row_scale[row0] = a_scale(tCcC[i][0])
                if cutlass.const_expr(blocks_at not in block_scale):
                    block_scale[blocks_at] = self.pick_block(sbs, blocks_at, offset)
                if cutlass.const_expr((row0, blocks_at) not in product):
                    product[row0, blocks_at] = row_scale[row0] * block_scale[blocks_at]
                scales.append(product[row0, blocks_at])
        # endregion k-tile-scales
        return scales

    @cute.jit
    def pick_block(self, values: list, blocks_at: tuple, offset: cutlass.Int32):
        """values[blocks_at[j]] where the tile starts at tile_offsets(tile_n)[j] in its first
        block of B, `offset` known only on the GPU (the same in every lane): a Python list
        of registers cannot be indexed by a GPU value, so the offset is compared with each
        possible one whose block differs from the first's."""
        picked = values[blocks_at[0]]
        for j in cutlass.range_constexpr(1, len(blocks_at)):
            if cutlass.const_expr(blocks_at[j] != blocks_at[0]):
                if offset == self.offsets[j]:
                    picked = values[blocks_at[j]]
        return picked

    def element_blocks(self) -> list[tuple[int, tuple[int, ...]]]:
        """For each accumulator element of a consumer thread: its row among thread 0's
        elements (elements on the same one lie on the same row of A in every thread), and
        the block of B its column lies in, relative to the tile's first, for each offset a
        tile can start at in a block (tile_offsets). Both hold for every consumer thread,
        checked here once per kernel: a layout's offset is its thread's plus its value's,
        so a thread's elements are thread 0's moved by the thread's own (row, column), and
        that shift never carries past the tile's rows or columns nor moves an element
        across a block's edge (a thread's columns of an 8-wide group stay in it; a tile
        starts on a multiple of 32)."""
        if self._element_blocks is None:
            mma = self.make_tiled_mma()
            own = mma.get_slice(0).partition_C(cute.make_identity_tensor(self.tile))
            base = [own[i] for i in range(cute.size(own))]  # thread 0's (row, column)s
            tv, rows = mma.tv_layout_C_tiled, self.tile[0]  # (thread, value) -> m + rows * n
            for t in range(mma.size):
                dr, dc = tv((t, 0)) % rows, tv((t, 0)) // rows  # thread t's shift
                for r, c in base:
                    assert r + dr < rows and c + dc < self.tile[1], "a shift carries"
                    for o in self.offsets:
                        assert (o + c + dc) // SCALE_BLOCK == (o + c) // SCALE_BLOCK, (
                            "a thread's shift moves an element into another block of B"
                        )
            self._element_blocks = [
                (r, tuple((o + c) // SCALE_BLOCK for o in self.offsets)) for r, c in base
            ]
        return self._element_blocks

    @cute.jit
    def promote(self, acc: cute.Tensor, tmp: cute.Tensor, scales: list, clear: bool = True):
        """acc += tmp (block scales: tmp * scales[i], a_scale * b_scale of element i);
        tmp = 0 (clear False: the next k-tile's first wgmma overwrites tmp). The next
        k-tile's warpgroup.fence orders these register writes before its wgmmas."""
        # region promote
        if cutlass.const_expr(self.cfg.scales == "block"):
            for i in cutlass.range_constexpr(cute.size(acc)):
                acc[i] = acc[i] + tmp[i] * scales[i]
        else:  # tensor and row scales: multiplied in once, before the epilogue
            acc.store(acc.load() + tmp.load())
        if cutlass.const_expr(clear):
            tmp.fill(0.0)
        # endregion promote

    def coordinates(self, place: TilePlace) -> cute.Tensor:
        """The (m, n) of C each accumulator element of this thread holds."""
        return accumulator_coordinates(place, self.tile)

    @cute.jit
    def scale_accumulator(self, acc: cute.Tensor, place: TilePlace):
        """Tensor and row scales, multiplied into the accumulator before the epilogue
        converts it (block scales were applied by every promotion)."""
        # region scaled-epilogue
        mSA, mSB = place.inputs.a, place.inputs.b
        if cutlass.const_expr(self.cfg.scales == "tensor"):
            acc.store(acc.load() * (mSA[0] * mSB[0]))
        if cutlass.const_expr(self.cfg.scales == "row"):
            m, n = place.shape
            tCcC = self.coordinates(place)  # (MMA, MMA_M, MMA_N) of (m, n)
            for i in cutlass.range_constexpr(cute.size(acc)):
                row, col = tCcC[i]
                # past C's edge: zeros, never stored; read an existing scale
                sa = mSA[cutlass.min(row, m - 1)]
                sb = mSB[cutlass.min(col, n - 1)]
                acc[i] = acc[i] * (sa * sb)
        # endregion scaled-epilogue


# ------------------------------------------------------------------ the surface


OPERANDS = Operands(ab_dtypes=FLOAT8_TYPES, c_dtypes=C_DTYPES)


GEMM = GemmHost(
    "fp8_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: Fp8Gemm(types, config, arch),
    Config,
    operands=OPERANDS,
    extra=hopper_gemm.PERSISTENT_GRID,
    extra_operands=ExtraOperands(
        ("a_scale", "b_scale"),
        dtypes=lambda config: (torch.float32, torch.float32),
        check=lambda a, b, scales, config: check_scales(a, b, *scales, config.scales),
    ),
    default_dtype=torch.float8_e4m3fn,
)

compile, artifacts = GEMM.compile, GEMM.artifacts


def run(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    out: torch.Tensor | None = None,
    config: Config | None = None,
    *,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """C = (A . B^T) with A's and B's scales (config.scales), C in bf16 by default; every
    input is validated before anything launches."""
    return GEMM.run(a, b, out, config, out_dtype=out_dtype, tensors=(a_scale, b_scale))


def prepare(problem, config: Config = Config(), preset: str | None = None):
    """For a benchmark: compile once for `problem`; gemm(a, b, c) with unit tensor scales."""
    config = PRESETS[preset] if preset is not None else config
    GEMM.prepare(problem, config)
    ones = {}

    def gemm(a, b, c):
        key = (a.device, a.shape[0], b.shape[0], a.shape[1])
        if key not in ones:
            sa, sb = scale_shapes(*key[1:], config.scales)
            ones[key] = (torch.ones(sa, device=a.device), torch.ones(sb, device=a.device))
        return run(a, b, *ones[key], c, config)

    return gemm


if __name__ == "__main__":
    if not selftest.runnable_here(NEEDS, "fp8_gemm"):
        for name, preset in PRESETS.items():
            print(f"preset {name!r}:")
            selftest.show_artifacts(artifacts(None, torch.float8_e4m3fn, preset))
        raise SystemExit(0)
    print("timed against cuBLAS FP8: python -m course.bench gemm --kernel fp8 --dtype e4m3")
    for name, preset in PRESETS.items():  # one ragged shape each, against float64
        m, n, k = 300, 264, 400
        a, sa = quantize(torch.randn(m, k, device="cuda"), preset.scales)
        b, sb = quantize(torch.randn(n, k, device="cuda"), preset.scales, rows_of="b")
        out = run(a, b, sa, sb, config=preset)
        exact = dequantize(a, sa, preset.scales) @ dequantize(b, sb, preset.scales, "b").T
        err = selftest.relative_error(out, exact)
        print(f"preset {name!r} {m}x{n}x{k}: relative error {err:.1e} against float64")
