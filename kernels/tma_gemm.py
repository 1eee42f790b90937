"""Notebook 08: notebook 06's tensor-core GEMM, fed by TMA through an mbarrier ring.

What changes from kernels/sm80_gemm.py (the math -- ldmatrix + mma.sync m16n8k16 on a
2 x 4 grid of warps, the swizzled shared memory, the epilogue -- is the same):

  * loads: instead of every thread issuing 16-byte cp.async copies, one warp hands each
    k-tile to TMA: one bulk tensor copy for the bM x 64 tile of A and one for the
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

Warp 0 is the producer *and* a consumer (as in notebook 09; notebook 10 gives loading
its own warps). It fills every stage up front and refills stage s with k-tile
t + stages once all warps have released it. TMA issue and expect_tx are done by the
whole converged warp (each elects a lane itself), never from one diverged lane.

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
Run buggy configurations through course.runtime.watchdog.isolated anyway (see `check_isolated`).
"""
from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.memory.smem import SmemAllocator

from course.runtime.watchdog import PipelineHang, launching

from .common import (Artifacts, compile_artifacts, compile_cached, cutlass_dtype, fake_stream,
                     gmem_pointer, launch_arch, require)
from .gemm_parts import (TN_DTYPES, grouped_tile, launch_tn, operand_tensors, row_copy,
                         store_tile, swizzled_rows)
from .sm80_gemm import MMA_SHAPE
from .wgmma_gemm import TILE_K, staged_smem_layout  # K-major, 128B-swizzled, as TMA writes

NEEDS = "sm_90+"
DTYPES = TN_DTYPES  # same operands, same rules as notebooks 06 and 09
BUGS = ("", "producer_parity", "missing_arrive", "arrival_count", "thread_arrival_count")
SMEM_LIMIT = 227 * 1024
REPORT_WORDS = 8  # debug report: claimed, cta, warp, barrier (1 full, 2 empty), stage, parity, k-tile
FULL, EMPTY = 1, 2


@dataclass(frozen=True)
class Config:
    tile_m: int = 128
    tile_n: int = 256
    warps_m: int = 2  # warps tiled over the CTA tile's M ...
    warps_n: int = 4  # ... and N
    stages: int = 4  # the ring's depth; 1 serializes loads and math
    group_m: int = 8  # tile order: CTAs walk C in groups of this many tile rows
    bug: str = ""  # one of BUGS: inject a classic pipeline mistake (it hangs)
    debug_timeout_ms: int = 0  # > 0: bounded waits that report where they gave up

    def __post_init__(self):
        if self.bug not in BUGS:
            raise ValueError(f"bug must be one of {BUGS}")
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
        if self.smem_bytes(2) > SMEM_LIMIT:
            raise ValueError(f"{self.smem_bytes(2)} bytes of shared memory is over the 227 KB "
                             f"limit: {self.stages} stages of {self.stage_bytes(2)} bytes")

    @property
    def warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.warps

    def stage_bytes(self, elem_bytes: int) -> int:
        """Bytes one k-tile brings: the expect_tx count of a full barrier."""
        return (self.tile_m + self.tile_n) * TILE_K * elem_bytes

    def smem_bytes(self, elem_bytes: int) -> int:
        ring = self.stage_bytes(elem_bytes) * self.stages
        return max(ring, self.tile_m * self.tile_n * elem_bytes) + 1024 + 2 * 8 * self.stages

    def max_stages(self, elem_bytes: int = 2) -> int:
        return (SMEM_LIMIT - 1024 - 64) // self.stage_bytes(elem_bytes)


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


