"""The synchronisation a compiled Blackwell kernel really contains, read from its PTX.

The emulators of course.emulate re-implement the kernels' design by hand, so they check the
design, not the code that runs. This module reads the PTX that CuTe DSL produced for sm_100a
(no GPU needed) and checks the rules the kernel's synchronisation must keep, in program
order:

  tmem_freed               every tcgen05.alloc has its tcgen05.dealloc (same cta_group); the
                           allocation permit kept to the end is a NOTE (the PTX ISA does not
                           ask for tcgen05.relinquish_alloc_permit)
  barriers_ready           every mbarrier.init is followed by fence.mbarrier_init before the
                           next use of a barrier, and each fence by a synchronisation of the
                           threads (bar.sync, or barrier.cluster.wait) before the next use; in a
                           cluster kernel the first use of all follows a cluster barrier, so the
                           peer CTA never signals a barrier that is not initialised yet (later
                           groups, such as NVIDIA's TMEM-allocator barrier, are published along
                           the pipelines that cluster barrier published)
  tmem_load_waited         a NOTE, never a refusal: a tcgen05.ld whose registers are read with
                           no tcgen05.wait::ld before them (the PTX ISA observes a load's
                           completion through wait::ld but does not make the registers
                           undefined before it; NVIDIA's tutorial GEMMs issue no wait::ld)
  staging_visible_to_tma   between the shared-memory stores of a staging buffer and the TMA
                           store that reads it, fence.proxy.async (generic -> async proxy)
  tma_stores_drained       a NOTE, never a refusal: a bulk-store group committed and never
                           waited for (cp.async.bulk.wait_group.read), or none waited for
                           after the last store before the kernel exits. The PTX ISA makes an
                           async copy undefined only through its operands (TMA_STORE_EXIT_ISA)
                           and forbids an exit only before a *peer's* shared-memory operation
                           completes; a bulk store reads its own CTA's. NVIDIA's TMA tutorials
                           end right after their store; the course's kernels drain
                           (PipelineTmaStore.producer_tail()). A buffer rewritten while a store
                           still reads it is the CPU executor's to name (STAGE_OVERWRITE)
  pair_dealloc_synced      a cta_group::2 kernel frees TMEM only after a handshake with its
                           peer CTA (a cluster barrier, or an arrive on the peer's mbarrier and
                           a wait on its own): the peer may still be reading the shared TMEM
  clc_response_waited      after clusterlaunchcontrol.try_cancel, the response is read
                           (query_cancel) only after a wait on the mbarrier it completes

Program order is the order of the PTX text; a rule holds when it holds along that order (the
kernels are straight-line per warp role apart from their loops, whose bodies keep the same
order). `check(ptx)` returns every finding, refusals and notes (`Violation.note`);
`refusals(ptx)` only what refuses a kernel: an empty list is a pass.

One policy for every rule: a rule may refuse a kernel only for what the PTX ISA forbids
(its docstring quotes the text), and no rule may refuse the PTX of NVIDIA's own CuTe DSL
examples that do the same thing (tests/test_rules_vs_nvidia.py holds every rule against
NVIDIA's Blackwell tutorial GEMMs). What the ISA describes but does not forbid is a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RULES = (
    "tmem_freed",
    "barriers_ready",
    "tmem_load_waited",
    "staging_visible_to_tma",
    "tma_stores_drained",
    "pair_dealloc_synced",
    "clc_response_waited",
)


# what a kernel's PTX must hold for a rule to say anything about it: a rule with nothing to
# check is not a pass
APPLIES = {
    "tmem_freed": r"tcgen05\.alloc\.",
    "barriers_ready": r"mbarrier\.init",
    "tmem_load_waited": r"tcgen05\.ld\.",
    "staging_visible_to_tma": r"cp\.async\.bulk\.tensor\.\S*global\.shared",
    "tma_stores_drained": r"cp\.async\.bulk\.commit_group",
    "pair_dealloc_synced": r"tcgen05\.dealloc\.cta_group::2",
    "clc_response_waited": r"clusterlaunchcontrol\.try_cancel",
}


def applies(rule: str, ptx: str) -> bool:
    """Does this PTX hold what `rule` checks (a rule with nothing to check proves nothing)?"""
    return re.search(APPLIES[rule], ptx) is not None


@dataclass(frozen=True)
class Violation:
    """One rule's finding. `note`: what the PTX ISA describes but does not forbid, said to the
    learner and never a reason to refuse a kernel."""

    rule: str
    detail: str
    note: bool = False
    what: str = ""  # which of the rule's requirements, where it has several (e.g. CTA_GROUPS)

    def __str__(self) -> str:
        return f"{self.rule}{' (note)' if self.note else ''}: {self.detail}"


@dataclass(frozen=True)
class Address:
    """One address operand of a PTX instruction, `[base+offset]`: the register or variable it
    starts from (None for an absolute address, `[immAddr]`) and the constant added to it."""

    base: str | None
    offset: int = 0

    def __str__(self) -> str:
        if self.base is None:
            return f"[{self.offset}]"
        return f"[{self.base}{f'{self.offset:+d}' if self.offset else ''}]"


# the address forms of the PTX ISA ("Addresses as Operands"): [var], [reg], [reg+immOff],
# [var+immOff], [immAddr]; the offset signed (LLVM writes a negative one as `+-8`), decimal or
# hexadecimal, with an optional U suffix
_IMM = r"[-+]?\s*(?:0[xX][0-9a-fA-F]+|\d+)U?"
_ADDRESS = re.compile(
    rf"^(?:(?P<base>%?[A-Za-z_$][\w$]*)\s*)?(?P<offset>(?(base)[-+]\s*)?{_IMM})?$"
)


def address(operand: str) -> Address | None:
    """`operand` (the text between the brackets) as an Address; a tensor operand
    `[tensorMap, {coordinates}]` is its first element. None where it is no address."""
    m = _ADDRESS.match(operand.split(",")[0].strip())
    if m is None or not (m.group("base") or m.group("offset")):
        return None
    signed = re.sub(r"[\sU]", "", m.group("offset") or "0")  # e.g. "+-8", "-0x10", "128"
    sign = -1 if signed.count("-") % 2 else 1
    return Address(m.group("base"), sign * int(signed.lstrip("+-"), 0))


def addresses(line: str) -> list[Address]:
    """Every address operand of one PTX instruction, in operand order: the one reading of
    `[...]` for every check that follows an address (so `[%r15+128]` is read as `%r15` plus
    128, never missed for not being a bare register)."""
    found = (address(inner) for inner in re.findall(r"\[([^\[\]]*)\]", line))
    return [a for a in found if a is not None]


def instructions(ptx: str) -> list[str]:
    """The instruction lines of the PTX, in order (directives, labels, comments dropped)."""
    out = []
    for line in ptx.splitlines():
        line = line.split("//")[0].strip()
        if not line or line.startswith((".", "{", "}", "$")) or not line.endswith(";"):
            continue
        out.append(line)
    return out


def check(ptx: str) -> list[Violation]:
    """Every rule's violations in this kernel's PTX."""
    code = instructions(ptx)
    return [
        v for rule in RULES for v in globals()[rule](code)
    ]  # each rule: the function of its name


def refusals(ptx: str) -> list[Violation]:
    """The findings that refuse this kernel: every rule's violations but its notes."""
    return [v for v in check(ptx) if not v.note]


