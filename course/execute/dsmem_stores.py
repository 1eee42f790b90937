"""Stores into a peer CTA's shared memory that complete on that CTA's mbarrier, and the
32-bit shared-memory addresses they are written with (inline PTX of kernel code).

Kernel code reaches another CTA's shared memory without CuTe's copies through inline PTX
(`llvm.inline_asm`): NVIDIA's reduce.py (rmsnorm's cluster reduction, after Quack) takes a
pointer's address (`ptr.toint()`: course.execute.tensor.Pointer), maps it into a peer CTA
with `mapa.shared::cluster.u32` and stores with
`st.async.shared::cluster.mbarrier::complete_tx::bytes`; CuTe's own CopyDsmemStoreOp is the
same st.async from registers (`cute.copy` to a `map_dsmem_ptr` pointer). The PTX ISA:

* a shared::cta address is a CTA's own window; `mapa` gives the shared::cluster address of
  the same offset in CTA `rank` of the cluster. Here a shared::cta address is the byte
  offset in the CTA's shared memory, and a shared::cluster one `(rank + 1) << 24 | offset`
  (shared memory is below 16 MB): both decode to (CTA, byte), and an address of the CTA's
  own window is a shared::cluster address of itself, as in the ISA.
* st.async writes to the peer's shared memory asynchronously and, once the bytes are
  there, performs complete-tx of their count on the mbarrier at the second address, which
  must be in the same CTA. Until then the bytes are in flight: a read of them before a wait
  on that mbarrier saw its phase complete is a hazard (as a TMA load's, course.execute.tma).

The asm strings of these stores are this module's `FORMS`, run through
course.execute.inline_ptx (the one table of inline PTX the executor runs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course.execute import happens_before, hazards, machine, mbarriers
from course.execute.hazards import Hazard, Site, Unmodelled, threads_text
from course.execute.lanes import Lanes
from course.execute.memory import AsyncCopy
from course.execute.numeric import by_name
from course.execute.standins import ops_names
from course.execute.tensor import Pointer

UNIT_ST_ASYNC = hazards.UNIT_ST_ASYNC
RANK_SHIFT = 24  # a shared::cluster address: (rank + 1) << 24 | byte offset
_NEXT = [3 << 29]  # ids of these stores in a shared memory's in-flight map


def _per_lane(x) -> np.ndarray:
    """A value as the warp's lanes hold it (int64)."""
    if isinstance(x, Lanes):
        return np.asarray(x.v).astype(np.int64).reshape(-1)
    return np.full(machine.warp().width, int(x), np.int64)


def _decode(address: np.ndarray, site: Site) -> tuple[np.ndarray, np.ndarray]:
    """(rank in the cluster, byte offset) of shared::cluster addresses (own CTA's window
    for a shared::cta one)."""
    cta = machine.warp().cta
    rank = (address >> RANK_SHIFT) - 1
    rank = np.where(rank < 0, cta.rank, rank)
    if (rank >= len(cta.cluster.ctas)).any():
        bad = int(rank[rank >= len(cta.cluster.ctas)][0])
        raise Hazard(hazards.CRASH, f"a shared::cluster address of CTA rank {bad}", site)
    return rank, address & ((1 << RANK_SHIFT) - 1)


def _active() -> np.ndarray:
    """The lanes (0-31) of the running warp that execute the instruction."""
    return machine.warp().active_tids() % machine.WARP


def mapa(address, rank) -> Lanes:
    """mapa.shared::cluster.u32 d, a, rank: the same offset in CTA `rank`'s window (for
    the active lanes; the others' results are never used)."""
    site = hazards.site(3)
    ranks, lanes = _per_lane(rank), _active()
    size = len(machine.warp().cta.cluster.ctas)
    if ((ranks[lanes] < 0) | (ranks[lanes] >= size)).any():
        bad = int(ranks[lanes][(ranks[lanes] < 0) | (ranks[lanes] >= size)][0])
        raise Hazard(hazards.CRASH, f"mapa to CTA rank {bad} in a cluster of {size}", site)
    offset = _per_lane(address) & ((1 << RANK_SHIFT) - 1)
    return Lanes(((np.clip(ranks, 0, size - 1) + 1) << RANK_SHIFT) | offset)


