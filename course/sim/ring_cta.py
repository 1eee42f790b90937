"""One CTA's mbarrier ring as plain Python state: what course.sim.ring_code's warps act on.

The ring's 2 x stages barriers (course.models.mbarrier), which k-tile each stage holds, the
TMA copies in flight, who is reading what; the effects of a TMA copy being issued and
landing and of a warp reading a stage; and, when something goes wrong, the verdict that
names it: a race (a stage read before its bytes landed, or overwritten while read), a
misuse (over-arrival, a barrier past the ring), or a deadlock (who waits on which barrier,
for which parity, and which parity the kernel's protocol would need there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course.models.mbarrier import MBarrier, MBarrierError
from course.sim.warp_threads import OK, Found, Verdict  # noqa: F401 -- the ring model's verdicts


class Barriers:
    """The ring's 2 x stages mbarriers in shared memory: full[0..S-1], then empty[0..S-1]."""

    def __init__(self, stages: int):
        self.stages = stages
        self.bars: list[MBarrier | None] = [None] * (2 * stages)
        self.fenced = False
        self.armed = [0] * (2 * stages)  # expect_tx bytes announced in the current phase
        self.last_armed = [None] * (2 * stages)  # ... in the last completed phase

    def note(self, i: int, completed: bool) -> None:
        """After an arrival or a landing: remember what the phase it completed expected."""
        if completed:
            self.last_armed[i], self.armed[i] = self.armed[i], 0

    def name(self, i: int) -> str:
        return f"full[{i}]" if i < self.stages else f"empty[{i - self.stages}]"

    def get(self, i: int, use: str) -> MBarrier:
        if not 0 <= i < len(self.bars):
            raise Found(
                "misuse",
                f"{use} a barrier past the ring's {2 * self.stages} barriers (index {i})",
                "stage index",
            )
        if self.bars[i] is None:
            raise Found("race", f"{use} {self.name(i)} before it was initialised", "missing sync")
        return self.bars[i]


@dataclass(frozen=True)
class BarrierPointer:
    """What `full + s` is in the model: an index into the ring's barriers."""

    index: int

    def __add__(self, other):
        return BarrierPointer(self.index + int(other))

    __radd__ = __add__


@dataclass
class Copy:
    stage: int
    k_tile: int
    barrier: int
    nbytes: int
    half: str  # "A" or "B"


@dataclass
class Cta:
    stages: int
    k_tiles: int
    warps: int
    bytes_a: int
    bytes_b: int
    barriers: Barriers = None
    content: list = None  # which k-tile each stage holds (both halves landed)
    halves: list = None  # {stage: {k_tile: set of halves landed}}
    readers: list = None  # per stage: {(warp, k_tile)}
    reads: list = None  # per warp: k-tiles read so far
    waited: list = None  # per warp: the barriers waited on since its last read
    loaded: list = field(default_factory=list)
    in_flight: list = field(default_factory=list)
    misreleases: list = field(default_factory=list)  # (warp, stage released, stage last read)

    def __post_init__(self):
        self.barriers = Barriers(self.stages)
        self.content = [None] * self.stages
        self.halves = [dict() for _ in range(self.stages)]
        self.readers = [set() for _ in range(self.stages)]
        self.reads = [0] * self.warps
        self.waited = [set() for _ in range(self.warps)]


def issue(cta: Cta, j: int, stage: int, bar: int):
    bars = cta.barriers
    if not bars.fenced:
        raise Found(
            "race",
            f"TMA was handed k-tile {j} counted on {bars.name(bar)} while the "
            f"barriers' initialisation was never fenced (fence.mbarrier_init): the "
            f"copy engine may not see them initialised",
            "missing fence",
        )
    if not 0 <= j < cta.k_tiles:
        raise Found(
            "misuse", f"a load of k-tile {j}: there are only {cta.k_tiles}", "past the last k-tile"
        )
    if bar != stage:
        raise Found(
            "misuse",
            f"k-tile {j} copied into stage {stage} but counted on "
            f"{bars.name(bar)}; its bytes belong on full[{stage}]",
            "stage index",
        )
    bars.get(bar, "a TMA copy counted on")
    cta.loaded.append(j)
    cta.in_flight += [Copy(stage, j, bar, cta.bytes_a, "A"), Copy(stage, j, bar, cta.bytes_b, "B")]


