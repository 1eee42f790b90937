"""Notebook 09: notebook 07's tensor-core GEMM, fed by TMA through an mbarrier ring.

What changes from kernels/sm80_gemm.py (the math -- ldmatrix + mma.sync m16n8k16 on a
2 x 4 grid of warps, the swizzled shared memory, the epilogue -- is step 07's, imported):

  * loads: instead of every thread issuing 16-byte cp.async copies, one warp hands each
    k-tile to TMA (step 08): one bulk tensor copy for the bM x 64 tile of A and one for the
    bN x 64 tile of B. They land 128B-swizzled (the tensor map says so) and zero-filled
    past the edges of A and B, so the kernel needs no predicates and no K-residue logic;
  * completion: cp.async groups are gone. Each stage s of the ring has two mbarriers,
    written out with the raw cute.arch.mbarrier_* calls so the notebook can show them:
      full[s]  -- "stage s holds k-tile t": 1 arrival (the producer's arrive.expect_tx,
                  which also adds the stage's byte count) + those bytes, counted down
                  by TMA as they land (complete_tx);
      empty[s] -- "every warp is done reading stage s": one arrival per warp;
  * phases: a barrier is reused once per trip around the ring, so waits name the
    phase they expect by its parity. Consumers wait full[s] for parity (t // stages) & 1.
    The producer's j-th load waits empty[j % stages] for parity ((j // stages) & 1) ^ 1:
    a fresh barrier is in phase 0, so waiting for parity 1 returns at once and the
    first trip around the ring does not wait for releases that never happened.

Warp 0 is the producer *and* a consumer (notebook 11 gives loading its own warps). It
fills every stage up front and refills stage s with k-tile t + stages once all warps
have released it. TMA issue and expect_tx are done by the whole converged warp (each
elects a lane itself), never from one diverged lane.

`Config(ring="pipeline")` is the same kernel with the ring written with CuTe DSL's
`PipelineTmaAsync` (`TmaPipelineGemm`): the same full/empty pairs, the same parities,
kept in a `PipelineState` (index, phase) instead of computed from the k-tile number.
Step 10 starts from that version. The TMA pieces steps 10 and 11 reuse (tensor maps, the
swizzled stages, the k-tile copies, the ring as PipelineTmaAsync) are in
kernels/sm90_parts.py; this module is the lesson around them.

Config.bug injects the classic mistakes for the notebook's exercise (the first three
are named as in the simulator, course.sim.pipeline_sim.BUGS); each deadlocks:
  "producer_parity"       the producer's phase bit starts at 0: its first wait on an
                          empty barrier waits for a phase nobody will complete;
  "missing_arrive"        consumers never arrive on empty: the first reuse of a stage hangs;
  "arrival_count"         full barriers initialised to expect 2 arrivals; only the
                          producer's arrive.expect_tx comes: the first full wait hangs;
  "thread_arrival_count"  empty barriers initialised to expect one arrival per *thread*
                          while one lane per warp arrives: the first reuse hangs.
Config.debug_timeout_ms > 0 turns every wait into a bounded one: a thread that waited
that long records (CTA, warp, barrier, stage, parity, k-tile) in a report and gives up,
so the kernel finishes and `run` raises PipelineHang saying exactly where it stuck.
Run buggy configurations in a child process anyway (course.runtime.watchdog.isolated).
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import torch
from cutlass.memory.smem import SmemAllocator

from . import selftest
from .gemm_host import HALF_TYPES, GemmHost, GemmTypes, LaunchExtra
from .gemm_host import gemm_tensors, stage_bytes
from .host import PipelineHang, gmem_pointer, smem_capacity
from .mma_atom import ATOM as MMA_SHAPE
from .sm80_gemm import epilogue_through_smem, grouped_tile, ldmatrix_fragments, row_copy
from .sm80_gemm import tiled_mma_sync
from .sm90_parts import BARRIER_BYTES, KTileLoads, OperandTma, SmemLayouts, allocate_ring
from .sm90_parts import copy_k_tile, cta_coordinates, load_k_tile, make_tma_ring, operand_tma
from .sm90_parts import prefetch_descriptors, ring_layouts, ring_smem_bytes, tma_k_tiles

NEEDS = "sm_90+"
DTYPES = HALF_TYPES  # same operands, same rules as notebooks 07 and 10
BUGS = ("", "producer_parity", "missing_arrive", "arrival_count", "thread_arrival_count")
RINGS = ("mbarrier", "pipeline")  # written by hand, or CuTe DSL's PipelineTmaAsync
REPORT_WORDS = (
    8  # debug report: claimed, cta, warp, barrier (1 full, 2 empty), stage, parity, k-tile
)
FULL, EMPTY = 1, 2


@dataclass(frozen=True)
class Config:
    tile_m: int = 128
    tile_n: int = 256
    warps_m: int = 2  # warps tiled over the CTA tile's M ...
    warps_n: int = 4  # ... and N
    stages: int = 4  # the ring's depth; 1 serializes loads and math
    group_m: int = 8  # tile order: CTAs walk C in groups of this many tile rows
    ring: str = "mbarrier"  # one of RINGS
    bug: str = ""  # one of BUGS: inject a classic pipeline mistake (it hangs)
    debug_timeout_ms: int = 0  # > 0: bounded waits that report where they gave up

    def __post_init__(self):
        if self.ring not in RINGS:
            raise ValueError(f"ring must be one of {RINGS}")
        if self.bug not in BUGS:
            raise ValueError(f"bug must be one of {BUGS}")
        if self.ring == "pipeline" and (self.bug or self.debug_timeout_ms):
            raise ValueError(
                "bugs and bounded waits are injected into the hand-written ring "
                "(ring='mbarrier') only"
            )
        if self.stages < 1:
            raise ValueError("the ring needs at least 1 stage")
        if not (self.tile_m <= 256 and self.tile_n <= 256):
            raise ValueError("a TMA box has at most 256 rows: tile_m, tile_n <= 256")
        if self.tile_m % (self.warps_m * MMA_SHAPE[0]):
            raise ValueError("tile_m must be a multiple of warps_m * 16")
        if self.tile_n % (self.warps_n * MMA_SHAPE[1] * 2):
            raise ValueError("tile_n must be a multiple of warps_n * 16")
        if self.debug_timeout_ms < 0:
            raise ValueError("debug_timeout_ms must be >= 0")

    @property
    def warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def stage_bytes(self) -> int:
        """Bytes one k-tile brings (whatever the element type: rows of 128 bytes): the
        expect_tx count of a full barrier."""
        return stage_bytes(self.tile_m, self.tile_n)

    def smem_bytes(self, elem_bytes: int) -> int:
        """Shared memory of the ring and its barriers, C's staging tile in elements of
        `elem_bytes` over it."""
        return ring_smem_bytes(self.tile_m, self.tile_n, self.stages, elem_bytes)

    def max_stages(self, arch: str = "sm_90a", elem_bytes: int = 2) -> int:
        """The deepest ring that fits in `arch`'s shared memory."""
        stages = 0
        while ring_smem_bytes(self.tile_m, self.tile_n, stages + 1, elem_bytes) <= smem_capacity(
            arch
        ):
            stages += 1
        return stages


