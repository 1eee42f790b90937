"""WGMMA's asynchrony as a model: groups of wgmmas, `wgmma.wait_group(n)`, and when a stage
of the ring may be handed back to the TMA producer.

The PTX rules it follows (PTX ISA, "Asynchronous warpgroup level matrix multiply"):

* `wgmma.fence` orders the warpgroup's register accesses before the wgmmas that follow;
* `wgmma.mma_async` is issued and returns at once; the tensor cores run it later;
* `wgmma.commit_group` closes the wgmmas issued since the last commit into one group;
* `wgmma.wait_group(n)` returns once at most n groups are still running; groups complete
  in the order they were committed.

A group reads its k-tile's stage of shared memory until it completes, so the stage may be
released (an arrive on its empty barrier) only after a `wait_group` that the group cannot
outlive. `schedule` plays the course's main loop (notebook 10) with illustrative times:
per k-tile t, fence, issue, commit group t; then `wait_group(keep)` and release every stage
whose group has completed. `release="after_commit"` is the race: the stage of k-tile t is
released as soon as its group is committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """Something that takes time: `what` ("issue", "wait", "group"), for k-tile `k_tile`."""

    what: str
    k_tile: int
    start: float
    end: float


@dataclass
class GroupSchedule:
    """The warpgroup's issue and waits, the tensor cores' groups, and when each k-tile's
    stage was released."""

    k_tiles: int
    stages: int
    keep: int
    warpgroup: list[Span] = field(default_factory=list)  # issue / wait spans, in order
    groups: list[Span] = field(default_factory=list)  # group t on the tensor cores
    released: dict[int, float] = field(default_factory=dict)  # k-tile -> release time

    def stage_of(self, k_tile: int) -> int:
        return k_tile % self.stages

    @property
    def races(self) -> list[int]:
        """The k-tiles whose stage was handed back before their group had finished reading."""
        return [t for t, at in sorted(self.released.items()) if at < self.groups[t].end]

    @property
    def tensor_core_idle(self) -> float:
        """Time the tensor cores waited between the first group's start and the last's end."""
        busy = sum(g.end - g.start for g in self.groups)
        return self.groups[-1].end - self.groups[0].start - busy

    @property
    def end(self) -> float:
        return max(self.groups[-1].end, max(self.released.values()))


def schedule(
    k_tiles: int = 6,
    stages: int = 4,
    issue: float = 1.0,
    mma: float = 4.0,
    keep: int = 1,
    release: str = "after_wait",
) -> GroupSchedule:
    """The main loop of notebook 10 over `k_tiles` k-tiles whose data has landed: `issue`
    time units to fence, issue and commit a k-tile's wgmmas, `mma` units for the tensor
    cores to run its group. After each commit, `wait_group(keep)`; then release every stage
    whose group has completed (release="after_wait"), or release the k-tile's own stage at
    once (release="after_commit": a race). After the loop, `wait_group(0)` drains the rest."""
    if release not in ("after_wait", "after_commit"):
        raise ValueError("release is 'after_wait' or 'after_commit'")
    if keep < 0:
        raise ValueError("wait_group takes n >= 0")
    s = GroupSchedule(k_tiles, stages, keep)
    now = 0.0
    for t in range(k_tiles):
        s.warpgroup.append(Span("issue", t, now, now + issue))
        now += issue
        start = max(now, s.groups[-1].end if s.groups else 0.0)
        s.groups.append(Span("group", t, start, start + mma))
        if release == "after_commit":
            s.released[t] = now
            continue
        running = [g for g in s.groups if g.end > now]
        if len(running) > keep:  # wait until only `keep` groups are left running
            until = running[len(running) - keep - 1].end
            s.warpgroup.append(Span("wait", t, now, until))
            now = until
        for g in s.groups:
            if g.end <= now and g.k_tile not in s.released:
                s.released[g.k_tile] = now
    if release == "after_wait" and len(s.released) < k_tiles:  # the drain: wait_group(0)
        last = s.groups[-1].end
        if last > now:
            s.warpgroup.append(Span("wait", k_tiles, now, last))
        for g in s.groups:
            s.released.setdefault(g.k_tile, max(now, last))
    return s


__all__ = ["Span", "GroupSchedule", "schedule"]
