"""Cluster Launch Control on the executor: `cute.arch.issue_clc_query` (try_cancel) and
`cute.arch.clc_response` (query_cancel), over the launch's clusters not yet started.

A launch runs its clusters one after another (course.execute.machine.Launch keeps those
not started in `pending`). try_cancel is asynchronous, in flight on the cluster like a TMA
load: when it lands it cancels a pending cluster -- under seed 0 the next in launch order,
under other seeds a seeded choice, or none at all now and then (those clusters then run
themselves, as if they had started on other SMs) -- writes the 16-byte answer into the
response buffer of every CTA of the cluster (multicast) and completes 16 bytes on each
CTA's mbarrier at the barrier's offset. The answer is the executor's own encoding of the
opaque 128 bits: Int32 (x, y, z, cancelled), x/y/z the first CTA's blockIdx.

A thread reading the response while the query is in flight (before its mbarrier wait saw
it land) is a hazard (course.execute.memory's in-flight watch): the planted "CLC response
read before its barrier". So is the next query landing in the buffer while a thread that
read the last answer has not fenced (fence.proxy.async) since: its generic-proxy read is
not ordered before the async proxy's write. A cancelled cluster's tile is then computed
by whoever got the answer, so every tile is still computed exactly once -- the output
says whether it was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course.execute import hazards, machine, mbarriers
from course.execute.lanes import uniform
from course.execute.hazards import Hazard, Site
from course.execute.memory import AsyncCopy
from course.execute.numeric import Int32
from course.execute.tma import PROXY_FENCE

RESPONSE_BYTES = 16
_NEXT = [1 << 29]  # ids of queries in the shared-memory in-flight map


@dataclass
class Query:
    """One clusterlaunchcontrol.try_cancel in flight."""

    cluster: "machine.Cluster"
    targets: list  # (cta, response byte, mbarrier Slot)
    id: int
    site: Site
    landed: bool = False

    def land(self) -> None:
        if self.landed:
            return
        self.landed = True
        answer = _cancel(self.cluster)
        for cta, byte, slot in self.targets:
            smem = cta.smem
            _check_reads_fenced(cta, byte, self.site)
            _fenced_since(cta)[byte] = set()
            b = np.arange(byte, byte + RESPONSE_BYTES)
            smem.check_readers_in_flight(b, lambda k: "a CLC response lands in", self.site)
            smem.typed(Int32)[byte // 4 : byte // 4 + 4] = answer
            smem.copies.pop(self.id, None)
            smem.inflight[b[smem.inflight[b] == self.id]] = -1
            smem.landed(b)
            mbarriers.complete_tx(slot, RESPONSE_BYTES, self.site)


def _readers(cta) -> dict:
    """Response byte -> the threads that read the answer there through the generic proxy
    and have not fenced (fence.proxy.async) since."""
    return cta.smem.__dict__.setdefault("clc_unfenced_reads", {})


def _fenced_since(cta) -> dict:
    """Response byte -> the threads that ran fence.proxy.async since its answer landed: a
    read by one of them came after its fence (and after the release such a fence precedes)."""
    return cta.smem.__dict__.setdefault("clc_fenced_since_landing", {})


def _read_after_fence(cta) -> dict:
    """Response byte -> the threads whose unfenced read of it came after their fence."""
    return cta.smem.__dict__.setdefault("clc_read_after_fence", {})


def _check_reads_fenced(cta, byte: int, site: Site) -> None:
    readers = _readers(cta).pop(byte, set())
    # every unfenced reader fenced between the landing and its read: the fence (and the
    # release beside it) came first; a fence of some readers only may be another fence's
    late = readers if readers <= _read_after_fence(cta).pop(byte, set()) else set()
    if readers:
        said = (
            f"; they had fenced before reading it ({hazards.threads_text(sorted(late))} ran "
            f"fence.proxy.async, then read the answer): the read comes after the fence and "
            f"the release, when the buffer is no longer theirs"
            if late
            else " with no fence.proxy.async between"
        )
        raise Hazard(
            PROXY_FENCE,
            f"the CLC answer in {cta.smem.describe(byte)} of CTA {cta.block} was read by "
            f"{hazards.threads_text(sorted(readers))} through the generic proxy, and the next "
            f"try_cancel (issued at {site.describe()}) rewrites it through the async proxy"
            f"{said}",
            site,
            hazards.Cause(
                hazards.READ_AFTER_FENCE if late else hazards.UNFENCED,
                cta.smem.describe(byte),
                observed=tuple(sorted(readers)),
                unit=hazards.UNIT_CLC_QUERY,
            ),
        )


def fenced(w) -> None:
    """fence.proxy.async by warp w: its reads of CLC answers are ordered before the next
    asynchronous write."""
    mine = set(int(t) for t in w.active_tids())
    for readers in _readers(w.cta).values():
        readers -= mine
    for fenced_ones in _fenced_since(w.cta).values():
        fenced_ones |= mine


def _cancel(cluster) -> np.ndarray:
    """Cancel a cluster not yet started: its first CTA's blockIdx, or no cluster."""
    launch = cluster.launch
    pending = launch.pending
    seeded = launch.options.seed != 0
    if not pending or (seeded and cluster.rng.random() < 0.2):
        return np.array([0, 0, 0, 0], dtype=np.int32)
    k = cluster.rng.randrange(len(pending)) if seeded else 0
    x, y, z = pending[k]
    del pending[k]
    launch.cancelled.append((x, y, z))  # what the run reports (runner.Launched.cancelled)
    cx, cy, cz = launch.cluster
    return np.array([x * cx, y * cy, z * cz, 1], dtype=np.int32)