@dataclass
class RemoteStore:
    """st.async's bytes in flight to one CTA's shared memory, and the mbarrier they count
    down on when they land."""

    smem: object
    elems: np.ndarray
    dtype: object
    values: np.ndarray
    slot: object
    site: Site
    id: int
    landed: bool = False

    def land(self) -> None:
        if self.landed:
            return
        self.landed = True
        b = np.unique(self.elems * self.dtype.itemsize + np.arange(self.dtype.itemsize)[:, None])
        self.smem.check_readers_in_flight(b, lambda k: "an st.async lands in", self.site)
        self.smem.typed(self.dtype)[self.elems] = self.dtype.encode(self.values)
        self.smem.copies.pop(self.id, None)
        mine = self.smem.inflight[b] == self.id
        self.smem.inflight[b[mine]] = -1
        self.smem.landed(b)
        mbarriers.complete_tx(self.slot, len(b), self.site)


def st_async(dtype_name: str):
    """st.async.shared::cluster.mbarrier::complete_tx::bytes.<type> [a], v, [mbar]."""

    def store(address, value, mbar_address) -> None:
        site = hazards.site(3)
        w = machine.warp()
        dtype = by_name(dtype_name)
        lanes = _active()
        rank, offset = (x[lanes] for x in _decode(_per_lane(address), site))
        mrank, moffset = (x[lanes] for x in _decode(_per_lane(mbar_address), site))
        values = np.asarray(value.v if isinstance(value, Lanes) else value)
        values = np.broadcast_to(values, (w.width,))[lanes] if values.ndim else values
        values = np.broadcast_to(values, lanes.shape)
        if (offset % dtype.itemsize).any():
            raise Hazard(hazards.MISALIGNED, f"st.async of {dtype} at shared byte "
                         f"{int(offset[offset % dtype.itemsize != 0][0])}", site)  # fmt: skip
        if (rank != mrank).any():
            raise Hazard(hazards.CRASH, "st.async whose mbarrier is in another CTA than its "
                         "destination (the PTX ISA requires the same CTA)", site)  # fmt: skip
        tids = w.active_tids()
        for r in np.unique(rank):
            at = rank == r
            _issue(w, int(r), offset[at], values[at], moffset[at], dtype, tids[at], site)

    store.__name__ = f"st_async_{dtype_name}"
    return store


COPY_OP = "CopyDsmemStoreOp"  # cute.nvgpu.cpasync's st.async from registers


def copy(atom, src, dst, mbar_ptr=None, **kwargs) -> None:
    """cute.copy(make_copy_atom(CopyDsmemStoreOp(), dtype), registers, dst, mbar_ptr=...):
    st.async of each active lane's registers into `dst`, a tensor over a peer CTA's shared
    memory (a `map_dsmem_ptr` pointer), completing on the mbarrier `mbar_ptr` names there."""
    site = hazards.site(3)
    if kwargs:
        raise Unmodelled(f"a CopyDsmemStoreOp copy with {', '.join(kwargs)}")
    if mbar_ptr is None:
        raise Hazard(hazards.CRASH, "st.async (CopyDsmemStoreOp) with no mbar_ptr", site)
    memory, bar_memory = dst.iterator.memory, getattr(mbar_ptr, "memory", None)
    if getattr(memory, "space", None) != "smem" or getattr(bar_memory, "space", None) != "smem":
        raise Unmodelled("a CopyDsmemStoreOp copy not into shared memory")
    if memory.cta is not bar_memory.cta:
        raise Hazard(hazards.CRASH, "st.async whose mbarrier is in another CTA than its "
                     "destination (the PTX ISA requires the same CTA)", site)  # fmt: skip
    w = machine.warp()
    tids = w.active_tids()
    lanes = tids % machine.WARP
    dtype = dst.element_type
    elems = np.asarray(dst.elements())
    elems = elems[lanes] if elems.ndim == 2 else np.broadcast_to(elems, (len(lanes), elems.size))
    values = np.asarray(src.values())[lanes]  # (warp width, n): the active lanes' rows
    if values.shape != elems.shape:
        raise Hazard(hazards.CRASH, f"st.async of {values.shape[1]} registers into "
                     f"{elems.shape[1]} elements", site)  # fmt: skip
    n = elems.shape[1]
    bar_bytes = _per_lane(mbar_ptr.byte_offset)[lanes]
    _issue(w, memory.cta.rank, (elems * dtype.itemsize).reshape(-1), values.reshape(-1),
           np.repeat(bar_bytes, n), dtype, np.repeat(tids, n), site)  # fmt: skip


