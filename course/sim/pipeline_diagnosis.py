"""Explain a deadlock: who waits on what, and the most likely mistake.

When no event is left and some role is still waiting, every waiting role is blocked
forever. For each one we know the barrier, the parity it waits with, the phase its
pipeline count says it needs, the barrier's phase, arrivals and pending bytes, and who
has arrived on it so far. The checks, most specific first:

  wrong_parity    the phase the role needs has completed (or, on a fresh barrier, is
                  "phase -1", complete by definition) but it waits with the other parity,
                  i.e. for a phase that cannot complete until it moves on itself.
  tx_bytes        every arrival is in, but the barrier still waits for bytes: expect_tx
                  announced more than the copies tracked by this barrier deliver.
  arrival_count   everyone who arrives on this barrier has arrived for this phase, yet
                  the count is not reached: it was initialised with too many arrivals.
  missing_arrive  a role passed the partner barrier (it took a stage) more often than it
                  arrived here (gave it back): a release or commit is missing.
  circular_wait   none of the above: each blocked role waits for another blocked role.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course.sim.event_engine import Engine, Role, fmt_cycles

CAUSES = ("wrong_parity", "tx_bytes", "arrival_count", "missing_arrive", "circular_wait")

_TITLES = {
    "wrong_parity": "wrong parity",
    "tx_bytes": "transaction bytes never arrive",
    "arrival_count": "arrival count too high",
    "missing_arrive": "missing arrive",
    "circular_wait": "circular wait",
}


@dataclass
class BlockedWait:
    """One role blocked forever, and the state of what it waits on."""

    role: str
    barrier: str
    parity: int
    needs: int | None
    since: float
    phase: int
    arrived: int
    count: int
    tx: int
    cause: str
    explanation: str

    def __str__(self) -> str:
        need = (
            ""
            if self.needs is None
            else (
                " (its count needs the phase before phase 0, complete on a fresh barrier)"
                if self.needs < 0
                else f" (its count needs phase {self.needs})"
            )
        )
        tx = f", {self.tx} bytes still expected" if self.tx > 0 else ""
        return (
            f"{self.role} waits on {self.barrier} with parity {self.parity} since "
            f"t={fmt_cycles(self.since)}{need}; {self.barrier} is in phase {self.phase} "
            f"(parity {self.phase & 1}) with {self.arrived}/{self.count} arrivals{tx}"
        )


@dataclass
class Deadlock:
    """Why the simulated kernel would hang. `cause` is one of CAUSES; str() explains."""

    time: float
    cause: str
    blocked: list[BlockedWait]
    finished: list[str] = field(default_factory=list)

    @property
    def culprit(self) -> BlockedWait:
        return next(b for b in self.blocked if b.cause == self.cause)

    @property
    def summary(self) -> str:
        return f"deadlock at t={fmt_cycles(self.time)}: {_TITLES[self.cause]}"

    def __str__(self) -> str:
        lines = [
            f"DEADLOCK at t={fmt_cycles(self.time)} cycles: no role can make progress "
            f"({len(self.blocked)} blocked"
            + (f", finished: {', '.join(self.finished)}" if self.finished else "")
            + ")."
        ]
        lines += [f"  - {b}" for b in self.blocked]
        lines.append(f"Most likely cause ({_TITLES[self.cause]}): {self.culprit.explanation}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return (
            '<pre style="border-left:6px solid #cf222e;padding:6px 10px;'
            f'background:#cf222e10;white-space:pre-wrap">{html.escape(str(self))}</pre>'
        )


def diagnose(engine: Engine) -> Deadlock | None:
    """The explanation of a deadlocked engine, or None if it is not deadlocked."""
    if not engine.deadlocked:
        return None
    blocked = [_explain(engine, r) for r in engine.roles if r.waiting is not None]
    rank = {c: i for i, c in enumerate(CAUSES)}
    cause = min((b.cause for b in blocked), key=rank.__getitem__)
    return Deadlock(engine.now, cause, blocked, [r.name for r in engine.roles if r.done])


def _explain(engine: Engine, role: Role) -> BlockedWait:
    op = role.waiting
    b = op.barrier
    cause, text = _cause(engine, role)
    return BlockedWait(
        role.name,
        b.name,
        op.parity,
        op.needs,
        role.wait_since,
        b.phase,
        b.arrived,
        b.count,
        b.tx,
        cause,
        text,
    )


def _cause(engine: Engine, role: Role) -> tuple[str, str]:
    op = role.waiting
    b = op.barrier
    log = engine.log[id(b)]
    partner = log.partner

    # 1. the parity does not name the phase the role's count needs
    if op.needs is not None and op.parity != (op.needs & 1):
        if op.needs < 0:
            return "wrong_parity", (
                f"{role.name} waits on {b.name} with parity {op.parity}, i.e. for phase "
                f"{b.phase} to complete. On its first trip round the ring it needs nothing "
                f"(a fresh barrier's 'previous phase', parity 1, counts as complete), but "
                f"phase 0 of {b.name} can only complete after "
                f"{_who_arrives(engine, b, role)} releases the stage, which first needs "
                f"{role.name} to fill it: each waits for the other. A producer must start its "
                f"phase bit at 1 (make_pipeline_state(PRODUCER) does); waiting with parity 0 "
                f"on a fresh empty barrier hangs."
            )
        if b.completed(op.needs):
            return "wrong_parity", (
                f"{role.name}'s count says it needs phase {op.needs} of {b.name}, which has "
                f"completed, but it waits with parity {op.parity}, i.e. for phase {b.phase}: "
                f"its phase bit is flipped. The phase bit must flip exactly when the stage "
                f"index wraps to 0 (PipelineState.advance), starting at 1 for a producer and "
                f"0 for a consumer."
            )
        return "wrong_parity", (
            f"{role.name} waits on {b.name} with parity {op.parity}, but its count needs phase "
            f"{op.needs} (parity {op.needs & 1}): its phase bit is out of step with its count."
        )

    # 2. arrivals complete, bytes missing
    if b.pending == 0 and b.tx > 0:
        return "tx_bytes", (
            f"every arrival of phase {b.phase} of {b.name} is in, but it still waits for "
            f"{b.tx} bytes that will never land: arrive.expect_tx announced more bytes than "
            f"the TMA copies tracked by this barrier deliver (a wrong byte count, or a copy "
            f"that was never issued or completes on another barrier)."
        )

    # 3. every arriver has done its part for this phase, count not reached
    this_phase = {who for _, who, ph, _ in log.arrivals if ph == b.phase}
    ever = {who for _, who, _, _ in log.arrivals}
    if b.arrived > 0 and ever and ever <= this_phase:
        agents = f" ({log.agents} arriving agent(s) per phase)" if log.agents else ""
        return "arrival_count", (
            f"{b.name} was initialised to expect {b.count} arrivals per phase, but only "
            f"{b.arrived} came: {', '.join(sorted(this_phase))} arrived for phase {b.phase} "
            f"and nobody else ever arrives on it{agents}. The count passed to mbarrier.init "
            f"must equal the number of arrivals each phase really gets."
        )

    # 4. someone took a stage (passed the partner) and never gave it back (arrived here)
    if partner is not None:
        for r in engine.roles:
            took, gave = r.passes[partner.name], r.arrivals[b.name]
            if took > gave:
                state = (
                    "finished"
                    if r.done
                    else (f"is blocked on {r.waiting.barrier.name}" if r.waiting else "is running")
                )
                return "missing_arrive", (
                    f"{r.name} passed {partner.name} {took} time(s) but arrived on {b.name} only "
                    f"{gave} time(s), and {state}: it took a stage and never gave it back. "
                    f"Every consumer_wait needs its consumer_release (or the MMA's "
                    f"tcgen05.commit to the empty barrier), every producer_acquire its "
                    f"arrive.expect_tx on the full barrier."
                )

    return "circular_wait", (
        f"nobody left can arrive on {b.name}: "
        f"{_who_arrives(engine, b, role)} is blocked too, waiting for work that depends on "
        f"{role.name}."
    )


def _who_arrives(engine: Engine, b, waiter: Role) -> str:
    """Name the role(s) expected to arrive on `b`: those that ever did, else the roles
    that wait on its partner (consumers of a full barrier free its empty twin)."""
    log = engine.log[id(b)]
    names = sorted({who for _, who, _, _ in log.arrivals})
    if not names and log.partner is not None:
        names = sorted(
            {
                r.name
                for r in engine.roles
                if r is not waiter
                and (
                    r.passes[log.partner.name]
                    or (r.waiting is not None and r.waiting.barrier is log.partner)
                )
            }
        )
    return " / ".join(names) if names else "the role that should arrive on it"
