"""The executor's memories and what it watches in them.

* `Memory`: bytes a tensor's pointer points into, read and written through a numeric type
  (course.execute.numeric). Global memory is a torch CPU tensor's own storage (the guard
  zone after an output included); an access outside it is a hazard, never a numpy error.
* `Registers`: one fragment's registers; fresh ones hold NaN and remember which bytes were
  written, so an MMA that adds to a never-cleared accumulator is named.
* `SharedMemory`: one CTA's shared memory, with what racecheck watches: for every byte
  the last writer (thread, barrier epoch, line), the last reader, and the cp.async copy
  still in flight to it. A read of bytes a copy is still writing, a read of bytes another
  thread wrote since the last barrier, a write over bytes another thread read or wrote
  since the last barrier: each stops the run with the threads, the tensor (and stage) and
  the lines involved. Bank conflicts of each warp-wide access are counted on request with
  course.models.bank_model.

Threads of a CTA pass barriers together, so one epoch counter per CTA orders them: two
accesses by different threads in the same epoch have no barrier between them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from course.execute import report
from course.execute.numeric import DType
from course.execute.report import Hazard, Site, threads_text

GMEM, SMEM, RMEM = "gmem", "smem", "rmem"
NOBODY, MANY = -1, -2


class Memory:
    """Bytes, read and written as numeric types."""

    def __init__(self, space: str, data: np.ndarray, name: str):
        self.space, self.data, self.name = space, data, name
        self._views: dict = {}

    @property
    def nbytes(self) -> int:
        return self.data.size

    def typed(self, dtype: DType) -> np.ndarray:
        view = self._views.get(dtype.storage)
        if view is None:
            usable = self.nbytes - self.nbytes % dtype.storage.itemsize
            view = self._views[dtype.storage] = self.data[:usable].view(dtype.storage)
        return view

    def _indices(self, dtype: DType, elems: np.ndarray, writing: bool, what: str) -> np.ndarray:
        view = self.typed(dtype)
        bad = (elems < 0) | (elems >= view.size)
        if bad.any():
            first = int(elems[bad][0])
            verb = "writes" if writing else "reads"
            raise Hazard(report.OUT_OF_BOUNDS,
                         f"{_who()} {verb} {what or self.name} at element {first}, outside "
                         f"the {view.size} {dtype} elements of {self.name}"
                         + (" (past its end and its guard zone)" if first >= view.size else ""),
                         report.site(3))
        return elems

    def load(self, dtype: DType, elems: np.ndarray, what: str = "") -> np.ndarray:
        elems = self._indices(dtype, np.asarray(elems, dtype=np.int64), False, what)
        return dtype.decode(self.typed(dtype)[elems])

    def store(self, dtype: DType, elems: np.ndarray, values, what: str = "") -> None:
        elems = self._indices(dtype, np.asarray(elems, dtype=np.int64), True, what)
        self.typed(dtype)[elems] = dtype.encode(np.broadcast_to(values, elems.shape))


class Registers(Memory):
    """One register fragment: poisoned until written; remembers which elements were
    written (in its own element type; another type's access marks whole bytes)."""

    def __init__(self, nbytes: int, dtype: DType, name: str = "registers"):
        data = np.empty(max(nbytes, dtype.storage.itemsize), dtype=np.uint8)
        super().__init__(RMEM, data, name)
        self.dtype = dtype
        self.typed(dtype)[:] = dtype.poison()
        self.written = np.zeros(self.typed(dtype).size, dtype=bool)

    def _mask_index(self, dtype: DType, elems: np.ndarray) -> np.ndarray:
        mine, theirs = self.dtype.storage.itemsize, dtype.storage.itemsize
        if mine == theirs:
            return elems
        first = elems * theirs // mine
        last = (elems * theirs + theirs - 1) // mine
        return np.unique(np.concatenate([first, last]))

    def store(self, dtype, elems, values, what=""):
        elems = np.asarray(elems, dtype=np.int64)
        super().store(dtype, elems, values, what)
        self.written[self._mask_index(dtype, elems)] = True

    def unwritten(self, dtype: DType, elems: np.ndarray) -> int:
        """How many of these elements no instruction has written."""
        idx = self._mask_index(dtype, np.asarray(elems, dtype=np.int64).reshape(-1))
        return int(idx.size - np.count_nonzero(self.written[idx]))


def _who() -> str:
    from course.execute import machine

    thread = machine.current_thread()
    return threads_text([thread.tid]) + f" of CTA {thread.cta.block}" if thread else "the host"


# ---------------------------------------------------------------- shared memory

@dataclass
class AsyncCopy:
    """One cp.async: issued by a thread, in flight until that thread's wait retires it."""

    id: int
    tid: int
    elems: np.ndarray
    dtype: DType
    values: np.ndarray
    site: Site
    landed: bool = False


@dataclass
class Allocation:
    name: str
    start: int  # bytes
    nbytes: int
    dtype: DType
    layout: object  # the allocated tensor's layout, to name an element's coordinate


@dataclass
class BankAccess:
    """One thread's part of a warp-wide shared-memory instruction."""

    lane: int
    addresses: np.ndarray  # byte address of each access unit
    width: int


class SharedMemory(Memory):
    """One CTA's shared memory, watched for what racecheck watches."""

    def __init__(self, nbytes: int, cta, count_banks: bool = False):
        data = np.full(max(nbytes, 16), 0xFF, dtype=np.uint8)  # garbage reads as NaN
        super().__init__(SMEM, data, "shared memory")
        self.cta = cta
        n = data.size
        self.w_tid = np.full(n, NOBODY, np.int32)
        self.w_epoch = np.full(n, -1, np.int32)
        self.w_site = np.full(n, -1, np.int32)
        self.r_tid = np.full(n, NOBODY, np.int32)
        self.r_epoch = np.full(n, -1, np.int32)
        self.r_site = np.full(n, -1, np.int32)
        self.inflight = np.full(n, -1, np.int32)
        self.copies: dict[int, AsyncCopy] = {}
        self.sites: list[Site] = []
        self._site_ids: dict[Site, int] = {}
        self.allocations: list[Allocation] = []
        self.count_banks = count_banks
        self.bank_log: dict[tuple, list[BankAccess]] = {}
        self._next_copy = 0

    # --- bookkeeping
    def site_id(self, site: Site) -> int:
        sid = self._site_ids.get(site)
        if sid is None:
            sid = self._site_ids[site] = len(self.sites)
            self.sites.append(site)
        return sid

    def allocate(self, start: int, nbytes: int, dtype: DType, layout, site: Site) -> None:
        match = re.match(r"\s*(\w+)\s*(?::[^=]*)?=[^=]", site.text() + " ")
        name = match.group(1) if match else f"shared allocation {len(self.allocations)}"
        self.allocations.append(Allocation(name, start, nbytes, dtype, layout))

    def _bytes(self, dtype: DType, elems: np.ndarray) -> np.ndarray:
        size = dtype.storage.itemsize
        return (elems[:, None] * size + np.arange(size)).reshape(-1)

    def describe(self, byte: int) -> str:
        """'sA[(37, 8, 2)] (stage 2)': the allocation and coordinate a byte belongs to."""
        for alloc in self.allocations:
            if alloc.start <= byte < alloc.start + alloc.nbytes:
                elem = (byte - alloc.start) // alloc.dtype.storage.itemsize
                crd = _coordinate_of(alloc.layout, elem)
                if crd is None:
                    return f"{alloc.name} (byte {byte - alloc.start})"
                stage = f" (stage {crd[-1]})" if isinstance(crd, tuple) and len(crd) >= 3 else ""
                return f"{alloc.name}[{_fmt_crd(crd)}]{stage}"
        return f"shared memory byte {byte}"

    def _site(self, sid: int) -> str:
        return self.sites[sid].describe() if 0 <= sid < len(self.sites) else "an earlier line"

    # --- accesses
    def read(self, tid: int, dtype: DType, elems: np.ndarray, site: Site) -> np.ndarray:
        elems = self._indices(dtype, elems, False, "")
        b = self._bytes(dtype, elems)
        epoch = self.cta.epoch
        flying = self.inflight[b]
        if (flying >= 0).any():
            k = int(np.argmax(flying >= 0))
            copy = self.copies[int(flying[k])]
            own = "its own" if copy.tid == tid else f"{threads_text([copy.tid])}'s"
            raise Hazard(report.IN_FLIGHT,
                         f"{threads_text([tid])} reads {self.describe(int(b[k]))} while "
                         f"{own} cp.async to it (issued at {copy.site.describe()}) is still in "
                         f"flight: no cp.async wait_group has retired it", site)
        wt = self.w_tid[b]
        race = (self.w_epoch[b] == epoch) & (wt != tid) & (wt != NOBODY)
        if race.any():
            k = int(np.argmax(race))
            raise Hazard(report.RACE,
                         f"{threads_text([tid])} reads {self.describe(int(b[k]))}, which "
                         f"{threads_text([int(wt[k])])} wrote at {self._site(int(self.w_site[b[k]]))} "
                         f"with no barrier between (missing sync_threads)", site)
        sid = self.site_id(site)
        rt = self.r_tid[b]
        other = (self.r_epoch[b] == epoch) & (rt != tid) & (rt != NOBODY)
        self.r_tid[b] = np.where(other, MANY, tid)
        self.r_epoch[b] = epoch
        self.r_site[b] = sid
        return dtype.decode(self.typed(dtype)[elems])

    def _check_write(self, tid: int, b: np.ndarray, site: Site, how: str) -> None:
        epoch = self.cta.epoch
        flying = self.inflight[b]
        if (flying >= 0).any():
            k = int(np.argmax(flying >= 0))
            copy = self.copies[int(flying[k])]
            raise Hazard(report.WRITE_IN_FLIGHT,
                         f"{threads_text([tid])} {how} {self.describe(int(b[k]))} while the "
                         f"cp.async of {threads_text([copy.tid])} (issued at "
                         f"{copy.site.describe()}) is still writing it", site)
        rt = self.r_tid[b]
        war = (self.r_epoch[b] == epoch) & (rt != tid) & (rt != NOBODY)
        if war.any():
            k = int(np.argmax(war))
            reader = "several threads" if rt[k] == MANY else threads_text([int(rt[k])])
            raise Hazard(report.STAGE_OVERWRITE,
                         f"{threads_text([tid])} {how} {self.describe(int(b[k]))}, which "
                         f"{reader} read at {self._site(int(self.r_site[b[k]]))} with no "
                         f"barrier between: the data (a stage still being read) is overwritten "
                         f"before every thread is done with it", site)
        wt = self.w_tid[b]
        waw = (self.w_epoch[b] == epoch) & (wt != tid) & (wt != NOBODY)
        if waw.any():
            k = int(np.argmax(waw))
            raise Hazard(report.RACE,
                         f"{threads_text([tid])} {how} {self.describe(int(b[k]))}, which "
                         f"{threads_text([int(wt[k])])} also wrote at "
                         f"{self._site(int(self.w_site[b[k]]))} with no barrier between", site)

    def write(self, tid: int, dtype: DType, elems: np.ndarray, values, site: Site) -> None:
        elems = self._indices(dtype, elems, True, "")
        b = self._bytes(dtype, elems)
        self._check_write(tid, b, site, "writes")
        self.typed(dtype)[elems] = dtype.encode(np.broadcast_to(values, elems.shape))
        self.w_tid[b], self.w_epoch[b], self.w_site[b] = tid, self.cta.epoch, self.site_id(site)

    # --- cp.async
    def issue(self, tid: int, dtype: DType, elems: np.ndarray, values, site: Site,
              land_now: bool) -> AsyncCopy:
        elems = self._indices(dtype, elems, True, "")
        b = self._bytes(dtype, elems)
        self._check_write(tid, b, site, "starts a cp.async into")
        copy = AsyncCopy(self._next_copy, tid, elems, dtype, np.asarray(values), site)
        self._next_copy += 1
        self.copies[copy.id] = copy
        self.inflight[b] = copy.id
        if land_now:  # the hardware may finish it at once; reading it is still a race
            self.typed(dtype)[elems] = dtype.encode(copy.values)
            copy.landed = True
        return copy

    def retire(self, copy: AsyncCopy) -> None:
        """The issuing thread's wait_group covers this copy: its bytes are there, and
        written by that thread now."""
        if not copy.landed:
            self.typed(copy.dtype)[copy.elems] = copy.dtype.encode(copy.values)
        b = self._bytes(copy.dtype, copy.elems)
        mine = self.inflight[b] == copy.id
        self.inflight[b[mine]] = -1
        self.w_tid[b], self.w_epoch[b] = copy.tid, self.cta.epoch
        self.w_site[b] = self.site_id(copy.site)
        del self.copies[copy.id]

    # --- banks
    def note_access(self, key: tuple, lane: int, addresses: np.ndarray, width: int) -> None:
        if self.count_banks:
            self.bank_log.setdefault(key, []).append(BankAccess(lane, addresses, width))


def _coordinate_of(layout, elem: int):
    try:
        offsets = np.asarray(layout.offsets)
        hits = np.nonzero(offsets == elem)[0]
    except Exception:  # noqa: BLE001 -- a layout it cannot enumerate: no coordinate
        return None
    if not len(hits):
        return None
    from course.execute.layout import idx2crd

    return idx2crd(int(hits[0]), layout.shape)


def _fmt_crd(crd) -> str:
    if isinstance(crd, tuple):
        return ", ".join(_fmt_crd(c) if not isinstance(c, tuple) else f"({_fmt_crd(c)})"
                         for c in crd)
    return str(crd)


@dataclass
class BankSummary:
    """Wavefronts of the warp-wide shared-memory accesses of one line."""

    site: Site
    requests: int = 0
    wavefronts: int = 0
    ideal: int = 0

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    def line(self) -> str:
        way = self.wavefronts / max(self.ideal, 1)
        return (f"{self.site.describe()}: {self.requests} warp request(s), {self.wavefronts} "
                f"wavefront(s) for an ideal {self.ideal}"
                + (f" ({way:.1f}x: bank conflicts)" if self.conflicts else " (conflict-free)"))


def bank_summaries(smem: SharedMemory) -> list[BankSummary]:
    """The bank model's count for every warp-wide access logged, per source line."""
    from course.models.bank_model import Request, analyze

    out: dict[int, BankSummary] = {}
    for (sid, _warp, _n), accesses in smem.bank_log.items():
        width = accesses[0].width
        units = max(len(a.addresses) for a in accesses)
        summary = out.setdefault(sid, BankSummary(smem.sites[sid]))
        for u in range(units):
            lanes = [None] * 32
            for a in accesses:
                if u < len(a.addresses):
                    lanes[a.lane] = int(a.addresses[u])
            analysis = analyze(Request(tuple(lanes), width))
            summary.requests += 1
            summary.wavefronts += analysis.wavefronts
            summary.ideal += analysis.ideal
    return [out[k] for k in sorted(out)]
