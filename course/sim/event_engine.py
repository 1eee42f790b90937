"""A small discrete-event engine for warp-specialized kernels.

A *role* (a warp, or a group of warps with one job) is a Python generator that yields
operations, the way its kernel code issues instructions:

    Wait(barrier, parity)      mbarrier.try_wait.parity: block until that phase completed
    Arrive(barrier, tx=bytes)  mbarrier.arrive[.expect_tx]; `delay` for a remote (DSMEM) arrive
    Issue(unit, latency, ...)  an asynchronous operation (a TMA copy, an MMA, a CLC query) on a
                               hardware unit; when it finishes its effects run: CompleteTx
                               (the TMA's complete_tx::bytes), Signal (tcgen05.commit's
                               arrive), Effect (any Python)
    Busy(cycles, label)        the role itself works for a while (an epilogue, say)
    Call(fn)                   zero-time bookkeeping; fn(engine)'s result is sent back

The engine advances time from event to event, never polls, and stops in one of four
ways: every role finished; a deadlock (no event left, some role still waiting; see
`diagnose`); a fault (an operation the hardware leaves undefined, e.g. an over-arrival);
or the event limit (so a mistake can never hang a notebook).

Shared-memory buffers are tracked too: an `Issue` names what it reads and writes, and
the engine reports a *hazard* when a write starts while a read is in flight (overwrite
before read), a read starts before its data landed (read before write), a read finds
another tile than the one expected, or a tile is overwritten before anyone read it.
Hazards are what compute-sanitizer's racecheck would flag on the real kernel: the
simulation keeps going, as the GPU would, and reports them.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from course.models.mbarrier import MBarrier, MBarrierError

# --------------------------------------------------------------------------------------
# Operations a role can yield
# --------------------------------------------------------------------------------------


@dataclass
class Wait:
    """`mbarrier.try_wait.parity` in a loop. `needs` is the phase number the role's
    protocol needs completed (from its PipelineState count: round r of a consumer needs
    phase r, of a producer phase r-1). The engine only uses it to explain mistakes."""

    barrier: MBarrier
    parity: int
    needs: int | None = None


@dataclass
class Arrive:
    """`mbarrier.arrive` (tx=0) or `mbarrier.arrive.expect_tx` (tx bytes). A `delay`
    models an arrive on a peer CTA's barrier (it crosses the cluster interconnect)."""

    barrier: MBarrier
    count: int = 1
    tx: int = 0
    delay: float = 0


@dataclass
class Busy:
    """The role itself is occupied for `cycles`."""

    cycles: float
    label: str
    tag: Any = None


@dataclass
class CompleteTx:
    """Effect of a finished TMA copy: `complete_tx(bytes)` on `barrier`, `delay` later."""

    barrier: MBarrier
    bytes: int
    delay: float = 0


@dataclass
class Signal:
    """Effect of a finished async op that arrives on a barrier (tcgen05.commit,
    a multicast commit with `delay` for the peer CTA)."""

    barrier: MBarrier
    count: int = 1
    delay: float = 0


@dataclass
class Effect:
    """Effect that runs arbitrary Python when an async op finishes."""

    fn: Callable[["Engine"], None]
    delay: float = 0


@dataclass
class Issue:
    """Start an async op on `unit`. It starts when the unit is free (units are serial
    resources: `occupancy` cycles each, default `latency`; 0 = unlimited throughput) and
    finishes `latency` cycles after it starts. The issuing role does not wait."""

    unit: "Unit"
    latency: float
    label: str
    occupancy: float | None = None
    on_done: tuple = ()
    reads: tuple = ()  # ((Buffer, expected tile), ...)
    writes: tuple = ()  # ((Buffer, tile), ...)
    tag: Any = None


@dataclass
class Call:
    """Zero-time Python; `fn(engine)` is sent back into the role's generator."""

    fn: Callable[["Engine"], Any]


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


@dataclass
class Interval:
    start: float
    end: float
    kind: str  # "busy" | "wait" | "blocked" | "write" | "read" | "held"
    label: str = ""
    tag: Any = None


@dataclass
class OpRecord:
    """One async op: when it was issued, started and finished, by whom, on what."""

    label: str
    unit: "Unit"
    issuer: "Role"
    issued: float
    start: float
    end: float
    reads: tuple
    writes: tuple
    tag: Any = None
    got: list = field(default_factory=list)  # what each read found when it started
    gate: tuple | None = None  # the issuer's last passed wait when it issued this op


