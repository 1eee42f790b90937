"""Copies and MMAs on the executor: CuTe's atoms, their tiled forms, and what they do.

A copy atom, TiledCopy, MMA op or TiledMMA is kept as the CuTe DSL call that makes it
(`oracle.Recipe`); everything static about it -- its TV layouts, how it partitions a tensor
for each thread, its fragments, a retile -- is asked of CuTe (course.execute.oracle). What
an instruction *does* is the executor's:

* a universal copy moves each thread's values itself; a vector atom (num_bits_per_copy
  above the element width) must find its values in contiguous, aligned memory, as the
  GPU's 64/128-bit loads and stores must;
* `cp.async` (CopyG2SOp) is issued into shared memory and stays in flight until the
  issuing thread's `cp_async_wait_group` retires its group (course.execute.memory);
* `ldmatrix` (LdMatrix*Op) is warp-wide: all 32 lanes come, each with the shared-memory
  rows its source partition names, and the values land in the lanes the atom's
  destination layout names; `stmatrix` (StMatrix*Op) is the same the other way round;
* `mma.sync` (MmaF16BF16Op) is warp-wide: the 32 lanes' fragments are put together into
  16x8x16 tiles with the atom's TV layouts, multiplied (exact products, fp32 accumulation,
  one rounding toward zero per k-atom, as the H100's), and handed back; the universal FMA
  op is per thread.
"""

from __future__ import annotations

import numpy as np

from course.execute import hazards, machine, oracle
from course.execute.lanes import Lanes, lanes
from course.execute.static_layout import Layout, product
from course.execute.memory import GMEM, RMEM, SMEM, Registers
from course.execute.numeric import DType, accumulate_k
from course.execute.oracle import Recipe
from course.execute.hazards import Hazard, Unmodelled
from course.execute.tensor import Pointer, Tensor, _note, register_tensor

COPY_KINDS = {
    "CopyUniversalOp": "universal",
    "CopyG2ROp": "universal",  # ld.global into registers, as a universal copy does it
    "CopyR2GOp": "universal",  # st.global from registers
    "CopyG2SOp": "cp.async",
    "CopyDsmemStoreOp": "st.async",  # into a peer CTA's shared memory (course.execute.dsmem_stores)
    "LdMatrix8x8x16bOp": "ldmatrix",
    "LdMatrix16x16x8bOp": "ldmatrix",
    "LdMatrix8x16x8bOp": "ldmatrix",
    "StMatrix8x8x16bOp": "stmatrix",
    "StMatrix16x8x8bOp": "stmatrix",
}
MMA_KINDS = {"MmaUniversalOp": "fma", "MmaF16BF16Op": "mma.sync", "MmaFP8Op": "mma.sync"}


class CopyAtom(hazards.Standin):
    """cute.make_copy_atom(op, dtype, num_bits_per_copy=...)."""

    REAL = (
        "cutlass.cute.atom:CopyAtom",
        "cutlass.cute.atom:TiledCopy",
        "cutlass.cute.atom:ThrCopy",
    )

    def __init__(self, recipe: Recipe, op: Recipe, dtype: DType, bits: int | None):
        self.recipe, self.op, self.dtype, self.bits = recipe, op, dtype, bits
        self.kind = COPY_KINDS.get(op.name, "")

    def oracle_key(self):
        return self.recipe.key

    def to_real(self):
        return self.recipe.real()

    def __str__(self) -> str:
        return f"CopyAtom({self.op.name}, {self.dtype}, {self.bits} bits)"

    @property
    def value_type(self) -> DType:
        return self.dtype

    def _attr(self, name):
        return oracle.attribute(self.recipe, name)

    layout_src_tv = property(lambda self: self._attr("layout_src_tv"))
    layout_dst_tv = property(lambda self: self._attr("layout_dst_tv"))
    thr_id = property(lambda self: self._attr("thr_id"))

    @property
    def atom_recipe(self) -> Recipe:
        return self.recipe


