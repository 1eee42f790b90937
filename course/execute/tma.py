"""TMA on the executor: tensor maps (`make_tiled_tma_atom`), their partitions, and the bulk
tensor copies (`cute.copy(tma, ...)`) with their completion mechanisms.

* `make_tiled_tma_atom(op, gmem, smem_layout, tiler, num_multicast)` gives a `TmaAtom` (the
  tensor map: the global tensor, its bounds, the box) and the TMA tensor: a coordinate
  tensor over the global tensor's shape, as CuTe's (its elements are coordinates, not data).
* `tma_partition(atom, rank, cta_layout, sX, gX)` pairs a shared tile with a global tile,
  mode 0 the box (both grouped as (box, rest...)), as a `TmaView` each: element i of the
  shared view is where element i of the global view lands. With multicast, CTA `rank` of
  n takes the n-th part of the box in shared-memory address order (the rows of a
  row-major box), as CuTe's partition does.
* A load (G2S, G2S multicast) reads the box from global memory when issued (zeros out of
  bounds) and is in flight on the cluster (course.execute.machine.Cluster) until it lands:
  when no warp can go on, or earlier under other seeds. A read of shared memory it is
  still writing is a hazard; landing writes the bytes and counts them down on each
  destination CTA's mbarrier (course.execute.mbarriers.complete_tx).
* A store (S2G) reads shared memory through the async proxy: bytes threads wrote with no
  `fence_proxy("async.shared")` since are a hazard; it writes global memory (clipped to
  the tensor) and keeps reading its shared bytes until a `cp_async_bulk_wait_group(n,
  read=True)` retires its bulk group: a thread writing them before that is a hazard.

The copy is issued once per warp that calls it (CuTe elects the issuing lane itself).
Descriptors (`copy_tensormap`) are not modelled: their bytes come from the CUDA driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from course.execute import happens_before, hazards, machine, mbarriers
from course.execute.dynamic import extent
from course.execute.lanes import uniform
from course.execute.hazards import Hazard, Site, Unmodelled, threads_text
from course.execute.memory import AsyncCopy
from course.execute.numeric import element_byte_span, is_sub_byte
from course.execute.oracle import Recipe
from course.execute.sm90 import PROXY_FENCE
from course.execute.static_layout import ComposedLayout, product
from course.execute.static_layout import Layout
from course.execute.tensor import BASE, Coordinates, Pointer, Tensor, identity_tensor, unpack
from course.execute.tensor import packed_strides

LOADS = ("CopyBulkTensorTileG2SOp", "CopyBulkTensorTileG2SMulticastOp")
STORES = ("CopyBulkTensorTileS2GOp",)


class TmaAtom:
    """A tensor map and the copy it does: the global tensor, the box, the multicast count."""

    def __init__(self, op: Recipe, gmem: Tensor, smem_layout, tiler, num_multicast: int):
        self.op, self.gmem, self.smem_layout = op, gmem, smem_layout
        self.tiler, self.num_multicast = tiler, int(num_multicast)
        self.kind = op.name
        # the global tensor's modes a TMA coordinate names: (extent, stride) of each mode of
        # non-zero stride, flattened (all of them for a flat tensor)
        self.coord_modes = _coord_modes(gmem)

    @property
    def is_load(self) -> bool:
        return self.kind in LOADS

    def __str__(self) -> str:
        return f"TmaAtom({self.kind}, box {self.tiler})"

    __repr__ = __str__


class TmaInfo(tuple):
    """What make_tiled_tma_atom returns, as CuTe DSL's TmaInfo: unpacks to (atom, TMA
    tensor); `.atom`, `.tma_tensor`, `.smem_layout`."""

    def __new__(cls, atom, tma_tensor, smem_layout=None):
        made = super().__new__(cls, (atom, tma_tensor))
        made.smem_layout = smem_layout
        return made

    @property
    def atom(self):
        return self[0]

    @property
    def tma_tensor(self):
        return self[1]


def make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler, num_multicast=1, **kwargs):
    if not isinstance(op, Recipe) or op.name not in LOADS + STORES:
        raise Unmodelled(f"make_tiled_tma_atom with {op!r}")
    if kwargs.get("gmem_coord_tensor") is not None or kwargs.get("internal_type") is not None:
        raise Unmodelled("make_tiled_tma_atom with gmem_coord_tensor or internal_type")
    if not isinstance(gmem_tensor, Tensor) or not isinstance(gmem_tensor.iterator, Pointer):
        raise Unmodelled("make_tiled_tma_atom of a tensor that is not in global memory")
    atom = TmaAtom(op, gmem_tensor, smem_layout, cta_tiler, num_multicast)
    return TmaInfo(atom, tma_tensor(gmem_tensor), smem_layout)


def _flatten(x) -> tuple:
    return sum((_flatten(e) for e in x), ()) if isinstance(x, tuple) else (x,)


def _coord_modes(gmem: Tensor) -> tuple:
    shape, stride = gmem.shape, gmem.layout.stride
    if not any(isinstance(s, tuple) for s in (shape if isinstance(shape, tuple) else ())):
        return tuple((int(n), int(d)) for n, d in zip(_flat(shape), _flatten(stride)))
    return tuple((int(n), int(d)) for n, d in zip(_flatten(shape), _flatten(stride)) if int(d) != 0)


def tma_tensor(gmem: Tensor) -> Tensor:
    """The TMA tensor of `gmem`: coordinates over its shape. A flat shape gives the identity
    tensor; a hierarchical one (the blocked scale factors, ((32, 4, rows/128), (vec, 4, ...)))
    gives coordinates over its modes of non-zero stride, one digit each, and stride 0 for a
    mode of stride 0 (an SF broadcast over its `vec` K-elements), as CuTe's TMA tensor."""
    shape = gmem.shape
    if not any(isinstance(s, tuple) for s in (shape if isinstance(shape, tuple) else ())):
        return identity_tensor(_flat(shape))
    modes = _coord_modes(gmem)
    rank = len(modes)
    if rank not in BASE or max(n for n, _ in modes) >= BASE[rank] // 2:
        raise Unmodelled(f"a TMA tensor over {shape}")
    digit = iter(packed_strides(rank))
    strides = [next(digit) if int(d) != 0 else 0 for d in _flatten(gmem.layout.stride)]
    it = iter(strides)

    def shaped(x):
        return tuple(shaped(e) for e in x) if isinstance(x, tuple) else next(it)

    return Tensor(Coordinates((0,) * rank), Layout(_static_shape(shape), shaped(shape)))