@dataclass
class Hazard:
    """A data race the kernel would have (what racecheck would flag)."""

    kind: str  # overwrite_before_read | read_before_write | stale_read |
    # lost_tile | double_write | early_pass
    time: float
    where: str
    message: str

    def __str__(self) -> str:
        return (
            f"HAZARD ({self.kind.replace('_', ' ')}) at t={fmt_cycles(self.time)}: {self.message}"
        )


class SimulationFault(RuntimeError):
    """The simulation stopped on an undefined operation or on its event limit."""

    def __init__(self, kind: str, time: float, message: str):
        super().__init__(message)
        self.kind, self.time, self.message = kind, time, message

    def __str__(self) -> str:
        return f"FAULT ({self.kind}) at t={fmt_cycles(self.time)}: {self.message}"


def fmt_cycles(t: float) -> str:
    """A cycle count as the summaries and pictures print it: 1,234 (or 1,234.5)."""
    return f"{t:,.0f}" if float(t).is_integer() else f"{t:,.1f}"


# --------------------------------------------------------------------------------------
# Actors and resources
# --------------------------------------------------------------------------------------


class Role:
    """A warp (or warp group) with one job, driven by a generator of operations."""

    def __init__(self, name: str, gen, group: str = "", label: str = ""):
        self.name = name
        self.group = group
        self.label = label or name
        self.gen = gen
        self.intervals: list[Interval] = []
        self.waiting: Wait | None = None
        self.wait_since = 0.0
        self.done = False
        self.end: float | None = None
        self.passes: Counter = Counter()  # barrier name -> successful waits
        self.arrivals: Counter = Counter()  # barrier name -> arrivals (incl. via its async ops)
        self.last_pass: tuple | None = None  # (barrier, phase it passed on, time, needs)

    def busy_time(self) -> float:
        return sum(i.end - i.start for i in self.intervals if i.kind == "busy")

    def __repr__(self) -> str:
        return f"Role({self.name!r})"


class Unit:
    """A serial hardware resource (tensor core, TMA/memory path, CLC)."""

    def __init__(self, name: str, group: str = "", label: str = ""):
        self.name = name
        self.group = group
        self.label = label or name
        self.free_at = 0.0
        self.intervals: list[Interval] = []

    def busy_time(self, until: float | None = None) -> float:
        return sum(
            (min(i.end, until) if until is not None else i.end) - i.start
            for i in self.intervals
            if until is None or i.start < until
        )

    def __repr__(self) -> str:
        return f"Unit({self.name!r})"


class Buffer:
    """A shared-memory buffer (one pipeline stage of one CTA)."""

    def __init__(self, name: str):
        self.name = name
        self.value: Any = None
        self.consumed = True
        self.writer: OpRecord | None = None
        self.readers: list[OpRecord] = []
        self.intervals: list[Interval] = []
        self._landed_at: float | None = None

    def __repr__(self) -> str:
        return f"Buffer({self.name!r}, value={self.value!r})"


@dataclass
class BarrierLog:
    """What happened to one barrier: who arrived when, when each phase completed."""

    agents: int | None = None  # how many agents arrive per phase (if declared)
    partner: MBarrier | None = None  # passing a wait on partner obliges an arrive here
    arrivals: list = field(default_factory=list)  # (time, role name, phase, count)
    completions: list = field(default_factory=list)  # time phase n completed, index n


# --------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------