def land(cta: Cta, copy: Copy):
    readers = cta.readers[copy.stage]
    if readers:
        warp, t = min(readers)
        raise Found(
            "race",
            f"k-tile {copy.k_tile}'s {copy.half} landed in stage {copy.stage} "
            f"while warp {warp} was still reading k-tile {t} from it",
            _overwrite_mistake(cta, copy.stage, copy.k_tile),
        )
    landed = cta.halves[copy.stage].setdefault(copy.k_tile, set())
    landed.add(copy.half)
    if landed == {"A", "B"}:
        cta.content[copy.stage] = copy.k_tile
        del cta.halves[copy.stage][copy.k_tile]
    barrier = cta.barriers.bars[copy.barrier]
    try:
        cta.barriers.note(copy.barrier, barrier.complete_tx(copy.nbytes))
    except MBarrierError as exc:
        raise Found("misuse", str(exc), "expect_tx bytes") from None


def start_read(cta: Cta, warp: int, stage: int):
    t = cta.reads[warp]
    if t >= cta.k_tiles:
        raise Found(
            "misuse",
            f"warp {warp} reads a k-tile past the last ({cta.k_tiles})",
            "past the last k-tile",
        )
    if stage != t % cta.stages:
        raise Found(
            "misuse",
            f"warp {warp} read stage {stage} for k-tile {t}, which lands in stage {t % cta.stages}",
            "stage index",
        )
    if cta.content[stage] is not None and cta.content[stage] > t:
        raise Found(
            "race",
            f"warp {warp} read stage {stage} for k-tile {t}, but k-tile "
            f"{cta.content[stage]} had already been loaded over it",
            _overwrite_mistake(cta, stage, cta.content[stage]),
        )
    if stage not in cta.waited[warp] and cta.content[stage] != t:
        raise Found(
            "race",
            f"warp {warp} read stage {stage} for k-tile {t} without waiting "
            f"on full[{stage}] since its last read",
            "missing wait",
        )
    if cta.content[stage] != t:
        held = "nothing yet" if cta.content[stage] is None else f"k-tile {cta.content[stage]}"
        unarmed = cta.barriers.last_armed[stage] == 0  # its phase completed with no bytes due
        raise Found(
            "race",
            f"warp {warp} read stage {stage} for k-tile {t} while it held "
            f"{held}: the wait on full[{stage}] returned before the bytes landed",
            "missing expect_tx" if unarmed else "wrong parity",
        )
    cta.readers[stage].add((warp, t))
    cta.waited[warp].clear()


def _overwrite_mistake(cta: Cta, stage: int, j: int) -> str:
    """k-tile j overwrote a stage still needed: did every warp release the stage's previous
    k-tile (then some released it before reading it), or did the producer not wait?"""
    empty = cta.barriers.bars[cta.stages + stage]
    trip = j // cta.stages
    if cta.misreleases:
        return "wrong stage released"
    return "released too early" if empty is not None and empty.phase >= trip else "wrong parity"


def note_release(cta: Cta, warp: int, bar: int) -> None:
    """A warp's plain arrival on empty[stage]: remember it when the stage is neither the one
    the warp last read nor one whose full barrier it has waited on since (that one is a
    release before the read, "released too early"): a release of another stage frees a
    stage its reader still needs and never frees the one it read."""
    stage = bar - cta.stages
    if stage < 0 or cta.reads[warp] == 0:
        return
    read = (cta.reads[warp] - 1) % cta.stages
    if stage != read and stage not in cta.waited[warp]:
        cta.misreleases.append((warp, stage, read))