def _static_shape(x):
    return tuple(_static_shape(e) for e in x) if isinstance(x, tuple) else extent(x)


def _flat(shape) -> tuple:
    if not isinstance(shape, tuple) or any(isinstance(s, tuple) for s in shape):
        raise Unmodelled(f"a TMA tensor of shape {shape} (a flat shape only)")
    return tuple(extent(s) for s in shape)


@dataclass
class TmaView(hazards.Standin):
    """A tensor (shared tile, or TMA coordinates) whose mode 0 is a TMA box, and which of
    the box's elements (colexicographic) this CTA copies. It stands in for the tensor CuTe
    DSL's tma_partition returns, so an attribute of CuTe's tensor it does not model is the
    executor's gap, not the kernel's bug."""

    REAL = ("cutlass.cute.tensor:_Tensor",)

    tensor: Tensor
    select: np.ndarray  # indices into mode 0's elements
    box: int  # elements in mode 0

    def __getitem__(self, crd):
        if not isinstance(crd, tuple) or crd[0] is not None:
            raise Unmodelled(f"indexing a TMA partition with {crd!r} (only (None, ...))")
        return TmaView(self.tensor.slice(crd), self.select, self.box)

    def domain_offset(self, coord) -> "TmaView":
        """cute.domain_offset(coord, partition): the partition's modes after the box are
        its tensor's, so the offset is its tensor's too, where it leaves the box alone (a
        mode-0 coordinate of 0, which moves no box element)."""
        if not isinstance(coord, tuple) or not _is_zero(coord[0]):
            raise Unmodelled(f"domain_offset{coord!r} of a TMA partition inside its box")
        t = self.tensor
        return TmaView(t.moved(t.domain_layout(coord), t.domain_layout), self.select, self.box)

    @property
    def shape(self):
        rest = self.tensor.shape[1:] if isinstance(self.tensor.shape, tuple) else ()
        return ((len(self.select),),) + tuple(rest)

    @property
    def element_type(self):
        return self.tensor.element_type

    @property
    def layout(self) -> Layout:
        """CuTe's layout of the partition, shaped as `shape`: mode 0 the elements this CTA
        copies in shared-memory address order, as CuTe's tma_partition orders the TMA's
        vector (a dense 64x64 box: ((4096,1)):((1,0))), then the tensor's other modes. Its
        size is what the copy moves (what `cute.size_in_bytes` of it counts). Modelled for
        a shared-memory partition whose elements are evenly spaced; the offset of the first
        is in `iterator`, as CuTe's."""
        stride, _ = self._mode0_spacing()
        lay = self.tensor.layout
        rest = lay.stride[1:] if isinstance(lay.stride, tuple) else ()
        return Layout(self.shape, ((stride,),) + tuple(rest))

    @property
    def iterator(self):
        """Where the partition starts: the tensor's iterator moved to the first element
        this CTA copies (in address order)."""
        if isinstance(self.tensor.iterator, Coordinates):
            if list(self.select) != list(range(self.box)):
                raise Unmodelled("the iterator of a multicast TMA partition of the TMA tensor")
            return self.tensor.iterator
        _, first = self._mode0_spacing()
        return self.tensor.iterator + first if first else self.tensor.iterator

    def _mode0_spacing(self) -> tuple:
        """(stride, first offset) of the selected box elements in address order; refused
        where CuTe's layout would differ from anything an int stride says: the TMA tensor's
        coordinates (CuTe's basis strides), a swizzled layout, unevenly spaced elements."""
        lay = self.tensor.layout
        if isinstance(self.tensor.iterator, Coordinates):
            raise Unmodelled("the layout of a TMA partition of the TMA tensor (basis strides)")
        if isinstance(lay, ComposedLayout):
            raise Unmodelled("the layout of a TMA partition of a tensor with a swizzled layout")
        mode0 = np.sort(np.asarray(lay.offsets)[: self.box][self.select])
        steps = np.unique(np.diff(mode0))
        if len(steps) > 1:
            raise Unmodelled("the layout of a TMA partition whose elements are unevenly spaced")
        return (int(steps[0]) if len(steps) else 0), int(mode0[0])

    def filtered(self, out: Tensor) -> "TmaView":
        """This view on `out`, its tensor with the stride-0 elements of mode 0 dropped
        (cute.filter_zeros): the box shrinks to what is left of mode 0, and this CTA keeps
        the elements at the offsets it had. A multicast part (course.execute.tma's
        tma_partition: the CTA's share of the box in address order) is whole groups of
        elements at one offset, as CuTe's is (a share of the TMA's vector, which names each
        offset once); a part that splits such a group has no meaning after the filter."""
        box = product(out.shape[0])
        before, after = _mode0_offsets(self.tensor, self.box), _mode0_offsets(out, box)
        mine = before[self.select]
        if len(np.unique(after)) != box:
            raise Unmodelled("filter_zeros of a TMA partition whose box repeats an offset")
        if np.isin(before, mine).sum() != len(self.select):
            raise Unmodelled("filter_zeros of a multicast TMA partition splitting an offset")
        return TmaView(out, np.flatnonzero(np.isin(after, mine)), box)

    def offsets(self) -> np.ndarray:
        """The layout offsets (through a swizzled layout's swizzle) of the selected
        elements of the box; the view must be sliced down to one box."""
        lay = self.tensor.layout
        if lay.size != self.box:
            raise Unmodelled(
                f"a TMA copy of {lay.size} elements: a partition sliced to one box of "
                f"{self.box} (tXs[None, i])"
            )
        return np.asarray(lay.offsets)[self.select]