class Engine:
    """Runs roles against barriers, units and buffers; see the module docstring."""

    def __init__(self, max_events: int = 2_000_000, max_hazards: int = 50):
        self.now = 0.0
        self.roles: list[Role] = []
        self.units: list[Unit] = []
        self.buffers: list[Buffer] = []
        self.barriers: list[MBarrier] = []
        self.log: dict[int, BarrierLog] = {}
        self.ops: list[OpRecord] = []
        self.hazards: list[Hazard] = []
        self.hazard_count = 0
        self.fault: SimulationFault | None = None
        self.events = 0
        self.max_events = max_events
        self.max_hazards = max_hazards
        self._heap: list = []
        self._seq = 0
        self._waiters: dict[int, list[Role]] = defaultdict(list)
        self._ran = False

    # -- construction ------------------------------------------------------------------
    def barrier(self, count: int, name: str, agents: int | None = None) -> MBarrier:
        b = MBarrier(count, name)
        self.barriers.append(b)
        self.log[id(b)] = BarrierLog(agents=agents)
        return b

    def pair(self, full: MBarrier, empty: MBarrier) -> None:
        """Declare a full/empty pair: whoever passes a wait on one owes an arrive on
        the other (the producer fills what it acquired, the consumer frees what it
        read). Used only to explain deadlocks."""
        self.log[id(full)].partner = empty
        self.log[id(empty)].partner = full

    def unit(self, name: str, group: str = "", label: str = "") -> Unit:
        u = Unit(name, group, label)
        self.units.append(u)
        return u

    def buffer(self, name: str) -> Buffer:
        b = Buffer(name)
        self.buffers.append(b)
        return b

    def role(self, name: str, gen, group: str = "", label: str = "", start: float = 0.0) -> Role:
        r = Role(name, gen, group, label)
        self.roles.append(r)
        self.at(start, lambda: self._step(r))
        return r

    # -- scheduling --------------------------------------------------------------------
    def at(self, time: float, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, self._seq, fn))

    def run(self) -> "Engine":
        """Run to completion, deadlock, fault or the event limit. Never hangs."""
        if self._ran:
            raise RuntimeError("an Engine runs once; build a new one")
        self._ran = True
        while self._heap and self.fault is None:
            if self.events >= self.max_events:
                self.fault = SimulationFault(
                    "event limit",
                    self.now,
                    f"stopped after {self.max_events:,} events without finishing; the "
                    f"simulated kernel may loop forever (raise max_events if it is just big)",
                )
                break
            time, _, fn = heapq.heappop(self._heap)
            self.now = max(self.now, time)
            self.events += 1
            fn()
        self._heap.clear()
        if self.fault is not None or self.deadlocked:
            # a deadlock blocks its waiters forever; a fault just stops the clock
            kind = "blocked" if self.fault is None else "wait"
            for r in self.roles:
                if r.waiting is not None:
                    r.intervals.append(
                        Interval(r.wait_since, self.now, kind, f"{kind} {r.waiting.barrier.name}")
                    )
            for buf in self.buffers:  # copies and reads cut off by the stop
                if buf.writer is not None:
                    buf.intervals.append(
                        Interval(
                            buf.writer.start,
                            self.now,
                            "write",
                            buf.writer.label,
                            buf.writer.writes[0][1],
                        )
                    )
                for rd in buf.readers:
                    buf.intervals.append(Interval(rd.start, self.now, "read", rd.label, rd.tag))
        return self

    @property
    def finished(self) -> bool:
        return all(r.done for r in self.roles)

    @property
    def deadlocked(self) -> bool:
        return self._ran and self.fault is None and not self.finished

    @property
    def end_time(self) -> float:
        """When the last role finished (or when the simulation stopped)."""
        ends = [r.end for r in self.roles if r.end is not None]
        return max(ends + [self.now]) if not self.finished else max(ends, default=0.0)

    # -- role stepping -----------------------------------------------------------------
    def _step(self, role: Role, value: Any = None) -> None:
        while self.fault is None:
            try:
                op = role.gen.send(value)
            except StopIteration:
                role.done = True
                role.end = self.now
                return
            except MBarrierError as e:
                self._set_fault("barrier misuse", str(e))
                return
            value = None
            if isinstance(op, Wait):
                try:
                    ready = op.barrier.try_wait(op.parity)
                except MBarrierError as e:
                    self._set_fault("barrier misuse", f"{role.name}: {e}")
                    return
                if ready:
                    self._passed(role, op)
                    continue
                role.waiting = op
                role.wait_since = self.now
                self._waiters[id(op.barrier)].append(role)
                return
            if isinstance(op, Arrive):
                if op.delay:
                    self.at(
                        self.now + op.delay,
                        lambda op=op: self._arrive(op.barrier, op.count, op.tx, role),
                    )
                else:
                    self._arrive(op.barrier, op.count, op.tx, role)
                continue
            if isinstance(op, Busy):
                if op.cycles > 0:
                    role.intervals.append(
                        Interval(self.now, self.now + op.cycles, "busy", op.label, op.tag)
                    )
                    self.at(self.now + op.cycles, lambda: self._step(role))
                    return
                continue
            if isinstance(op, Issue):
                self._issue(role, op)
                continue
            if isinstance(op, Call):
                value = op.fn(self)
                continue
            self._set_fault("bad operation", f"{role.name} yielded {op!r}, not an operation")
            return

    def _passed(self, role: Role, op: Wait) -> None:
        b = op.barrier
        role.passes[b.name] += 1
        role.last_pass = (b, b.phase - 1, self.now, op.needs)
        if op.needs is not None and not b.completed(op.needs):
            self._hazard(
                "early_pass",
                b.name,
                f"{role.name} got past {b.name} with parity {op.parity}, but the phase its "
                f"pipeline count needs (phase {op.needs}) has not completed ({b.describe()}); "
                f"its phase bit is out of step with its count, so it runs ahead of the data",
            )

    def _arrive(self, barrier: MBarrier, count: int, tx: int, who: Role) -> None:
        if self.fault is not None:
            return
        log = self.log[id(barrier)]
        log.arrivals.append((self.now, who.name, barrier.phase, count))
        who.arrivals[barrier.name] += count
        try:
            completed = barrier.arrive(count, tx)
        except MBarrierError as e:
            self._set_fault("barrier misuse", f"{who.name}: {e}")
            return
        if completed:
            self._completed(barrier)

    def _complete_tx(self, barrier: MBarrier, nbytes: int, op: OpRecord) -> None:
        if self.fault is not None:
            return
        try:
            completed = barrier.complete_tx(nbytes)
        except MBarrierError as e:
            self._set_fault("barrier misuse", f"{op.label} ({op.issuer.name}): {e}")
            return
        if completed:
            self._completed(barrier)

    def _completed(self, barrier: MBarrier) -> None:
        self.log[id(barrier)].completions.append(self.now)
        waiting = self._waiters[id(barrier)]
        still = []
        for r in waiting:
            if barrier.try_wait(r.waiting.parity):
                op = r.waiting
                r.waiting = None
                if self.now > r.wait_since:
                    r.intervals.append(
                        Interval(r.wait_since, self.now, "wait", f"wait {barrier.name}")
                    )
                self._passed(r, op)
                self.at(self.now, lambda r=r: self._step(r))
            else:
                still.append(r)
        self._waiters[id(barrier)] = still

    # -- async ops ---------------------------------------------------------------------
    def _issue(self, role: Role, op: Issue) -> None:
        unit = op.unit
        start = max(self.now, unit.free_at)
        occupancy = op.latency if op.occupancy is None else op.occupancy
        unit.free_at = start + occupancy
        rec = OpRecord(
            op.label,
            unit,
            role,
            self.now,
            start,
            start + op.latency,
            op.reads,
            op.writes,
            op.tag,
            gate=role.last_pass,
        )
        self.ops.append(rec)
        if occupancy > 0:
            unit.intervals.append(Interval(start, start + occupancy, "busy", op.label, op.tag))
        if start == self.now:
            self._op_start(rec)
        else:
            self.at(start, lambda: self._op_start(rec))
        self.at(rec.end, lambda: self._op_done(rec, op.on_done))

    def _op_start(self, rec: OpRecord) -> None:
        for buf, expected in rec.reads:
            self._read_begin(buf, rec, expected)
        for buf, value in rec.writes:
            self._write_begin(buf, rec, value)

    def _op_done(self, rec: OpRecord, effects) -> None:
        if self.fault is not None:
            return
        for buf, _ in rec.reads:
            if rec in buf.readers:
                buf.readers.remove(rec)
            buf.intervals.append(Interval(rec.start, rec.end, "read", rec.label, rec.tag))
        for buf, value in rec.writes:
            if buf.writer is rec:
                buf.writer = None
            buf.value = value
            buf.consumed = False
            buf._landed_at = rec.end
            buf.intervals.append(Interval(rec.start, rec.end, "write", rec.label, value))
        for e in effects:
            delay = getattr(e, "delay", 0)
            if delay:
                self.at(self.now + delay, lambda e=e: self._apply(e, rec))
            else:
                self._apply(e, rec)

    def _apply(self, effect, rec: OpRecord) -> None:
        if self.fault is not None:
            return
        if isinstance(effect, CompleteTx):
            self._complete_tx(effect.barrier, effect.bytes, rec)
        elif isinstance(effect, Signal):
            self._arrive(effect.barrier, effect.count, 0, rec.issuer)
        elif isinstance(effect, Effect):
            effect.fn(self)
        else:
            self._set_fault("bad effect", f"{rec.label}: unknown effect {effect!r}")

    # -- buffer hazards ----------------------------------------------------------------
    def _read_begin(self, buf: Buffer, rec: OpRecord, expected: Any) -> None:
        if (
            buf.writer is not None
            and buf.writer.writes
            and any(v != expected for b, v in buf.writer.writes if b is buf)
        ):
            self._hazard(
                "overwrite_before_read",
                buf.name,
                f"{rec.label} wants {expected} from {buf.name}, but "
                f"{buf.writer.label} is already overwriting it"
                f"{self._why(buf.writer)}",
            )
        elif buf.writer is not None:
            self._hazard(
                "read_before_write",
                buf.name,
                f"{rec.label} starts reading {buf.name} (expecting {expected}) while "
                f"{buf.writer.label} is still writing it (lands at "
                f"t={fmt_cycles(buf.writer.end)}){self._why(rec)}",
            )
        elif buf.value != expected:
            held = "nothing yet" if buf.value is None else f"{buf.value}"
            self._hazard(
                "stale_read",
                buf.name,
                f"{rec.label} reads {buf.name} expecting {expected} but it holds "
                f"{held}{self._why(rec)}",
            )
        if (
            buf.value is not None
            and not buf.consumed
            and buf._landed_at is not None
            and rec.start > buf._landed_at
        ):
            buf.intervals.append(Interval(buf._landed_at, rec.start, "held", "", buf.value))
        buf._landed_at = None
        buf.consumed = True
        buf.readers.append(rec)
        rec.got.append(None if buf.writer is not None else buf.value)

    def _write_begin(self, buf: Buffer, rec: OpRecord, value: Any) -> None:
        if buf.readers:
            r = buf.readers[0]
            self._hazard(
                "overwrite_before_read",
                buf.name,
                f"{rec.label} starts overwriting {buf.name} while {r.label} is still "
                f"reading it (until t={fmt_cycles(r.end)}){self._why(rec)}",
            )
        elif buf.writer is not None:
            self._hazard(
                "double_write",
                buf.name,
                f"{rec.label} and {buf.writer.label} write {buf.name} at the same time"
                f"{self._why(rec)}",
            )
        elif buf.value is not None and not buf.consumed:
            self._hazard(
                "lost_tile",
                buf.name,
                f"{rec.label} overwrites {buf.name}, which still holds {buf.value} "
                f"that nobody has read{self._why(rec)}",
            )
        if (
            buf.value is not None
            and not buf.consumed
            and buf._landed_at is not None
            and rec.start > buf._landed_at
        ):
            buf.intervals.append(Interval(buf._landed_at, rec.start, "held", "", buf.value))
        buf._landed_at = None
        buf.writer = rec

    def _why(self, rec: OpRecord) -> str:
        """Which wait let the issuer of `rec` go ahead, and whose arrivals completed it."""
        role = rec.issuer
        if rec.gate is None:
            return ""
        b, phase, t, needs = rec.gate
        if needs is not None and phase < needs:
            done = (
                "no phase of it had completed yet"
                if phase < 0
                else f"only phase {phase} had completed"
            )
            return (
                f"; {role.name} went ahead because its wait on {b.name} passed at "
                f"t={fmt_cycles(t)} although {done} and its count needs phase {needs}: "
                f"its phase bit is wrong"
            )
        if phase < 0:
            return f"; {role.name} went ahead on its first pass over {b.name} at t={fmt_cycles(t)}"
        arrivals = [(at, who) for at, who, ph, _ in self.log[id(b)].arrivals if ph == phase]
        who = ", ".join(f"{w} at t={fmt_cycles(a)}" for a, w in arrivals) or "no arrivals"
        return (
            f"; {role.name} went ahead because phase {phase} of {b.name} completed "
            f"(arrivals: {who})"
        )

    # -- problems ----------------------------------------------------------------------
    def _hazard(self, kind: str, where: str, message: str) -> None:
        self.hazard_count += 1
        if len(self.hazards) < self.max_hazards:
            self.hazards.append(Hazard(kind, self.now, where, message))

    def _set_fault(self, kind: str, message: str) -> None:
        if self.fault is None:
            self.fault = SimulationFault(kind, self.now, message)
