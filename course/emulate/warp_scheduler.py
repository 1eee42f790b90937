"""The synchronisation the Blackwell kernels use, as plain Python objects, and a warp scheduler.

Each warp of an emulated kernel is a Python generator. Where the real warp would spin
on `mbarrier.try_wait.parity` or a named barrier it yields a `Wait`; the `Scheduler`
resumes a warp only once its condition holds. A correct kernel therefore runs to the
end under *any* interleaving the scheduler picks, and a wrong one either computes
something wrong (caught by the result checks) or leaves every warp waiting, which the
scheduler reports as `EmulatedDeadlock`, naming who waits on what.

The mbarrier model follows the PTX rules the kernels rely on:

  * a barrier is initialised with an expected arrival count;
  * `arrive()` counts one arrival, `expect_tx(b)` adds b bytes to wait for, the async
    copy that delivers them calls `complete_tx(b)` (the byte count may go transiently
    negative, as on the hardware, when bytes land before they are expected);
  * when all arrivals are in and the byte count is zero, the current phase completes
    and the barrier re-arms for the next phase;
  * `try_wait(parity)` succeeds once the phase with that parity has completed, i.e.
    when the current phase's parity differs from `parity`. A fresh barrier is in phase
    0, so waiting for parity 1 succeeds at once: that is why a producer's first wait
    on an empty barrier never blocks.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Generator, Iterable


class EmulatedDeadlock(RuntimeError):
    """Every unfinished warp waits on a condition no other warp can make true."""


class BarrierMisuse(RuntimeError):
    """An operation the hardware would not allow (e.g. more arrivals than expected)."""


class Mbarrier:
    """One 64-bit mbarrier in shared memory."""

    def __init__(self, name: str, count: int):
        if count < 1:
            raise ValueError("an mbarrier needs an arrival count >= 1")
        self.name = name
        self.count = count
        self.pending = count
        self.tx = 0
        self.completed = 0  # phases completed so far

    @property
    def parity(self) -> int:
        """Parity of the phase in progress."""
        return self.completed & 1

    def _maybe_complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def arrive(self, n: int = 1) -> None:
        if n > self.pending:
            raise BarrierMisuse(f"{self.name}: {n} arrivals but only {self.pending} "
                                f"pending in phase {self.completed}")
        self.pending -= n
        self._maybe_complete()

    def expect_tx(self, nbytes: int) -> None:
        self.tx += nbytes

    def arrive_expect_tx(self, nbytes: int) -> None:
        self.expect_tx(nbytes)
        self.arrive()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._maybe_complete()

    def try_wait(self, parity: int) -> bool:
        return self.parity != parity

    def __repr__(self) -> str:
        return (f"Mbarrier({self.name}: phase {self.completed}, {self.pending}/{self.count} "
                f"arrivals pending, tx {self.tx})")


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


@dataclass
class PipelineState:
    """Where a producer or consumer is in a ring of `stages` buffers (CuTe's PipelineState).

    A producer starts at phase 1 (its first empty-barrier waits pass at once), a consumer
    at phase 0. Every time the index wraps around, the phase flips. Kernels keep these
    across tiles, so the ring continues where the previous tile left it.
    """

    stages: int
    index: int = 0
    phase: int = 0
    count: int = 0

    @classmethod
    def producer(cls, stages: int) -> "PipelineState":
        return cls(stages, 0, 1, 0)

    @classmethod
    def consumer(cls, stages: int) -> "PipelineState":
        return cls(stages, 0, 0, 0)

    def advance(self) -> None:
        self.index += 1
        self.count += 1
        if self.index == self.stages:
            self.index = 0
            self.phase ^= 1


@dataclass(frozen=True)
class Wait:
    """What a warp yields when it must wait: `ready()` says whether it may continue."""

    what: str
    ready: Callable[[], bool]


def wait_barrier(bar: Mbarrier, parity: int) -> Wait:
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