def _mode0_offsets(tensor: Tensor, box: int) -> np.ndarray:
    """The offsets of mode 0's elements (colexicographic: they come first), before any
    swizzle (a bijection: it keeps which offsets are equal)."""
    lay = tensor.layout
    outer = lay.outer if isinstance(lay, ComposedLayout) else lay
    return np.asarray(outer.offsets)[:box]


def _is_zero(c) -> bool:
    if isinstance(c, tuple):
        return all(_is_zero(e) for e in c)
    return isinstance(c, (int, np.integer)) and int(c) == 0


def tma_partition(atom, cta_coord, cta_layout, smem_tensor, gmem_tensor, **_):
    """(shared view, global view): mode 0 of each is the box; a multicast atom's CTA
    `cta_coord` of `size(cta_layout)` takes its part of the box in address order."""
    if not isinstance(atom, TmaAtom):
        raise Unmodelled(f"tma_partition of {type(atom).__name__}")
    if isinstance(gmem_tensor, (list, tuple)):
        raise Unmodelled("tma_partition of gather4/scatter4 tensors")
    box = product(smem_tensor.shape[0])
    if product(gmem_tensor.shape[0]) != box:
        raise Hazard(
            hazards.CRASH,
            f"tma_partition: a shared box of {box} elements for a global tile of "
            f"{product(gmem_tensor.shape[0])}",
            hazards.site(2),
        )
    parts = product(cta_layout.shape) if hasattr(cta_layout, "shape") else 1
    rank = uniform(cta_coord[0] if isinstance(cta_coord, tuple) else cta_coord, "a CTA coordinate")
    order = np.arange(box)
    if parts > 1:  # multicast: this CTA's part of the box, in shared-memory address order
        first = _mode0_offsets(smem_tensor, box)
        chunk = box // parts
        order = np.sort(np.argsort(first, kind="stable")[rank * chunk : (rank + 1) * chunk])
    return TmaView(smem_tensor, order, box), TmaView(gmem_tensor, order, box)


