"""Notebook 10's kernel exercise `10.wgmma_mainloop`: the asynchronous WGMMA main loop.

The learner writes the `mainloop` method of `kernels.wgmma_gemm.WgmmaGemm`: for every k-tile,
wait for its stage, `wgmma.fence`, the wgmmas of its k-blocks, `commit_group`, then -- one
k-tile later -- `wait_group(1)` and only then hand the previous k-tile's stage back to the
TMA producer (warp 0 refills it). No GPU is needed to check the order: the kernel compiles
for sm_90a here and the order is read back from its PTX. On an H100 it also runs against
torch on ragged shapes and is timed against the course's own loop.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re

from course.exercises.gpu_run import speed_check
from course.exercises.kernel_check import (
    expect,
    failed,
    kernel_exercise,
    not_checked,
    passed,
    subclass_with,
    variant_name,
)
from course.sim import wgmma_loop

ID = "10.wgmma_mainloop"
SHAPES = ((128, 256, 64), (1000, 1016, 520), (129, 264, 72), (512, 768, 1024))
QUICK_SHAPES = ((128, 256, 576), (129, 264, 72))  # 1-2 CTAs, a few k-tiles: sanitizers are quick
TIMED_SIZE = 4096
# of the course's own loop, same Config. On an H100 the reference measured 99.9% (spread
# 95.5-100.2%). wait_group(0) measured 99.8% there: with two consumer warpgroups the tensor
# cores stay busy anyway, so only the CPU checks (the PTX) catch it, not this gate.
REQUIRED_SPEED = 0.90
SPEED_AGAINST = "the course's main loop (same Config)"
# No compute-sanitizer by default: on an H100 racecheck reported 0 errors for every wrong
# variant of this exercise (the hazards are between the threads and the tensor cores / TMA,
# which it may not track), and every one of them still gave correct results there; the PTX
# checks are what catch them. check(..., sanitize=True) still runs it.

WGMMA = r"wgmma\.mma_async"


def exercise_config():
    from kernels.wgmma_gemm import Config

    return Config()


def gemm_with(mainloop):
    """The course's WgmmaGemm with the learner's `mainloop` method, as a GemmHost (step 09's
    TMA load of one k-tile stays reachable as self.load_k_tile)."""
    from kernels import wgmma_gemm as step
    from kernels.gemm_host import GemmHost

    cls = subclass_with(step.WgmmaGemm, "mainloop", mainloop)
    return GemmHost(
        variant_name(ID, mainloop),
        step.NEEDS,
        lambda types, config, arch, a_major, b_major: cls(types, config),
        step.Config,
    )


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(arch, torch.bfloat16, torch.bfloat16, exercise_config(), "k", "k")


# ---------------------------------------------------------------- any machine

HINTS = {
    "fence": "missing fence: " + wgmma_loop.ISA_FENCE + ". The kernel fills the accumulator "
    "before your loop, so call cute.nvgpu.warpgroup.fence() before the first "
    "cute.gemm (once before the loop, or at the top of every k-tile)",
    "missing wait": "a stage is read before its bytes landed: ring.consumer_wait(read) before "
    "the k-tile's first cute.gemm",
    "commit": "commit missing: cute.nvgpu.warpgroup.commit_group() after a k-tile's wgmmas makes "
    "them one group; wait_group counts committed groups only, so uncommitted wgmmas "
    "are never waited for",
    "no wait": "no wait_group: nothing says k-tile t-1's wgmmas are done reading its stage; "
    "cute.nvgpu.warpgroup.wait_group(1) before ring.consumer_release(release)",
    "released too early": "released too early: the stage is handed back while the wgmmas of "
    "its k-tile may still read it; cute.nvgpu.warpgroup.wait_group(1) "
    "first (only k-tile t's group left running), then "
    "ring.consumer_release(release)",
    "stage in use": "wrong stage: the released stage is still being read by the wgmmas just "
    "issued; release the oldest stage (ring.consumer_release(release), then "
    "release.advance()), one k-tile behind `read`",
    "serialises": "serialises the tensor cores: the values are right, but wait_group(0) waits "
    "for k-tile t's wgmmas too, so k-tile t+1 is never issued while they run; "
    "wait_group(1) leaves exactly k-tile t's group in flight",
    "every k-block": "for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])): cute.gemm("
    "tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, "
    "read.index], acc) -- every k-block of every k-tile, once",
    "missing release": "a deadlock: warp 0 waits to refill a stage that was never handed back; "
    "every warp calls ring.consumer_release(release) once per k-tile it has "
    "finished reading",
    "acc in flight": "the accumulator was used while wgmmas still write it: wait_group first",
    "deadlock": "a deadlock: the warps wait for a k-tile nobody loads; after a stage is handed "
    "back, warp 0 refills it (self.load_k_tile(ring, produce, *loads), then "
    "produce.advance()) while produce.count < k_tiles",
    "runs as plain Python": "your method raised an error when run as plain Python: read the "
    "error and the line it names",
}


def protocol_holds(c):
    """The learner's loop run on the CPU by the CTA's 8 warps over a model of the ring and
    of WGMMA's asynchronous groups (course.sim.wgmma_loop)."""
    out = wgmma_loop.sweep(c.fn, exercise_config())
    what = (
        "your loop run on the CPU by 8 warps: ring, TMA landings and wgmma groups "
        "modelled, interleaved at random"
    )
    if out.kind == "unmodelled":
        return not_checked(what, f"not checked here: {out.detail} (a run on a GPU checks it)")
    if out.ok:
        return passed(what, out.detail)
    return failed(what, f"{out.kind}: {out.detail}", HINTS.get(out.mistake, out.mistake))


