"""cp.async.mbarrier.arrive.noinc (`cute.arch.cp_async_mbarrier_arrive_noinc`, what
`cutlass.pipeline.PipelineCpAsync` commits a stage with): an mbarrier arrival made by the
hardware once every cp.async the thread issued before it has completed.

PTX ISA, cp.async.mbarrier.arrive: the mbarrier tracks "all prior cp.async operations
initiated by the executing thread"; the arrive-on operation is triggered when they have all
completed. With .noinc the pending count is not incremented first, so each thread's
arrival counts against the phase's expected count, as a plain arrive does.

On the executor it is an operation in flight on the cluster (course.execute.machine lands
them when no warp can go on, or earlier under other seeds): landing writes the tracked
copies' bytes (each retired as a wait_group would: the issuing warp's, stamped at the arrive
instruction, so a waiter of the phase is ordered after them) and arrives once per lane that
issued it. A later wait_group over the same copies finds them retired already.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from course.execute import happens_before, hazards, machine, mbarriers
from course.execute.hazards import Site, Unmodelled


@dataclass
class CpAsyncArrive:
    """One warp's cp.async.mbarrier.arrive.noinc in flight."""

    copies: list  # the AsyncCopy its lanes issued before it
    smem: object
    mbar: object
    lanes: int  # the lanes that issued it: one arrival each
    stamp: int  # the issuing warp's clock at the arrive
    knows: dict = field(default_factory=dict)
    site: Site | None = None
    landed: bool = False

    def land(self) -> None:
        if self.landed:
            return
        self.landed = True
        for copy in self.copies:
            self.smem.retire(copy, stamp=self.stamp)
        slot = mbarriers.barrier_at(self.mbar, None, self.site)
        for _ in range(self.lanes):
            happens_before.merge(slot.pending, self.knows)  # waiters learn the copies landed
            mbarriers.arrive_once(self.mbar, site=self.site)


def cp_async_mbarrier_arrive_noinc(mbar_ptr, **_) -> None:
    site = hazards.site(2)
    w = machine.warp()
    tids = w.active_tids()
    if not len(tids):
        return
    mbarriers.barrier_at(mbar_ptr, None, site)  # initialised and visible to this warp now
    smem = w.cta.smem
    copies = [c for c in chain(w.pending, *w.groups) if c.id in smem.copies]
    mine = [c for c in copies if np.isin(c.tids, tids).any()]
    if any(not np.isin(c.tids, tids).all() for c in mine):
        raise Unmodelled(
            "cp.async.mbarrier.arrive by part of the lanes that issued one cp.async instruction"
        )
    knows: dict = {}
    happens_before.arrived(w, knows)  # ordered after this warp's work so far
    op = CpAsyncArrive(mine, smem, mbar_ptr, len(tids), w.clock, knows, site)
    w.cta.cluster.inflight.append(op)


NAMES = {"cutlass.cute.arch": {"cp_async_mbarrier_arrive_noinc": cp_async_mbarrier_arrive_noinc}}
