"""An mbarrier, and the PipelineState that kernels use to walk a ring of them.

The one model of the mbarrier in the course: the pipeline simulator (course.sim), the
ring protocol of notebook 09 (course.sim.ring_protocol) and the Blackwell emulators
(course.emulate) all run on `MBarrier` and `PipelineState`.

The model follows the PTX semantics of `mbarrier.*` (sm_90+):

* `mbarrier.init(count)` puts the barrier in phase 0 with `count` pending arrivals and
  a transaction count (tx-count) of 0.
* `mbarrier.arrive` removes one pending arrival; `mbarrier.arrive.expect_tx(bytes)`
  first adds `bytes` to the tx-count, then arrives. A TMA copy issued with
  `.mbarrier::complete_tx::bytes` subtracts the bytes it wrote when it lands
  (`complete_tx`), without arriving.
* The current phase completes the moment BOTH counts are zero: the phase number goes
  up by one (its parity bit flips), the pending count is reset to `count` and the
  tx-count to 0. Arrivals made after that belong to the next phase: an arrival the
  protocol meant for phase n but that comes "too early" silently completes phase n
  early. The barrier cannot tell; only a wrong result (a race) can.
* `mbarrier.try_wait.parity(p)` answers "has the phase with parity p completed?". The
  barrier only keeps one bit of history, so p names either the current phase or the
  one just before it: waiting on p succeeds iff the current phase's parity is NOT p.

  A fresh barrier is in phase 0 (parity 0). `try_wait(0)` blocks until phase 0
  completes. `try_wait(1)` returns at once: parity 1 names the phase "before" phase 0,
  which counts as completed. That is why a producer, whose first trip round a ring of
  empty buffers must not block, starts its phase bit at 1 (CuTe DSL's
  `make_pipeline_state(PipelineUserType.Producer, ...)` does exactly that), while a
  consumer starts at 0.

  Parity aliasing: a waiter that falls two or more phases behind sees the parity of a
  phase it never observed and may wait for the wrong one. Correct pipelines cannot
  fall that far behind (the partner barrier holds them back).

Undefined-behaviour cases that the model refuses, with a message, instead of guessing:
an arrive whose count exceeds the arrivals still pending (an over-arrival that can
only happen while the phase waits for bytes), and a phase whose arrivals are complete
while more bytes landed than were announced (tx underflow). The tx-count may dip below
zero while arrivals are still pending (a copy can land before its expect_tx), as PTX
allows.
"""

from __future__ import annotations

from dataclasses import dataclass


class MBarrierError(RuntimeError):
    """An operation that the hardware leaves undefined (a programming error)."""