def _issue(w, rank: int, offsets, values, mbar_offsets, dtype, tids, site: Site) -> None:
    """One CTA's share of a warp's st.async: its bytes in flight, landing later."""
    target = w.cta.cluster.ctas[rank].smem
    if len(np.unique(mbar_offsets)) != 1:
        raise Unmodelled("st.async of one warp onto several mbarriers of one CTA")
    bar = Pointer(w.cta.smem, int(mbar_offsets[0]), by_name("Int64"))
    slot = mbarriers.barrier_at(bar, rank, site)
    elems = (offsets // dtype.itemsize).astype(np.int64)
    b = (elems[:, None] * dtype.itemsize + np.arange(dtype.itemsize)).reshape(-1)
    target.check_readers_in_flight(b, lambda k: "an st.async writes", site)
    if (target.inflight[b] >= 0).any():
        raise Hazard(
            hazards.WRITE_IN_FLIGHT,
            f"an st.async into {target.describe(int(b[np.argmax(target.inflight[b] >= 0)]))} "
            f"while an earlier copy into it is still in flight",
            site,
        )
    late = happens_before.unordered(w, target.cta.warps, target, b)
    if late is not None:  # a byte the peer still uses: nothing ordered its use before this
        x, byte = late
        raise Hazard(
            hazards.STAGE_OVERWRITE,
            f"an st.async by {threads_text(np.asarray(tids)[:1].tolist())} of CTA "
            f"{w.cta.block} into {target.describe(byte)} of CTA {target.cta.block}, which "
            f"its warp {x.index} touched (last read at {target._site(int(target.r_site[byte]))})"
            " with no mbarrier arrive this warp waited for since: overwritten while in use",
            site,
            hazards.Cause(hazards.RELEASED_EARLY, target.describe(byte), expected=x.index,
                          observed=w.index, unit=happens_before.toucher_unit(x, target, byte)),
        )  # fmt: skip
    store_id = _NEXT[0]
    _NEXT[0] += 1
    target.inflight[b] = store_id
    target.copies[store_id] = AsyncCopy(
        store_id, np.asarray(tids)[:1], elems[None, :], dtype, np.asarray(values)[None, :], site,
        what=UNIT_ST_ASYNC, retired_by="no mbarrier wait has seen its bytes land",
        cta=w.cta if target is not w.cta.smem else None,
    )  # fmt: skip
    op = RemoteStore(target, elems, dtype, np.asarray(values), slot, site, store_id)
    w.cta.cluster.inflight.append(op)


# the inline PTX of DSMEM stores (course.execute.inline_ptx runs them): asm template
# (whitespace collapsed) -> what it does with the operands ($0 the result)
FORMS = {
    "mapa.shared::cluster.u32 $0, $1, $2;": mapa,
    **{
        f"st.async.shared::cluster.mbarrier::complete_tx::bytes.{ptx} [$0], $1, [$2];": st_async(
            name
        )
        for ptx, name in (("f32", "Float32"), ("b32", "Int32"), ("s32", "Int32"), ("u32", "Uint32"))
    },
}


NAMES = {
    "cutlass.cute.nvgpu.cpasync": ops_names("cute.nvgpu.cpasync", COPY_OP),
}