# ---------------------------------------------------------------- copies


@dataclass
class Load:
    """A TMA load in flight: the bytes it will write into each destination CTA's shared
    memory, and the barrier each counts down on."""

    dests: list  # (SharedMemory, element indices, mbarrier Slot)
    dtype: object
    values: np.ndarray
    nbytes: int
    site: Site
    id: int = -1
    landed: bool = field(default=False)
    tensor: str = "a global tensor"  # what it loads (for the hazard at exit)

    def land(self) -> None:
        if self.landed:
            return
        self.landed = True
        for smem, elems, slot in self.dests:
            b = _bytes(self.dtype, elems)
            smem.check_readers_in_flight(b, lambda k: "a TMA load lands in", self.site)
            smem.typed(self.dtype)[elems] = self.dtype.encode(self.values)
            smem.copies.pop(self.id, None)
            mine = smem.inflight[b] == self.id
            smem.inflight[b[mine]] = -1
            smem.landed(b)
            smem.unfenced[b] = False
            # the phase its bytes count towards: some wait must see it complete (finish)
            smem.cta.__dict__.setdefault("tma_loads", []).append((slot, slot.model.phase, self))
            mbarriers.complete_tx(slot, self.nbytes, self.site)


def _bytes(dtype, elems: np.ndarray) -> np.ndarray:
    return element_byte_span(dtype, elems)  # 4-bit elements: a byte per element (twice)


_NEXT = [1 << 30]  # TMA copies' ids in the in-flight map, apart from cp.async's


def _coords(view: TmaView) -> tuple:
    it = view.tensor.iterator
    if not isinstance(it, Coordinates):
        raise Unmodelled("a TMA copy whose global side is not the TMA tensor")
    packed = view.offsets()
    origin = [uniform(o, "a TMA coordinate") for o in it.origin]
    digits = unpack(packed.astype(np.int64), it.rank)
    return tuple(np.asarray(d) + o for d, o in zip(digits, origin))


