"""Notebook 07's exercises: the SM80 kernel's budget and bookkeeping, and its main loop.

`07.mainloop`: the learner writes the multistage cp.async main loop as the `mainloop`
method of `kernels.sm80_gemm.Sm80Gemm` (the kernel's prologue has already issued stages-1
k-tiles); the course builds a subclass with that method and runs the whole GEMM.
"""
# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL

from course.exercises.check import exercise, number, pair
from course.exercises.gpu_run import speed_check
from course.exercises.kernel_check import expect, kernel_exercise, subclass_with, variant_name


SMEM_CONFIG = dict(tile_m=256, tile_n=128, tile_k=32, stages=5)  # the page prints the default's


def _ring_bytes(tile_m, tile_n, tile_k, stages, element_bytes=2):
    return (tile_m + tile_n) * tile_k * element_bytes * stages


@exercise(
    "07.smem",
    "How many bytes of shared memory does the ring of Config(tile_m=256, "
    "tile_n=128, tile_k=32, stages=5) take for bf16 operands?",
    "what does one stage of the ring hold, of A and of B, and how many bytes is one bf16 value?",
    "(256 + 128) * 32 * 2 bytes * 5 stages = 122,880 bytes.",
)
def _smem(answer):
    truth = _ring_bytes(**SMEM_CONFIG)
    slips = {
        _ring_bytes(128, 256, 64, 3): "that is the default Config's ring (the cell at the top "
        "prints it); this one has other tiles and stages",
        _ring_bytes(**SMEM_CONFIG, element_bytes=1): "that counts one byte per value; bf16 "
        "takes two",
        _ring_bytes(**dict(SMEM_CONFIG, stages=1)): "that is one stage; the ring has five",
        SMEM_CONFIG["tile_m"] * SMEM_CONFIG["tile_k"] * 2 * SMEM_CONFIG["stages"]: "that is "
        "A alone; each stage holds a k-tile of B too",
        SMEM_CONFIG["tile_n"] * SMEM_CONFIG["tile_k"] * 2 * SMEM_CONFIG["stages"]: "that is "
        "B alone; each stage holds a k-tile of A too",
        SMEM_CONFIG["tile_m"] * SMEM_CONFIG["tile_n"] * 2 * SMEM_CONFIG["stages"]: "that is a "
        "tile of C per stage; the ring holds k-tiles of A and B, tile_k wide",
    }
    try:
        value = float(answer)
    except (TypeError, ValueError):
        value = None
    if value is not None and value != truth and value in slips:
        return False, slips[value]
    return number(answer, truth, unit="bytes")