COUNTED = {
    "mbarrier.init": r"mbarrier\.init",
    "mbarrier.try_wait": r"mbarrier\.try_wait",
    "mbarrier.arrive": r"mbarrier\.arrive",
    "tcgen05.alloc / dealloc": r"tcgen05\.(alloc|dealloc)\.",
    "tcgen05.ld / wait::ld": r"tcgen05\.(ld\.|wait::ld)",
    "TMA store commit / wait": r"cp\.async\.bulk\.(commit|wait)_group",
    "cluster barriers": r"barrier\.cluster\.(arrive|wait)",
    "CLC try_cancel / query": r"clusterlaunchcontrol\.",
}


def report(ptx: str) -> str:
    """What the PTX holds of each kind of synchronisation, and each rule's verdict."""
    code = instructions(ptx)
    found = check(ptx)
    lines = [f"{len(code)} PTX instructions; synchronisation among them:"]
    lines += [f"  {name:26s} {len(_where(code, rx)):3d}" for name, rx in COUNTED.items()]
    lines.append("rules:")
    for rule in RULES:
        broken = [v.detail for v in found if v.rule == rule and not v.note]
        noted = [v.detail for v in found if v.rule == rule and v.note]
        mark, said = ("✘", broken) if broken else ("•", noted) if noted else ("✔", [])
        lines.append(f"  {mark} {rule}" + (f": {said[0]}" if said else ""))
    return "\n".join(lines)