class TiledCopy(CopyAtom):
    """A TiledCopy (make_tiled_copy_tv, make_tiled_copy_A, ...)."""

    def __init__(self, recipe: Recipe, atom: CopyAtom):
        super().__init__(recipe, atom.op, atom.dtype, atom.bits)
        self.atom = atom

    @property
    def atom_recipe(self) -> Recipe:
        return self.atom.recipe

    @property
    def size(self) -> int:
        return self._attr("size")

    layout_tv_tiled = property(lambda self: self._attr("layout_tv_tiled"))
    tiler_mn = property(lambda self: self._attr("tiler_mn"))

    def partition_tile(self, which: str) -> tuple:
        """The shape of one tile this copy partitions: its tiler's extents. A tiler mode
        that is a layout spans its cosize, which is more than its size where it picks
        elements apart (make_cotiled_copy's tiler (8,16,8):(8,128,1) spans 1984): a
        thread's start is then a coordinate of that span, not of a compact tile."""
        tiler = self.tiler_mn
        tiler = tiler if isinstance(tiler, tuple) else (tiler,)
        return tuple(max(t.size, t.cosize) if isinstance(t, Layout) else product(t) for t in tiler)

    layout_src_tv_tiled = property(lambda self: self._attr("layout_src_tv_tiled"))
    layout_dst_tv_tiled = property(lambda self: self._attr("layout_dst_tv_tiled"))

    def get_slice(self, thr_idx) -> "ThrCopy":
        return ThrCopy(self, thread_index(thr_idx))

    def retile(self, tensor: Tensor) -> Tensor:
        if not _is_registers(tensor):
            raise Unmodelled("retile of a tensor not in registers")
        delta, layout = oracle.retile(self.recipe, tensor.layout, tensor.element_type)
        return tensor.moved(delta, layout)


def thread_index(t):
    return t if isinstance(t, Lanes) else int(t)


def partition_for(op, which: str, tensor: Tensor, thr_idx) -> Tensor:
    """The thread's (or each lane's) partition of `tensor` by a TiledCopy/TiledMMA.

    CuTe gives the layout (thread 0's partition, computed once per layout) and where each
    thread starts within one tile (computed once per tiled op); a thread's start in this
    tensor is the tensor's own layout at that coordinate, for all lanes at once."""
    lay = tensor.domain_layout
    delta0, layout = oracle.first_partition(op.recipe, which, lay)
    tile = op.partition_tile(which)
    starts = oracle.thread_starts(op.recipe, which, tile, op.size)
    ids = thr_idx.v if isinstance(thr_idx, Lanes) else np.array([thr_idx])
    if ids.min() < 0 or ids.max() >= len(starts):
        # a thread index outside the op (dense_gemm_persistent's DMA warpgroup slices the
        # MMA at index -128 and never uses it): CuTe computes its partition all the same,
        # by the TV layout's arithmetic; an access through it is checked where it happens
        start_of = dict(enumerate(starts))
        outside = tuple(sorted(set(ids.tolist()) - start_of.keys()))
        start_of.update(zip(outside, oracle.thread_starts_at(op.recipe, which, tile, outside)))
        starts_of_ids = np.array([start_of[i] for i in ids.tolist()], dtype=np.int64)
    else:
        starts_of_ids = np.asarray(starts, dtype=np.int64)[ids]
    from course.execute.static_layout import idx2crd

    start = Lanes(starts_of_ids)
    crd = idx2crd(start, tile)
    crd = crd if isinstance(crd, tuple) else (crd,)
    rank = lay.rank
    crd = tuple(crd[:rank]) + (0,) * max(rank - len(crd), 0)
    offsets = lay(crd if rank > 1 else crd[0])
    first = lay((0,) * rank if rank > 1 else 0)
    moved = (
        offsets - first + delta0
        if isinstance(offsets, Lanes)
        else Lanes(np.full(ids.size, offsets - first + delta0))
    )
    delta = lanes(moved.v) if isinstance(thr_idx, Lanes) else int(moved.v[0])
    return tensor.moved(delta, layout)


class _ThreadSlice:
    """What get_slice(t) gives: the tiled op, for thread t (or for each lane's t)."""

    thr_idx = 0

    def _partition(self, which: str, tensor: Tensor) -> Tensor:
        return partition_for(self, which, tensor, self.thr_idx)


class ThrCopy(_ThreadSlice, TiledCopy):
    """One thread's (or each lane's) slice of a TiledCopy."""

    def __init__(self, tiled: TiledCopy, thr_idx):
        super().__init__(tiled.recipe, tiled.atom)
        self.thr_idx = thr_idx

    def partition_S(self, tensor: Tensor) -> Tensor:
        return self._partition("partition_S", tensor)

    def partition_D(self, tensor: Tensor) -> Tensor:
        return self._partition("partition_D", tensor)


