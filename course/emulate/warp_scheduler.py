"""The warp scheduler of the Blackwell emulators, and the named barrier (bar.sync).

Each warp of an emulated kernel is a Python generator. Where the real warp would spin
on `mbarrier.try_wait.parity` or a named barrier it yields a `Wait`; the `Scheduler`
resumes a warp only once its condition holds. A correct kernel therefore runs to the
end under *any* interleaving the scheduler picks, and a wrong one either computes
something wrong (caught by the result checks) or leaves every warp waiting, which the
scheduler reports as `EmulatedDeadlock`, naming who waits on what.

The mbarriers and pipeline states are the course's one model of them
(course.models.mbarrier: `MBarrier`, `PipelineState`); an operation the hardware leaves
undefined (an over-arrival, a tx underflow) raises its `MBarrierError`. Only the named
barrier, which is not an mbarrier, is modelled here. The executor schedules the kernels'
own warps the same way (course.execute.machine, named barriers in course.execute.sm90); this
scheduler drives only the emulators' generators.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Generator, Iterable

from course.models.mbarrier import MBarrier


class EmulatedDeadlock(RuntimeError):
    """Every unfinished warp waits on a condition no other warp can make true."""


class NamedBarrier:
    """bar.sync id, n: the first n-1 arrivals wait, the n-th releases them all."""

    def __init__(self, name: str, count: int):
        self.name = name
        self.count = count
        self.arrived = 0
        self.generation = 0

    def arrive(self) -> int:
        """Count one participant; return the generation it must see pass."""
        gen = self.generation
        self.arrived += 1
        if self.arrived == self.count:
            self.arrived = 0
            self.generation += 1
        return gen

    def passed(self, generation: int) -> bool:
        return self.generation > generation


@dataclass(frozen=True)
class Wait:
    """What a warp yields when it must wait: `ready()` says whether it may continue."""

    what: str
    ready: Callable[[], bool]


def wait_barrier(bar: MBarrier, parity: int) -> Wait:
    """`yield wait_barrier(bar, parity)`: mbarrier.try_wait.parity in a loop."""
    return Wait(f"{bar.name} parity {parity}", lambda: bar.try_wait(parity))


def sync_named(bar: NamedBarrier):
    """`yield from sync_named(bar)`: bar.sync on a named barrier."""
    gen = bar.arrive()
    yield Wait(f"{bar.name} generation {gen}", lambda: bar.passed(gen))


@dataclass
class Warp:
    name: str
    body: Generator
    waiting: Wait | None = None
    done: bool = False
    steps: int = 0


@dataclass
class Scheduler:
    """Runs warps (generators) until all finish, in round-robin or seeded random order.

    `seed=None` picks the first runnable warp in a fixed rotation (deterministic);
    an integer seed picks uniformly among runnable warps, to show a result does not
    depend on the interleaving.
    """

    seed: int | None = None
    max_steps: int = 5_000_000
    warps: list[Warp] = field(default_factory=list)
    clock: int = 0  # scheduling decisions so far: the emulation's notion of "when"

    def spawn(self, name: str, body: Generator) -> None:
        self.warps.append(Warp(name, body))

    def _step(self, w: Warp) -> None:
        """Run `w` up to its next yield (a Wait, or None for a plain scheduling point)."""
        w.waiting = None
        try:
            w.waiting = next(w.body)
            w.steps += 1
        except StopIteration:
            w.done = True

    def run(self) -> None:
        rng = random.Random(self.seed) if self.seed is not None else None
        cursor = 0
        while True:
            live = [w for w in self.warps if not w.done]
            if not live:
                return
            runnable = [w for w in live if w.waiting is None or w.waiting.ready()]
            if not runnable:
                lines = "\n".join(f"  {w.name} waits on {w.waiting.what}" for w in live)
                raise EmulatedDeadlock(f"every live warp is waiting:\n{lines}")
            if rng is None:
                cursor = (cursor + 1) % len(runnable)
                pick = runnable[cursor]
            else:
                pick = rng.choice(runnable)
            self._step(pick)
            self.clock += 1
            if self.clock > self.max_steps:
                raise EmulatedDeadlock("the emulation did not finish in max_steps")


def run_warps(warps: Iterable[tuple[str, Generator]], seed: int | None = None) -> Scheduler:
    sched = Scheduler(seed=seed)
    for name, body in warps:
        sched.spawn(name, body)
    sched.run()
    return sched