def _where(code: list[str], pattern: str) -> list[int]:
    rx = re.compile(pattern)
    return [i for i, line in enumerate(code) if rx.search(line)]


def _between(code: list[str], start: int, end: int, pattern: str) -> bool:
    rx = re.compile(pattern)
    return any(rx.search(line) for line in code[start + 1 : end])


# ---------------------------------------------------------------- the rules


# the PTX ISA's text each rule below rests on (its section in parentheses), quoted in the
# rule's hint (course.exercises.nb14_epilogue_kernel.PROTOCOL_HINTS)
TMEM_FREED_ISA = (
    'the PTX ISA (tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit): "All of '
    "the Tensor Memory that was allocated using tcgen05.alloc instruction in a kernel, must be "
    'explicitly deallocated using tcgen05.dealloc before the kernel exits"; "The operand taddr '
    'must point to a previous Tensor Memory allocation"; "All tcgen05 instructions within a '
    'kernel must specify the same value for the .cta_group qualifier"'
)
RELINQUISH_ISA = (
    "the PTX ISA (tcgen05.relinquish_alloc_permit) asks no CTA to give up its permit; it says "
    'only that "it is illegal for a CTA to perform tcgen05.alloc after any of its constituent '
    'threads execute tcgen05.relinquish_alloc_permit"'
)
# Violation.what of tmem_freed's requirements
NOT_ALL_FREED, CTA_GROUPS, FREED_FIRST, PERMIT_KEPT = (
    "not all freed",
    "cta_group differs",
    "dealloc before alloc",
    "permit kept",
)


def tmem_freed(code: list[str]) -> list[Violation]:
    """All TMEM allocated is freed before the kernel exits, by a dealloc after the alloc, with
    one cta_group throughout (TMEM_FREED_ISA). The allocation permit kept to the end is a note:
    the ISA does not ask for tcgen05.relinquish_alloc_permit (RELINQUISH_ISA)."""
    allocs = _where(code, r"tcgen05\.alloc\.")
    deallocs = _where(code, r"tcgen05\.dealloc\.")
    found = []
    if len(allocs) != len(deallocs):
        found.append(
            Violation(
                "tmem_freed",
                f"{len(allocs)} tcgen05.alloc but {len(deallocs)} tcgen05.dealloc",
                what=NOT_ALL_FREED,
            )
        )
    groups = {re.search(r"cta_group::(\d)", code[i]).group(1) for i in allocs + deallocs}
    if len(groups) > 1:
        found.append(
            Violation(
                "tmem_freed",
                f"alloc and dealloc disagree on cta_group: {sorted(groups)}",
                what=CTA_GROUPS,
            )
        )
    if allocs and not _where(code, r"tcgen05\.relinquish_alloc_permit"):
        found.append(
            Violation(
                "tmem_freed",
                "the allocation permit is never given up (tcgen05.relinquish_alloc_permit), "
                "which the course's kernels and NVIDIA's do once their TMEM is allocated; a "
                f"note, not a refusal: {RELINQUISH_ISA}",
                note=True,
                what=PERMIT_KEPT,
            )
        )
    if allocs and deallocs and deallocs[-1] < allocs[0]:
        found.append(
            Violation("tmem_freed", "tcgen05.dealloc comes before tcgen05.alloc", what=FREED_FIRST)
        )
    return found


_USES = r"mbarrier\.(try_wait|arrive|test_wait)|mbarrier::complete_tx|tcgen05\.commit"
# what makes one thread's fenced mbarrier.init visible to the others before they use the
# barrier: a CTA or named barrier, or a cluster barrier (its wait is .acquire by default)
_THREAD_SYNC = r"\bbar(rier)?(\.cta)?\.sync|barrier\.cluster\.wait"
BARRIERS_READY_ISA = (
    'the PTX ISA (membar/fence): "When .op_restrict is .mbarrier_init, the synchronizing '
    "effect of the fence only applies to the prior mbarrier.init operations executed by the "
    'same thread on mbarrier objects in .shared::cta state space", its example "mbarrier.init '
    '[bar]; fence.mbarrier_init.release.cluster; barrier.cluster.arrive.relaxed;"; and '
    '(mbarrier.init) "mbarrier.init.shared::cta.b64 [shMem], 12; bar.sync 0; // ... other '
    'mbarrier operations on shMem"'
)