def producer_parity(j, stages: int, bug: str = ""):
    """The parity the producer's j-th load waits for on empty[j % stages]: the phase
    completed by the releases of k-tile j - stages, one trip earlier. On the first trip
    there was none; parity 1 names the phase "before" a fresh barrier's phase 0, which
    counts as complete. Traced into the kernel (j an Int32) and used by the tests'
    protocol model (j an int)."""
    trip = (j // stages) % 2
    if bug == "producer_parity":
        return trip  # BUG: the first trip waits for phase 0, which nobody will complete
    return trip ^ 1


def consumer_parity(t, stages: int):
    """The parity consumers wait for on full[t % stages] before reading k-tile t: the
    phase completed when k-tile t's bytes landed (trip t // stages)."""
    return (t // stages) % 2


# ------------------------------------------------------------------ the kernel, ring by hand


def mma_sync_k_tile(tiled_mma: cute.TiledMma, f, stage) -> None:
    """Step 07's math on one k-tile in stage `stage`: ldmatrix one k-block ahead of the
    mma.sync that uses it (`f` from sm80_gemm.ldmatrix_fragments)."""
    k_blocks = cute.size(f.tCrA, mode=[2])
    cute.copy(f.s2r_a, f.tXsA[None, None, 0, stage], f.tXrA[None, None, 0])
    cute.copy(f.s2r_b, f.tXsB[None, None, 0, stage], f.tXrB[None, None, 0])
    for kb in range(k_blocks):  # a plain helper, traced inline: a static Python loop
        if kb + 1 < k_blocks:
            cute.copy(f.s2r_a, f.tXsA[None, None, kb + 1, stage], f.tXrA[None, None, kb + 1])
            cute.copy(f.s2r_b, f.tXsB[None, None, kb + 1, stage], f.tXrB[None, None, kb + 1])
        cute.gemm(tiled_mma, f.acc, f.tCrA[None, None, kb], f.tCrB[None, None, kb], f.acc)


class TmaGemm:
    """One configuration of the kernel; call it (through cute.compile) to launch."""

    def __init__(self, types: GemmTypes, config: Config):
        self.ab_dtype, self.acc_dtype, self.c_dtype = types
        self.cfg = config
        self.tx_bytes = config.stage_bytes
        self.smem_bytes = config.smem_bytes(self.c_dtype.width // 8)

    # ------------------------------------------------------------- host side
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        report_ptr: cute.Pointer,
        stream: cuda.CUstream,
    ):
        cfg = self.cfg
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        report = cute.make_tensor(report_ptr, cute.make_layout(REPORT_WORDS))
        sA_layout, sB_layout, sC_layout = ring_layouts(
            self.ab_dtype, self.c_dtype, cfg.tile_m, cfg.tile_n, cfg.stages
        )
        # TMA: one tensor map per operand, boxes of (tile rows x tile_k) with the 128B swizzle
        tma = operand_tma(mA, mB, sA_layout, sB_layout, cfg.tile_m, cfg.tile_n)
        # notebook 07's tensor cores: m16n8k16 on a warps_m x warps_n grid
        tiled_mma = tiled_mma_sync(
            self.ab_dtype, cfg.warps_m, cfg.warps_n, atoms_n_per_warp=2, acc_dtype=self.acc_dtype
        )
        copy_c = row_copy(self.c_dtype, cfg.threads, cfg.tile_n)

        tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        self.kernel(
            tma_a=tma.tma_a,
            mA=tma.mA,
            tma_b=tma.tma_b,
            mB=tma.mB,
            mC=mC,
            report=report,
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

    # ------------------------------------------------------------- device side
    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mC: cute.Tensor,
        report: cute.Tensor,
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

        # shared memory: the full and empty barriers (stages each), then the A and B rings
        smem = SmemAllocator()
        full = smem.allocate_array(cutlass.Int64, 2 * cfg.stages, byte_alignment=BARRIER_BYTES)
        empty = full + cfg.stages
        sA, sB, sC = allocate_ring(
            smem, self.ab_dtype, SmemLayouts(sA_layout, sB_layout, sC_layout), self.c_dtype
        )

        # this CTA's tile, its k-tiles of A and B in TMA coordinates and their stage slots,
        # and the ldmatrix views of shared memory and mma.sync registers (notebook 07)
        tile_row, tile_col = grouped_tile(bidx, tiles_m, tiles_n, cfg.group_m)
        loads, k_tiles = tma_k_tiles(
            OperandTma(tma_a, mA, tma_b, mB), sA, sB, tile_row, tile_col, cfg.tile_m, cfg.tile_n
        )
        gC = cute.local_tile(mC, (cfg.tile_m, cfg.tile_n), (tile_row, tile_col))  # (bM, bN)
        f = ldmatrix_fragments(tiled_mma, sA, sB, gC, tidx, self.ab_dtype)

        # the ring: every k-tile loaded by TMA, waited for, multiplied, released
        self.ring(k_tiles, warp, full, empty, loads, tiled_mma, f, report)

        # the epilogue (notebook 07's): registers -> shared (converted) -> 16-byte stores.
        # Every load issued has landed: each was waited for before it was read.
        epilogue_through_smem(f.acc, f.thr_mma, sC, gC, mC, copy_c, (tile_row, tile_col), tidx)

    @cute.jit
    def ring(
        self,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        full: cute.Pointer,
        empty: cute.Pointer,
        loads: KTileLoads,
        tiled_mma: cute.TiledMma,
        f,
        report: cute.Tensor,
    ):
        """The mbarrier ring, run by every warp: initialise the barriers, warp 0 fills every
        stage, then each k-tile t is waited for on full[t % stages], multiplied, released on
        empty[t % stages], and warp 0 refills the stage with k-tile t + stages."""
        cfg = self.cfg
        # region barriers
        # 1. barriers: initialised by one thread, made visible, then everyone syncs
        full_count = 1  # the producer's arrive.expect_tx (the bytes are counted apart)
        empty_count = cfg.warps  # one arrival per warp per trip around the ring
        if cutlass.const_expr(cfg.bug == "arrival_count"):
            full_count = 2  # BUG: counts the TMA copy as an arrival too; it only brings bytes
        if cutlass.const_expr(cfg.bug == "thread_arrival_count"):
            empty_count = cfg.threads  # BUG: counts threads, but one lane per warp arrives
        if warp == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(cfg.stages):
                    cute.arch.mbarrier_init(full + s, full_count)
                    cute.arch.mbarrier_init(empty + s, empty_count)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        # endregion barriers

        # region prologue-and-main-loop
        # 2. prologue: warp 0 fills every stage (the first trip's empty waits pass at once)
        if warp == 0:
            for j in range(cutlass.min(cfg.stages, k_tiles)):
                self.produce(j, full, empty, loads, report)

        # 3. main loop over k-tiles t, stage t % stages, trip t // stages around the ring.
        #    All warps: wait until k-tile t has landed, read it into registers one k-block
        #    ahead of the MMAs, then release the stage (one arrival per warp). Warp 0 then
        #    refills that stage with k-tile t + stages, once every warp has released it.
        for t in range(k_tiles):
            stage = t % cfg.stages
            self.wait_full(full + stage, consumer_parity(t, cfg.stages), t, report)
            self.mma_k_tile(tiled_mma, f, stage)
            # the stage's last ldmatrix fed an MMA above, so the warp is done reading it
            if cutlass.const_expr(cfg.bug != "missing_arrive"):
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(empty + stage)
            if warp == 0:
                if t + cfg.stages < k_tiles:
                    self.produce(t + cfg.stages, full, empty, loads, report)
        # endregion prologue-and-main-loop

    @cute.jit
    def produce(
        self,
        j: cutlass.Int32,
        full: cute.Pointer,
        empty: cute.Pointer,
        loads: KTileLoads,
        report: cute.Tensor,
    ):
        """Load k-tile j into stage j % stages. Called by all of warp 0.

        Wait until the stage is empty (its previous k-tile released by every warp), arm
        its full barrier with one arrival and the stage's byte count, start both copies.
        """
        cfg = self.cfg
        s = j % cfg.stages
        parity = producer_parity(j, cfg.stages, cfg.bug)  # 1 on the first trip: passes at once
        self.wait_empty(empty + s, parity, j, report)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)
        self.copy_k_tile(loads, j, s, full + s)

    # the ring's other steps, reached through self so an exercise can swap the ring alone
    copy_k_tile = staticmethod(copy_k_tile)
    mma_k_tile = staticmethod(mma_sync_k_tile)

    @cute.jit
    def wait_full(
        self, bar: cute.Pointer, parity: cutlass.Int32, t: cutlass.Int32, report: cute.Tensor
    ):
        """A consumer waits on full[t % stages] (`bar`) until k-tile t has landed."""
        self.wait(bar, parity, FULL, t % self.cfg.stages, t, report)

    @cute.jit
    def wait_empty(
        self, bar: cute.Pointer, parity: cutlass.Int32, j: cutlass.Int32, report: cute.Tensor
    ):
        """The producer waits on empty[j % stages] (`bar`) until it may load k-tile j."""
        self.wait(bar, parity, EMPTY, j % self.cfg.stages, j, report)

    @cute.jit
    def wait(
        self,
        bar: cute.Pointer,
        parity: cutlass.Int32,
        kind: cutlass.Constexpr,
        stage: cutlass.Int32,
        ktile: cutlass.Int32,
        report: cute.Tensor,
    ):
        """mbarrier.try_wait.parity until the phase with this parity has completed.

        With debug_timeout_ms > 0 the wait is bounded: after that long (twice that for
        full waits, see timeout_ms) or as soon as another thread has given up, it
        records where it stuck and returns anyway.
        """
        cfg = self.cfg
        if cutlass.const_expr(cfg.debug_timeout_ms == 0):
            cute.arch.mbarrier_wait(bar, parity)
        else:
            done = cute.arch.mbarrier_try_wait(bar, parity)
            if not done:
                start = cute.arch.globaltimer()
                limit = cutlass.Int64(self.timeout_ms(kind) * 1_000_000)
                while not done:
                    done = cute.arch.mbarrier_try_wait(bar, parity)
                    if not done:
                        given_up = cute.arch.atomic_add(report.iterator, cutlass.Int32(0))
                        if given_up != 0:
                            done = True  # someone already reported: stop waiting too
                        elif cute.arch.globaltimer() - start > limit:
                            self.give_up(report, kind, stage, parity, ktile)
                            done = True

    @cute.jit
    def give_up(
        self,
        report: cute.Tensor,
        kind: cutlass.Constexpr,
        stage: cutlass.Int32,
        parity: cutlass.Int32,
        ktile: cutlass.Int32,
    ):
        """The first thread to give up writes the report; others only stop waiting."""
        first = cute.arch.atomic_cas(report.iterator, cmp=cutlass.Int32(0), val=cutlass.Int32(1))
        if first == 0:
            bidx, _, _ = cute.arch.block_idx()
            report[1] = bidx
            report[2] = cute.arch.warp_idx()
            report[3] = cutlass.Int32(kind)
            report[4] = stage
            report[5] = parity
            report[6] = ktile
            report[7] = cutlass.Int32(self.timeout_ms(kind))

    def timeout_ms(self, kind: int) -> int:
        """Consumers (full waits) hold on twice as long as the producer (empty waits), so
        when both are stuck the producer reports: a full barrier that never completes is
        usually the symptom of an empty one that never did."""
        return self.cfg.debug_timeout_ms * (2 if kind == FULL else 1)


# -------------------------------------------------------------- the same ring, as PipelineTmaAsync


class TmaPipelineGemm(TmaGemm):
    """TmaGemm with the ring kept by CuTe DSL's PipelineTmaAsync: barrier init, counts, the
    fence and the CTA sync in `make_tma_ring`, the producer's wait-arm-copy in
    `load_k_tile`, and `consumer_wait` / `consumer_release` for the consumers' full wait
    and empty arrival. Only `ring` differs; the debug report is not used (the waits are
    not bounded)."""

    @cute.jit
    def ring(
        self,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        full: cute.Pointer,
        empty: cute.Pointer,
        loads: KTileLoads,
        tiled_mma: cute.TiledMma,
        f,
        report: cute.Tensor,
    ):
        """The same ring through PipelineTmaAsync (its barrier pairs start at `full`)."""
        cfg = self.cfg
        # 1. barriers: full/empty pairs (one expect_tx arrival; one arrival per warp)
        pipe = make_tma_ring(full, cfg.stages, self.tx_bytes, cfg.warps)
        produce = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, cfg.stages)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, cfg.stages)

        # 2. prologue: the whole warp 0 (TMA issue and expect_tx elect a lane themselves)
        if warp == 0:
            for _ in range(cutlass.min(cfg.stages, k_tiles)):
                load_k_tile(pipe, produce, *loads)
                produce.advance()

        # 3. main loop: the state (index, phase) advances instead of being computed from t
        for _ in range(k_tiles):
            pipe.consumer_wait(read)  # full[s], the consumer's phase
            self.mma_k_tile(tiled_mma, f, read.index)
            pipe.consumer_release(read)  # one arrival per warp on empty[s]
            read.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    load_k_tile(pipe, produce, *loads)
                    produce.advance()