class TmaGemm:
    """One configuration of the kernel; call it (through cute.compile) to launch."""

    def __init__(self, dtype: type[cutlass.Numeric], config: Config):
        self.dtype = dtype
        self.cfg = config
        self.tile = (config.tile_m, config.tile_n, TILE_K)
        self.tx_bytes = config.stage_bytes(dtype.width // 8)

    # ------------------------------------------------------------- host side
    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, report_ptr: cute.Pointer,
                 stream: cuda.CUstream):
        cfg = self.cfg
        mA, mB, mC = operand_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        report = cute.make_tensor(report_ptr, cute.make_layout(REPORT_WORDS))
        sA_layout = staged_smem_layout(self.dtype, cfg.tile_m, cfg.stages)
        sB_layout = staged_smem_layout(self.dtype, cfg.tile_n, cfg.stages)
        sC_layout = cute.tile_to_shape(swizzled_rows(64, 8), (cfg.tile_m, cfg.tile_n), (0, 1))

        # TMA: one tensor map per operand, boxes of (tile rows x 64) with the 128B swizzle
        g2s = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
        tma_a, tA = cute.nvgpu.cpasync.make_tiled_tma_atom(
            g2s, mA, cute.slice_(sA_layout, (None, None, 0)), (cfg.tile_m, TILE_K))
        tma_b, tB = cute.nvgpu.cpasync.make_tiled_tma_atom(
            g2s, mB, cute.slice_(sB_layout, (None, None, 0)), (cfg.tile_n, TILE_K))

        # notebook 06's tensor cores: m16n8k16 on a warps_m x warps_n grid
        mma_op = cute.nvgpu.warp.MmaF16BF16Op(self.dtype, cutlass.Float32, MMA_SHAPE)
        tiled_mma = cute.make_tiled_mma(
            mma_op, cute.make_layout((cfg.warps_m, cfg.warps_n, 1)),
            permutation_mnk=(cfg.warps_m * MMA_SHAPE[0], cfg.warps_n * MMA_SHAPE[1] * 2,
                             MMA_SHAPE[2]))
        copy_c = row_copy(self.dtype, cfg.threads, cfg.tile_n)

        tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
        tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
        self.kernel(tma_a, tA, tma_b, tB, mC, report, tiled_mma, copy_c, sA_layout, sB_layout,
                    sC_layout, tiles_m, tiles_n).launch(
            grid=[tiles_m * tiles_n, 1, 1], block=[cfg.threads, 1, 1],
            smem=cfg.smem_bytes(self.dtype.width // 8), stream=stream)

    # ------------------------------------------------------------- device side
    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom,
               mB: cute.Tensor, mC: cute.Tensor, report: cute.Tensor, tiled_mma: cute.TiledMma,
               copy_c: cute.TiledCopy, sA_layout: cute.ComposedLayout,
               sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout,
               tiles_m: cutlass.Int32, tiles_n: cutlass.Int32):
        cfg = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

        # shared memory: the full and empty barriers, then the A and B rings
        smem = SmemAllocator()
        full = smem.allocate_array(cutlass.Int64, cfg.stages, byte_alignment=8)
        empty = smem.allocate_array(cutlass.Int64, cfg.stages, byte_alignment=8)
        sA = smem.allocate_tensor(self.dtype, sA_layout.outer, 1024, sA_layout.inner)
        sB = smem.allocate_tensor(self.dtype, sB_layout.outer, 1024, sB_layout.inner)
        sC = cute.make_tensor(cute.recast_ptr(sA.iterator, sC_layout.inner, dtype=self.dtype),
                              sC_layout.outer)

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

        # 2. this CTA's k-tiles of A and B, in TMA coordinates, and their stage slots
        tile_m, tile_n = grouped_tile(bidx, tiles_m, tiles_n, cfg.group_m)
        gA = cute.local_tile(mA, (cfg.tile_m, TILE_K), (tile_m, None))  # (bM, 64, k_tiles)
        gB = cute.local_tile(mB, (cfg.tile_n, TILE_K), (tile_n, None))
        k_tiles = cute.size(gA, mode=[2])
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
            tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))

        # 3. prologue: warp 0 fills every stage (the first trip's empty waits pass at once)
        if warp == 0:
            for j in range(cutlass.min(cfg.stages, k_tiles)):
                self.produce(j, full, empty, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, report)

        # 4. fragments: ldmatrix views of shared memory and mma.sync registers (notebook 06)
        thr_mma = tiled_mma.get_slice(tidx)
        gC = cute.local_tile(mC, (cfg.tile_m, cfg.tile_n), (tile_m, tile_n))
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA)[None, None, None, 0])
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB)[None, None, None, 0])
        acc = tiled_mma.make_fragment_C(thr_mma.partition_C(gC))
        acc.fill(0.0)
        ldsm = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(False, 4), self.dtype)
        s2r_a = cute.make_tiled_copy_A(ldsm, tiled_mma)
        s2r_b = cute.make_tiled_copy_B(ldsm, tiled_mma)
        thr_s2r_a, thr_s2r_b = s2r_a.get_slice(tidx), s2r_b.get_slice(tidx)
        tXsA, tXrA = thr_s2r_a.partition_S(sA), thr_s2r_a.retile(tCrA)
        tXsB, tXrB = thr_s2r_b.partition_S(sB), thr_s2r_b.retile(tCrB)
        k_blocks = cute.size(tCrA, mode=[2])

        # 5. main loop over k-tiles t, stage t % stages, trip t // stages around the ring.
        #    All warps: wait until k-tile t has landed, read it into registers one k-block
        #    ahead of the MMAs, then release the stage (one arrival per warp). Warp 0 then
        #    refills that stage with k-tile t + stages, once every warp has released it.
        for t in range(k_tiles):
            stage = t % cfg.stages
            self.wait(full + stage, consumer_parity(t, cfg.stages), FULL, stage, t, report)
            cute.copy(s2r_a, tXsA[None, None, 0, stage], tXrA[None, None, 0])
            cute.copy(s2r_b, tXsB[None, None, 0, stage], tXrB[None, None, 0])
            for kb in cutlass.range_constexpr(k_blocks):
                if cutlass.const_expr(kb + 1 < k_blocks):
                    cute.copy(s2r_a, tXsA[None, None, kb + 1, stage], tXrA[None, None, kb + 1])
                    cute.copy(s2r_b, tXsB[None, None, kb + 1, stage], tXrB[None, None, kb + 1])
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
            # the stage's last ldmatrix fed an MMA above, so the warp is done reading it
            if cutlass.const_expr(cfg.bug != "missing_arrive"):
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(empty + stage)
            if warp == 0:
                if t + cfg.stages < k_tiles:
                    self.produce(t + cfg.stages, full, empty, tma_a, tAgA, tAsA, tma_b, tBgB,
                                 tBsB, report)

        # 6. epilogue (notebook 06's): registers -> shared (converted) -> 16-byte stores.
        #    Every load issued has landed: each was waited for before it was read.
        cute.arch.sync_threads()
        out = cute.make_fragment_like(acc, self.dtype)
        out.store(acc.load().to(self.dtype))
        cute.autovec_copy(out, thr_mma.partition_C(sC))
        cute.arch.sync_threads()
        cC = cute.local_tile(cute.make_identity_tensor(mC.shape), (cfg.tile_m, cfg.tile_n),
                             (tile_m, tile_n))
        store_tile(copy_c, sC, gC, cC, mC.shape, tidx)

    @cute.jit
    def produce(self, j: cutlass.Int32, full: cute.Pointer, empty: cute.Pointer,
                tma_a: cute.CopyAtom, tAgA: cute.Tensor, tAsA: cute.Tensor,
                tma_b: cute.CopyAtom, tBgB: cute.Tensor, tBsB: cute.Tensor, report: cute.Tensor):
        """Load k-tile j into stage j % stages. Called by all of warp 0.

        Wait until the stage is empty (its previous k-tile released by every warp), arm
        its full barrier with one arrival and the stage's byte count, start both copies.
        """
        cfg = self.cfg
        s = j % cfg.stages
        parity = producer_parity(j, cfg.stages, cfg.bug)  # 1 on the first trip: passes at once
        self.wait(empty + s, parity, EMPTY, s, j, report)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)
        cute.copy(tma_a, tAgA[None, j], tAsA[None, s], tma_bar_ptr=full + s)
        cute.copy(tma_b, tBgB[None, j], tBsB[None, s], tma_bar_ptr=full + s)

    @cute.jit
    def wait(self, bar: cute.Pointer, parity: cutlass.Int32, kind: cutlass.Constexpr,
             stage: cutlass.Int32, ktile: cutlass.Int32, report: cute.Tensor):
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
    def give_up(self, report: cute.Tensor, kind: cutlass.Constexpr, stage: cutlass.Int32,
                parity: cutlass.Int32, ktile: cutlass.Int32):
        """The first thread to give up writes the report; others only stop waiting."""
        first = cute.arch.atomic_cas(report.iterator, cmp=cutlass.Int32(0),
                                     val=cutlass.Int32(1))
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


