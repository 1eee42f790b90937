"""mbarriers on the executor: course.models.mbarrier.MBarrier (the course's one model, the
one course.sim.ring_code runs) living in a CTA's shared memory, keyed by byte address.

Use from executor code that runs on a warp (a `cute.arch` stand-in, a copy that lands, a
tcgen05.commit):

    from course.execute import mbarriers
    mbarriers.init(ptr, count)              # every active lane inits (elect_one first)
    mbarriers.arrive(ptr)                   # one arrival per active lane of the warp
    mbarriers.arrive(ptr, tx=nbytes)        # arrive.expect_tx, per active lane
    mbarriers.arrive(ptr, cta=rank)         # the barrier at the same offset of CTA `rank`
    mbarriers.arrive_once(ptr, cta=rank)    # one arrival, whoever issues it (tcgen05.commit)
    mbarriers.expect_tx(ptr, nbytes)        # bytes announced, no arrival
    mbarriers.complete_tx(ptr, nbytes, cta=rank)  # a copy's bytes landed (no arrival)
    mbarriers.wait(ptr, parity)             # the warp's greenlet blocks until that phase
    mbarriers.barrier_at(ptr, cta=None)     # the Slot (its .model is the MBarrier)

`ptr` is a shared-memory Pointer (course.execute.tensor.Pointer) to an Int64 the kernel
allocated; `cta` is a rank in the cluster (mapa: the same offset in that CTA's shared
memory). A barrier used before `mbarrier_init`, or by another warp (or CTA) before
`mbarrier_init_fence` and a barrier (sync_threads, cluster barrier) made the init visible,
is a Hazard; so are the model's MBarrierErrors (over-arrival, tx underflow). A wait that
can never complete is reported by the machine as a deadlock naming the barrier, the parity
and the barrier's state (course.execute.machine).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from course.execute import happens_before, hazards, machine
from course.execute.hazards import Hazard, Site, Unmodelled, threads_text
from course.execute.lanes import Lanes, uniform
from course.models.mbarrier import MBarrier, MBarrierError

MBARRIER = hazards.MBARRIER  # its kind (hazards.KINDS says what it means)


@dataclass
class Slot:
    """One mbarrier: the model, and who initialised it, when and whether it was fenced."""

    model: MBarrier
    cta: "machine.Cta"
    byte: int
    init_warp: "machine.Warp"
    init_site: Site
    fenced: bool = False
    init_cluster_gen: int = 0  # cluster barriers the init warp had arrived at before the init
    pending: dict = field(default_factory=dict)  # what the current phase's arrivers knew
    released: dict = field(default_factory=dict)  # completed phase -> what it hands waiters
    seen: int = -1  # the last phase a wait saw complete (course.execute.tcgen05.at_exit)
    fence_clock: int | None = None  # the init warp's clock at its fence.mbarrier_init

    @property
    def name(self) -> str:
        return self.model.name


def _target(ptr, cta) -> tuple["machine.Cta", int]:
    """(the CTA whose shared memory holds the barrier, its byte offset)."""
    mem = getattr(ptr, "memory", None)
    owner = getattr(mem, "cta", None)
    if owner is None or getattr(mem, "space", None) != "smem":
        raise Unmodelled(f"an mbarrier at {ptr!r} (not a shared-memory pointer)")
    byte = uniform(ptr.byte_offset, "an mbarrier address")
    if byte % 8:
        raise Hazard(MBARRIER, f"an mbarrier at shared byte {byte}: not 8-byte aligned")
    if cta is None:
        return owner, byte
    rank = uniform(cta, "a peer CTA rank")
    ctas = owner.cluster.ctas
    if not 0 <= rank < len(ctas):
        raise Hazard(
            MBARRIER,
            f"an mbarrier of CTA rank {rank} in a cluster of {len(ctas)}",
            hazards.site(3),
        )
    return ctas[rank], byte


def _table(cta) -> dict:
    return cta.smem.__dict__.setdefault("mbarriers", {})


def _lanes() -> int:
    return len(machine.warp().active_tids())


def init(ptr, count) -> None:
    """mbarrier.init by every active lane (the kernel elects one)."""
    w = machine.warp()
    cta, byte = _target(ptr, None)
    count = uniform(count, "an mbarrier's arrival count")
    name = cta.smem.describe(byte)
    try:
        model = MBarrier(count, name)
    except MBarrierError as exc:
        raise Hazard(MBARRIER, str(exc), hazards.site(3)) from None
    if _lanes() > 1:
        raise Hazard(
            MBARRIER,
            f"{threads_text(w.active_tids().tolist())} all initialise {name}: one thread "
            f"must (cute.arch.elect_one)",
            hazards.site(3),
        )
    _table(cta)[byte] = Slot(model, cta, byte, w, hazards.site(3), init_cluster_gen=w.cluster_gen)


def init_fence() -> None:
    """fence.mbarrier_init: the inits this warp made become visible to the cluster (once a
    barrier orders them)."""
    w = machine.warp()
    w.clock += 1  # what follows the fence: a warp that learns this clock saw the inits
    for slot in _table(w.cta).values():
        if slot.init_warp is w and not slot.fenced:
            slot.fenced = True
            slot.fence_clock = w.clock


def barrier_at(ptr, cta=None, site: Site | None = None) -> Slot:
    """The barrier `ptr` points at (in CTA rank `cta` of the cluster), checked to be
    initialised and visible to the current warp."""
    target, byte = _target(ptr, cta)
    slot = _table(target).get(byte)
    site = site or hazards.site(3)
    if slot is None:
        raise Hazard(
            MBARRIER,
            f"{target.smem.describe(byte)} of CTA {target.block} is used as an mbarrier "
            f"before mbarrier_init",
            site,
        )
    w = machine.current_warp()
    if w is not None and w is not slot.init_warp:
        synced, barrier = False, "sync_threads (or cluster barrier)"
        if w.cta is not target:  # a peer CTA: only a cluster barrier after the init orders it
            gen, cluster = slot.init_cluster_gen + 1, target.cluster
            synced = w.cluster_gen >= gen and cluster.arrivals.get(gen, 0) == len(cluster.warps)
            barrier = "cluster barrier"
        # any synchronisation that hands on what the init warp did after its fence (a
        # barrier both passed, an mbarrier phase it arrived on, a commit it issued): the
        # fence's release reaches the user along it (course.execute.happens_before), as
        # NVIDIA's TMEM allocator's dealloc barrier is published along the pipelines
        synced = synced or (
            slot.fence_clock is not None and w.knows.get(slot.init_warp, 0) >= slot.fence_clock
        )
        if not (slot.fenced and synced):
            missing = "mbarrier_init_fence" if not slot.fenced else barrier
            raise Hazard(
                MBARRIER,
                f"{threads_text(w.active_tids().tolist())} of CTA {w.cta.block} use "
                f"{slot.name} (CTA {target.block}), initialised at "
                f"{slot.init_site.describe()}, with no {missing} between: the init may not "
                f"be visible yet",
                site,
            )
    return slot


def _apply(slot: Slot, fn, site: Site):
    try:
        completed = fn(slot.model)
    except MBarrierError as exc:
        raise Hazard(MBARRIER, f"{exc} (CTA {slot.cta.block})", site) from None
    if completed is True:  # the phase just completed: what its arrivers knew, for waiters
        slot.released[slot.model.phase - 1] = slot.pending
        slot.pending = {}
        slot.released.pop(slot.model.phase - 3, None)
    return completed


def _arrive_on(slot: Slot, count: int, tx: int, site: Site) -> None:
    """One arrival (with tx bytes) on slot; the arriving warp's knowledge goes with it
    (course.execute.happens_before)."""
    w = machine.current_warp()
    if w is not None:
        happens_before.arrived(w, slot.pending)
    _apply(slot, lambda m: m.arrive(count, tx), site)


def arrive(ptr, count=1, tx=0, cta=None) -> None:
    """mbarrier.arrive[.expect_tx] by every active lane: each lane adds `tx` bytes, then
    arrives `count` times (lane by lane: arrivals past the phase's count belong to the
    next phase, as on the GPU)."""
    site = hazards.site(3)
    count, tx = uniform(count, "an arrival count"), uniform(tx, "a byte count")
    if isinstance(cta, Lanes):
        ranks = _active(cta)
        if len(set(ranks)) > 1:  # each lane its own CTA's
            for rank in ranks:  # (PipelineClcFetchAsync: lane r signals CTA r)
                _arrive_on(barrier_at(ptr, rank, site), count, tx, site)
            return
        if not ranks:
            return
        cta = ranks[0]  # the active lanes signal one CTA (PipelineTmaAsync: lane r, CTA r)
    slot = barrier_at(ptr, cta, site)
    for _ in range(_lanes()):
        _arrive_on(slot, count, tx, site)


def _active(x: Lanes) -> list[int]:
    """x's values on the warp's active lanes."""
    w = machine.warp()
    v = np.broadcast_to(np.asarray(x.v), (w.width,))
    return [int(e) for e in (v if w.mask is None else v[w.mask])]


def arrive_once(ptr, count=1, tx=0, cta=None, site: Site | None = None) -> None:
    """One arrival whoever issues it (an arrive made by hardware: tcgen05.commit,
    cp.async.mbarrier.arrive); `site`: the line that issued it (else the caller's)."""
    site = site or hazards.site(3)
    slot = barrier_at(ptr, cta, site)
    _arrive_on(slot, int(count), int(tx), site)


def expect_tx(ptr, nbytes, cta=None) -> None:
    site = hazards.site(3)
    slot = barrier_at(ptr, cta, site)
    nbytes = uniform(nbytes, "a byte count")
    for _ in range(_lanes()):
        _apply(slot, lambda m: m.expect_tx(nbytes), site)


def complete_tx(slot: Slot, nbytes: int, site: Site) -> None:
    """A copy's bytes landed on `slot` (found with barrier_at when the copy was issued)."""
    _apply(slot, lambda m: m.complete_tx(int(nbytes)), site)


def _saw(slot: Slot, parity: int) -> None:
    """The current warp just saw the phase with this parity complete (a wait returned, a
    test_wait answered True): record it, and order the warp after that phase's arrivals."""
    last = slot.model.phase - 1
    seen = last if (last & 1) == parity else last - 1
    slot.seen = max(slot.seen, seen)
    w = machine.current_warp()
    if seen >= 0 and w is not None:
        happens_before.merge(w.knows, slot.released.get(seen, {}))


def completed(ptr, parity, cta=None) -> bool:
    """mbarrier.test_wait.parity: has the phase with this parity completed? If not, the warp
    lets the others run before it goes on (a spin loop on it waits, it does not hang)."""
    site = hazards.site(3)
    slot = barrier_at(ptr, cta, site)
    parity = uniform(parity, "a wait parity")
    if slot.model.try_wait(parity):
        _saw(slot, parity)
        return True
    if machine.current_warp() is not None:
        model = slot.model
        machine.poll(
            lambda: f"polls mbarrier {slot.name} for parity {parity} ({model.describe()})",
            site,
            lambda: model.try_wait(parity),
            on=slot.name,
        )
    return False


def wait(ptr, parity) -> None:
    """mbarrier.try_wait.parity in a loop: the warp blocks until the phase with this parity
    has completed (checked whenever no warp can go on, and again when the warp resumes)."""
    site = hazards.site(3)
    slot = barrier_at(ptr, None, site)
    parity = uniform(parity, "a wait parity")
    if parity not in (0, 1):
        raise Hazard(MBARRIER, f"a wait on {slot.name} for parity {parity}: 0 or 1", site)
    model = slot.model
    machine.block_until(
        lambda: model.try_wait(parity),
        lambda: f"on mbarrier {slot.name} for parity {parity} ({model.describe()})",
        site,
        on=slot.name,
    )
    # block_until returns right after the check that held (no other warp ran between): the
    # waiter is ordered after the arrivals of the phase that check saw complete
    _saw(slot, parity)


def wait_within(ptr, parity, steps: int) -> bool:
    """mbarrier.try_wait.parity with a suspend time limit: the warp is suspended until the
    phase with this parity completes or `steps` of the launch's scheduling steps (the
    executor's nanoseconds, as %globaltimer counts them: course.execute.sm90) have passed;
    True when it completed. Where no warp can go on, the limit never runs out: a deadlock,
    as the GPU's retry loop would hang."""
    site = hazards.site(3)
    slot = barrier_at(ptr, None, site)
    parity = uniform(parity, "a wait parity")
    if parity not in (0, 1):
        raise Hazard(MBARRIER, f"a wait on {slot.name} for parity {parity}: 0 or 1", site)
    model, launch = slot.model, machine.warp().cta.launch
    deadline = launch.steps + max(int(uniform(steps, "a time limit")), 0)
    machine.block_until(
        lambda: model.try_wait(parity) or launch.steps >= deadline,
        lambda: f"on mbarrier {slot.name} for parity {parity} ({model.describe()})",
        site,
        on=slot.name,
    )
    if not model.try_wait(parity):
        return False
    _saw(slot, parity)
    return True


def never_waited(cta, key: str) -> list:
    """The arrivals `cta` recorded under `key` ((slot, phase, what) each: TMA loads, tcgen05
    commits) whose phase no wait saw complete: at the CTA's exit they may still land."""
    return [
        (slot, phase, what)
        for slot, phase, what in cta.__dict__.get(key, [])
        if slot.__dict__.get("seen", -1) < phase
    ]
