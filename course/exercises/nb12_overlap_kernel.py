"""Notebook 12's second kernel exercise `12.overlap`: each promotion under the next k-tile's
wgmmas.

The learner writes the `promote_group` method of `kernels.fp8_gemm.Fp8Gemm` for the preset
"block_overlapped": `group` k-tiles (a Python int), unrolled, with two temporary accumulators
`tmps` used in turn, so that k-tile j + 1's wgmmas are issued before k-tile j is waited for
and promoted. The three steps come as `steps` (kernels.fp8_gemm.GroupSteps): `issue(tmp)`,
`scales(k_tile)`, `promote(tmp, scales)`; the wait between them is the learner's, and so
are the order, the accumulator each k-tile goes into and how many groups stay in flight.

What is checked, and by what:

* the PTX: a `wgmma.wait_group 1` for each k-tile of a group but its last (a promotion with
  the next k-tile's wgmmas still in flight, which is the overlap), and no load between a
  wait and the next wgmma (the scales' loads started before the wait);
* the SASS (ptxas's own reading of the code): a k-tile's four QGMMAs end in one wait group.
  Where an instruction reads a temporary accumulator whose wgmmas the code has not retired
  -- undefined in the PTX ISA ("Accessing the accumulator register ... without first
  performing a wgmma.wait_group instruction that waits on a wgmma-group including that
  wgmma.mma_async instruction is an undefined behavior"), or an accumulator cleared with
  the next k-tile issued into the accumulator about to be promoted -- ptxas serializes every
  wgmma of the kernel (its warning C7514) and the overlap is gone whatever the PTX says;
* a run against torch (on the CPU executor here, which names an accumulator read while its
  wgmmas are in flight; on an H100/H200 on larger ragged shapes), with notebook 12's
  first exercise's inputs: integers and power-of-two scales, so that a k-tile promoted out
  of the wrong accumulator gives numbers of its own.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re

from course.exercises import nb12_promotion_kernel as promotion
from course.exercises.kernel_check import expect, kernel_exercise, subclass_with, variant_name
from course.exercises.kernel_exercises import could_not_run
from course.exercises.machine_faults import MachineFault

ID = "12.overlap"
PRESET = "block_overlapped"  # kernels.fp8_gemm.PRESETS: staged block scales, groups of 4
# 7 k-tiles: one group of four, then three groups of one (the k-tiles past the last whole
# group); a full and a partial 128 x 128 tile in M and N
QUICK_SHAPES = promotion.QUICK_SHAPES
# 8 k-tiles (two groups), 5 (a group and one), 3 (groups of one only), 7
SHAPES = ((256, 384, 1024), (1000, 1016, 528), (65, 264, 320), (129, 264, 784))

WAIT = r"^wgmma\.wait_group\.sync\.aligned\s+(\d+);"
QGMMA = r"QGMMA\."


def exercise_config():
    from kernels.fp8_gemm import PRESETS

    return PRESETS[PRESET]


def gemm_with(promote_group):
    """The course's Fp8Gemm with the learner's `promote_group`, as a GemmHost."""
    from kernels import fp8_gemm

    cls = subclass_with(fp8_gemm.Fp8Gemm, "promote_group", promote_group)
    return promotion.fp8_host(variant_name(ID, promote_group), cls)


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(
        arch, torch.float8_e4m3fn, torch.bfloat16, exercise_config(), "k", "k"
    )


# ---------------------------------------------------------------- any machine

ANSWER_HINT = (
    "the kernel's own promote_group is this exercise's answer: write the group's steps "
    "yourself (steps.issue, steps.scales, cute.nvgpu.warpgroup.wait_group, steps.promote)"
)


def writes_its_own_group(c):
    """The learner's source does not call a promote_group (the kernel's, which is the answer,
    or its own, which would recurse)."""
    calls = re.findall(r"(?<!def )\bpromote_group\s*\(", c.code.source)
    return expect(
        "your code: the group's steps written, not the kernel's promote_group called",
        not calls,
        f"promote_group called {len(calls)} time(s) in your code",
        ANSWER_HINT,
    )


NO_OVERLAP_HINT = (
    "fewer wait_group(1) than a group's k-tiles but one (the counts above): where a "
    "promotion waits for all wgmmas (wait_group(0)), none of your warpgroup's wgmmas runs "
    "under it. Issue k-tile j + 1's wgmmas (into the other tmp) "
    "before you wait for k-tile j, and then wait with wait_group(1), which leaves the newest "
    "group, k-tile j + 1's, running; only the group's last k-tile has nothing after it"
)


def promotes_under_the_next_k_tile(c):
    """In the PTX: a `wgmma.wait_group 1` for each k-tile of a group but its last, the
    promotion it opens made with the next k-tile's wgmmas in flight."""
    group = exercise_config().overlap_group
    waits = [int(m.group(1)) for line in c.instructions if (m := re.match(WAIT, line))]
    ones = waits.count(1)
    return expect(
        "the PTX: each promotion of a group but the last under the next k-tile's wgmmas",
        ones >= group - 1,
        f"{ones} wgmma.wait_group 1 and {waits.count(0)} wgmma.wait_group 0 (a group of "
        f"{group} k-tiles overlaps {group - 1} promotions with a wait_group 1 each)",
        NO_OVERLAP_HINT,
    )


