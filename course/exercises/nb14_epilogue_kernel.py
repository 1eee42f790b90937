"""Notebook 14's kernel exercise `14.epilogue_role`: the epilogue warps' side of TMEM.

The learner writes the `epilogue_role` method of `kernels.tcgen05_gemm.Tcgen05Gemm`: wait
for the accumulator the MMA warp committed, drain it (the course's `epilogue_tile`: tcgen05.ld,
convert, stage, TMA store), release the accumulator, drain the TMA stores, meet the other
epilogue warps, and free TMEM. No Blackwell GPU is needed to check it: the kernel compiles
for sm_100a here, and the synchronisation read back from its PTX (course.cute.ptx_protocol)
must keep every rule; on a GPU of compute capability 10.x it also runs against torch.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re

from course.exercises.kernel_check import (
    Finding,
    expect,
    failed,
    kernel_exercise,
    passed,
    subclass_with,
    variant_name,
)

# N and K multiples of 8: TMA needs 16-byte rows (gemm_host refuses N = 130, which these
# shapes had until the CPU executor first ran this check)
SHAPES = ((256, 256, 128), (300, 264, 200), (129, 136, 72))
QUICK_SHAPES = ((129, 136, 72),)
PROTOCOL_HINTS = {
    "tmem_freed": "TMEM is never freed: end with tmem.free(tmem_ptr) (warp 0 deallocates)",
    "tma_stores_drained": "the TMA stores are not drained before TMEM is freed and the kernel "
    "ends: c_pipeline.producer_tail() waits for every store to finish",
    "tmem_load_waited": "tcgen05.ld's registers used without tcgen05.wait::ld",
    "staging_visible_to_tma": "the staging buffer is stored without fence.proxy.async before "
    "the TMA store reads it",
    "barriers_ready": "a barrier is used before it is initialised and fenced",
}


def epilogue_class(epilogue_role, **methods):
    """The course's Tcgen05Gemm with `epilogue_role` (and any other `methods`) as its own; the
    epilogue's building blocks are reachable as self.epilogue_setup / self.epilogue_tile."""
    from kernels import tcgen05_gemm as step

    return subclass_with(
        step.Tcgen05Gemm,
        "epilogue_role",
        epilogue_role,
        epilogue_setup=step.epilogue_setup,
        epilogue_tile=step.epilogue_tile,
        **methods,
    )


def gemm_with(epilogue_role):
    """The course's Tcgen05Gemm with the learner's `epilogue_role` (`epilogue_class`), as a
    GemmHost."""
    from kernels import tcgen05_gemm as step
    from kernels.gemm_host import GemmHost

    cls = epilogue_class(epilogue_role)
    return GemmHost(
        variant_name("14.epilogue_role", epilogue_role),
        step.NEEDS,
        lambda types, config, arch, a_major, b_major: cls(types, config),
        step.Config,
        step.OPERANDS,
    )


def _build(fn, arch):
    import torch

    from kernels import tcgen05_gemm as step

    return gemm_with(fn).build(arch, torch.bfloat16, torch.bfloat16, step.Config(), "k", "k")


def keeps_the_protocol(c) -> list[Finding]:
    """course.cute.ptx_protocol's rules, each one a finding."""
    from course.cute import ptx_protocol

    broken = {v.rule: v.detail for v in ptx_protocol.check(c.ptx)}
    return [
        failed(f"protocol: {rule}", broken[rule], PROTOCOL_HINTS.get(rule, broken[rule]))
        if rule in broken
        else passed(f"protocol: {rule}")
        for rule in ptx_protocol.RULES
        if ptx_protocol.applies(rule, c.ptx)
    ]


def waits_for_the_accumulator(c):
    code = c.instructions
    commits = [i for i, line in enumerate(code) if line.startswith("tcgen05.commit")]
    loads = [i for i, line in enumerate(code) if line.startswith("tcgen05.ld")]
    start = commits[-1] if commits else 0
    waited = bool(loads) and any(
        line.startswith("mbarrier.try_wait") for line in code[start + 1 : loads[0]]
    )
    return expect(
        "the epilogue waits for the accumulator",
        waited,
        "an mbarrier wait before the first tcgen05.ld"
        if waited
        else "tcgen05.ld with no wait on the accumulator's barrier before it",
        "the accumulator is read before the MMAs finished: "
        "acc_pipeline.consumer_wait(acc_state) before draining it",
    )


def all_warps_done_before_free(c):
    code = c.instructions
    frees = [i for i, line in enumerate(code) if line.startswith("tcgen05.dealloc")]
    if not frees:
        return expect(
            "the epilogue warps meet before TMEM is freed",
            False,
            "no tcgen05.dealloc",
            PROTOCOL_HINTS["tmem_freed"],
        )
    before = [
        line
        for line in code[: frees[0]]
        if not re.match(r"(mov|setp|not|@|bra|cvt|add|and|or)\b", line)
    ][-2:]
    met = any(re.match(r"bar(rier)?\.sync", line) for line in before)
    return expect(
        "the epilogue warps meet before TMEM is freed",
        met,
        "a named barrier right before tcgen05.dealloc"
        if met
        else f"tcgen05.dealloc right after {before[-1][:40] if before else '?'}",
        "warp 0 frees TMEM while warps 1-3 may still be reading it: "
        "epi_barrier.arrive_and_wait() before tmem.free",
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    from course.exercises.gpu_run import gemm_findings

    return gemm_findings(gemm_with(fn), QUICK_SHAPES if quick else SHAPES, launching)


kernel_exercise(
    id="14.epilogue_role",
    prompt="Write epilogue_role, warps 0-3 of the 1-CTA tcgen05 GEMM: set up "
    "(self.epilogue_setup), wait for the accumulator, drain it to C "
    "(self.epilogue_tile), release it, drain the TMA stores, meet the other epilogue "
    "warps, and free TMEM.",
    hint="consumer_wait before reading TMEM; producer_tail before freeing; "
    "epi_barrier.arrive_and_wait() so no warp still reads TMEM when warp 0 frees it.",
    arch="sm_100a",
    needs="sm_100a",
    build=_build,
    cpu_checks=(waits_for_the_accumulator, keeps_the_protocol, all_warps_done_before_free),
    gpu_checks=gpu_checks,
    timeout_s=90,
    run_shows="whether the GEMM computes the right numbers, which needs a Blackwell GPU "
    "(compute capability 10.x)",
    solution="course/exercises/solutions/nb14_solutions.py: epilogue_role",
)