# ------------------------------------------------------------------ Python surface

def describe_report(words: list[int], config: Config) -> str:
    """The debug report as a sentence (words as read back from the kernel)."""
    _, cta, warp, kind, stage, parity, ktile, ms = words[:REPORT_WORDS]
    what = {FULL: "full", EMPTY: "empty"}.get(kind, f"barrier kind {kind}")
    role = ("a consumer waiting for k-tile %d to arrive" % ktile if kind == FULL else
            "the producer (warp 0) waiting to refill the stage with k-tile %d" % ktile)
    return (f"CTA {cta}, warp {warp} gave up after {ms} ms waiting on {what}[{stage}] for parity "
            f"{parity}: {role}. The phase with that parity never completed.")


_REPORTS: dict = {}


def _report_buffer(device) -> torch.Tensor:
    """One debug-report buffer per device, allocated once (so timed runs and CUDA-graph
    captures do not allocate); only debug runs read or clear it."""
    key = str(device)
    if key not in _REPORTS:
        _REPORTS[key] = torch.zeros(REPORT_WORDS, dtype=torch.int32, device=device)
    return _REPORTS[key]


def _signature(dtype: torch.dtype, config: Config, stream):
    p = gmem_pointer(None, dtype)
    report = gmem_pointer(None, torch.int32)
    eight = cutlass.Int32(8)
    return (TmaGemm(cutlass_dtype(dtype), config), p, p, p, eight, eight, eight, report, stream)


