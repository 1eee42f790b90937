"""Notebook 14's kernel exercise `14.epilogue_role`: the epilogue warps' side of TMEM.

The learner writes the `epilogue_role` method of `kernels.tcgen05_gemm.Tcgen05Gemm`: wait
for the accumulator the MMA warp committed, drain it (the course's `epilogue_tile`: tcgen05.ld,
convert, stage, TMA store), release the accumulator, drain the TMA stores, meet the other
epilogue warps, and free TMEM. No Blackwell GPU is needed to check it: the kernel compiles
for sm_100a here, and the synchronisation read back from its PTX (course.cute.ptx_protocol)
must keep every rule; on a GPU of compute capability 10.x it also runs against torch.

The static checks refuse only what the PTX ISA forbids: TMEM read after it is freed, a free
not ordered after another warp's last tcgen05.ld. TMA stores still in flight when the CTA
exits are a note (the ISA leaves that defined; NVIDIA's TMA tutorials end so). The
order of the teardown is otherwise the learner's: NVIDIA's Blackwell tutorial GEMMs drain
the stores and free with no barrier of their own (epilogue_tile's last barrier already
follows every warp's last read), its block-scaled GEMM meets, frees, then drains.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
import re

from course.cute import ptx_protocol as pp
from course.cute.ptx_protocol import BARRIERS_READY_ISA
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
SHAPES = ((256, 256, 128), (300, 264, 200), (129, 136, 72), (129, 136, 520))
QUICK_SHAPES = ((129, 136, 320),)  # 5 k-tiles over 4 stages: the ring wraps once
# a static rule's hint, by the rule (course.cute.ptx_protocol), each with the PTX ISA's text
# it rests on; a rule with several requirements also by which one (Violation.what)
PROTOCOL_HINTS = {
    "tmem_freed": "TMEM is never freed: end with tmem.free(tmem_ptr) (warp 0 deallocates); "
    + pp.TMEM_FREED_ISA,
    "tma_stores_drained": "the TMA stores are still in flight when the kernel ends (a note: the "
    "PTX ISA leaves that defined, since a bulk store reads only this CTA's shared memory; the "
    "course's kernels drain with c_pipeline.producer_tail(), before or after tmem.free: the "
    "stores never read TMEM)",
    "tmem_load_waited": "tcgen05.ld's registers used without tcgen05.wait::ld (a note: the PTX "
    "ISA observes a load's completion through tcgen05.wait::ld but does not call the registers "
    "undefined before it)",
    "staging_visible_to_tma": "the staging buffer is stored without fence.proxy.async before "
    "the TMA store reads it: cute.arch.fence_proxy('async.shared', space='cta') after the "
    "writes, before the barrier and the store; " + pp.STAGING_ISA,
    "pair_dealloc_synced": "a CTA pair frees TMEM only after both CTAs are done with it: "
    "tmem.free does the dealloc mbarrier handshake with the peer (or a cluster barrier before "
    "the dealloc); " + pp.PAIR_DEALLOC_ISA,
    "clc_response_waited": "the answer is decoded before it has arrived: "
    "clc_pipeline.consumer_wait(read_state) first; " + pp.CLC_WAIT_ISA,
    "barriers_ready": "a barrier is used before it is initialised, fenced and published: "
    "after mbarrier.init, fence.mbarrier_init and a CTA (or, in a cluster, a cluster) barrier "
    "before any thread uses it; " + BARRIERS_READY_ISA,
}
TMEM_FREED_HINTS = {
    pp.CTA_GROUPS: "tcgen05.alloc and tcgen05.dealloc with different cta_group: free TMEM with "
    "the allocator that allocated it (the same is_two_cta); " + pp.TMEM_FREED_ISA,
    pp.FREED_FIRST: "TMEM is freed before it is allocated: tmem.allocate first, "
    "tmem.free(tmem_ptr) last; " + pp.TMEM_FREED_ISA,
}


def protocol_hint(v) -> str:
    """The hint of a refusing ptx_protocol.Violation: by its rule, and by which of the rule's
    requirements it broke."""
    if v.rule == "tmem_freed" and v.what in TMEM_FREED_HINTS:
        return TMEM_FREED_HINTS[v.what]
    return PROTOCOL_HINTS.get(v.rule, v.detail)


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

    found = ptx_protocol.check(c.ptx)
    broken = {}
    for v in found:
        if not v.note:
            broken.setdefault(v.rule, v)  # the first refusal of each rule
    noted = {v.rule: v.detail for v in found if v.note}  # said, never a refusal
    return [
        failed(f"protocol: {rule}", broken[rule].detail, protocol_hint(broken[rule]))
        if rule in broken
        else passed(f"protocol: {rule}", noted.get(rule, ""))
        for rule in ptx_protocol.RULES
        if ptx_protocol.applies(rule, c.ptx)
    ]


def waits_for_the_accumulator(c):
    code = c.instructions
    commits = [i for i, line in enumerate(code) if line.startswith("tcgen05.commit")]
    loads = [i for i, line in enumerate(code) if line.startswith("tcgen05.ld")]
    # the last commit before the first read: a kernel compiled for two cluster shapes holds
    # its body twice (NVIDIA's fp16_gemm_4), so the text's last commit may follow the read
    start = max((i for i in commits if loads and i < loads[0]), default=0)
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


# what orders one warp's finished tcgen05.ld before another warp's instruction: a thread
# synchronisation both take part in (a CTA or named barrier, an mbarrier the freer waits on,
# a cluster barrier)
_SYNC = re.compile(
    r"^(bar|barrier)(\.cta)?\.(sync|red)\b|mbarrier\.(try_wait|test_wait)|barrier\.cluster\.wait"
)
_TMEM_READ = re.compile(r"(^|\s)tcgen05\.(ld|wait::ld)\b")
_FREE = re.compile(r"(^|\s)tcgen05\.dealloc\b")
MEET_HINT = (
    "warp 0 frees TMEM while warps 1-3 may still be reading it: the PTX ISA's "
    "tcgen05.wait::ld waits only for the executing thread's own tcgen05.ld, so another warp's "
    "tcgen05.dealloc is ordered after them only by a synchronisation of the warps after their "
    "last read: epi_barrier.arrive_and_wait() (or a barrier every reader passed) before "
    "tmem.free"
)
FREED_FIRST_HINT = (
    "TMEM is read after tcgen05.dealloc freed it: the PTX ISA lets tcgen05.ld read only TMEM "
    "that is allocated; free it last, tmem.free(tmem_ptr) after the accumulator is drained"
)


# where the path through one dealloc ends: the kernel's exit, or an unconditional branch to a
# block of the kernel (the inline assembly's own wait loops branch to labels of their own)
_PATH_END = re.compile(r"^(ret|exit);|^bra(\.uni)?\s+\$L__")


def _read_after_free(code: list[str], free: int) -> bool:
    """Is TMEM read on the path that falls through from the dealloc at `free` (up to the
    exit or an unconditional branch)? A kernel compiled for two cluster shapes holds its
    body twice, so a tcgen05.ld later in the text may belong to the other copy."""
    for line in code[free + 1 :]:
        if _PATH_END.search(line):
            return False
        if _TMEM_READ.search(line):
            return True
    return False


def _meeting_before(code: list[str], free: int) -> str | None:
    """The synchronisation between the last tcgen05.ld / wait::ld before the dealloc at
    `free` and the dealloc, if there is one."""
    last = max((i for i in range(free) if _TMEM_READ.search(code[i])), default=-1)
    met = [line for line in code[last + 1 : free] if _SYNC.search(line)]
    return met[-1].split()[0] if met else None


def all_warps_done_before_free(c):
    """The PTX ISA's rule at tcgen05.dealloc, read in program order: TMEM is not read after
    it, and -- as "tcgen05.wait::ld causes the executing thread to block until all prior
    tcgen05.ld operations issued by the executing thread have completed", its own loads only
    -- the other warps' reads are ordered before it by a synchronisation between the last
    tcgen05.ld / wait::ld and the dealloc (the four epilogue warps read TMEM, warp 0 frees it).
    Which instruction stands right before the dealloc is no rule: the barrier inside
    epilogue_tile after each sub-tile's tcgen05.wait::ld is such a synchronisation, and
    NVIDIA's teardowns (drain the stores, then free; or meet, free, then drain) keep it."""
    what = "the epilogue warps are done with TMEM before it is freed"
    code = c.instructions
    frees = [i for i, line in enumerate(code) if _FREE.search(line)]
    if not frees:
        return expect(what, False, "no tcgen05.dealloc", PROTOCOL_HINTS["tmem_freed"])
    if any(_read_after_free(code, free) for free in frees):
        return expect(what, False, "a tcgen05.ld comes after tcgen05.dealloc", FREED_FIRST_HINT)
    met = [_meeting_before(code, free) for free in frees]
    return expect(
        what,
        None not in met,
        f"{met[-1]} after the last tcgen05.wait::ld, before tcgen05.dealloc"
        if None not in met
        else "no barrier between the last tcgen05.ld / wait::ld and tcgen05.dealloc",
        MEET_HINT,
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    from course.exercises.gpu_run import gemm_findings
    from kernels import tcgen05_gemm as step

    # C's tile per CTA (step.Tcgen05Gemm's TileShape: 128 rows per CTA, tile_n columns), so a
    # wrong output can be told by its tiles (mismatch.observe)
    tile = (128 * step.Tcgen05Gemm.ctas, step.Config().tile_n)
    return gemm_findings(gemm_with(fn), QUICK_SHAPES if quick else SHAPES, launching, tile=tile)


kernel_exercise(
    id="14.epilogue_role",
    prompt="Write epilogue_role, warps 0-3 of the 1-CTA tcgen05 GEMM: set up "
    "(self.epilogue_setup), wait for the accumulator, drain it to C "
    "(self.epilogue_tile), release it, drain the TMA stores, meet the other epilogue "
    "warps, and free TMEM.",
    hint="three parties share what this role touches: the MMA warp (it writes the "
    "accumulator asynchronously, and waits to write that slot again), the TMA unit (it reads "
    "the staging buffers after your threads have moved on) and the other epilogue warps (one "
    "warp frees TMEM for all four). Each needs something from you before the next step.",
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