def _gmem_elements(atom: TmaAtom, coords: tuple):
    """(global element indices, in-bounds mask) of coordinates of the global tensor."""
    g = atom.gmem
    inside = np.ones(len(coords[0]), bool)
    offset = np.zeros(len(coords[0]), np.int64)
    for c, (n, s) in zip(coords, atom.coord_modes):
        inside &= (c >= 0) & (c < n)
        offset += np.where(inside, c, 0) * int(s)
    return g.iterator.elements(offset), inside


def _smem_elements(view: TmaView) -> tuple:
    t = view.tensor
    if not isinstance(t.iterator, Pointer) or t.iterator.memory.space != "smem":
        raise Unmodelled("a TMA copy whose shared side is not a shared-memory tensor")
    elems = np.asarray(t.iterator.elements(view.offsets()))
    if elems.ndim == 2:  # an address per lane: the issuing (elected, first active) lane's
        w = machine.warp()
        elems = elems[int(w.lanes_active()[0]) if elems.shape[0] == w.width else 0]
    return t.iterator.memory, elems.reshape(-1)


def copy(atom: TmaAtom, src, dst, tma_bar_ptr=None, mcast_mask=None, **kwargs) -> None:
    site = hazards.site(3)
    w = machine.warp()
    if not len(w.active_tids()):
        return
    what = "a TMA load (cute.copy)" if atom.is_load else "a TMA store (cute.copy)"
    machine.collective(machine.SELF_ELECTED.format(what), site)
    if atom.is_load:
        _load(atom, src, dst, tma_bar_ptr, mcast_mask, site, w)
    else:
        _store(atom, src, dst, site, w)


def _load(atom, src, dst, bar, mcast_mask, site, w) -> None:
    if bar is None:
        raise Hazard(hazards.CRASH, "a TMA load with no tma_bar_ptr", site)
    smem, elems = _smem_elements(dst)
    gelems, inside = _gmem_elements(atom, _coords(src))
    dtype = dst.element_type
    if is_sub_byte(dtype):
        _check_whole_bytes(dtype, elems, gelems, inside, site)
    gmem = atom.gmem.iterator.memory
    values = np.zeros(len(gelems), dtype=np.float64)
    if inside.any():
        got = gmem.load(dtype, None, np.asarray(gelems)[inside][None, :], site)
        values = np.zeros(len(gelems), dtype=np.asarray(got).dtype)
        values[inside] = np.asarray(got).reshape(-1)
    ranks = [w.cta.rank]
    if atom.kind.endswith("MulticastOp"):
        if mcast_mask is None:
            raise Hazard(hazards.CRASH, "a multicast TMA load with no mcast_mask", site)
        mask = uniform(mcast_mask, "a multicast mask")
        ranks = [r for r in range(len(w.cta.cluster.ctas)) if mask >> r & 1]
    dests = []
    copy_id = _NEXT[0]
    _NEXT[0] += 1
    for r in ranks:
        cta = w.cta.cluster.ctas[r]
        target = cta.smem if r != w.cta.rank else smem
        owner = _barrier_owner(atom, r)
        slot = mbarriers.barrier_at(bar, None if owner == w.cta.rank else owner, site)
        b = _bytes(dtype, elems)
        # it may land any time from now: bytes an asynchronous reader (a wgmma) still
        # reads are overwritten already (a stage released before its wait_group)
        target.check_readers_in_flight(b, lambda k: "a TMA load (it may land at once) writes", site)
        flying = target.inflight[b]
        if (flying >= 0).any():
            raise Hazard(
                hazards.WRITE_IN_FLIGHT,
                f"a TMA load by {threads_text(w.active_tids()[:1].tolist())} into "
                f"{target.describe(int(b[int(np.argmax(flying >= 0))]))} of CTA {cta.block} "
                f"while an earlier copy into it is still in flight",
                site,
            )
        completions = [  # a wgmma's reads end at its completion, not at one warp's wait
            x
            for x in target.__dict__.get("touchers", [])
            if isinstance(x, happens_before.Completion) and x.cta is cta
        ]
        late = happens_before.unordered(w, list(cta.warps) + completions, target, b)
        if late is not None:
            x, byte = late
            raise Hazard(
                hazards.STAGE_OVERWRITE,
                f"a TMA load by {threads_text(w.active_tids()[:1].tolist())} into "
                f"{target.describe(byte)} of CTA {cta.block}, which warp {x.index} of CTA "
                f"{x.cta.block} touched (last read at {target._site(int(target.r_site[byte]))}) "
                f"with no mbarrier arrive it waited for since (nor a barrier): the stage is "
                f"overwritten while still in use (released too early?)",
                site,
                hazards.Cause(
                    hazards.RELEASED_EARLY,
                    target.describe(byte),
                    expected=x.index,
                    observed=w.index,
                    unit=happens_before.toucher_unit(x, target, byte),
                ),
            )
        target.inflight[b] = copy_id
        target.copies[copy_id] = AsyncCopy(
            copy_id,
            w.active_tids()[:1],
            elems[None, :],
            dtype,
            values[None, :],
            site,
            what=hazards.UNIT_TMA_LOAD,
            retired_by="no mbarrier wait has seen its bytes land",
        )
        dests.append((target, elems, slot))
    load = Load(dests, dtype, values, len(np.unique(_bytes(dtype, elems))), site, copy_id,
                tensor=gmem.name)  # fmt: skip
    w.cta.cluster.inflight.append(load)