def _is_registers(t: Tensor) -> bool:
    return isinstance(t.iterator, Pointer) and t.iterator.memory.space == RMEM


# ---------------------------------------------------------------- MMAs


class TiledMma(hazards.Standin):
    """cute.make_tiled_mma(op, atom_layout_mnk, permutation_mnk) (or an MMA atom)."""

    REAL = ("cutlass.cute.atom:MmaAtom", "cutlass.cute.atom:TiledMma", "cutlass.cute.atom:ThrMma")

    def __init__(self, recipe: Recipe, op: Recipe):
        self.recipe, self.op = recipe, op
        self.kind = MMA_KINDS.get(op.name, "")

    def oracle_key(self):
        return self.recipe.key

    def to_real(self):
        return self.recipe.real()

    def __str__(self) -> str:
        return f"TiledMma({self.op.name})"

    def _attr(self, name):
        return oracle.attribute(self.recipe, name)

    size = property(lambda self: self._attr("size"))
    shape_mnk = property(lambda self: self._attr("shape_mnk"))
    thr_id = property(lambda self: self._attr("thr_id"))
    tv_layout_A = property(lambda self: self._attr("tv_layout_A"))
    tv_layout_B = property(lambda self: self._attr("tv_layout_B"))
    tv_layout_C = property(lambda self: self._attr("tv_layout_C"))
    tv_layout_A_tiled = property(lambda self: self._attr("tv_layout_A_tiled"))
    tv_layout_B_tiled = property(lambda self: self._attr("tv_layout_B_tiled"))
    tv_layout_C_tiled = property(lambda self: self._attr("tv_layout_C_tiled"))
    permutation_mnk = property(lambda self: self._attr("permutation_mnk"))
    thr_layout_vmnk = property(lambda self: self._attr("thr_layout_vmnk"))

    def get_tile_size(self, mode: int):
        return oracle.method(self.recipe, "get_tile_size", int(mode))

    def partition_shape_A(self, shape):
        return oracle.method(self.recipe, "partition_shape_A", shape)

    def partition_shape_B(self, shape):
        return oracle.method(self.recipe, "partition_shape_B", shape)

    def partition_shape_C(self, shape):
        return oracle.method(self.recipe, "partition_shape_C", shape)

    # the TiledMMA's thread-value split of a layout (CuTe DSL's own helpers, private by
    # name, which NVIDIA's mixed-input GEMM sizes its scale copies with): layout algebra
    def _thrfrg_A(self, layout):
        return oracle.method(self.recipe, "_thrfrg_A", layout)

    def _thrfrg_B(self, layout):
        return oracle.method(self.recipe, "_thrfrg_B", layout)

    def _thrfrg_C(self, layout):
        return oracle.method(self.recipe, "_thrfrg_C", layout)

    def get_slice(self, thr_idx) -> "ThrMma":
        return ThrMma(self, thread_index(thr_idx))

    def partition_tile(self, which: str) -> tuple:
        """(M, K), (N, K) or (M, N) of the TiledMMA's tile, for partition_A, _B or _C."""
        m, n, k = (int(product(self.get_tile_size(i))) for i in range(3))
        return {"partition_A": (m, k), "partition_B": (n, k), "partition_C": (m, n)}[which]

    def _fragment(self, which: str, x) -> Tensor:
        if isinstance(x, Tensor):
            if x.is_coordinates:
                raise Unmodelled(f"{which} of a coordinate tensor")
            space = x.iterator.memory.space
            layout, dtype = oracle.fragment(self.recipe, which, space, x.element_type, x.layout)
        else:
            made = oracle.method(self.recipe, which, x)
            if not (isinstance(made, tuple) and made and made[0] == "tensor"):
                raise Unmodelled(f"{which} of {x!r}")
            dtype, layout = made[1], made[2]
        return register_tensor(layout, dtype, which.replace("make_fragment_", "fragment "))

    def make_fragment_A(self, x) -> Tensor:
        return self._fragment("make_fragment_A", x)

    def make_fragment_B(self, x) -> Tensor:
        return self._fragment("make_fragment_B", x)

    def make_fragment_C(self, x) -> Tensor:
        return self._fragment("make_fragment_C", x)