def wgmmas_share_one_accumulator(c):
    """In the PTX: every wgmma.mma_async accumulates into the same registers, one per
    k-block of a k-tile (a loop peeled by hand repeats the k-tile's wgmmas)."""
    from kernels.gemm_host import mma_k, tile_k

    k_blocks = tile_k(16) // mma_k(16)  # bf16: 64-wide k-tiles, a wgmma takes 16 of K
    mmas = [line for line in c.instructions if re.match(WGMMA, line)]
    accumulators = {line.split("{")[1].split("}")[0] for line in mmas if "{" in line}
    ok = bool(mmas) and len(mmas) % k_blocks == 0 and len(accumulators) == 1
    return expect(
        "the PTX: wgmmas of whole k-tiles, all into the one accumulator",
        ok,
        f"{len(mmas)} wgmma.mma_async (a k-tile is tile_k / wgmma's K = {k_blocks}), "
        f"{len(accumulators)} accumulator(s)",
        HINTS["every k-block"],
    )


# ---------------------------------------------------------------- on an H100


def _speed(gemm, reference):
    from course.exercises.gpu_run import speed_against

    return speed_against(
        gemm,
        reference,
        exercise_config(),
        TIMED_SIZE,
        REQUIRED_SPEED,
        "keep k-tile t's wgmmas in flight while k-tile t+1 is issued "
        "(wait_group(1), not 0), and refill a stage as soon as it is released",
        what=SPEED_AGAINST,
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import gemm_findings
    from kernels import wgmma_gemm

    gemm, cfg = gemm_with(fn), exercise_config()
    dtypes = (torch.bfloat16,) if quick else (torch.bfloat16, torch.float16)
    if not quick:
        wgmma_gemm.GEMM.compile(torch.bfloat16, cfg)
    hint = (
        "a stage was overwritten while wgmmas still read it, or read before its bytes "
        "landed: consumer_wait(read) first; release `release` (k-tile t-1's stage) only "
        "after wait_group(1)"
    )
    findings = []
    for dtype in dtypes:
        findings += gemm_findings(
            gemm,
            QUICK_SHAPES if quick else SHAPES,
            launching,
            dtype=dtype,
            config=cfg,
            wrong_hint=hint,
        )
    if not quick and all(f.status == "pass" for f in findings):
        findings.append(_speed(gemm, wgmma_gemm.GEMM))
    return findings


kernel_exercise(
    id=ID,
    prompt="Write mainloop, the WGMMA main loop: multiply every k-block of every k-tile "
    "into acc once its bytes have landed, keep the tensor cores busy between k-tiles, and "
    "hand each stage back to the producer (which warp 0 then refills) only once no wgmma "
    "that reads it can still be running.",
    hint="wgmma runs asynchronously: a stage is free when the group that reads it has "
    "completed, and waiting for the group you just issued leaves the tensor cores idle. "
    "Which k-tile's stage is safe to release after each commit, and how many groups may "
    "still be in flight at that moment?",
    arch="sm_90a",
    needs="sm_90a",
    build=_build,
    cpu_checks=(wgmmas_share_one_accumulator, protocol_holds),
    gpu_checks=gpu_checks,
    timeout_s=120,
    speed_check=speed_check(TIMED_SIZE, SPEED_AGAINST),
    run_shows="whether it computes the right numbers on ragged shapes, and its speed "
    "against the course's loop",
    solution="course/exercises/solutions/nb10_solutions.py: mainloop",
)
