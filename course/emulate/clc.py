"""Cluster Launch Control as the emulated kernel sees it: a launch queue that can be robbed.

The grid has one cluster per output tile. The GPU starts as many clusters as fit
(`resident`); the rest wait in launch order (blockIdx.x fastest). A running cluster
that wants more work executes `clusterlaunchcontrol.try_cancel`: the hardware cancels
the next cluster still waiting and answers with that cluster's first blockIdx, which
the kernel turns into a tile ("query_cancel.get_first_ctaid"). When nothing is waiting
the answer is "not cancelled" and the asking cluster finishes.

`DuplicateTile` and `SkipTile` are deliberately broken launch queues (a tile handed out
twice, a tile lost) for showing that the emulator's checks catch a wrong schedule.
The executor's model of the same queue is course.execute.launch_control; only the broken
queues are this module's own (the executor models the hardware as specified).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class ClcResponse:
    """The 16-byte answer of try_cancel, decoded as query_cancel would decode it."""

    cancelled: bool
    first_ctaid_x: int = 0
    first_ctaid_y: int = 0


@dataclass(frozen=True)
class ClcRequest:
    order: int  # 0, 1, 2 ... in the order the hardware served them
    cluster: int  # which running cluster asked
    response: ClcResponse


class ClcHardware:
    """The launch queue of a grid of clusters, `resident` of which start running."""

    def __init__(self, cluster_ids: list[tuple[int, int]], resident: int):
        """cluster_ids: first blockIdx (x, y) of each cluster, in launch order."""
        if resident < 1:
            raise ValueError("at least one cluster must fit on the GPU")
        self.launched = list(cluster_ids[:resident])
        self.pending = deque(cluster_ids[resident:])
        self.log: list[ClcRequest] = []

    def _next(self) -> tuple[int, int] | None:
        return self.pending.popleft() if self.pending else None

    def try_cancel(self, cluster: int) -> ClcResponse:
        victim = self._next()
        response = ClcResponse(True, *victim) if victim is not None else ClcResponse(False)
        self.log.append(ClcRequest(len(self.log), cluster, response))
        return response


class DuplicateTile(ClcHardware):
    """Broken on purpose: the `at`-th successful answer is handed out twice."""

    def __init__(self, cluster_ids, resident, at: int = 0):
        super().__init__(cluster_ids, resident)
        self.at = at
        self._served = 0

    def _next(self):
        if not self.pending:
            return None
        if self._served == self.at:
            self._served += 1
            return self.pending[0]  # answered, but left in the queue
        self._served += 1
        return self.pending.popleft()


class SkipTile(ClcHardware):
    """Broken on purpose: the `at`-th waiting cluster is dropped without being handed out."""

    def __init__(self, cluster_ids, resident, at: int = 0):
        super().__init__(cluster_ids, resident)
        self.at = at
        self._served = 0

    def _next(self):
        if self._served == self.at and self.pending:
            self.pending.popleft()  # lost
        self._served += 1
        return self.pending.popleft() if self.pending else None