# ------------------------------------------------------------------ the surface


def describe_report(words: list[int], config: Config) -> str:
    """The debug report as a sentence (words as read back from the kernel)."""
    _, cta, warp, kind, stage, parity, ktile, ms = words[:REPORT_WORDS]
    what = {FULL: "full", EMPTY: "empty"}.get(kind, f"barrier kind {kind}")
    role = (
        "a consumer waiting for k-tile %d to arrive" % ktile
        if kind == FULL
        else "the producer (warp 0) waiting to refill the stage with k-tile %d" % ktile
    )
    return (
        f"CTA {cta}, warp {warp} gave up after {ms} ms waiting on {what}[{stage}] for parity "
        f"{parity}: {role}. The phase with that parity never completed."
    )


_REPORTS: dict = {}


def _report_buffer(device) -> torch.Tensor:
    """One debug-report buffer per device, allocated once (so timed runs and CUDA-graph
    captures do not allocate); only debug runs read or clear it."""
    key = str(device)
    if key not in _REPORTS:
        _REPORTS[key] = torch.zeros(REPORT_WORDS, dtype=torch.int32, device=device)
    return _REPORTS[key]


def _report_pointer(a: torch.Tensor, config: Config) -> tuple:
    report = _report_buffer(a.device)
    if config.debug_timeout_ms:
        report.zero_()
    return (gmem_pointer(report, torch.int32),)


def _raise_if_a_wait_gave_up(a: torch.Tensor, config: Config) -> None:
    if config.debug_timeout_ms:
        words = _report_buffer(a.device).tolist()  # synchronizes
        if words[0]:
            raise PipelineHang(describe_report(words, config))


def _kernel(types: GemmTypes, config: Config, arch, a_major, b_major) -> TmaGemm:
    return (TmaPipelineGemm if config.ring == "pipeline" else TmaGemm)(types, config)


GEMM = GemmHost(
    "tma_gemm",
    NEEDS,
    _kernel,
    Config,
    extra=LaunchExtra(
        placeholders=lambda config: (gmem_pointer(None, torch.int32),),
        values=_report_pointer,
        after=_raise_if_a_wait_gave_up,
    ),
)


# compile(dtype, config) / artifacts(arch, dtype, config) / run(a, b, out, config) /
# prepare(problem, config): the step's surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare


if __name__ == "__main__":
    raise SystemExit(
        selftest.gemm_main(GEMM, "tma_gemm")
        or selftest.gemm_main(GEMM, "tma_gemm (ring='pipeline')", config=Config(ring="pipeline"))
    )