def issue_clc_query(mbar_ptr, clc_response_ptr, multicast: bool = True, **_) -> None:
    """clusterlaunchcontrol.try_cancel[.multicast::cluster::all]: one per active lane (the
    kernel elects one)."""
    site = hazards.site(2)
    w = machine.warp()
    if len(w.active_tids()) != 1:
        raise Hazard(
            hazards.CRASH,
            f"{hazards.threads_text(w.active_tids().tolist())} each issue a CLC query: one "
            f"thread must (cute.arch.elect_one)",
            site,
        )
    byte = uniform(clc_response_ptr.byte_offset, "a CLC response address")
    if byte % RESPONSE_BYTES:
        raise Hazard(hazards.MISALIGNED, f"a CLC response at shared byte {byte}: 16-aligned", site)
    cluster = w.cta.cluster
    ctas = cluster.ctas if multicast else [w.cta]
    query = Query(cluster, [], _NEXT[0], site)
    _NEXT[0] += 1
    b = np.arange(byte, byte + RESPONSE_BYTES)
    for cta in ctas:
        slot = mbarriers.barrier_at(mbar_ptr, None if cta is w.cta else cta.rank, site)
        smem = cta.smem
        if (smem.inflight[b] >= 0).any():
            raise Hazard(
                hazards.WRITE_IN_FLIGHT,
                f"a CLC query into {smem.describe(byte)} of CTA {cta.block} while the last "
                f"one is still in flight",
                site,
                hazards.Cause(
                    hazards.WRITTEN_IN_FLIGHT, smem.describe(byte), unit=hazards.UNIT_CLC_QUERY
                ),
            )
        smem.inflight[b] = query.id
        smem.copies[query.id] = AsyncCopy(
            query.id,
            w.active_tids()[:1],
            (np.arange(4) + byte // 4)[None, :],
            Int32,
            np.zeros((1, 4)),
            site,
            what=hazards.UNIT_CLC_QUERY,
            retired_by="no mbarrier wait has seen its response land",
        )
        query.targets.append((cta, byte, slot))
    cluster.inflight.append(query)


def clc_response(result_addr, **_):
    """clusterlaunchcontrol.query_cancel on the 16 bytes at result_addr: (first CTA's x, y,
    z, cancelled) -- a read of shared memory like any other (in-flight watch included)."""
    from course.execute.static_layout import Layout
    from course.execute.tensor import Pointer, Tensor

    ptr = Pointer(result_addr.memory, result_addr.byte_offset, Int32)
    values = Tensor(ptr, Layout(4)).load().values
    w = machine.warp()
    byte = uniform(result_addr.byte_offset, "a CLC response address")
    mine = set(int(t) for t in w.active_tids())
    _readers(w.cta).setdefault(byte, set()).update(mine)
    early = mine & _fenced_since(w.cta).get(byte, set())
    if early:
        _read_after_fence(w.cta).setdefault(byte, set()).update(early)
    row = values[0] if values.ndim == 2 else values
    return tuple(Int32.of_decoded(v) for v in row)