def _init_groups(code: list[str]) -> list[tuple[int, int | None]]:
    """The kernel's barrier initialisations as (first mbarrier.init, the fence.mbarrier_init
    after it or None): each CuTe DSL pipeline (and NVIDIA's TMEM allocator) initialises its
    own barriers and fences them itself, so a kernel holds several groups, and a kernel
    compiled for two cluster shapes holds all of them twice."""
    groups, start = [], None
    for i, line in enumerate(code):
        if start is None and re.search(r"mbarrier\.init", line):
            start = i
        elif start is not None and re.search(r"fence\.mbarrier_init", line):
            groups.append((start, i))
            start = None
    return groups + ([(start, None)] if start is not None else [])


def barriers_ready(code: list[str]) -> list[Violation]:
    """Every barrier is initialised, fenced and published before it is used.

    The ISA's text (BARRIERS_READY_ISA): fence.mbarrier_init orders only the executing
    thread's prior mbarrier.init, and its examples publish the barriers with a thread
    synchronisation after it, a CTA barrier or a cluster barrier. So for each group of
    inits: a fence before the next use of any barrier, and a synchronisation between the
    fence and that use. A cluster kernel's first use of all follows a cluster barrier (the
    peer CTA signals these barriers); a group initialised later (NVIDIA's TMEM-allocator
    barrier in fp16_gemm_1: fence, bar.sync, no cluster barrier of its own) is ordered
    before the peer's use along barriers that cluster barrier already published, which no
    reading of the PTX text can refuse. Each group is read on its own, so a kernel compiled
    twice over (fp16_gemm_4: two cluster shapes) is read right."""
    groups = _init_groups(code)
    if not groups:
        return []
    uses = _where(code, _USES)
    for start, fence in groups:
        use = next((u for u in uses if u > start), None)
        if fence is None or (use is not None and use < fence):
            what = f"({code[use][:50]})" if use is not None else "at all"
            return [
                Violation(
                    "barriers_ready",
                    f"the mbarrier.init at instruction {start} is not followed by "
                    f"fence.mbarrier_init before a barrier is used {what}",
                )
            ]
        use = next((u for u in uses if u > fence), None)
        if use is not None and not _between(code, fence, use, _THREAD_SYNC):
            return [
                Violation(
                    "barriers_ready",
                    f"no CTA or cluster barrier between the fence.mbarrier_init at "
                    f"instruction {fence} and the next use of a barrier: another warp may "
                    "use a barrier before it is initialised",
                )
            ]
    clustered = any("cta_group::2" in line or "multicast::cluster" in line for line in code)
    first = uses[0] if uses else len(code)
    published = any(
        _between(code, fence, first, r"barrier\.cluster\.wait")
        for _, fence in groups
        if fence is not None and fence < first
    )
    if clustered and not published:
        return [
            Violation(
                "barriers_ready",
                "no cluster barrier between fence.mbarrier_init and the first use: the peer "
                "CTA may signal a barrier before it is initialised",
            )
        ]
    return []


TMEM_LOAD_ISA = (
    'the PTX ISA: "The instruction tcgen05.ld is performed asynchronously"; "Completion of the '
    "following instruction's asynchronous operations is observed through tcgen05.wait based "
    'waiting mechanism: tcgen05.ld, tcgen05.st"; "Instruction tcgen05.wait::ld causes the '
    "executing thread to block until all prior tcgen05.ld operations issued by the executing "
    'thread have completed"'
)


