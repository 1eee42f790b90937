"""Notebook 09's kernel exercise `09.ring`: find and fix a broken TMA + mbarrier ring.

The learner gets `ring(self, k_tiles, warp, full, empty, loads, tiled_mma, f, report)`, the
method of kernels.tma_gemm.TmaGemm that every warp runs between the tile set-up and the
epilogue, with four classic mistakes planted in it (`broken_ring` below, also the
notebook's cell). On any machine the checker compiles it for sm_90a, reads the fence from
the PTX and runs the code itself on the CPU, one thread per warp, with the barriers and
the TMA copies modelled (course.sim.ring_code), over several ring depths, lengths and
interleavings; on a Hopper GPU it runs the GEMM against torch with bounded waits, so a
hang comes back as the barrier, stage and parity that stuck.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the kernel's annotations
import cutlass
import cutlass.cute as cute

from course.exercises.kernel_check import (
    Finding,
    NOT_RUN,
    expect,
    failed,
    kernel_exercise,
    passed,
    subclass_with,
    variant_name,
)

SHAPES = ((128, 256, 320), (200, 296, 72), (257, 136, 1000), (640, 768, 4096))  # ragged tiles
QUICK_SHAPES = ((200, 296, 520),)  # 9 k-tiles: each stage refilled, stage 0 twice
DEBUG_TIMEOUT_MS = 500  # a wait that long gives up and reports where it stuck

HINTS = {  # the words course.sim.ring_code uses for a mistake -> what to change
    "missing fence": "missing fence: after initialising the barriers, call "
    "cute.arch.mbarrier_init_fence() (fence.mbarrier_init, a release fence for the "
    "inits) before the sync, so that every warp, and the TMA copies that count bytes on "
    "the barriers, see them initialised",
    "wrong parity": "wrong parity: a consumer waits on full[t % stages] for (t // stages) % 2; "
    "the producer waits on empty[j % stages] for ((j // stages) % 2) ^ 1, so "
    "its first trip passes at once and later ones wait for every release",
    "missing wait": "missing wait: before reading stage s, wait on full[s] for the phase that "
    "brings k-tile t: self.wait_full(full + s, (t // stages) % 2, t, report)",
    "missing expect_tx": "missing expect_tx: arm full[s] with cute.arch."
    "mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes); a plain "
    "arrive completes the phase before any byte has landed",
    "released too early": "released too early: arrive on empty[s] only after "
    "self.mma_k_tile(...) has read the stage; the arrival lets warp 0 "
    "load the next k-tile over it",
    "wrong stage released": "wrong stage released: after self.mma_k_tile(..., s) has read "
    "stage s, arrive on empty + s, the stage just read; another stage's release frees "
    "a stage still waited for and never frees this one",
    "every lane arrives": "every lane arrives: put the arrive inside `with "
    "cute.arch.elect_one():` (the barrier counts one arrival per warp)",
    "arrival count": "arrival count: full[s] expects 1 arrival (the producer's expect_tx; TMA "
    "brings bytes, not arrivals), empty[s] one per warp (self.cfg.warps)",
    "missing release": "missing release: every warp must arrive on empty[s] after reading "
    "the stage, or warp 0 never refills it",
    "expect_tx bytes": "expect_tx bytes: announce exactly the bytes one k-tile brings "
    "(self.tx_bytes)",
    "stage index": "stage index: k-tile t lives in stage t % stages, counted on full[t % stages]",
    "every k-tile": "every k-tile: warp 0 loads each k-tile once and every warp reads each once",
    "past the last k-tile": "past the last k-tile: load k-tile j only while j < k_tiles",
    "missing sync": "missing sync: cute.arch.sync_threads() after the initialisation, before "
    "any warp touches a barrier",
    "sync_threads": "sync_threads: every warp must reach the CTA barrier",
    "runs as plain Python": "your ring raised an error when run as plain Python on the CPU "
    "(the error is above): every warp runs it with ints for k_tiles "
    "and warp",
}


def exercise_config(debug: bool = False):
    from kernels.tma_gemm import Config

    return Config(debug_timeout_ms=DEBUG_TIMEOUT_MS if debug else 0)


def gemm_with(ring):
    """kernels.tma_gemm's GEMM with the learner's `ring` method, as a GemmHost."""
    from dataclasses import replace

    from kernels import tma_gemm

    cls = subclass_with(tma_gemm.TmaGemm, "ring", ring)
    return replace(
        tma_gemm.GEMM,
        name=variant_name("09.ring", ring),
        kernel=lambda types, config, arch, a_major, b_major: cls(types, config),
    )


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(arch, torch.bfloat16, torch.bfloat16, exercise_config(), "k", "k")


def fences_the_init(c):
    n = c.count(r"fence\.mbarrier_init")
    return expect(
        "the barriers' initialisation is fenced",
        n > 0,
        f"{n} fence.mbarrier_init",
        HINTS["missing fence"],
    )


def protocol_holds(c):
    from course.sim import ring_code
    from kernels.tma_gemm import TmaGemm

    v = ring_code.verdict(c.fn, TmaGemm)
    what = "the ring run on the CPU by 8 warps, TMA landings interleaved at random"
    if v.kind == "unmodelled":
        return Finding(what, NOT_RUN, v.detail + " (a GPU run decides)")
    if v.ok:
        return passed(what, v.detail)
    return failed(what, f"{v.kind}: {v.detail}", HINTS.get(v.mistake, v.mistake))


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import gemm_findings
    from kernels.host import PipelineHang

    gemm, cfg = gemm_with(fn), exercise_config(debug=True)
    findings = []
    for shape in QUICK_SHAPES if quick else SHAPES:
        try:
            findings += gemm_findings(
                gemm,
                (shape,),
                launching,
                config=cfg,
                wrong_hint=HINTS["released too early"] + "; or " + HINTS["missing expect_tx"],
            )
        except PipelineHang as hang:
            findings.append(
                failed(
                    "%dx%dx%d bf16 against torch" % shape, f"hang: {hang}", _hang_hint(str(hang))
                )
            )
            torch.cuda.synchronize()
            break
    return findings


def _hang_hint(report: str) -> str:
    if "empty[" in report:
        return HINTS["wrong parity"] + ". " + HINTS["missing release"]
    return HINTS["arrival count"] + ". " + HINTS["wrong parity"]


# ------------------------------------------------------------------ what the learner is given


@cute.jit
def broken_ring(self, k_tiles, warp, full, empty, loads, tiled_mma, f, report):
    stages = self.cfg.stages
    # 1. barriers: one thread initialises them; then the whole CTA syncs
    if warp == 0:
        with cute.arch.elect_one():
            for s in cutlass.range_constexpr(stages):
                cute.arch.mbarrier_init(full + s, 1)  # the producer's arrive.expect_tx
                cute.arch.mbarrier_init(empty + s, self.cfg.warps)  # one release per warp
    cute.arch.sync_threads()

    # 2. prologue: warp 0 fills every stage (fresh barriers: parity 1 passes at once)
    if warp == 0:
        for j in range(cutlass.min(stages, k_tiles)):
            self.wait_empty(empty + j, 1, j, report)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full + j, self.tx_bytes)
            self.copy_k_tile(loads, j, j, full + j)

    # 3. every warp, every k-tile: wait for it, multiply, release its stage; then warp 0
    #    refills the stage with k-tile j = t + stages once every warp has released it
    for t in range(k_tiles):
        s = t % stages
        self.wait_full(full + s, (t // stages) % 2, t, report)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(empty + s)
        self.mma_k_tile(tiled_mma, f, s)
        j = t + stages
        if warp == 0:
            if j < k_tiles:
                self.wait_empty(empty + s, (j // stages) % 2, j, report)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(full + s)
                self.copy_k_tile(loads, j, s, full + s)


kernel_exercise(
    id="09.ring",
    prompt="Find and fix the four mistakes in ring, the mbarrier ring every warp of the TMA "
    "GEMM runs: barrier set-up, warp 0's loads, and each warp's wait, MMAs and release "
    "of every k-tile.",
    hint="init, fence, sync; the producer waits on empty with ((j // stages) % 2) ^ 1 and arms "
    "full with expect_tx; consumers wait on full with (t // stages) % 2 and release "
    "empty (one lane per warp) only after the MMAs read the stage.",
    arch="sm_90a",
    needs="sm_90+",
    build=_build,
    cpu_checks=(fences_the_init, protocol_holds),
    gpu_checks=gpu_checks,
    sanitize=("racecheck", "synccheck", "memcheck"),
    timeout_s=120,
    run_shows="whether the GEMM computes the right numbers on ragged shapes with the real "
    "hardware's timing, and what compute-sanitizer sees",
    shipped=broken_ring,
    solution="course/exercises/solutions/nb09_solutions.py: ring",
)