def _check_whole_bytes(dtype, elems, gelems, inside, site) -> None:
    """A TMA box of 4-bit elements moves bytes (dense, two elements a byte: the packed
    layout kind::mxf4nvf4 reads): each byte it writes must get both its nibbles, from one
    global byte, in the same order. Anything else (a box splitting bytes, the 16-byte
    aligned unpacked fp4 types of kind::mxf8f6f4) is not modelled."""
    e, g = np.asarray(elems).reshape(-1), np.asarray(gelems).reshape(-1)
    order = np.argsort(e, kind="stable")
    e, g, ins = e[order], g[order], np.asarray(inside).reshape(-1)[order]
    ok = len(e) % 2 == 0
    if ok:
        lo, hi = e[0::2], e[1::2]
        ok = bool((lo % 2 == 0).all() and (hi == lo + 1).all())
        glo, ghi = g[0::2], g[1::2]
        both_in = ins[0::2] & ins[1::2]
        ok = ok and bool((ins[0::2] == ins[1::2]).all())
        ok = ok and bool(((glo[both_in] % 2 == 0) & (ghi[both_in] == glo[both_in] + 1)).all())
    if not ok:
        raise Unmodelled(
            f"a TMA box of {dtype} that does not move whole bytes (element pairs 2i, 2i+1 of "
            "shared memory from pairs 2j, 2j+1 of global memory)"
        )


def _barrier_owner(atom: TmaAtom, rank: int) -> int:
    """The CTA whose mbarrier a load into CTA `rank` completes on: its own, or with
    .cta_group::2 (a Blackwell CTA pair's operands) the pair's leader's (barrier aliasing:
    the leader's full barrier counts both CTAs' bytes)."""
    return rank & ~1 if atom.op.names("CtaGroup.TWO") else rank