class MBarrier:
    """One mbarrier object: expected count, pending count, tx-count and phase.

    `phase` is the number of the current (not yet completed) phase: 0 after init,
    and also the number of phases completed so far.
    """

    def __init__(self, count: int, name: str = "mbarrier"):
        if not isinstance(count, int) or count < 1:
            raise MBarrierError(f"{name}: mbarrier.init needs an arrival count >= 1, got {count!r}")
        self.name = name
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0

    # -- state -------------------------------------------------------------------------
    @property
    def parity(self) -> int:
        """Parity bit of the current (incomplete) phase."""
        return self.phase & 1

    @property
    def arrived(self) -> int:
        """Arrivals already counted in the current phase."""
        return self.count - self.pending

    def completed(self, phase: int) -> bool:
        """Has phase number `phase` completed? (Phase -1, "before init", always has.)"""
        return self.phase > phase

    def try_wait(self, parity: int) -> bool:
        """`mbarrier.try_wait.parity`: True iff the phase with this parity has completed,
        i.e. iff the current phase's parity differs from `parity`."""
        if parity not in (0, 1):
            raise MBarrierError(f"{self.name}: try_wait.parity takes 0 or 1, got {parity!r}")
        return parity != self.parity

    # -- operations --------------------------------------------------------------------
    def arrive(self, count: int = 1, tx: int = 0) -> bool:
        """`mbarrier.arrive` (tx=0) or `mbarrier.arrive.expect_tx` (tx bytes).
        Returns True if this call completed the current phase."""
        if count < 1:
            raise MBarrierError(f"{self.name}: arrive count must be >= 1, got {count}")
        if tx < 0:
            raise MBarrierError(f"{self.name}: expect_tx bytes must be >= 0, got {tx}")
        if count > self.pending:
            waiting = (
                f" (the phase is complete on arrivals and waits only for {self.tx} more "
                f"transaction bytes)"
                if self.pending == 0
                else ""
            )
            raise MBarrierError(
                f"{self.name}: over-arrival in phase {self.phase}: {count} arrival(s) but only "
                f"{self.pending} pending of {self.count}{waiting}; more threads arrive than "
                f"the barrier was initialised for"
            )
        self.tx += tx
        self.pending -= count
        return self._maybe_complete()

    def expect_tx(self, tx: int) -> None:
        """`mbarrier.expect_tx`: announce bytes without arriving."""
        if tx < 0:
            raise MBarrierError(f"{self.name}: expect_tx bytes must be >= 0, got {tx}")
        self.tx += tx

    def complete_tx(self, tx: int) -> bool:
        """What a TMA copy does when its bytes land. Returns True if it completed the phase."""
        if tx < 0:
            raise MBarrierError(f"{self.name}: complete_tx bytes must be >= 0, got {tx}")
        self.tx -= tx
        return self._maybe_complete()

    def _maybe_complete(self) -> bool:
        if self.pending == 0 and self.tx < 0:
            raise MBarrierError(
                f"{self.name}: tx underflow in phase {self.phase}: all {self.count} arrivals are "
                f"in but {-self.tx} more bytes landed than expect_tx announced; the byte count "
                f"passed to arrive.expect_tx is too small for the copies tracked by this barrier"
            )
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count
            return True
        return False

    def describe(self) -> str:
        """One line: phase, parity, arrivals and bytes still expected."""
        tx = (
            f", waiting for {self.tx} more bytes"
            if self.tx > 0
            else (f", {-self.tx} bytes landed ahead of their expect_tx" if self.tx < 0 else "")
        )
        return (
            f"{self.name} is in phase {self.phase} (parity {self.parity}) with "
            f"{self.arrived}/{self.count} arrivals{tx}"
        )

    def __repr__(self) -> str:
        return (
            f"MBarrier({self.name!r}, count={self.count}, phase={self.phase}, "
            f"arrived={self.arrived}, tx={self.tx})"
        )


PRODUCER = "producer"
CONSUMER = "consumer"


@dataclass
class PipelineState:
    """Where a role stands in a ring of `stages` buffers, as CuTe DSL keeps it:
    `index` (which stage), `phase` (the parity it waits with) and `count` (how many
    stages it has passed in all). `advance()` moves to the next stage and flips the
    phase bit when the index wraps to 0. Kernels keep these across tiles, so the ring
    continues where the previous tile left it."""

    stages: int
    index: int = 0
    phase: int = 0
    count: int = 0

    def __post_init__(self):
        if self.stages < 1:
            raise ValueError(f"a pipeline needs at least 1 stage, got {self.stages}")

    @classmethod
    def producer(cls, stages: int) -> "PipelineState":
        """Phase bit 1: the producer's first wait on each fresh empty barrier must pass."""
        return cls(stages, 0, 1, 0)

    @classmethod
    def consumer(cls, stages: int) -> "PipelineState":
        """Phase bit 0: the consumer's first wait on each full barrier must block until
        the producer fills the stage."""
        return cls(stages, 0, 0, 0)

    def advance(self) -> None:
        self.index += 1
        self.count += 1
        if self.index == self.stages:
            self.index = 0
            self.phase ^= 1

    @property
    def round(self) -> int:
        """How many full trips round the ring this role has completed."""
        return self.count // self.stages

    def clone(self) -> "PipelineState":
        return PipelineState(self.stages, self.index, self.phase, self.count)


def make_pipeline_state(kind: str, stages: int) -> PipelineState:
    """`PipelineState.producer` or `.consumer` by name. Mirrors
    `cutlass.pipeline.make_pipeline_state(PipelineUserType.Producer / Consumer, stages)`."""
    if kind == PRODUCER:
        return PipelineState.producer(stages)
    if kind == CONSUMER:
        return PipelineState.consumer(stages)
    raise ValueError(f"kind must be {PRODUCER!r} or {CONSUMER!r}, got {kind!r}")
