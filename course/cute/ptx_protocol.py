"""The synchronisation a compiled Blackwell kernel really contains, read from its PTX.

The emulators of course.emulate re-implement the kernels' design by hand, so they check the
design, not the code that runs. This module reads the PTX that CuTe DSL produced for sm_100a
(no GPU needed) and checks the rules the kernel's synchronisation must keep, in program
order:

  tmem_freed               every tcgen05.alloc has its tcgen05.dealloc (same cta_group), and
                           the allocation permit is given up
  barriers_ready           every mbarrier.init comes before fence.mbarrier_init, and both
                           before the first use of a barrier, with a barrier between: a CTA
                           barrier (bar.sync) so no other warp uses one early, or in a
                           cluster kernel a cluster barrier (barrier.cluster.wait), so the
                           peer CTA never signals a barrier that is not initialised yet
  tmem_load_waited         after a tcgen05.ld, tcgen05.wait::ld before its registers are
                           stored anywhere
  staging_visible_to_tma   between the shared-memory stores of a staging buffer and the TMA
                           store that reads it, fence.proxy.async (generic -> async proxy)
  tma_stores_drained       each bulk-store group committed is waited for with
                           cp.async.bulk.wait_group.read, and all of them (wait_group.read 0)
                           before the kernel exits: a bulk store reads the CTA's shared
                           memory until its group's wait_group.read says it "completed reading
                           from [its] source locations", and shared memory lives only as long
                           as its CTA. A bulk store reads shared memory, never TMEM, so where
                           the drain stands with respect to tcgen05.dealloc is no rule (NVIDIA's
                           tutorial GEMMs drain, then free; its block-scaled GEMM frees, then
                           drains)
  pair_dealloc_synced      a cta_group::2 kernel frees TMEM only after a handshake with its
                           peer CTA (a cluster barrier, or an arrive on the peer's mbarrier and
                           a wait on its own): the peer may still be reading the shared TMEM
  clc_response_waited      after clusterlaunchcontrol.try_cancel, the response is read
                           (query_cancel) only after a wait on the mbarrier it completes

Program order is the order of the PTX text; a rule holds when it holds along that order (the
kernels are straight-line per warp role apart from their loops, whose bodies keep the same
order). `check(ptx)` returns the violations; an empty list is a pass.
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
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


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
        broken = [v.detail for v in found if v.rule == rule]
        lines.append(f"  {'✘' if broken else '✔'} {rule}" + (f": {broken[0]}" if broken else ""))
    return "\n".join(lines)


def _where(code: list[str], pattern: str) -> list[int]:
    rx = re.compile(pattern)
    return [i for i, line in enumerate(code) if rx.search(line)]


def _between(code: list[str], start: int, end: int, pattern: str) -> bool:
    rx = re.compile(pattern)
    return any(rx.search(line) for line in code[start + 1 : end])


# ---------------------------------------------------------------- the rules


def tmem_freed(code: list[str]) -> list[Violation]:
    allocs = _where(code, r"tcgen05\.alloc\.")
    deallocs = _where(code, r"tcgen05\.dealloc\.")
    found = []
    if len(allocs) != len(deallocs):
        found.append(
            Violation(
                "tmem_freed", f"{len(allocs)} tcgen05.alloc but {len(deallocs)} tcgen05.dealloc"
            )
        )
    groups = {re.search(r"cta_group::(\d)", code[i]).group(1) for i in allocs + deallocs}
    if len(groups) > 1:
        found.append(
            Violation("tmem_freed", f"alloc and dealloc disagree on cta_group: {sorted(groups)}")
        )
    if allocs and not _where(code, r"tcgen05\.relinquish_alloc_permit"):
        found.append(
            Violation(
                "tmem_freed",
                "the allocation permit is never given up (tcgen05.relinquish_alloc_permit)",
            )
        )
    if allocs and deallocs and deallocs[-1] < allocs[0]:
        found.append(Violation("tmem_freed", "tcgen05.dealloc comes before tcgen05.alloc"))
    return found


_USES = r"mbarrier\.(try_wait|arrive|test_wait)|mbarrier::complete_tx|tcgen05\.commit"


def barriers_ready(code: list[str]) -> list[Violation]:
    inits = _where(code, r"mbarrier\.init")
    if not inits:
        return []
    fences = _where(code, r"fence\.mbarrier_init")
    uses = _where(code, _USES)
    first_use = uses[0] if uses else len(code)
    if not fences or fences[-1] < inits[-1]:
        return [Violation("barriers_ready", "no fence.mbarrier_init after the last mbarrier.init")]
    fence = next(f for f in fences if f > inits[-1])
    if fence > first_use:
        return [
            Violation(
                "barriers_ready",
                f"a barrier is used ({code[first_use][:50]}) before fence.mbarrier_init",
            )
        ]
    clustered = any("cta_group::2" in line or "multicast::cluster" in line for line in code)
    if clustered and not _between(code, fence, first_use, r"barrier\.cluster\.wait"):
        return [
            Violation(
                "barriers_ready",
                "no cluster barrier between fence.mbarrier_init "
                "and the first use: the peer CTA may signal a "
                "barrier before it is initialised",
            )
        ]
    if not clustered and not _between(code, fence, first_use, r"\bbar(rier)?\.sync"):
        return [
            Violation(
                "barriers_ready",
                "no CTA barrier between fence.mbarrier_init and "
                "the first use: another warp may use a barrier "
                "before it is initialised",
            )
        ]
    return []


def tmem_load_waited(code: list[str]) -> list[Violation]:
    found = []
    for i in _where(code, r"tcgen05\.ld\."):
        use = next(
            (j for j in range(i + 1, len(code)) if re.match(r"(st\.|cvt\.)", code[j])), len(code)
        )
        if not _between(code, i, use, r"tcgen05\.wait::ld"):
            found.append(
                Violation(
                    "tmem_load_waited",
                    f"tcgen05.ld at instruction {i} is used without tcgen05.wait::ld",
                )
            )
    return found


def staging_visible_to_tma(code: list[str]) -> list[Violation]:
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


def tma_stores_drained(code: list[str]) -> list[Violation]:
    commits = _where(code, r"cp\.async\.bulk\.commit_group")
    if not commits:
        return []
    found = []
    for c in commits:
        if not any(re.search(r"cp\.async\.bulk\.wait_group", line) for line in code[c + 1 :]):
            found.append(
                Violation(
                    "tma_stores_drained",
                    f"the bulk group committed at instruction {c} is never waited for",
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
                "exits",
            )
        )
    return found


def pair_dealloc_synced(code: list[str]) -> list[Violation]:
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


def clc_response_waited(code: list[str]) -> list[Violation]:
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