@dataclass
class Store:
    """A TMA store still reading its shared bytes (a hold on them until wait_group.read)."""

    smem: object
    token: int
    site: Site | None = None
    gmem: object = None  # the global memory it writes, and where (element indices)
    gelems: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def _store(atom, src, dst, site, w) -> None:
    smem, elems = _smem_elements(src)
    dtype = src.element_type
    b = _bytes(dtype, elems)
    flying = smem.inflight[b]
    if (flying >= 0).any():
        raise Hazard(
            hazards.IN_FLIGHT,
            f"a TMA store reads {smem.describe(int(b[int(np.argmax(flying >= 0))]))} while a "
            f"copy into it is still in flight",
            site,
            hazards.Cause(
                hazards.READ_IN_FLIGHT,
                smem.describe(int(b[int(np.argmax(flying >= 0))])),
                unit=hazards.UNIT_TMA_STORE,
            ),
        )
    stale = smem.unfenced[b]
    if stale.any():
        k = int(np.argmax(stale))
        writer = int(smem.w_tid[b[k]])
        raise Hazard(
            PROXY_FENCE,
            f"a TMA store by {threads_text(w.active_tids()[:1].tolist())} reads "
            f"{smem.describe(int(b[k]))}, which {threads_text([writer])} wrote at "
            f"{smem._site(int(smem.w_site[b[k]]))} with no fence.proxy.async "
            f"(cute.arch.fence_proxy('async.shared')) since: the TMA unit may not see it",
            site,
            hazards.Cause(
                hazards.UNFENCED,
                smem.describe(int(b[k])),
                expected=w.index,
                observed=writer // 32,
                unit=hazards.UNIT_TMA_STORE,
            ),
        )
    issuer = int(w.active_tids()[0])
    race = smem.unordered_writes(w, b, np.full(len(b), issuer))
    if race.any():
        k = int(np.argmax(race))
        raise Hazard(
            hazards.RACE,
            f"a TMA store by {threads_text([issuer])} reads {smem.describe(int(b[k]))}, "
            f"which {threads_text([int(smem.w_tid[b[k]])])} wrote with no barrier between",
            site,
        )
    values = dtype.decode(smem.typed(dtype)[elems])
    gelems, inside = _gmem_elements(atom, _coords(dst))
    written = np.asarray(gelems)[inside]
    _check_no_twin(w, atom.gmem.iterator.memory, written, site)
    if inside.any():
        atom.gmem.iterator.memory.store(
            dtype, None, np.asarray(gelems)[inside][None, :], values[inside][None, :], site
        )
    reader = f"the TMA store of {threads_text([issuer])} issued at {site.describe()}"
    store = Store(smem, -1, site, atom.gmem.iterator.memory, written)
    again = _stored_again(smem, np.unique(b))
    store.token = smem.hold(np.unique(b), reader, lambda: _store_cause(w, store, again))
    w.bulk_pending.append(store)


def _stored_again(smem, b: np.ndarray) -> bool:
    """Do all of bytes `b` hold what an earlier TMA store already read, no thread having
    written them since (the same write instruction last wrote them)? A store of a buffer
    the chunk was not written to: an earlier chunk's data again."""
    seen = smem.__dict__.setdefault("tma_stored_serial", np.full(smem.w_serial.shape, -1, np.int32))
    serials = smem.w_serial[b]
    again = bool(len(b)) and bool(((seen[b] == serials) & (serials >= 0)).all())
    seen[b] = serials
    return again


def _store_cause(w, store: Store, again: bool) -> hazards.Cause:
    """How a TMA store that still reads its bytes stands (a write over them completes the
    cause: course.execute.memory.SharedMemory.hold): a store of bytes already stored, or
    not committed, not waited for at all, or not retired by the waits so far."""
    if again:
        what = hazards.STORED_AGAIN
    elif any(x is store for x in w.bulk_pending):
        what = hazards.UNCOMMITTED
    elif not w.__dict__.get("bulk_waits", 0):
        what = hazards.NEVER_WAITED
    else:
        what = hazards.NOT_RETIRED
    return hazards.Cause(what, "", expected=w.index, unit=hazards.UNIT_TMA_STORE)


def _check_no_twin(w, gmem, written: np.ndarray, site: Site) -> None:
    """A TMA store writing global elements that another warp's store, still in flight,
    writes too: two unordered writes of the same bytes (a store every warp issues, where
    one warp should)."""
    for x in w.cta.warps:
        if x is w:
            continue
        for store in [s for g in x.bulk_groups for s in g] + x.bulk_pending:
            if store.gmem is gmem and np.isin(written, store.gelems).any():
                raise Hazard(
                    hazards.RACE,
                    f"a TMA store by warp {w.index} writes the same elements of "
                    f"{gmem.name} as warp {x.index}'s, issued at {store.site.describe()} and "
                    f"still in flight: two unordered stores of one chunk (every warp issues "
                    f"it, where one warp should)",
                    site,
                    hazards.Cause(
                        hazards.TWO_STORES,
                        gmem.name,
                        expected=x.index,
                        observed=w.index,
                        unit=hazards.UNIT_TMA_STORE,
                    ),
                )