@exercise(
    "07.stages_fit",
    "One CTA may use at most 227 KiB (232,448 bytes) of shared memory on "
    "an H100 (the SM has 228 KiB; the system keeps 1 KiB per CTA). How many stages of "
    "128 x 256 x 64 bf16 tiles fit in it at most?",
    "divide the budget by one stage's bytes and round down.",
    "232448 // ((128 + 256) * 64 * 2) = 232448 // 49152 = 4.",
)
def _fit(answer):
    return number(answer, 232448 // ((128 + 256) * 64 * 2))


@exercise(
    "07.stage_of",
    "With a 4-stage ring, which shared-memory stage does k-tile 10 land in?",
    "the ring is filled in order and wraps around.",
    "10 % 4 = 2.",
)
def _stage(answer):
    return number(answer, 10 % 4)


@exercise(
    "07.order",
    "With 16 x 16 tiles of C and groups of 8 tile rows, which tile "
    "(tile_m, tile_n) does the CTA with linear id 11 compute?",
    "groups of 8 rows are walked column by column: id 11 is in the second column.",
    "(3, 1): ids 0-7 are column 0 of rows 0-7, ids 8-15 column 1.",
)
def _order(answer):
    from course.models.tile_order import grouped_tile

    m, n = pair(answer, "answer with a pair (tile_m, tile_n)")
    return (m, n) == grouped_tile(11, 16, 16, 8), ""


# ---------------------------------------------------------------- kernel exercise: the main loop

SHAPES = ((128, 128, 64), (1000, 1016, 520), (129, 264, 72), (512, 768, 1024))
QUICK_SHAPES = ((128, 256, 448), (129, 264, 200))  # few CTAs and k-tiles: racecheck is quick;
# the ragged one has k-tiles left for the loop itself to copy at the M edge (its predicates)
TIMED_SIZE = 4096
# of the course's own main loop, same Config. On an H100 a plain loop (wait, sync, issue,
# ldmatrix + mma) measured 87% of the course's, which also prefetches the next k-tile's first
# k-block across the barrier; wait_group(0) measured the same 87% there (CPU-caught instead).
REQUIRED_SPEED = 0.80
SPEED_AGAINST = "the course's main loop (same Config)"


def exercise_config():
    from kernels.sm80_gemm import Config

    return Config()


def gemm_with(mainloop):
    """The course's Sm80Gemm with the learner's `mainloop` method, as a GemmHost (compile /
    artifacts / run), named after the function so two versions never share a compile."""
    from kernels import sm80_gemm
    from kernels.gemm_host import GemmHost

    cls = subclass_with(sm80_gemm.Sm80Gemm, "mainloop", mainloop)
    return GemmHost(
        variant_name("07.mainloop", mainloop),
        sm80_gemm.NEEDS,
        lambda types, config, arch, a_major, b_major: cls(types, config),
        sm80_gemm.Config,
    )


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(arch, torch.bfloat16, torch.bfloat16, exercise_config(), "k", "k")


def _waits(c) -> list[int]:
    import re

    return [int(n) for n in re.findall(r"cp\.async\.wait_group\s+(\d+)", c.ptx)]


def issues_cp_async_copies(c):
    cfg = exercise_config()
    per_k_tile = (cfg.tile_m + cfg.tile_n) * cfg.tile_k // (cfg.threads * 8)
    copies = c.count(r"cp\.async\.cg\.shared\.global")
    # the prologue issues stages-1 k-tiles; the loop must issue at least one more
    return expect(
        "the loop issues the next k-tiles with cp.async",
        copies >= cfg.stages * per_k_tile,
        f"{copies} cp.async.cg.shared.global (the prologue alone has "
        f"{(cfg.stages - 1) * per_k_tile})",
        "the main loop never loads k-tile next_k: every iteration must copy the next "
        "k-tile of A and of B into the stage that is free, with the copies' row predicates "
        "(the prologue's excerpt shows how a k-tile and a stage are indexed)",
    )


def commits_each_k_tile(c):
    stages = exercise_config().stages
    commits = c.count(r"cp\.async\.commit_group")
    return expect(
        "each k-tile's copies are committed as a group",
        commits >= stages,
        f"{commits} cp.async.commit_group (the prologue has {stages - 1})",
        "commit the copies of each iteration as one group, even when there was nothing "
        "left to copy: wait_group counts groups, not copies",
    )


def keeps_copies_in_flight(c):
    stages = exercise_config().stages
    waits = sorted(set(_waits(c)))
    ok = stages - 2 in waits and all(n <= stages - 2 for n in waits)
    detail = f"cp.async.wait_group {', '.join(map(str, waits))}" if waits else "no wait_group"
    if stages - 2 not in waits and waits and max(waits) < stages - 2:
        hint = (
            "no overlap: cp_async_wait_group(0) waits for every copy in flight, the ones "
            "just issued included, so the loads no longer overlap the math (correct, "
            "but the pipeline is gone): how many groups were committed after k-tile t's, "
            "and may stay in flight while it is read?"
        )
    elif waits and max(waits) > stages - 2:
        hint = (
            f"waiting for too few groups: wait_group {max(waits)} lets k-tile t still be "
            f"in flight when it is read; stages - 2 = {stages - 2} groups may stay pending"
        )
    else:
        hint = (
            "wait for k-tile t before reading it, leaving in flight only the groups committed "
            "after it, and make every thread's copies visible to the CTA before anyone reads"
        )
    return expect(f"k-tile t waited for, {stages - 2} group(s) left in flight", ok, detail, hint)


def multiplies_with_ldmatrix_and_mma(c):
    cfg = exercise_config()
    per_k_tile = (
        (cfg.tile_m // cfg.warps_m // 16) * (cfg.tile_n // cfg.warps_n // 8) * (cfg.tile_k // 16)
    )
    mma, ldsm = c.count(r"mma\.sync\.aligned\.m16n8k16"), c.count(r"ldmatrix\.sync")
    return expect(
        "ldmatrix + mma.sync over every k-block",
        ldsm > 0 and mma >= per_k_tile,
        f"{ldsm} ldmatrix, {mma} mma.sync.m16n8k16 (one k-tile needs {per_k_tile})",
        "every k-block of the stage being read goes through two steps: ldmatrix into the "
        "registers the MMA reads (the fragments' shared-to-register copies, section 3), then "
        "one MMA into the accumulator",
    )


def barrier_after_each_wait(c):
    """In PTX order, the first barrier-or-ldmatrix after every wait_group is a barrier:
    one thread's wait covers its own copies only; the barrier makes them everyone's."""
    import re

    unguarded, pending = 0, False
    for line in c.ptx.splitlines():
        if re.search(r"cp\.async\.wait_group", line):
            pending = True
        elif pending and re.search(r"\b(bar|barrier)\.sync", line):
            pending = False
        elif pending and "ldmatrix" in line:
            unguarded, pending = unguarded + 1, False
    return expect(
        "a barrier between the wait and the ldmatrix reads",
        not unguarded,
        f"{unguarded} wait_group(s) followed by ldmatrix with no bar.sync"
        if unguarded
        else "every wait_group is followed by bar.sync before any ldmatrix",
        "missing sync: cp_async_wait_group only waits for this thread's own copies; "
        "call cute.arch.sync_threads() after it so every thread's copies of the "
        "stage have landed before anyone reads it (and nobody still reads the stage "
        "the next copies overwrite)",
    )


def k_tile_miscounted(out, a, b, tile_k: int) -> bool:
    """Is out - A.B^T (close to) plus or minus one k-tile's product? Then the loop ran one
    k-tile too few or too many. (The kernel's first k-tile is the partial one.)"""
    import torch

    k = a.shape[1]
    k_tiles = -(-k // tile_k)
    error = out.double() - a.double() @ b.double().T
    start = k - k_tiles * tile_k
    for t in range(k_tiles):
        lo, hi = max(start + t * tile_k, 0), start + (t + 1) * tile_k
        part = a[:, lo:hi].double() @ b[:, lo:hi].double().T
        scale = float(torch.linalg.vector_norm(part)) or 1.0
        for sign in (1, -1):
            if float(torch.linalg.vector_norm(error - sign * part)) < 0.05 * scale:
                return True
    return False


def _mistake(a, b, out) -> str:
    """A wrong result that is one k-tile's product off, or anything else."""
    import torch

    if not torch.isnan(out.float()).any() and k_tile_miscounted(
        out, a, b, exercise_config().tile_k
    ):
        return (
            "one k-tile too few or too many: the loop runs k_tiles times, and the copies "
            "are guarded with next_k < k_tiles"
        )
    return (
        "wrong stage: the next k-tile's copies must go to the stage the CTA finished "
        "reading last iteration, never into one still being read or still in flight"
    )


def _speed(gemm, reference):
    from course.exercises.gpu_run import speed_against

    return speed_against(
        gemm,
        reference,
        exercise_config(),
        TIMED_SIZE,
        REQUIRED_SPEED,
        "keep stages - 1 k-tiles in flight (wait_group stages - 2, not 0), "
        "issue the next copies before the k-tile's math, and load k-block "
        "kb + 1 with ldmatrix before the mma of k-block kb",
        what=SPEED_AGAINST,
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import gemm_findings
    from kernels import sm80_gemm

    gemm, cfg = gemm_with(fn), exercise_config()
    if not quick:
        sm80_gemm.GEMM.compile(torch.bfloat16, cfg)
    findings = gemm_findings(
        gemm,
        QUICK_SHAPES if quick else SHAPES,
        launching,
        config=cfg,
        wrong_hint=_mistake,
        edge_hint="keep the copies' predicates (pred=pA, pred=pB)",
    )
    if not quick and all(f.status == "pass" for f in findings):
        findings.append(_speed(gemm, sm80_gemm.GEMM))
    return findings


kernel_exercise(
    id="07.mainloop",
    prompt="Write mainloop, the multistage main loop of the SM80 GEMM: for every k-tile wait "
    "until it has landed (leaving stages-2 groups in flight), sync, issue the next "
    "k-tile's cp.async copies into the freed stage and commit them, then ldmatrix and "
    "mma.sync over the k-blocks of the stage being read.",
    hint="which stage holds k-tile t, and which one did the CTA finish reading last "
    "iteration? How many copy groups may still be in flight once k-tile t has landed? A "
    "thread's wait covers its own copies only: what makes them everyone's?",
    arch="sm_80",
    needs="sm_80+",
    build=_build,
    cpu_checks=(
        issues_cp_async_copies,
        commits_each_k_tile,
        keeps_copies_in_flight,
        barrier_after_each_wait,
        multiplies_with_ldmatrix_and_mma,
    ),
    gpu_checks=gpu_checks,
    sanitize=("racecheck",),
    timeout_s=90,
    speed_check=speed_check(TIMED_SIZE, SPEED_AGAINST),
    run_shows="whether it computes the right numbers on ragged shapes, races between the "
    "copies and the reads that only compute-sanitizer sees, and its speed",
    solution="course/exercises/solutions/nb07_solutions.py: mainloop",
)