def tmem_load_waited(code: list[str]) -> list[Violation]:
    """A note, never a refusal: a tcgen05.ld whose registers are stored or converted with no
    tcgen05.wait::ld between.

    Re-derived from the ISA (TMEM_LOAD_ISA): tcgen05.ld is asynchronous and its completion
    is observed through tcgen05.wait::ld, which the ISA's canonical patterns issue before the
    TMEM is handed on. The ISA does not say that reading the destination registers before
    the wait is undefined -- it says so of wgmma.mma_async ("Accessing the accumulator
    register ... without first performing a wgmma.wait_group ... is undefined behavior") and
    not of tcgen05.ld. NVIDIA's Blackwell tutorial GEMMs (CuTe DSL 4.8.1) issue no
    tcgen05.wait::ld at all. So this is said, as what the course's kernels do differently
    (they wait: cute.arch.fence_view_async_tmem_load), and refuses no kernel: a learner who
    writes it NVIDIA's way hears the same note, never "wrong"."""
    found = []
    for i in _where(code, r"tcgen05\.ld\."):
        use = next(
            (j for j in range(i + 1, len(code)) if re.match(r"(st\.|cvt\.)", code[j])), len(code)
        )
        if not _between(code, i, use, r"tcgen05\.wait::ld"):
            found.append(
                Violation(
                    "tmem_load_waited",
                    f"the registers of the tcgen05.ld at instruction {i} are read with no "
                    "tcgen05.wait::ld before them, as NVIDIA's tutorial GEMMs do; the course's "
                    "kernels wait (cute.arch.fence_view_async_tmem_load), as the PTX ISA's "
                    f"patterns do, since {TMEM_LOAD_ISA} (it does not call the registers "
                    "undefined before the wait)",
                    note=True,
                )
            )
    return found


STAGING_ISA = (
    'the PTX ISA (Async Proxy, of cp.async.bulk): "The cp{.reduce}.async.bulk operations are '
    "performed in the asynchronous proxy (or async proxy). Accessing the same memory location "
    "across multiple proxies needs a cross-proxy fence. For the async proxy, fence.proxy.async "
    'should be used to synchronize memory between generic proxy and the async proxy."'
)


def staging_visible_to_tma(code: list[str]) -> list[Violation]:
    """The shared memory a TMA store reads, written by st.shared (the generic proxy), is
    fenced with fence.proxy.async before the store (the async proxy) reads it (STAGING_ISA)."""
    found = []
    for i in _where(code, r"cp\.async\.bulk\.tensor\.\S*global\.shared"):
        last_store = next(
            (j for j in range(i - 1, -1, -1) if code[j].startswith("st.shared")), None
        )
        if last_store is not None and not _between(code, last_store, i, r"fence\.proxy\.async"):
            found.append(
                Violation(
                    "staging_visible_to_tma",
                    f"the TMA store at instruction {i} reads shared memory "
                    "written without fence.proxy.async",
                )
            )
    return found


TMA_STORE_EXIT_ISA = (
    'the PTX ISA (Completion Mechanisms for Asynchronous Copy Operations): "Once an '
    "asynchronous copy operation is initiated, modifying the source memory location or tensor "
    "descriptor or reading from the destination memory location before the asynchronous "
    'operation completes, exhibits undefined behavior"; and of a peer CTA only: "the peer CTA '
    "hasn't exited before completing the shared memory operation\""
)


def tma_stores_drained(code: list[str]) -> list[Violation]:
    """A note, never a refusal: bulk stores still in flight when the kernel exits
    (TMA_STORE_EXIT_ISA: the ISA does not make that undefined for the CTA's own shared
    memory). The course's kernels drain them, as NVIDIA's GEMMs do (producer_tail)."""
    commits = _where(code, r"cp\.async\.bulk\.commit_group")
    if not commits:
        return []
    found = []
    for c in commits:
        if not any(re.search(r"cp\.async\.bulk\.wait_group", line) for line in code[c + 1 :]):
            found.append(
                Violation(
                    "tma_stores_drained",
                    f"the bulk group committed at instruction {c} is never waited for "
                    f"(a note: {TMA_STORE_EXIT_ISA})",
                    note=True,
                )
            )
    drains = [
        i for i in _where(code, r"cp\.async\.bulk\.wait_group(\.read)?\s+0;") if i > commits[-1]
    ]
    end = (_where(code, r"^(ret|exit);") or [len(code)])[-1]
    if not any(d < end for d in drains):
        found.append(
            Violation(
                "tma_stores_drained",
                "no cp.async.bulk.wait_group.read 0 after the last store and before the kernel "
                "exits (a note; the course's kernels drain, producer_tail(): "
                f"{TMA_STORE_EXIT_ISA})",
                note=True,
            )
        )
    return found