def bulk_commit_group() -> None:
    w = machine.warp()
    w.bulk_groups.append(w.bulk_pending)
    w.bulk_pending = []


def bulk_wait_group(n, read=None) -> None:
    """Retire all but the newest n bulk groups of this warp: their stores have read their
    shared memory (and, without read=True, written global memory: both, here)."""
    w = machine.warp()
    n = int(n)
    site = hazards.site(3)
    w.bulk_waits = w.__dict__.get("bulk_waits", 0) + 1
    while len(w.bulk_groups) > n:
        for store in w.bulk_groups.popleft():
            store.smem.unhold(store.token, by=w, site=site)


NOT_DRAINED = hazards.NOT_DRAINED  # its kind (hazards.KINDS says what it means)
LOAD_NOT_WAITED = hazards.LOAD_NOT_WAITED  # its kind (hazards.KINDS says what it means)


# Why an undrained TMA store at exit is a note, not a hazard. The PTX ISA makes an
# asynchronous copy undefined only through what the program does to its operands: "Once an
# asynchronous copy operation is initiated, modifying the source memory location or tensor
# descriptor or reading from the destination memory location before the asynchronous
# operation completes, exhibits undefined behavior" (9.7.9.25.1, Completion Mechanisms for
# Asynchronous Copy Operations). A CTA's exit is none of these, and `exit` ("Ends execution
# of a thread", 9.7.12.7) says nothing of bulk operations in flight. Where the ISA does
# forbid an exit, it is a *peer's* shared memory: "The executing CTA has to make sure that
# the shared memory of the peer CTA exists before communicating with it via shared memory
# and the peer CTA hasn't exited before completing the shared memory operation" (2.2.2) --
# and a bulk store (cp.async.bulk.global.shared::cta) reads only its own CTA's. So NVIDIA's
# tutorial tma_v0..v2, whose CTAs end right after their TMA store, are defined programs; the
# course's kernels still drain (PipelineTmaStore.producer_tail()), and the note says so.
def finish(cta) -> None:
    """The CTA's exit (course.execute.machine.Cluster): a TMA load into its shared memory
    that no mbarrier wait saw land may still be writing it: a hazard. A TMA store whose
    bulk group no `cp_async_bulk_wait_group` retired may still be reading its own CTA's
    shared memory: a note (hazards.Note on the launch, once per store site; see above)."""
    for slot, phase, load in mbarriers.never_waited(cta, "tma_loads"):
        raise Hazard(
            LOAD_NOT_WAITED,
            f"CTA {cta.block} exits while its TMA load of {load.tensor} issued at "
            f"{load.site.describe()} is still in flight: no mbarrier wait saw it land "
            f"(on {slot.name}, phase {phase})",
            load.site,
        )
    for w in cta.warps:
        for group in list(w.bulk_groups) + [w.bulk_pending]:
            for store in group:
                notes, site = cta.launch.notes, store.site or hazards.UNKNOWN
                if any(n.kind == NOT_DRAINED and n.site == site for n in notes):
                    continue
                b, reader = store.smem.holds.get(store.token, (None, "a TMA store"))
                where = f" {store.smem.describe(int(b[0]))}" if b is not None and len(b) else ""
                notes.append(
                    hazards.Note(
                        NOT_DRAINED,
                        f"CTA {cta.block} exits while {reader} may still be reading{where}: "
                        f"its bulk group was never waited for (cp_async_bulk_wait_group(0, "
                        f"read=True)). The PTX ISA leaves this defined (the store reads only "
                        f"its own CTA's shared memory, which the exit does not modify); the "
                        f"course's kernels drain first (PipelineTmaStore.producer_tail())",
                        site,
                    )
                )
