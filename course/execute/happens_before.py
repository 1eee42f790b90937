"""What orders one warp's accesses before another's: the executor's one happens-before model.

Every synchronisation the executor runs orders accesses through it: barriers every thread
passes (sync_threads, the cluster barrier), named barriers, mbarrier phases (an arrival, a
wait on the completed phase), tcgen05.commit, a wait_group that retires an asynchronous
reader. Each warp keeps a clock (its synchronisation events so far) and what it knows of the
other warps' clocks: an arrival ticks the arriver's clock and hands its knowledge to the
barrier's phase, a wait takes the completed phase's knowledge, and a barrier ticks each of
its warps' clocks and joins their knowledge. An access is stamped with its warp's clock + 1
("after the warp's clock-th event"); warp x is ordered after warp y's access stamped s when
x knows y's clock to be at least s.

The lanes of one warp share its clock, so between two lanes only a barrier the warp passed
orders them (`barriers`, ticked by `join` and by a named barrier's release): two lanes of
one warp with no barrier between race, as they do under independent thread scheduling.

Who uses it: course.execute.memory's race watch (a thread's read of bytes another warp
wrote, a write over bytes another warp read or wrote: `ordered`, `unordered`), the TMA load
that overwrites a stage still in use (`unordered`), mbarrier inits seen before use, TMEM
reads before a dealloc and tcgen05 MMAs before their commit (course.execute.mbarriers,
tmem, tcgen05).
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
        mem.__dict__.setdefault("touchers", []).append(w)
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


class Completion:
    """The completion of one asynchronous operation several warps issued together (a wgmma:
    one MMA of its warpgroup's four warps). Its end touches memory as a warp would, once
    (`stamp` it as the toucher), and every warp that waits for it learns of it (`observed`),
    so an access after any of those waits -- or after a barrier that carried one -- is
    ordered after it, while a warp that neither waited nor heard of a wait is not. It is
    named (`index`, `cta`) as the warp that issued it first."""

    def __init__(self, warp):
        self.index, self.cta = warp.index, warp.cta
        self.touched: dict = {}
        self.clock = self.barriers = 0
        self.knows: dict = {}
        self.stamped = False


def observed(w, completion: Completion) -> None:
    """Warp w waited for `completion`: it is ordered after what the completion touched."""
    merge(w.knows, {completion: now(completion)})


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
    """A barrier these warps all passed: each warp's clock ticks (what it did before the
    barrier is before this event), and each now knows what any of them knew."""
    known: dict = {}
    for w in warps:
        w.clock += 1
        w.barriers += 1
        merge(known, w.knows)
        merge(known, {w: w.clock})
    for w in warps:
        w.knows = dict(known)


def released(w, knowledge: dict) -> None:
    """w waited at a barrier (a named barrier's bar.sync) that completed with `knowledge`
    (what its arrivers knew): its lanes are ordered too."""
    w.barriers += 1
    merge(w.knows, knowledge)


def now(w) -> int:
    """The stamp of an access warp w makes now (see the module's docstring)."""
    return w.clock + 1


def ordered(x, y, stamp: int, barriers: int, same_thread: bool = False) -> bool:
    """Is warp x, now, ordered after warp y's access stamped `stamp` (y's `barriers` count
    then)? A thread is ordered after itself; two lanes of one warp after a barrier the
    warp passed since; two warps when x knows y's clock to have reached the stamp."""
    if same_thread:
        return True
    if x is y:
        return x.barriers > barriers
    return x.knows.get(y, 0) >= stamp


def unordered(issuer, warps, mem, b: np.ndarray):
    """(a warp, a byte) whose touch of bytes b (read or write) the issuer does not know to be
    before now; None when every touch is. `warps`: those to look at (None: every warp that
    touched `mem`, in any CTA of the cluster)."""
    if warps is None:
        warps = mem.__dict__.get("touchers", [])
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


# ---------------------------------------------------------------- lanes of one warp

NO_LANE, LANES = -1, -2  # no lane of the warp touched the byte since its last barrier; several


def _since_barrier(w, mem) -> list:
    """[w.barriers, reads, writes]: which lane of w read / wrote each byte of `mem` since w's
    last barrier (NO_LANE, a lane, or LANES); cleared when the warp passes a barrier."""
    records = w.__dict__.setdefault("lane_touches", {})
    rec = records.get(mem)
    if rec is None:
        n = mem.data.size
        rec = records[mem] = [
            w.barriers,
            np.full(n, NO_LANE, np.int8),
            np.full(n, NO_LANE, np.int8),
        ]
    elif rec[0] != w.barriers:
        rec[0] = w.barriers
        rec[1].fill(NO_LANE)
        rec[2].fill(NO_LANE)
    return rec


def other_lanes(w, mem, b: np.ndarray, lanes: np.ndarray, written: bool) -> np.ndarray:
    """Which of bytes `b` (accessed by `lanes`, one per byte) another lane of warp w read
    (written=False) or wrote (written=True) since w's last barrier: unordered with them."""
    seen = _since_barrier(w, mem)[2 if written else 1][b]
    return (seen != NO_LANE) & (seen != lanes)


def lanes_touched(w, mem, b: np.ndarray, lanes: np.ndarray, writing: bool) -> None:
    """Lanes `lanes` of warp w read (or wrote) bytes `b`: remember it until w's next barrier."""
    record = _since_barrier(w, mem)[2 if writing else 1]
    lanes = lanes.astype(np.int8)
    prev = record[b]
    want = np.where((prev != NO_LANE) & (prev != lanes), LANES, lanes).astype(np.int8)
    record[b] = want
    clash = record[b] != want  # two lanes of this instruction touched the same byte
    if clash.any():
        record[b[clash]] = LANES


def forget_lane_writes(mem, b: np.ndarray) -> None:
    """An asynchronous unit (a TMA load, a tcgen05.ld staging, a CLC response) wrote bytes b:
    no lane's write of them is the last any more."""
    for w in mem.__dict__.get("touchers", []):
        rec = w.__dict__.get("lane_touches", {}).get(mem)
        if rec is not None:
            rec[2][b] = NO_LANE
