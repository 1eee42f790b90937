"""Which warps' shared-memory accesses are ordered before a TMA load issued now: clocks that
mbarriers and barriers carry between warps.

The race watch of course.execute.memory orders threads by barrier epochs; a ring orders warps
by mbarriers instead (a consumer's arrive on empty[s], the producer's wait on it), with no
barrier between. So each warp keeps a clock (its mbarrier arrivals so far) and what it knows
of the other warps' clocks: an arrival hands the arriver's knowledge to the barrier's phase,
a wait takes the completed phase's knowledge, and a barrier every thread passes
(sync_threads, a named barrier, the cluster barrier) joins its warps' knowledge. Each warp
stamps every shared byte it touches with its clock; a TMA load issued over bytes another
warp touched at a clock the issuer does not know of yet overwrites data still in use (a
stage released too early, or never waited for).
"""

from __future__ import annotations

import numpy as np


def stamp(w, mem, unit_addresses, width: int, unit: str = "") -> None:
    """Warp w touched these shared-memory units (first bytes, `width` bytes each); `unit`:
    through which asynchronous unit, if not its own threads (a hazards.UNIT_ name: the
    wgmma whose reads its wait_group retired), for `toucher_unit`."""
    stamps = w.touched.get(mem)
    if stamps is None:
        stamps = w.touched[mem] = np.zeros(mem.data.size, np.int32)
    first = np.asarray(unit_addresses, dtype=np.int64).reshape(-1)
    stamps[(first[:, None] + np.arange(max(int(width), 1))).reshape(-1)] = w.clock + 1
    if unit:
        w.__dict__.setdefault("touch_units", {})[w.clock + 1] = unit


def toucher_unit(x, mem, byte: int) -> str:
    """The asynchronous unit whose touch of `byte` is warp x's last (see `stamp`), or ""."""
    stamps = x.touched.get(mem)
    if stamps is None:
        return ""
    return x.__dict__.get("touch_units", {}).get(int(stamps[byte]), "")


def merge(into: dict, knowledge: dict) -> None:
    for warp, clock in knowledge.items():
        if clock > into.get(warp, 0):
            into[warp] = clock


def arrived(w, phase_knowledge: dict) -> None:
    """w arrives on an mbarrier: its clock ticks; the phase learns what w knows."""
    w.clock += 1
    merge(phase_knowledge, w.knows)
    merge(phase_knowledge, {w: w.clock})


def join(warps) -> None:
    """A barrier these warps all passed: each now knows what any of them knew."""
    known: dict = {}
    for w in warps:
        merge(known, w.knows)
        merge(known, {w: w.clock})
    for w in warps:
        w.knows = dict(known)


def unordered(issuer, warps, mem, b: np.ndarray):
    """(a warp, its stamp) whose touch of bytes b the issuer does not know to be before now;
    None when every touch is."""
    for x in warps:
        if x is issuer:
            continue
        stamps = x.touched.get(mem)
        if stamps is None:
            continue
        seen = stamps[b]
        late = seen > issuer.knows.get(x, 0)
        if late.any():
            return x, int(b[int(np.argmax(late))])
    return None
