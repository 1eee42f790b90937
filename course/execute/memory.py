"""The executor's memories and what it watches in them.

Every bulk access is by rows: one row per active lane of the warp (its thread id), each with
the element indices that lane touches (`tids` shape (R,), `elems` shape (R, n)).

* `Memory`: bytes a pointer points into, read and written through a numeric type
  (course.execute.numeric). Global memory is a torch CPU tensor's own storage (the guard
  zone after an output included); an access outside it is a hazard, never a numpy error.
* `Registers`: one fragment's registers, one bank per lane of the warp; fresh ones hold NaN
  and remember which elements were written, so an MMA that adds to a never-cleared
  accumulator is named.
* `SharedMemory`: one CTA's shared memory, with what racecheck watches: for every byte the
  last writer (thread, warp, stamp, line), the last reader, and the cp.async still in
  flight to it. A read of bytes a copy is still writing, a read of bytes another thread
  wrote since the last barrier, a write over bytes another thread read or wrote since the
  last barrier: each stops the run with the threads, the tensor (and stage) and the lines.
  Asynchronous readers (a wgmma's operands) hold their bytes until retired (`hold`,
  `unhold`); every writer -- thread stores, cp.async, TMA landings -- calls
  `check_readers_in_flight` first, so a stage released before the wait is named. Bank
  conflicts of every warp-wide access are counted on request (course.models.bank_model).

What orders two threads' accesses is course.execute.happens_before, the executor's one model
of it: barriers, named barriers and mbarrier phases order warps; a barrier orders the lanes of
one warp. Each byte remembers its last writer (thread, warp, the warp's stamp, line) and its
last reader; each warp's own stamps and lanes say what else it touched.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from course.execute import current, hazards, happens_before
from course.execute.numeric import DType, element_byte_span, is_sub_byte
from course.execute.hazards import Hazard, Site, threads_text

GMEM, SMEM, RMEM = "gmem", "smem", "rmem"
NOBODY, MANY = -1, -2


class Memory:
    """Bytes, read and written as numeric types (global memory)."""

    def __init__(self, space: str, data: np.ndarray, name: str):
        self.space, self.data, self.name = space, data, name
        self._views: dict = {}

    @property
    def nbytes(self) -> int:
        return self.data.shape[-1]

    def typed(self, dtype: DType) -> np.ndarray:
        if is_sub_byte(dtype):
            if self.data.ndim != 1:
                raise hazards.Unmodelled(f"{dtype} elements in registers (4-bit fragments)")
            return Nibbles(self.data)
        view = self._views.get(dtype.storage)
        if view is None:
            usable = self.nbytes - self.nbytes % dtype.storage.itemsize
            view = self._views[dtype.storage] = self.data[..., :usable].view(dtype.storage)
        return view

    def check(
        self, dtype: DType, tids, elems: np.ndarray, writing: bool, site: Site | None = None
    ) -> None:
        size = self.typed(dtype).shape[-1]
        bad = (elems < 0) | (elems >= size)
        if bad.any():
            pos = np.unravel_index(int(np.argmax(bad)), bad.shape)
            first = int(elems[pos])
            who = _who(tids, pos)
            verb = "writes" if writing else "reads"
            past = " (past its end and any guard zone after it)" if first >= size else ""
            raise Hazard(
                hazards.OUT_OF_BOUNDS,
                f"{who} {verb} element {first} of {self.name}, outside its {size} "
                f"{dtype} elements{past}",
                site or hazards.site(4),
                hazards.Cause(
                    hazards.PAST_END if first >= size else hazards.BELOW_START,
                    self.name,
                    (0, size - 1),
                    first,
                ),
            )

    def load(self, dtype: DType, tids, elems: np.ndarray, site: Site | None = None):
        self.check(dtype, tids, elems, False, site)
        return dtype.decode(self.typed(dtype)[elems])

    def store(self, dtype: DType, tids, elems: np.ndarray, values, site: Site | None = None):
        self.check(dtype, tids, elems, True, site)
        self.typed(dtype)[elems] = dtype.encode(np.broadcast_to(values, elems.shape))


class Nibbles:
    """Bytes seen as 4-bit elements: element i is byte i // 2, its low nibble for even i and
    its high nibble for odd i: CUTLASS's sub-byte arrays (subbyte_reference: element i at
    bits 4 (i % 2) of its byte) and torch's float4_e2m1fn_x2 (the host's A and B, two
    elements a byte, the first low: kernels.blockscaled_gemm). Indexing by element indices
    reads/writes the 4-bit codes."""

    def __init__(self, data: np.ndarray):
        self.data = data

    @property
    def shape(self) -> tuple:
        return (self.data.shape[-1] * 2,)

    def __getitem__(self, elems):
        e = np.asarray(elems)
        return (self.data[e // 2] >> (4 * (e % 2)).astype(np.uint8)) & np.uint8(0xF)

    def __setitem__(self, elems, codes) -> None:
        e = np.asarray(elems).reshape(-1)
        c = np.broadcast_to(np.asarray(codes, dtype=np.uint8), np.shape(elems)).reshape(-1)
        for half in (0, 1):  # the two nibbles of a byte apart: one fancy write each
            pick = e % 2 == half
            byte = e[pick] // 2
            keep = np.uint8(0xF0 if half == 0 else 0x0F)
            self.data[byte] = (self.data[byte] & keep) | ((c[pick] & 0xF) << (4 * half))


def _bits(a: np.ndarray) -> np.ndarray:
    """Stored values as their bits (a float's, so NaNs and signed zeros compare as bits)."""
    a = np.asarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind == "f" else a


def _who(tids, pos) -> str:
    from course.execute import current

    w = current.current_warp()
    cta = f" of CTA {w.cta.block}" if w is not None else ""
    if tids is None:
        return "the host"
    tid = int(np.asarray(tids).reshape(-1)[pos[0]])
    return threads_text([tid]) + cta


_REGISTER_CLOCK = [0]  # register writes so far, in every fragment (stamps, fences)


def register_clock() -> int:
    """How many register writes have happened: a fence (wgmma.fence) remembers it, and a
    fragment stamped later was written after that fence."""
    return _REGISTER_CLOCK[0]


class Registers(Memory):
    """One register fragment, a bank per lane: poisoned until written; remembers which
    elements were written (in its own element type), and when it was last written
    (`stamp`, on register_clock()). An asynchronous unit that writes these registers later
    (a wgmma in flight) sets `watcher`: it is told of every other access (writing or not),
    so it can name a read of registers it has not finished writing."""

    watcher = None  # fn(registers, writing: bool), or None

    def __init__(self, nbytes: int, dtype: DType, width: int, name: str = "registers"):
        data = np.empty((width, max(nbytes, dtype.storage.itemsize)), dtype=np.uint8)
        super().__init__(RMEM, data, name)
        self.dtype, self.width = dtype, width
        self.typed(dtype)[:] = dtype.poison()
        self.written = np.zeros(self.typed(dtype).shape, dtype=bool)
        self.stamp = 0

    def _rows(self, rows, elems):
        rows = np.asarray(rows, dtype=np.int64)
        return rows.reshape(-1, *([1] * (elems.ndim - 1))) if elems.ndim > 1 else rows

    def _mask_index(self, dtype: DType, elems: np.ndarray) -> np.ndarray:
        mine, theirs = self.dtype.storage.itemsize, dtype.storage.itemsize
        return elems if mine == theirs else elems * theirs // mine

    def load(self, dtype, rows, elems, site=None):
        self.check(dtype, None, elems, False)
        if self.watcher is not None:
            self.watcher(self, False)
        return dtype.decode(self.typed(dtype)[self._rows(rows, elems), elems])

    def store(self, dtype, rows, elems, values, site=None):
        self.check(dtype, None, elems, True)
        if self.watcher is not None:
            self.watcher(self, True)
        _REGISTER_CLOCK[0] += 1
        self.stamp = _REGISTER_CLOCK[0]
        r = self._rows(rows, elems)
        self.typed(dtype)[r, elems] = dtype.encode(
            np.broadcast_to(values, np.broadcast_shapes(np.shape(r), elems.shape))
        )
        self.written[r, self._mask_index(dtype, elems)] = True

    def unwritten(self, dtype: DType, rows, elems: np.ndarray) -> int:
        """How many of these elements (on these lanes) no instruction has written."""
        r = self._rows(rows, elems)
        got = self.written[r, self._mask_index(dtype, elems)]
        return int(got.size - np.count_nonzero(got))


# ---------------------------------------------------------------- shared memory


@dataclass
class AsyncCopy:
    """One warp's cp.async instruction: in flight until the warp's wait retires it."""

    id: int
    tids: np.ndarray  # (R,) the lanes that issued it
    elems: np.ndarray  # (R, n)
    dtype: DType
    values: np.ndarray  # (R, n)
    site: Site
    landed: bool = False
    what: str = hazards.UNIT_CP_ASYNC  # the kind of copy (a hazards.UNIT_ name)
    retired_by: str = "no cp.async wait_group has retired it"
    warp: object = None  # the issuing warp (cp.async), its stamp and barriers then
    cta: object = None  # the issuing CTA where it is not this memory's (st.async from a peer)
    stamp: int = 0
    barriers: int = 0


def _in_flight_cause(copy: AsyncCopy, reader) -> str:
    """Why bytes a copy still writes are read by warp `reader`: a cp.async issued with no
    barrier between it and this read went into bytes being read (a copy into the stage
    being read), or an earlier copy no wait retired (a missing wait)."""
    if (
        copy.what == hazards.UNIT_CP_ASYNC
        and copy.warp is not None
        and reader is not None
        and not happens_before.ordered(reader, copy.warp, copy.stamp, copy.barriers)
    ):
        return hazards.COPIED_SINCE_BARRIER
    return hazards.READ_IN_FLIGHT


@dataclass
class Allocation:
    name: str
    start: int  # bytes
    nbytes: int
    dtype: DType
    layout: object  # the allocated tensor's layout, to name an element's coordinate


class SharedMemory(Memory):
    """One CTA's shared memory, watched for what racecheck watches."""

    def __init__(self, nbytes: int, cta, count_banks: bool = False):
        data = np.full(max(nbytes, 16), 0xFF, dtype=np.uint8)  # garbage reads as NaN
        super().__init__(SMEM, data, "shared memory")
        self.cta = cta
        n = data.size
        self.w_tid = np.full(n, NOBODY, np.int32)  # the last writer's thread (in its CTA)
        self.w_warp = np.full(n, NOBODY, np.int32)  # its warp (an index into `warps`)
        self.w_stamp = np.zeros(n, np.int32)  # its warp's stamp (course.execute.happens_before)
        self.w_site = np.full(n, -1, np.int32)
        self.w_serial = np.full(n, -1, np.int32)  # which write instruction, counted
        self.r_tid = np.full(n, NOBODY, np.int32)  # the last reader (MANY: several), for words
        self.r_warp = np.full(n, NOBODY, np.int32)
        self.r_site = np.full(n, -1, np.int32)
        self.warps: list = []  # the warps that accessed it, any CTA of the cluster
        self._warp_ids: dict = {}
        self._next_serial = 0
        self.inflight = np.full(n, -1, np.int32)
        self.held = np.zeros(n, np.int32)  # asynchronous readers in flight (wgmma) per byte
        self.holds: dict[int, tuple] = {}  # their tokens: (bytes, who reads them)
        self.hold_causes: dict = {}  # token -> its reader's hazards.Cause (see `hold`)
        self.retired_by = np.full(n, -1, np.int32)  # the hold a warp's wait retired last
        self.retirements: dict[int, tuple] = {}  # its token: (warp, clock, reader, site)
        self._next_hold = 0
        self.unfenced = np.zeros(n, bool)  # written by threads, no fence.proxy.async since
        self.copies: dict[int, AsyncCopy] = {}
        self.sites: list[Site] = []
        self._site_ids: dict[Site, int] = {}
        self.allocations: list[Allocation] = []
        self.count_banks = count_banks
        self.bank_log: dict[tuple, list] = {}
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

    def _bytes(self, dtype: DType, tids, elems: np.ndarray):
        """(bytes, the thread of each byte) of an access by rows: tids (R,), elems (R, n)."""
        if is_sub_byte(dtype):
            b = element_byte_span(dtype, elems)
            return b, np.repeat(np.asarray(tids, dtype=np.int64), elems.shape[-1])
        size = dtype.storage.itemsize
        b = (elems[..., None] * size + np.arange(size)).reshape(-1)
        t = np.repeat(np.asarray(tids, dtype=np.int64), elems.shape[-1] * size)
        return b, t

    def describe(self, byte: int) -> str:
        """'sA[37, 8, 2] (stage 2)': the allocation and coordinate a byte belongs to."""
        for alloc in self.allocations:
            if alloc.start <= byte < alloc.start + alloc.nbytes:
                elem = (byte - alloc.start) // alloc.dtype.storage.itemsize
                if is_sub_byte(alloc.dtype):
                    elem = 2 * (byte - alloc.start)  # the byte's low nibble
                crd = _coordinate_of(alloc.layout, elem)
                if crd is None:
                    return f"{alloc.name} (byte {byte - alloc.start})"
                stage = f" (stage {crd[-1]})" if isinstance(crd, tuple) and len(crd) >= 3 else ""
                # a 3-mode shared tile is (rows, columns, stages) in the course's kernels
                return f"{alloc.name}[{_fmt_crd(crd)}]{stage}"
        return f"shared memory byte {byte}"

    def _site(self, sid: int) -> str:
        return self.sites[sid].describe() if 0 <= sid < len(self.sites) else "an earlier line"

    # --- accesses
    def load(self, dtype, tids, elems, site=None):
        return self.read(tids, dtype, elems, site or hazards.UNKNOWN)

    def store(self, dtype, tids, elems, values, site=None):
        self.write(tids, dtype, elems, values, site or hazards.UNKNOWN)

    def warp_id(self, w) -> int:
        """w's index into `warps` (the warps that accessed this memory)."""
        wid = self._warp_ids.get(w)
        if wid is None:
            wid = self._warp_ids[w] = len(self.warps)
            self.warps.append(w)
        return wid

    def unordered_writes(self, w, b: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Which of bytes `b` (accessed by threads `t` of warp w) another thread wrote last
        with nothing ordering that write before warp w now (course.execute.happens_before):
        another warp it knows nothing of since, or another lane of w with no barrier since."""
        late = np.zeros(len(b), bool)
        if w is None:
            return late
        writers = self.w_warp[b]
        mine = self.warp_id(w)
        for wid in np.unique(writers[writers >= 0]).tolist():
            if wid == mine:
                continue
            pick = writers == wid
            late |= pick & (self.w_stamp[b] > w.knows.get(self.warps[wid], 0))
        ours = writers == mine
        if ours.any():
            late |= ours & happens_before.other_lanes(w, self, b, t % 32, written=True)
        return late

    def read(
        self, tids, dtype: DType, elems: np.ndarray, site: Site, by_unit: bool = False
    ) -> np.ndarray:
        """Threads `tids` of the running warp read elements (checked against writes in
        flight and writes no barrier orders before). by_unit: an asynchronous unit reads
        them for the warp (a wgmma's operands): no lane of the warp did, so no lane's later
        write races with it; the unit's own hold and completion order it (`hold`)."""
        self.check(dtype, tids, elems, False)
        b, t = self._bytes(dtype, tids, elems)
        w = current.current_warp()
        flying = self.inflight[b]
        if (flying >= 0).any():
            k = int(np.argmax(flying >= 0))
            copy = self.copies[int(flying[k])]
            issuer = int(copy.tids[0])
            own = (
                "its own"
                if copy.cta is None and (issuer == t[k] or t[k] in copy.tids)
                else f"{threads_text(copy.tids.tolist())}"
                + (f" of CTA {copy.cta.block}" if copy.cta is not None else "")
                + "'s"
            )
            raise Hazard(
                hazards.IN_FLIGHT,
                f"{threads_text([int(t[k])])} reads {self.describe(int(b[k]))} while "
                f"{own} {copy.what} to it (issued at {copy.site.describe()}) is still in "
                f"flight: {copy.retired_by}",
                site,
                hazards.Cause(_in_flight_cause(copy, w), self.describe(int(b[k])), unit=copy.what),
            )
        race = self.unordered_writes(w, b, t)
        if race.any():
            k = int(np.argmax(race))
            raise Hazard(
                hazards.RACE,
                f"{threads_text([int(t[k])])} reads {self.describe(int(b[k]))}, which "
                f"{threads_text([int(self.w_tid[b[k]])])} wrote at "
                f"{self._site(int(self.w_site[b[k]]))} with no barrier between "
                f"(missing sync_threads)",
                site,
            )
        sid = self.site_id(site)
        if w is not None:
            self.r_tid[b] = t
            clash = self.r_tid[b] != t  # two lanes of this instruction read the same byte
            self.r_tid[b[clash]] = MANY
            self.r_warp[b] = self.warp_id(w)
            if not by_unit:
                happens_before.lanes_touched(w, self, b, t % 32, writing=False)
        else:
            self.r_tid[b] = NOBODY
        self.r_site[b] = sid
        return dtype.decode(self.typed(dtype)[elems])

    # --- asynchronous readers in flight (a wgmma reads its operands until it is retired)
    def hold(self, b: np.ndarray, reader, cause=None) -> int:
        """Bytes `b` (unique) are read by an asynchronous unit until `unhold(token)`;
        `reader` names it ("the wgmma warp 4 issued at ..."), or is a function that does
        (read when a write finds it, so it can say how things stand then). `cause`: the
        same in structured form, a hazards.Cause (or a function giving one) whose `what`
        says how the reader stands, `unit` what it is and `expected` its warp; a write
        that finds the bytes held completes it with the bytes (subject) and the writer's
        warp (observed). Every write checks them."""
        token = self._next_hold
        self._next_hold += 1
        self.held[b] += 1
        self.holds[token] = (b, reader)
        if cause is not None:
            self.hold_causes[token] = cause
        return token

    def _reader_cause(self, token: int, what: str | None, byte: int):
        """The structured cause of a write over bytes hold `token` reads (see `hold`): the
        reader's own, its `what` replaced by `what` where the writer knows better."""
        from course.execute import current

        cause = self.hold_causes.get(token)
        cause = cause() if callable(cause) else cause
        if cause is None:
            return None
        w = current.current_warp()
        return dataclasses.replace(
            cause,
            what=what or cause.what,
            subject=self.describe(byte),
            observed=w.index if w is not None else None,
        )

    def unhold(self, token: int, by=None, site: Site | None = None) -> None:
        """The reader of hold `token` is done. `by`: the warp whose wait says so (a TMA
        store's wait_group.read): only that warp knows it, so another warp may write the
        bytes only once a barrier (or an mbarrier) carried that wait to it
        (course.execute.happens_before); without `by` every warp may at once."""
        b, reader = self.holds.pop(token)
        self.held[b] -= 1
        if by is not None:
            by.clock += 1
            self.retired_by[b] = token
            self.retirements[token] = (by, by.clock, reader, site)
        else:
            self.hold_causes.pop(token, None)

    def check_retired_known(self, b: np.ndarray, t: np.ndarray, writer, site: Site) -> None:
        """A thread's write of bytes `b` (threads `t`) whose reader a wait of another warp
        retired, with nothing ordering that wait before this write: a STAGE_OVERWRITE (the
        waiting warp knows the buffer is free, the writer does not)."""
        tokens = self.retired_by[b]
        if not (tokens >= 0).any():
            return
        for token in np.unique(tokens[tokens >= 0]).tolist():
            by, clock, reader, where = self.retirements[token]
            writers = [self.cta.warps[i] for i in np.unique(t[tokens == token] // 32).tolist()]
            late = [x for x in writers if x is not by and x.knows.get(by, 0) < clock]
            if not late:
                continue
            k = int(np.argmax((tokens == token) & (t // 32 == late[0].index)))
            reader = reader() if callable(reader) else reader
            cause = self._reader_cause(token, hazards.RETIRED_UNORDERED, int(b[k]))
            raise Hazard(
                hazards.STAGE_OVERWRITE,
                f"{writer(k)} {self.describe(int(b[k]))}, which {reader} read: warp "
                f"{by.index}'s wait_group at {where.describe() if where else 'an earlier line'}"
                f" retired that read, but no barrier since orders this thread after that "
                f"wait: only the waiting warp knows the buffer is free",
                site,
                cause,
            )

    def check_readers_in_flight(self, b: np.ndarray, writer, site: Site) -> None:
        """A write of bytes `b` (thread stores, cp.async, TMA landings: every writer calls
        this) while an asynchronous reader still reads them is a STAGE_OVERWRITE.
        `writer(k)` says who writes the k-th byte ("thread 5 (...) writes")."""
        busy = self.held[b] > 0
        if not busy.any():
            return
        k = int(np.argmax(busy))
        byte = int(b[k])
        token, reader = next((tk, r) for tk, (bs, r) in self.holds.items() if byte in bs)
        reader = reader() if callable(reader) else reader
        raise Hazard(
            hazards.STAGE_OVERWRITE,
            f"{writer(k)} {self.describe(byte)} while {reader} still reads it: the stage "
            f"is overwritten before a wait_group retired the reads (released too early?)",
            site,
            self._reader_cause(token, None, byte),
        )

    def _check_write(self, tids, b: np.ndarray, t: np.ndarray, site: Site, how: str) -> None:
        self.check_readers_in_flight(b, lambda k: f"{threads_text([int(t[k])])} {how}", site)
        self.check_retired_known(b, t, lambda k: f"{threads_text([int(t[k])])} {how}", site)
        flying = self.inflight[b]
        if (flying >= 0).any():
            k = int(np.argmax(flying >= 0))
            copy = self.copies[int(flying[k])]
            raise Hazard(
                hazards.WRITE_IN_FLIGHT,
                f"{threads_text([int(t[k])])} {how} {self.describe(int(b[k]))} while "
                f"the {copy.what} of {threads_text(copy.tids.tolist())} (issued at "
                f"{copy.site.describe()}) is still writing it",
                site,
                hazards.Cause(hazards.WRITTEN_IN_FLIGHT, self.describe(int(b[k])), unit=copy.what),
            )
        w = current.current_warp()
        if w is None:
            return
        waw = self.unordered_writes(w, b, t)
        # a read no barrier orders before this write: another lane of this warp's, or a
        # touch by another warp this one knows nothing of since (a read, unless the last
        # write was that warp's and it is the one unordered)
        war = happens_before.other_lanes(w, self, b, t % 32, written=False)
        other = happens_before.unordered(w, None, self, b)
        if other is not None and not war.any():
            x, byte = other
            if not (waw.any() and self.r_warp[byte] != self.warp_id(x)):
                war = b == byte
        if war.any():
            k = int(np.argmax(war))
            rt = int(self.r_tid[b[k]])
            reader = "several threads" if rt == MANY else threads_text([rt])
            if rt == NOBODY or (rt == t[k] and self.r_warp[b[k]] == self.warp_id(w)):
                reader = "another thread"
            raise Hazard(
                hazards.STAGE_OVERWRITE,
                f"{threads_text([int(t[k])])} {how} {self.describe(int(b[k]))}, which "
                f"{reader} read at {self._site(int(self.r_site[b[k]]))} with no "
                f"barrier between: data still being read (a stage not yet released) "
                f"is overwritten",
                site,
            )
        if waw.any():
            k = int(np.argmax(waw))
            raise Hazard(
                hazards.RACE,
                f"{threads_text([int(t[k])])} {how} {self.describe(int(b[k]))}, which "
                f"{threads_text([int(self.w_tid[b[k]])])} also wrote at "
                f"{self._site(int(self.w_site[b[k]]))} with no barrier between",
                site,
            )

    def _writer_is(self, b, t, w, site: Site) -> None:
        """Threads t of warp w (None: the host) wrote bytes b now: their last writer."""
        self.w_tid[b] = t
        self.w_warp[b] = NOBODY if w is None else self.warp_id(w)
        self.w_stamp[b] = 0 if w is None else happens_before.now(w)
        self.w_serial[b] = self._next_serial
        self._next_serial += 1
        self.w_site[b] = self.site_id(site)
        if w is not None:
            happens_before.lanes_touched(w, self, b, t % 32, writing=True)

    def _mark_written(self, b, t, site: Site, how: str, agreed=None) -> None:
        """Bytes b written now by threads t of the running warp, through the generic proxy.
        agreed: per byte, whether every lane writing it wrote the same bits (None: unknown)."""
        self._writer_is(b, t, current.current_warp(), site)
        self.unfenced[b] = True
        clash = self.w_tid[b] != t
        if agreed is not None:
            # lanes of one store writing one location: one write lands ("which thread
            # performs the final write is undefined", CUDA C++ Programming Guide), so the
            # same bits from each are that value (a warp's reduced sum, written by all)
            clash &= ~agreed
        if clash.any():  # two lanes of one instruction wrote the same bytes
            k = int(np.argmax(clash))
            raise Hazard(
                hazards.RACE,
                f"{threads_text([int(t[k])])} and "
                f"{threads_text([int(self.w_tid[b[k]])])} {how} "
                f"{self.describe(int(b[k]))} in the same instruction",
                site,
            )

    @staticmethod
    def _agreed(landed: np.ndarray, written: np.ndarray, nbytes: int):
        """Per byte of a store: did each lane write the bits that landed there (all the
        writers of a location agreed)? None where elements and bytes do not pair up."""
        same = _bits(landed) == _bits(written)
        if same.size == 0 or nbytes % same.size:
            return None
        return np.repeat(same.reshape(-1), nbytes // same.size)

    def landed(self, b: np.ndarray) -> None:
        """An asynchronous unit (a TMA load, a CLC response, a tcgen05 staging) wrote bytes
        b: no thread is their writer, so no thread's later read of them races one."""
        self.w_tid[b] = NOBODY
        self.w_warp[b] = NOBODY
        self.w_serial[b] = self._next_serial
        self._next_serial += 1
        happens_before.forget_lane_writes(self, b)

    def write(self, tids, dtype: DType, elems: np.ndarray, values, site: Site) -> None:
        self.check(dtype, tids, elems, True)
        b, t = self._bytes(dtype, tids, elems)
        self._check_write(tids, b, t, site, "writes")
        encoded = dtype.encode(np.broadcast_to(values, elems.shape))
        typed = self.typed(dtype)
        typed[elems] = encoded
        self._mark_written(b, t, site, "write", self._agreed(typed[elems], encoded, b.size))

    # --- cp.async
    def issue(
        self, tids, dtype: DType, elems: np.ndarray, values, site: Site, land_now: bool
    ) -> AsyncCopy:
        self.check(dtype, tids, elems, True)
        b, t = self._bytes(dtype, tids, elems)
        self._check_write(tids, b, t, site, "starts a cp.async into")
        w = current.current_warp()
        copy = AsyncCopy(
            self._next_copy,
            np.asarray(tids).reshape(-1),
            elems,
            dtype,
            np.asarray(values),
            site,
            warp=w,
            stamp=0 if w is None else happens_before.now(w),
            barriers=0 if w is None else w.barriers,
        )
        self._next_copy += 1
        self.copies[copy.id] = copy
        self.inflight[b] = copy.id
        if land_now:  # the hardware may finish it at once; reading it is still a race
            self.typed(dtype)[elems] = dtype.encode(copy.values)
            copy.landed = True
        return copy

    def retire(self, copy: AsyncCopy, stamp: int | None = None) -> None:
        """The issuing warp's wait_group covers this copy: its bytes are there, written by
        the threads that issued it, now -- or, for a completion an mbarrier arrival reports
        (course.execute.cp_async_arrive), at the issuing warp's `stamp` then. A copy
        retired already (by such an arrival) stays so."""
        if copy.id not in self.copies:
            return
        if not copy.landed:
            self.typed(copy.dtype)[copy.elems] = copy.dtype.encode(copy.values)
        b, t = self._bytes(copy.dtype, copy.tids, copy.elems)
        mine = self.inflight[b] == copy.id
        self.inflight[b[mine]] = -1
        self._writer_is(b, t, copy.warp, copy.site)
        if stamp is not None:
            self.w_stamp[b] = stamp
        del self.copies[copy.id]

    # --- banks
    def note_access(
        self, key: tuple, lanes: np.ndarray, unit_addresses: np.ndarray, width: int
    ) -> None:
        if self.count_banks:
            self.bank_log.setdefault(key, []).append((lanes, unit_addresses, width))


def _coordinate_of(layout, elem: int):
    try:
        offsets = np.asarray(layout.offsets)
        hits = np.nonzero(offsets == elem)[0]
    except Exception:  # noqa: BLE001 -- a layout it cannot enumerate: no coordinate
        return None
    if not len(hits):
        return None
    from course.execute.static_layout import product

    # the coordinate as the kernel wrote the allocation's shape: one index per top mode
    index, shape = int(hits[0]), layout.shape
    if not isinstance(shape, tuple):
        return index
    out = []
    for mode in shape:
        size = product(mode)
        out.append(index % size)
        index //= size
    return tuple(out)


def _fmt_crd(crd) -> str:
    if isinstance(crd, tuple):
        return ", ".join(
            _fmt_crd(c) if not isinstance(c, tuple) else f"({_fmt_crd(c)})" for c in crd
        )
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
        return (
            f"{self.site.describe()}: {self.requests} warp request(s), {self.wavefronts} "
            f"wavefront(s) for an ideal {self.ideal}"
            + (f" ({way:.1f}x: bank conflicts)" if self.conflicts else " (conflict-free)")
        )


def bank_summaries(smem: SharedMemory) -> list[BankSummary]:
    """The bank model's count for every warp-wide access logged, per source line."""
    from course.models.bank_model import Request, analyze

    out: dict[int, BankSummary] = {}
    for (sid, _warp, _n), entries in smem.bank_log.items():
        summary = out.setdefault(sid, BankSummary(smem.sites[sid]))
        for lanes, addresses, width in entries:
            addresses = np.asarray(addresses)
            per_lane = (
                addresses.reshape(len(lanes), -1)
                if addresses.ndim > 1 or addresses.size != len(lanes)
                else addresses.reshape(-1, 1)
            )
            if addresses.ndim == 1 and addresses.size != len(lanes):  # uniform: a broadcast
                per_lane = np.broadcast_to(addresses, (len(lanes), addresses.size))
            for u in range(per_lane.shape[1]):
                slots = [None] * 32
                for lane, a in zip(lanes.tolist(), per_lane[:, u].tolist()):
                    slots[lane] = int(a)
                analysis = analyze(Request(tuple(slots), width))
                summary.requests += 1
                summary.wavefronts += analysis.wavefronts
                summary.ideal += analysis.ideal
    return [out[k] for k in sorted(out)]