PAIR_DEALLOC_ISA = (
    'the PTX ISA (tcgen05.alloc, tcgen05.dealloc): "When .cta_group::2 is specified, one warp '
    'from each of the peer CTAs must collectively perform the allocation and de-allocation"; '
    '"When .cta_group::2 is specified, the issuing warp must make sure that peer CTA is '
    'launched and is still active"'
)


def pair_dealloc_synced(code: list[str]) -> list[Violation]:
    """A cta_group::2 dealloc only after a handshake with the peer CTA since this CTA's last
    TMEM access: the dealloc is the pair's collective, and only a synchronisation with the
    peer makes sure it is still active (PAIR_DEALLOC_ISA)."""
    found = []
    for d in _where(code, r"tcgen05\.dealloc\.cta_group::2"):
        # from the moment this CTA is done with TMEM: its last TMEM access, and the CTA
        # barrier by which all its warps say they are done
        done = max(
            [i for i in _where(code, r"tcgen05\.(ld|mma)\.|\bbar(rier)?\.sync") if i < d],
            default=-1,
        )
        cluster_barrier = _between(code, done, d, r"barrier\.cluster\.arrive") and _between(
            code, done, d, r"barrier\.cluster\.wait"
        )
        arrive = [i for i in _where(code, r"mbarrier\.arrive\.\S*shared::cluster") if done < i < d]
        handshake = bool(arrive) and _between(code, arrive[-1], d, r"mbarrier\.try_wait")
        if not (cluster_barrier or handshake):
            found.append(
                Violation(
                    "pair_dealloc_synced",
                    "tcgen05.dealloc.cta_group::2 without a handshake with the "
                    "peer CTA after the last TMEM access",
                )
            )
    return found


CLC_WAIT_ISA = (
    'the PTX ISA (clusterlaunchcontrol.try_cancel): "It asynchronously writes an opaque '
    'response to shared memory"; "The executing thread can then use mbarrier instructions to '
    "wait for completion of the asynchronous operation. No other synchronization mechanisms "
    "described in Memory Consistency Model can be used to guarantee the completion of the "
    'asynchronous copy operations."'
)


# the ISA's text of rules read off the PTX by the exercises' own checks
# (course.exercises.nb11_tma_store_kernel.waits_before_reuse, nb15_clc_kernel's fences)
BULK_WAIT_READ_ISA = (
    'the PTX ISA (cp.async.bulk.wait_group): "cp.async.bulk.wait_group instruction will cause '
    "the executing thread to wait until only N or fewer of the most recent bulk async-groups "
    'are pending"; "The optional .read modifier indicates that the waiting has to be done until '
    "all the bulk async operations in the specified bulk async-group have completed: ... the "
    'reading from their source locations"; and (Async Proxy) "Async-group OR mbarrier-based '
    "completion mechanism must be used to wait for the completion of the "
    'cp{.reduce}.async.bulk instructions"'
)
CLC_FENCE_ISA = (
    'the PTX ISA (clusterlaunchcontrol.try_cancel): "the response is asynchronously written '
    "using weak async-proxy writes to the corresponding local shared memory addr of each CTA "
    'in the requesting cluster"; and (Async Proxy) "Accessing the same memory location across '
    "multiple proxies needs a cross-proxy fence. For the async proxy, fence.proxy.async should "
    'be used to synchronize memory between generic proxy and the async proxy."'
)


def clc_response_waited(code: list[str]) -> list[Violation]:
    """The response of a try_cancel is read only after a wait on the mbarrier it completes:
    nothing else says it has been written (CLC_WAIT_ISA)."""
    found = []
    for i in _where(code, r"clusterlaunchcontrol\.try_cancel"):
        barrier = addresses(code[i])[-1]
        query = next(
            (j for j in _where(code, r"clusterlaunchcontrol\.query_cancel") if j > i), None
        )
        if query is None:
            continue
        waited = any(
            re.search(r"mbarrier\.try_wait", line) and barrier in addresses(line)
            for line in code[i + 1 : query]
        )
        if not waited:
            found.append(
                Violation(
                    "clc_response_waited",
                    f"query_cancel at instruction {query} reads the response "
                    f"before waiting on its mbarrier {barrier}",
                )
            )
    return found