SERIALIZED_HINT = (
    "ptxas serialized every wgmma of the kernel (its warning C7514: an instruction reads "
    "accumulator registers of a wgmma that may still run): your code reads a tmp whose "
    "wgmmas may still be writing it -- the PTX ISA leaves that undefined, so ptxas waits "
    "after every wgmma instead. The k-tile you promote must be retired by your wait "
    "(wait_group(0) where nothing was issued after it), and the next k-tile's wgmmas must go "
    "into the other tmp, not the one you are about to promote"
)


def wgmmas_stay_asynchronous(c):
    """In the SASS: a k-tile's four QGMMAs end in one wait group (gsb0) -- where ptxas found
    an accumulator read while its wgmmas may run, every QGMMA ends its own."""
    check = "the SASS: a k-tile's four wgmmas in one wait group (ptxas kept them asynchronous)"
    try:
        qgmma = c.artifacts.sass_lines(QGMMA)
    except FileNotFoundError as exc:  # nvdisasm missing: the machine's, not the learner's
        return could_not_run(
            check, MachineFault(f"no disassembler for the SASS ({exc})", "reinstall the course")
        )
    waited = sum("gsb0" in line for line in qgmma)
    return expect(
        check,
        4 * waited <= len(qgmma),
        f"{len(qgmma)} QGMMA instructions, {waited} of them end a wait group (gsb0)",
        SERIALIZED_HINT,
    )


SCALES_LATE_HINT = (
    "the scales are read after the wait: their loads from shared memory start only once the "
    "k-tile's wgmmas have retired, and their latency adds to every promotion. Call "
    "steps.scales(k_tile) before cute.nvgpu.warpgroup.wait_group, as in the first exercise"
)


def loads_scales_before_the_wait(c):
    """In the PTX: after each wgmma.wait_group, the promotion's first fused multiply-add
    comes before any load (ld.shared of the staged scales, or ld.global): its scales were
    asked for before the wait. Loads after the promotion, before the next wait, are the next
    k-tile's, under its wgmmas, as they should be."""
    late = []
    code = c.instructions
    for i, line in enumerate(code):
        if re.match(WAIT, line):
            for later in code[i + 1 :]:
                if later.startswith(("wgmma.", "fma.")):
                    break
                if later.startswith(("ld.shared", "ld.global")):
                    late.append(i)
                    break
    return expect(
        "the PTX: each promotion's scales loaded before its wait",
        not late,
        f"a load between the wgmma.wait_group at instruction {late[0]} and the promotion after it"
        if late
        else "no load between a wgmma.wait_group and the promotion after it",
        SCALES_LATE_HINT,
    )


# ---------------------------------------------------------------- a run (GPU or CPU executor)

VALUES_HINT = (
    "each k-tile must be promoted once, out of the accumulator its own wgmmas went into and "
    "with its own scales (steps.scales of the k-tile that steps.issue returned for it)"
)


NEXT_SCALES = (
    "each k-tile of a group but its last was promoted with the next k-tile's scales: "
    "steps.scales must be given the k-tile being promoted (k_tiles[j]), not the one just "
    "issued"
)


def candidates(x):
    """(name, C, hint) of the known wrong promotions: the first exercise's, and each k-tile
    of a whole group but its last promoted with the next k-tile's scales."""
    terms = promotion._k_tile_terms(x)
    group = exercise_config().overlap_group
    whole = len(terms) // group * group
    shifted = 0
    for kt, (p, sa, sb) in enumerate(terms):
        ahead = kt + 1 if kt < whole and kt % group != group - 1 else kt
        shifted = shifted + p * terms[ahead][1] * terms[ahead][2]
    said = "the product with each k-tile of a group promoted with the next k-tile's scales"
    return (*promotion.candidates(x), (said, shifted, NEXT_SCALES))


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import operand_findings

    shapes = QUICK_SHAPES if quick else SHAPES
    scales = ("a_scale", "b_scale")
    return operand_findings(
        gemm_with(fn), exercise_config(), torch.float8_e4m3fn, shapes, promotion.inputs,
        scales, promotion.reference, candidates, "e4m3, block scales, overlapped",
        VALUES_HINT, launching,
    )  # fmt: skip


kernel_exercise(
    id=ID,
    prompt="Write promote_group for the preset block_overlapped: `group` k-tiles, each "
    "promoted while the next one's wgmmas run. steps.issue(tmp) issues the next k-tile's "
    "wgmmas into tmp (overwriting it) and returns that k-tile; steps.scales(k_tile) starts "
    "its scales' loads; steps.promote(tmp, scales) adds tmp * scales into acc. The waits "
    "(cute.nvgpu.warpgroup.wait_group) are yours, and tmps holds two accumulators.",
    hint="a promotion may start once its own k-tile's wgmmas have retired, not the next "
    "one's: what must already be issued when you wait, and how many groups may that wait "
    "leave running? Which tmp can the next k-tile write while this one is being read?",
    arch="sm_90a",
    needs="sm_90a",
    build=_build,
    cpu_checks=(
        writes_its_own_group,
        promotes_under_the_next_k_tile,
        loads_scales_before_the_wait,
        wgmmas_stay_asynchronous,
    ),
    gpu_checks=gpu_checks,
    timeout_s=120,
    run_shows="whether every k-tile is promoted once, out of the accumulator its wgmmas "
    "wrote, and never read while they run (a run against torch on ragged shapes)",
    solution="course/exercises/solutions/nb12_solutions.py: promote_group",
)