def compile(dtype: torch.dtype = torch.bfloat16, config: Config = Config()):
    """The launchable kernel for this machine's GPU (compiled once per dtype/config)."""
    require(NEEDS, "tma_gemm")
    return compile_cached(("tma_gemm", dtype, config), launch_arch(),
                          lambda: cute.compile(*_signature(dtype, config, fake_stream())))


def artifacts(arch: str = "sm_90a", dtype: torch.dtype = torch.bfloat16,
              config: Config = Config()) -> Artifacts:
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return compile_artifacts(("tma_gemm", dtype, config), arch,
                             *_signature(dtype, config, fake_stream()))


def run(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None,
        config: Config = Config()) -> torch.Tensor:
    """C = A . B^T: TMA loads, an mbarrier ring, mma.sync. Validates inputs first.

    A buggy config hangs the GPU unless debug_timeout_ms > 0 (then PipelineHang is
    raised here); call it through `check_isolated` to be safe either way.
    """
    require(NEEDS, "tma_gemm")
    report = []

    def report_pointer():  # called after validation, so a.device is a GPU
        report.append(_report_buffer(a.device))
        if config.debug_timeout_ms:
            report[0].zero_()
        return (gmem_pointer(report[0], torch.int32),)

    c = launch_tn(lambda dtype: compile(dtype, config), a, b, c, extra=report_pointer)
    if config.debug_timeout_ms and report:
        words = report[0].tolist()  # synchronizes
        if words[0]:
            raise PipelineHang(describe_report(words, config))
    return c


def prepare(problem, config: Config = Config()):
    """For course.bench: compile once for `problem`'s dtype, return gemm(a, b, c)."""
    compile(problem.dtype, config)
    return lambda a, b, c: run(a, b, c, config)


def check_isolated(m: int, n: int, k: int, dtype: str = "bf16", config: Config = Config(),
                   seed: int = 0) -> tuple[bool, str]:
    """Compile, then check C = A . B^T on fresh inputs: meant to run in a child process
    (course.runtime.watchdog.isolated), where a deadlock costs a killed process, not the notebook.
    Returns (passed, verdict text); raises PipelineHang from the debug mode."""
    from course.bench.gemm_bench import GemmProblem, check_gemm

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    compile(dt, config)
    launching()  # the watchdog's launch clock starts here, after compiling
    verdict = check_gemm(lambda a, b, c: run(a, b, c, config), GemmProblem(m, n, k, dt),
                         seed=seed)
    return verdict.ok, str(verdict)