class ThrMma(_ThreadSlice, TiledMma):
    """One thread's (or each lane's) slice of a TiledMMA."""

    def __init__(self, tiled: TiledMma, thr_idx):
        super().__init__(tiled.recipe, tiled.op)
        self.thr_idx = thr_idx

    def partition_A(self, t: Tensor) -> Tensor:
        return self._partition("partition_A", t)

    def partition_B(self, t: Tensor) -> Tensor:
        return self._partition("partition_B", t)

    def partition_C(self, t: Tensor) -> Tensor:
        return self._partition("partition_C", t)


# ---------------------------------------------------------------- moving values


def _pointer(t: Tensor) -> Pointer:
    if not isinstance(t.iterator, Pointer):
        raise Unmodelled("copying to or from a coordinate tensor")
    return t.iterator


def _who(mem, rows, tids):
    return rows if mem.space == RMEM else tids


def _gather(
    t: Tensor, E: np.ndarray, emask: np.ndarray, rows, tids, site, width: int = 0
) -> np.ndarray:
    """Values (R, n) of elements E (R, n) where emask holds (0 elsewhere)."""
    ptr = _pointer(t)
    mem = ptr.memory
    out = np.zeros(E.shape, dtype=ptr.dtype.compute if ptr.dtype.name != "BFloat16" else np.float32)
    if not emask.any():
        return out
    _note(machine.current_warp(), mem, site, E, ptr.dtype, width)
    n = E.shape[1]
    who = np.repeat(_who(mem, rows, tids), n)[emask.reshape(-1)]
    out[emask] = mem.load(ptr.dtype, who, E[emask][:, None], site)[:, 0]
    return out


def _scatter(
    t: Tensor, E: np.ndarray, emask: np.ndarray, values, rows, tids, site, width: int = 0
) -> None:
    ptr = _pointer(t)
    mem = ptr.memory
    if not emask.any():
        return
    _note(machine.current_warp(), mem, site, E, ptr.dtype, width)
    n = E.shape[1]
    who = np.repeat(_who(mem, rows, tids), n)[emask.reshape(-1)]
    v = np.broadcast_to(values, E.shape)[emask]
    mem.store(ptr.dtype, who, E[emask][:, None], v[:, None], site)