def misrelease_detail(cta: Cta) -> str:
    """What the first release of another stage was, for a verdict's detail."""
    warp, stage, read = cta.misreleases[0]
    return (
        f"warp {warp} arrived on empty[{stage}] after reading stage {read}, "
        f"so empty[{read}] waits for its release"
    )


def end_read(cta: Cta, warp: int, stage: int):
    cta.readers[stage].discard((warp, cta.reads[warp]))
    cta.reads[warp] += 1


def finished(cta: Cta) -> Verdict:
    short = [(w, n) for w, n in enumerate(cta.reads) if n != cta.k_tiles]
    if short:
        w, n = short[0]
        return Verdict("misuse", f"warp {w} read {n} of the {cta.k_tiles} k-tiles", "every k-tile")
    if sorted(cta.loaded) != list(range(cta.k_tiles)):
        return Verdict("misuse", f"the k-tiles loaded were {sorted(cta.loaded)}", "every k-tile")
    return Verdict(
        OK,
        f"{cta.warps} warps, {cta.stages} stage(s), {cta.k_tiles} k-tile(s): "
        f"every k-tile loaded once, waited for and read by every warp",
    )


def deadlock(cta: Cta, live: list) -> Verdict:
    """Who waits on what, the producer's waits (on empty barriers) first: a full barrier
    that never completes is usually the symptom of an empty one that never did."""
    groups: dict[tuple, list[int]] = {}
    for w in live:
        op = w.pending
        key = (op[1] < cta.stages, op[1], op[2]) if op[0] == "wait" else (2, -1, -1)
        groups.setdefault(key, []).append(w.index)
    lines = []
    for (_, i, parity), ids in sorted(groups.items()):
        who = f"warp {ids[0]} waits" if len(ids) == 1 else f"warps {', '.join(map(str, ids))} wait"
        if i < 0:
            lines.append(f"{who} at sync_threads, which not every warp reaches")
            continue
        bar = cta.barriers.bars[i]
        want = _expected_parity(cta, i, ids[0])
        lines.append(
            f"{who} on {bar.name} for parity {parity} "
            f"({_role(cta, i, ids[0])}, which needs parity {want}), but {bar.describe()}"
        )
    said = "; ".join(lines[:2]) + ("; ..." if len(lines) > 2 else "")
    if cta.misreleases:
        said += "; " + misrelease_detail(cta)
    return Verdict("deadlock", said, _deadlock_mistake(cta, live))


def _role(cta: Cta, i: int, warp: int) -> str:
    if i >= cta.stages:
        return f"loading k-tile {len(cta.loaded)}"
    return f"reading k-tile {cta.reads[warp]}"


def _expected_parity(cta: Cta, i: int, warp: int) -> int:
    """The parity the kernel's protocol waits for here: the producer's next load j on
    empty[j % S] waits for ((j // S) % 2) ^ 1, warp w's next read t on full[t % S] for
    (t // S) % 2."""
    if i >= cta.stages:
        return ((len(cta.loaded) // cta.stages) % 2) ^ 1
    return (cta.reads[warp] // cta.stages) % 2


def _deadlock_mistake(cta: Cta, live: list) -> str:
    waits = sorted(
        (
            (w.pending[1] < cta.stages, w.pending[1], w.pending[2], w.index)
            for w in live
            if w.pending[0] == "wait"
        )
    )
    if not waits:
        return "sync_threads"
    for _, i, parity, warp in waits:
        if parity != _expected_parity(cta, i, warp):
            return "wrong parity"
    if cta.misreleases:
        return "wrong stage released"
    _, i, _, _ = waits[0]
    bar = cta.barriers.bars[i]
    if bar.pending == 0 and bar.tx > 0:
        return "expect_tx bytes"
    if bar.arrived == 0 and i >= cta.stages:
        return "missing release"
    return "arrival count"