def _check_vectors(t: Tensor, E: np.ndarray, per: int, bits: int, cmask: np.ndarray, site):
    """A vector access needs `per` contiguous elements starting on a multiple of its width
    (in shared and global memory; registers have no addresses)."""
    if per <= 1 or _pointer(t).memory.space == RMEM:
        return
    groups = E.reshape(E.shape[0], -1, per)[cmask]
    if not groups.size:
        return
    contiguous = (np.diff(groups, axis=1) == 1).all(axis=1)
    aligned = (groups[:, 0] * t.iterator.dtype.storage.itemsize) % (bits // 8) == 0
    bad = ~(contiguous & aligned)
    if bad.any():
        k = int(np.argmax(bad))
        raise Hazard(
            hazards.MISALIGNED,
            f"a {bits}-bit access of elements {groups[k].tolist()} of "
            f"{t.iterator.memory.name}: they must be {per} contiguous elements "
            f"starting on a {bits // 8}-byte boundary",
            site,
        )


def _call_mask(pred: Tensor | None, calls: int, rows, site) -> np.ndarray:
    """(R, calls): which copy instructions each active lane makes."""
    if pred is None:
        return np.ones((len(rows), calls), dtype=bool)
    if not isinstance(pred.iterator, Pointer):
        raise Unmodelled("a predicate that is not a tensor of booleans")
    held = pred.values()  # one register read: it walks the stack and decodes
    values = held[rows] if held.shape[0] > 1 else np.broadcast_to(held, (len(rows), pred.size))
    if values.shape[1] != calls:
        if values.shape[1] == 1:
            return np.broadcast_to(values.astype(bool), (len(rows), calls))
        raise Hazard(
            hazards.CRASH,
            f"a predicate of {values.shape[1]} values for {calls} copy instructions",
            site,
        )
    return values.astype(bool)


def _rows():
    from course.execute.tensor import _lanes_now

    return _lanes_now()


def copy(atom, src: Tensor, dst: Tensor, pred: Tensor | None = None, **kwargs) -> None:
    """cute.copy(atom, src, dst, pred=...)."""
    if not isinstance(atom, CopyAtom):
        raise Unmodelled(f"cute.copy with {type(atom).__name__}")
    site = hazards.site(2)
    if atom.kind in ("ldmatrix", "stmatrix"):
        _ldmatrix(atom, src, dst, pred, site)
        return
    if atom.kind not in ("universal", "cp.async"):
        raise Unmodelled(f"cute.copy with {atom.op.name}")
    if kwargs:
        raise Unmodelled(f"cute.copy with {', '.join(kwargs)}")
    n = src.size
    if dst.size != n:
        raise Hazard(hazards.CRASH, f"cute.copy of {n} values into {dst.size}", site)
    dtype = src.element_type
    bits = atom.bits or dtype.width
    per = max(bits // dtype.width, 1)
    if n % per:
        raise Hazard(
            hazards.CRASH,
            f"cute.copy of {n} values with a {bits}-bit atom of {per} values each",
            site,
        )
    calls = n // per
    w, rows, tids = _rows()
    from course.execute.tensor import _rows_of

    S = _rows_of(_elements(src), rows)
    D = _rows_of(_elements(dst), rows)
    cmask = _call_mask(pred, calls, rows, site)
    _check_vectors(src, S, per, bits, cmask, site)
    emask = np.repeat(cmask, per, axis=1)
    width = bits // 8 if per > 1 else 0
    values = _gather(src, S, emask, rows, tids, site, width)  # 0 where not read
    if atom.kind == "cp.async":
        # CuTe DSL predicates a cp.async by its src-size operand (`selp` of the size or 0):
        # a false predicate reads no global memory and zero-fills the destination (PTX
        # ISA, cp.async: the bytes past src-size are zeros), so every destination is written
        everywhere = np.ones_like(cmask)
        _check_vectors(dst, D, per, bits, everywhere, site)
        _cp_async(src, dst, D, np.ones_like(emask), values, rows, tids, bits, site)
        return
    _check_vectors(dst, D, per, bits, cmask, site)
    _scatter(dst, D, emask, values, rows, tids, site, width)


def _elements(t: Tensor) -> np.ndarray:
    _pointer(t)
    return t.elements()


def _cp_async(src, dst, D, emask, values, rows, tids, bits: int, site) -> None:
    if _pointer(src).memory.space != GMEM or _pointer(dst).memory.space != SMEM:
        raise Hazard(
            hazards.CRASH,
            f"cp.async copies global to shared memory, not "
            f"{src.iterator.memory.space} to {dst.iterator.memory.space}",
            site,
        )
    w = machine.warp()
    if not emask.any():
        return
    mem = dst.iterator.memory
    dtype = dst.element_type
    _note(w, mem, site, D, dtype, bits // 8)
    n = D.shape[1]
    who = np.repeat(tids, n)[emask.reshape(-1)]
    land_now = w.cta.launch.options.seed != 0 and w.cta.rng.random() < 0.5
    w.pending.append(
        mem.issue(who, dtype, D[emask][:, None], values[emask][:, None], site, land_now)
    )


def commit_group() -> None:
    w = machine.warp()
    _uniform_only(w, "cp_async_commit_group")
    w.groups.append(w.pending)
    w.pending = []


def wait_group(n: int) -> None:
    w = machine.warp()
    _uniform_only(w, "cp_async_wait_group")
    while len(w.groups) > int(n):
        for copy_ in w.groups.popleft():
            w.cta.smem.retire(copy_)


def _uniform_only(w, what: str) -> None:
    if not w.full():
        raise Unmodelled(f"{what} inside a branch the threads of a warp take differently")


def autovec_copy(src: Tensor, dst: Tensor) -> None:
    """Element by element (the vector width is the compiler's choice)."""
    site = hazards.site(2)
    if dst.size != src.size:
        raise Hazard(hazards.CRASH, f"autovec_copy of {src.size} values into {dst.size}", site)
    from course.execute.tensor import _rows_of

    w, rows, tids = _rows()
    S = _rows_of(_elements(src), rows)
    D = _rows_of(_elements(dst), rows)
    emask = np.ones(S.shape, dtype=bool)
    _scatter(dst, D, emask, _gather(src, S, emask, rows, tids, site), rows, tids, site)


def copy_if(pred: Tensor, src: Tensor, dst: Tensor) -> None:
    site = hazards.site(2)
    from course.execute.tensor import _rows_of

    w, rows, tids = _rows()
    S = _rows_of(_elements(src), rows)
    D = _rows_of(_elements(dst), rows)
    emask = _call_mask(pred, src.size, rows, site)
    _scatter(dst, D, emask, _gather(src, S, emask, rows, tids, site), rows, tids, site)


# ---------------------------------------------------------------- warp-wide instructions


def _tv_index(layout) -> np.ndarray:
    """(threads, values) -> the atom tile's index, from a TV layout."""
    shape = layout.shape
    threads = product(shape[0])
    values = product(shape[1]) if len(shape) > 1 else 1
    return np.asarray(layout.offsets).reshape(values, threads).T


def _whole_warp(what: str, site) -> "machine.Warp":
    """A warp-wide instruction (.sync.aligned): all 32 lanes execute it together."""
    return machine.collective(f"{what} (warp-wide, .sync.aligned)", site, "all 32 lanes", True)


def _ldmatrix(atom: CopyAtom, src: Tensor, dst: Tensor, pred, site) -> None:
    """ldmatrix (shared -> registers) and stmatrix (registers -> shared): the lanes' source
    values put together into the atom's tile by its source TV layout, handed out by its
    destination TV layout; the shared-memory side moves rows of 16 bytes."""
    what = atom.kind
    if pred is not None:
        raise Unmodelled(f"a predicated {what}")
    smem_side, regs_side = (src, dst) if what == "ldmatrix" else (dst, src)
    if _pointer(smem_side).memory.space != SMEM or not _is_registers(regs_side):
        raise Hazard(
            hazards.CRASH,
            "ldmatrix reads shared memory into registers"
            if what == "ldmatrix"
            else "stmatrix writes registers into shared memory",
            site,
        )
    w = _whole_warp(what, site)
    src_tv = _tv_index(oracle.attribute(atom.atom_recipe, "layout_src_tv"))
    dst_tv = _tv_index(oracle.attribute(atom.atom_recipe, "layout_dst_tv"))
    vs, vd = src_tv.shape[1], dst_tv.shape[1]
    n_src, n_dst = src.size, dst.size
    calls = n_src // vs
    if calls * vs != n_src or calls * vd != n_dst:
        raise Hazard(
            hazards.CRASH,
            f"{what} of {n_src} values into {n_dst} with an atom of {vs} -> {vd} values per thread",
            site,
        )
    from course.execute.tensor import _rows_of

    rows = np.arange(32)
    S = _rows_of(_elements(src), rows)
    dtype = src.element_type
    _check_vectors(src, S, vs, vs * dtype.width, np.ones((32, calls), dtype=bool), site)
    values = _gather(
        src, S, np.ones(S.shape, dtype=bool), rows, w.tids, site, vs * dtype.storage.itemsize
    ).reshape(32, calls, vs)
    tiles = np.zeros((calls, src_tv.size))
    tiles[:, src_tv.reshape(-1)] = values.transpose(1, 0, 2).reshape(calls, -1)
    out = tiles[:, dst_tv].transpose(1, 0, 2).reshape(32, n_dst)  # (lanes, calls*vd)
    D = _rows_of(_elements(dst), rows)
    _check_vectors(dst, D, vd, vd * dtype.width, np.ones((32, calls), dtype=bool), site)
    width = vd * dtype.storage.itemsize if what == "stmatrix" else 0
    _scatter(dst, D, np.ones(D.shape, dtype=bool), out, rows, w.tids, site, width)


def _dims(t: Tensor) -> list[int]:
    shape = t.shape if isinstance(t.shape, tuple) else (t.shape,)
    return [product(s) for s in shape]


def _dispatch(a: Tensor, b: Tensor, c: Tensor, d: Tensor, site):
    """CuTe's gemm dispatch: (V,M,K) x (V,N,K) -> (V,M,N) shapes of the three operands."""
    ra, rb, rc, rd = (_rank(t) for t in (a, b, c, d))
    if ra != rb or rc != rd:
        raise Hazard(
            hazards.CRASH, "cute.gemm: A and B (and C and D) must have the same rank", site
        )
    da, db, dc = _dims(a), _dims(b), _dims(c)
    if ra == 3 and rc == 3:  # (V,M,K) x (V,N,K) => (V,M,N)
        return (da[0], da[1], da[2]), (db[0], db[1], db[2]), (dc[0], dc[1], dc[2])
    if ra == 2 and rc == 3:  # (V,M) x (V,N) => (V,M,N)
        return (da[0], da[1], 1), (db[0], db[1], 1), (dc[0], dc[1], dc[2])
    if ra == 2 and rc == 2:  # (M,K) x (N,K) => (M,N)
        return (1, da[0], da[1]), (1, db[0], db[1]), (1, dc[0], dc[1])
    if ra == 1 and rc == 2:  # (M) x (N) => (M,N)
        return (1, da[0], 1), (1, db[0], 1), (1, dc[0], dc[1])
    if ra == 1 and rc == 1:  # (V) x (V) => (V)
        return (da[0], 1, 1), (db[0], 1, 1), (dc[0], 1, 1)
    raise Hazard(hazards.CRASH, f"cute.gemm of rank-{ra} A/B and rank-{rc} C", site)


def gemm(mma, d: Tensor, a: Tensor, b: Tensor, c: Tensor, **kwargs) -> None:
    """cute.gemm(tiled_mma, D, A, B, C): D = A . B^T + C over the fragments."""
    if not isinstance(mma, TiledMma):
        raise Unmodelled(f"cute.gemm with {type(mma).__name__}")
    if hasattr(mma, "issue_gemm"):  # an asynchronous MMA (wgmma: course.execute.wgmma)
        mma.issue_gemm(d, a, b, c, **kwargs)
        return
    if mma.kind not in ("fma", "mma.sync"):
        raise Unmodelled(f"cute.gemm with {mma.op.name}")
    if kwargs:
        raise Unmodelled(f"cute.gemm with {', '.join(kwargs)}")
    site = hazards.site(2)
    shapes = _dispatch(a, b, c, d, site)
    (va, m, ka), (vb, n, kb), (vc, mc, nc) = shapes
    if (m, n) != (mc, nc) or ka != kb:
        raise Hazard(
            hazards.CRASH,
            f"cute.gemm: A is {m}x{ka}, B {n}x{kb} and C {mc}x{nc} "
            f"in atoms: expects A's M == D's M and B's N == D's N (a "
            f"fragment from the wrong partition?)",
            site,
        )
    _check_initialised(
        c,
        "adds to accumulator registers",
        "the accumulator was never cleared (fill it with 0 first)",
        site,
    )
    _check_initialised(a, "multiplies A registers", "A was never loaded", site, "A")
    _check_initialised(b, "multiplies B registers", "B was never loaded", site, "B")
    if mma.kind == "fma":
        if (va, vb, vc) != (1, 1, 1):
            raise Hazard(
                hazards.CRASH, f"a scalar FMA atom with {va}/{vb}/{vc} values per thread", site
            )
        A, B, C = (_values(t, sh) for t, sh in zip((a, b, c), shapes))  # (W, v, x, y)
        acc = C[:, 0].astype(np.float32)  # (W, m, n)
        for k in range(ka):  # one fused multiply-add per (m, n) per k, in fp32
            acc = (acc + A[:, 0, :, k][:, :, None] * B[:, 0, :, k][:, None, :]).astype(np.float32)
        d.store_values(_ssa(d, acc[:, None]))
        return
    _mma_sync(mma, d, a, b, c, shapes, site)


def _rank(t: Tensor) -> int:
    return len(t.shape) if isinstance(t.shape, tuple) else 1


def _values(t: Tensor, shape3) -> np.ndarray:
    """An operand's values per lane as (W, V, X, Y) (colexicographic: V fastest)."""
    v, x, y = shape3
    vals = np.asarray(t.values(), dtype=np.float64)
    return vals.reshape(vals.shape[0], y, x, v).transpose(0, 3, 2, 1)


def _ssa(t: Tensor, arr4: np.ndarray):
    from course.execute.tensor import TensorSSA

    flat = arr4.transpose(0, 3, 2, 1).reshape(arr4.shape[0], -1)
    return TensorSSA(flat, t.shape, t.element_type)


def _check_initialised(t: Tensor, doing: str, meaning: str, site, operand: str = "C") -> None:
    """Registers of `operand` (A, B, or the accumulator C) an MMA reads that nothing wrote."""
    if not _is_registers(t):
        return
    from course.execute.tensor import _lanes_now, _rows_of

    w, rows, tids = _lanes_now()
    regs: Registers = t.iterator.memory
    unset = regs.unwritten(t.element_type, rows, _rows_of(t.elements(), rows))
    if unset:
        who = hazards.threads_text(tids.tolist())
        raise Hazard(
            hazards.UNINITIALISED,
            f"cute.gemm by {who} {doing} no instruction wrote ({unset} register values): {meaning}",
            site,
            hazards.Cause(hazards.NEVER_WRITTEN, operand, observed=unset),
        )


def _mma_sync(mma: TiledMma, d, a, b, c, shapes, site) -> None:
    """One warp's mma.sync atoms: the lanes' fragments put together, multiplied, handed back."""
    _whole_warp("mma.sync", site)
    atom_m, atom_n, atom_k = (int(x) for x in mma.shape_mnk)
    tva, tvb, tvc = (_tv_index(lay) for lay in (mma.tv_layout_A, mma.tv_layout_B, mma.tv_layout_C))
    (va, m, k), (vb, n, _), (vc, _, _) = shapes
    if (va, vb, vc) != (tva.shape[1], tvb.shape[1], tvc.shape[1]):
        raise Hazard(
            hazards.CRASH,
            f"mma.sync fragments of {va}/{vb}/{vc} values per atom; "
            f"the atom takes {tva.shape[1]}/{tvb.shape[1]}/"
            f"{tvc.shape[1]}",
            site,
        )
    A, B, C = (_values(t, sh) for t, sh in zip((a, b, c), shapes))  # (32, v, x, y)
    dense_a = np.zeros((m, k, atom_m * atom_k))
    dense_b = np.zeros((n, k, atom_n * atom_k))
    dense_c = np.zeros((m, n, atom_m * atom_n))
    dense_a[:, :, tva.reshape(-1)] = A.transpose(2, 3, 0, 1).reshape(m, k, -1)
    dense_b[:, :, tvb.reshape(-1)] = B.transpose(2, 3, 0, 1).reshape(n, k, -1)
    dense_c[:, :, tvc.reshape(-1)] = C.transpose(2, 3, 0, 1).reshape(m, n, -1)
    a4 = dense_a.reshape(m, k, atom_k, atom_m).transpose(0, 1, 3, 2)  # [mi, ki, am, ak]
    b4 = dense_b.reshape(n, k, atom_k, atom_n).transpose(0, 1, 3, 2)  # [ni, ki, an, ak]
    acc = dense_c.reshape(m, n, atom_n, atom_m).transpose(0, 1, 3, 2)  # [mi, ni, am, an]
    # the H100 adds an mma.sync's dot product to fp32 as it does a wgmma's: rounding toward
    # zero (measured on results/executor_ladder.json: sm80_gemm, tma_gemm and their ragged
    # and pipelined cases bit for bit but tma_gemm's 1 element of 65536; round-to-nearest
    # missed 0-8 elements per case. The fp32 atoms of mma_atom still differ in 1 of 128: the
    # hardware's products are aligned with finite precision, which this does not model)
    acc = accumulate_k(acc, a4, b4)  # one mma.sync per k-atom: exact products, fp32 sums
    dense_d = acc.transpose(0, 1, 3, 2).reshape(m, n, atom_m * atom_n)
    per_lane = dense_d[:, :, tvc]  # (m, n, 32, vc)
    d.store_values(_ssa(d, per_lane.transpose(2, 3, 0, 1)))


def make_copy_atom(op, dtype, num_bits_per_copy=None, **kwargs) -> CopyAtom:
    """cute.make_copy_atom: an op and its element type (here, below the stand-ins, so that
    the helpers that pick a copy atom can make one)."""
    if not isinstance(op, Recipe):
        raise Unmodelled(f"make_copy_atom of {type(op).__name__}")
    kw = dict(kwargs)
    if num_bits_per_copy is not None:
        kw["num_bits_per_copy"] = int(num_bits_per_copy)
    recipe = Recipe("cute.make_copy_atom", (op, dtype), kw)
    return CopyAtom(recipe, op, dtype, num_bits_per_copy)
