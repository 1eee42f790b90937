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
  destination layout names;
* `mma.sync` (MmaF16BF16Op) is warp-wide: the 32 lanes' fragments are put together into
  16x8x16 tiles with the atom's TV layouts, multiplied (exact products, fp32 accumulation,
  one rounding per k-atom), and handed back; the universal FMA op is per thread.
"""
from __future__ import annotations

import numpy as np

from course.execute import machine, oracle, report
from course.execute.layout import ComposedLayout, Layout, product
from course.execute.memory import GMEM, RMEM, SMEM, Registers
from course.execute.numeric import DType, Float32
from course.execute.oracle import Recipe
from course.execute.report import Hazard, Unmodelled
from course.execute.tensor import Pointer, Tensor, register_tensor

COPY_KINDS = {"CopyUniversalOp": "universal", "CopyG2SOp": "cp.async",
              "LdMatrix8x8x16bOp": "ldmatrix", "LdMatrix16x16x8bOp": "ldmatrix"}
MMA_KINDS = {"MmaUniversalOp": "fma", "MmaF16BF16Op": "mma.sync"}


def _find_op(recipe: Recipe, kinds: dict) -> tuple[Recipe, str]:
    """The op recipe inside an atom/tiled recipe, and its kind."""
    todo = [recipe]
    while todo:
        r = todo.pop(0)
        if r.name in kinds:
            return r, kinds[r.name]
        todo.extend(a for a in list(r.args) + list(r.kwargs.values()) if isinstance(a, Recipe))
        todo.extend(a.recipe for a in list(r.args) + list(r.kwargs.values())
                    if isinstance(a, (CopyAtom, TiledMma)))
    return recipe, ""


# ---------------------------------------------------------------- copies

class CopyAtom:
    """cute.make_copy_atom(op, dtype, num_bits_per_copy=...)."""

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
    def atom_values(self) -> int:
        """Values one thread moves per instruction."""
        lay = oracle.attribute(self.atom_recipe, "layout_src_tv")
        return product(lay.shape[1]) if isinstance(lay.shape, tuple) else 1

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
    layout_src_tv_tiled = property(lambda self: self._attr("layout_src_tv_tiled"))
    layout_dst_tv_tiled = property(lambda self: self._attr("layout_dst_tv_tiled"))

    def get_slice(self, thr_idx) -> "ThrCopy":
        return ThrCopy(self, int(thr_idx))

    def retile(self, tensor: Tensor) -> Tensor:
        if not _is_registers(tensor):
            raise Unmodelled("retile of a tensor not in registers")
        delta, layout = oracle.retile(self.recipe, tensor.layout, tensor.element_type)
        return Tensor(tensor.iterator + delta, layout)


class ThrCopy(TiledCopy):
    """One thread's slice of a TiledCopy."""

    def __init__(self, tiled: TiledCopy, thr_idx: int):
        super().__init__(tiled.recipe, tiled.atom)
        self.thr_idx = thr_idx

    def _partition(self, which: str, tensor: Tensor) -> Tensor:
        parts = oracle.thread_partitions(self.recipe, which, tensor.layout, self.size)
        if not 0 <= self.thr_idx < len(parts):
            raise Hazard(report.CRASH, f"get_slice({self.thr_idx}) of a TiledCopy of "
                                       f"{len(parts)} threads", report.site())
        delta, layout = parts[self.thr_idx]
        return Tensor(tensor._advance(delta), layout)

    def partition_S(self, tensor: Tensor) -> Tensor:
        return self._partition("partition_S", tensor)

    def partition_D(self, tensor: Tensor) -> Tensor:
        return self._partition("partition_D", tensor)


def _is_registers(t: Tensor) -> bool:
    return isinstance(t.iterator, Pointer) and t.iterator.memory.space == RMEM


# ---------------------------------------------------------------- MMAs

class TiledMma:
    """cute.make_tiled_mma(op, atom_layout_mnk, permutation_mnk) (or an MMA atom)."""

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

    def get_slice(self, thr_idx) -> "ThrMma":
        return ThrMma(self, int(thr_idx))

    def _fragment(self, which: str, x) -> Tensor:
        if isinstance(x, Tensor):
            if x.is_coordinates:
                raise Unmodelled(f"{which} of a coordinate tensor")
            space = x.iterator.memory.space
            layout, dtype = oracle.fragment(self.recipe, which, space, x.element_type,
                                            x.layout)
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


class ThrMma(TiledMma):
    def __init__(self, tiled: TiledMma, thr_idx: int):
        super().__init__(tiled.recipe, tiled.op)
        self.thr_idx = thr_idx

    def _partition(self, which: str, tensor: Tensor) -> Tensor:
        parts = oracle.thread_partitions(self.recipe, which, tensor.layout, self.size)
        if not 0 <= self.thr_idx < len(parts):
            raise Hazard(report.CRASH, f"get_slice({self.thr_idx}) of a TiledMMA of "
                                       f"{len(parts)} threads", report.site())
        delta, layout = parts[self.thr_idx]
        return Tensor(tensor._advance(delta), layout)

    def partition_A(self, t: Tensor) -> Tensor:
        return self._partition("partition_A", t)

    def partition_B(self, t: Tensor) -> Tensor:
        return self._partition("partition_B", t)

    def partition_C(self, t: Tensor) -> Tensor:
        return self._partition("partition_C", t)


# ---------------------------------------------------------------- moving values

def _elements(t: Tensor) -> np.ndarray:
    if not isinstance(t.iterator, Pointer):
        raise Unmodelled("copying to or from a coordinate tensor")
    return t.elements()


def read(t: Tensor, elems: np.ndarray, width: int = 0) -> np.ndarray:
    """Values of these elements of t's memory, for the current thread."""
    ptr = t.iterator
    mem = ptr.memory
    if mem.space == SMEM:
        thread = machine.current_thread()
        site = report.site(2)
        if thread is not None:
            thread.note_smem(mem, site, _units(elems, ptr.dtype, width), ptr.dtype, width)
            return mem.read(thread.tid, ptr.dtype, elems, site)
    return mem.load(ptr.dtype, elems)


def write(t: Tensor, elems: np.ndarray, values, width: int = 0) -> None:
    ptr = t.iterator
    mem = ptr.memory
    if mem.space == SMEM:
        thread = machine.current_thread()
        site = report.site(2)
        if thread is not None:
            thread.note_smem(mem, site, _units(elems, ptr.dtype, width), ptr.dtype, width)
            mem.write(thread.tid, ptr.dtype, elems, values, site)
            return
    mem.store(ptr.dtype, elems, values)


def _units(elems: np.ndarray, dtype: DType, width: int) -> np.ndarray:
    """The first element of each access unit (a vector of `width` bytes)."""
    per = max(width // dtype.storage.itemsize, 1) if width else 1
    return elems[::per]


def _check_vectors(t: Tensor, elems: np.ndarray, per: int, bits: int, mask: np.ndarray):
    """A vector access needs `per` contiguous elements starting on a multiple of its
    width (in shared and global memory; registers have no addresses)."""
    if per <= 1 or t.iterator.memory.space == RMEM:
        return
    groups = elems.reshape(-1, per)[mask]
    if not groups.size:
        return
    contiguous = (np.diff(groups, axis=1) == 1).all(axis=1)
    aligned = (groups[:, 0] * t.iterator.dtype.storage.itemsize) % (bits // 8) == 0
    bad = ~(contiguous & aligned)
    if bad.any():
        k = int(np.argmax(bad))
        raise Hazard(report.MISALIGNED,
                     f"a {bits}-bit access of elements {groups[k].tolist()} of "
                     f"{t.iterator.memory.name}: they must be {per} contiguous elements "
                     f"starting on a {bits // 8}-byte boundary", report.site(3))


def _call_mask(pred: Tensor | None, calls: int) -> np.ndarray:
    if pred is None:
        return np.ones(calls, dtype=bool)
    values = pred.values() if isinstance(pred.iterator, Pointer) else None
    if values is None:
        raise Unmodelled("a predicate that is not a tensor of booleans")
    if values.size != calls:
        if values.size == 1:
            return np.full(calls, bool(values[0]))
        raise Hazard(report.CRASH, f"a predicate of {values.size} values for {calls} copy "
                                   f"instructions", report.site(3))
    return values.astype(bool)


def copy(atom, src: Tensor, dst: Tensor, pred: Tensor | None = None, **kwargs) -> None:
    """cute.copy(atom, src, dst, pred=...)."""
    if not isinstance(atom, CopyAtom):
        raise Unmodelled(f"cute.copy with {type(atom).__name__}")
    if atom.kind == "ldmatrix":
        _ldmatrix(atom, src, dst, pred)
        return
    if atom.kind not in ("universal", "cp.async"):
        raise Unmodelled(f"cute.copy with {atom.op.name}")
    if kwargs:
        raise Unmodelled(f"cute.copy with {', '.join(kwargs)}")
    n = src.size
    if dst.size != n:
        raise Hazard(report.CRASH, f"cute.copy of {n} values into {dst.size}", report.site(2))
    dtype = src.element_type
    bits = atom.bits or dtype.width
    per = max(bits // dtype.width, 1)
    if n % per:
        raise Hazard(report.CRASH, f"cute.copy of {n} values with a {bits}-bit atom of "
                                   f"{per} values each", report.site(2))
    calls = n // per
    mask = _call_mask(pred, calls)
    s_el, d_el = _elements(src), _elements(dst)
    _check_vectors(src, s_el, per, bits, mask)
    _check_vectors(dst, d_el, per, bits, mask)
    emask = np.repeat(mask, per)
    s_sel, d_sel = s_el[emask], d_el[emask]
    if not s_sel.size:
        return
    values = read(src, s_sel, bits // 8 if per > 1 else 0)
    if atom.kind == "cp.async":
        _cp_async(src, dst, d_sel, values, bits)
        return
    write(dst, d_sel, values, bits // 8 if per > 1 else 0)


def _cp_async(src: Tensor, dst: Tensor, elems: np.ndarray, values, bits: int) -> None:
    if src.iterator.memory.space != GMEM or dst.iterator.memory.space != SMEM:
        raise Hazard(report.CRASH, f"cp.async copies global to shared memory, not "
                                   f"{src.iterator.memory.space} to {dst.iterator.memory.space}",
                     report.site(3))
    thread = machine.thread()
    site = report.site(3)
    mem = dst.iterator.memory
    thread.note_smem(mem, site, _units(elems, dst.element_type, bits // 8), dst.element_type,
                     bits // 8)
    land_now = thread.cta.launch.options.seed != 0 and thread.cta.rng.random() < 0.5
    thread.pending.append(mem.issue(thread.tid, dst.element_type, elems, values, site,
                                    land_now))


def commit_group() -> None:
    t = machine.thread()
    t.groups.append(t.pending)
    t.pending = []


def wait_group(n: int) -> None:
    t = machine.thread()
    while len(t.groups) > int(n):
        for copy_ in t.groups.popleft():
            copy_ and t.cta.smem.retire(copy_)


def autovec_copy(src: Tensor, dst: Tensor) -> None:
    """Element by element (the vector width is the compiler's choice)."""
    if dst.size != src.size:
        raise Hazard(report.CRASH, f"autovec_copy of {src.size} values into {dst.size}",
                     report.site(2))
    write(dst, _elements(dst), read(src, _elements(src)))


def copy_if(pred: Tensor, src: Tensor, dst: Tensor) -> None:
    mask = _call_mask(pred, src.size)
    write(dst, _elements(dst)[mask], read(src, _elements(src)[mask]))


# ---------------------------------------------------------------- ldmatrix

def _tv_index(layout) -> np.ndarray:
    """(threads, values) -> the atom tile's index, from a TV layout."""
    shape = layout.shape
    threads = product(shape[0])
    values = product(shape[1]) if len(shape) > 1 else 1
    return np.asarray(layout.offsets).reshape(values, threads).T


def _ldmatrix(atom: CopyAtom, src: Tensor, dst: Tensor, pred) -> None:
    if pred is not None:
        raise Unmodelled("a predicated ldmatrix")
    if src.iterator.memory.space != SMEM or not _is_registers(dst):
        raise Hazard(report.CRASH, "ldmatrix reads shared memory into registers",
                     report.site(2))
    site = report.site(2)
    machine.collective("ldmatrix", site, (atom, src, dst),
                       lambda waits: _ldmatrix_warp(atom, waits, site))


def _ldmatrix_warp(atom: CopyAtom, waits, site) -> list:
    src_tv = _tv_index(oracle.attribute(atom.atom_recipe, "layout_src_tv"))
    dst_tv = _tv_index(oracle.attribute(atom.atom_recipe, "layout_dst_tv"))
    vs, vd = src_tv.shape[1], dst_tv.shape[1]
    lanes = [w.payload for w in waits]
    threads = [w.thread for w in waits]
    sizes = {(s.size, d.size) for _, s, d in lanes}
    if len(sizes) != 1:
        raise Hazard(report.CRASH, "lanes of a warp ldmatrix fragments of different sizes",
                     site)
    n_src, n_dst = sizes.pop()
    calls = n_src // vs
    if calls * vs != n_src or calls * vd != n_dst:
        raise Hazard(report.CRASH, f"ldmatrix of {n_src} values into {n_dst} with an atom of "
                                   f"{vs} -> {vd} per thread", site)
    tiles = np.zeros((calls, src_tv.size), dtype=np.float64)
    dtype = lanes[0][1].element_type
    for (_, s, _), t in zip(lanes, threads):
        elems = s.elements()
        mem = s.iterator.memory
        t.note_smem(mem, site, elems[::vs], dtype, vs * dtype.storage.itemsize)
        _check_vectors(s, elems, vs, vs * dtype.width, np.ones(calls, dtype=bool))
        values = mem.read(t.tid, dtype, elems, site).reshape(calls, vs)
        tiles[:, src_tv[t.lane]] = values
    for (_, _, d), t in zip(lanes, threads):
        d.iterator.memory.store(d.element_type, d.elements(),
                                tiles[:, dst_tv[t.lane]].reshape(-1))
    return [None] * len(waits)


# ---------------------------------------------------------------- gemm

def _dims(t: Tensor) -> list[int]:
    shape = t.shape if isinstance(t.shape, tuple) else (t.shape,)
    return [product(s) for s in shape]


def _dispatch(a: Tensor, b: Tensor, c: Tensor, d: Tensor, site):
    """CuTe's gemm dispatch: (V,M,K) x (V,N,K) -> (V,M,N) shapes of the three operands."""
    ra, rb, rc, rd = (_rank(t) for t in (a, b, c, d))
    if ra != rb or rc != rd:
        raise Hazard(report.CRASH, "cute.gemm: A and B (and C and D) must have the same rank",
                     site)
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
    raise Hazard(report.CRASH, f"cute.gemm of rank-{ra} A/B and rank-{rc} C", site)


def gemm(mma, d: Tensor, a: Tensor, b: Tensor, c: Tensor, **kwargs) -> None:
    """cute.gemm(tiled_mma, D, A, B, C): D = A . B^T + C over the fragments."""
    if not isinstance(mma, TiledMma):
        raise Unmodelled(f"cute.gemm with {type(mma).__name__}")
    if mma.kind not in ("fma", "mma.sync"):
        raise Unmodelled(f"cute.gemm with {mma.op.name}")
    if kwargs:
        raise Unmodelled(f"cute.gemm with {', '.join(kwargs)}")
    site = report.site(2)
    shapes = _dispatch(a, b, c, d, site)
    (va, m, ka), (vb, n, kb), (vc, mc, nc) = shapes
    if (m, n) != (mc, nc) or ka != kb:
        raise Hazard(report.CRASH, f"cute.gemm: A is {m}x{ka}, B {n}x{kb} and C {mc}x{nc} "
                                   f"in atoms: expects A's M == D's M and B's N == D's N (a "
                                   f"fragment from the wrong partition?)", site)
    _check_initialised(c, "adds to accumulator registers", "the accumulator was never "
                       "cleared (fill it with 0 first)", site)
    _check_initialised(a, "multiplies A registers", "A was never loaded", site)
    _check_initialised(b, "multiplies B registers", "B was never loaded", site)
    if mma.kind == "fma":
        if (va, vb, vc) != (1, 1, 1):
            raise Hazard(report.CRASH, f"a scalar FMA atom with {va}/{vb}/{vc} values per "
                                       f"thread", site)
        if ka == 1:  # one rank-1 update: the scalar FMAs of every (m, n)
            av = a.values().astype(np.float32)
            bv = b.values().astype(np.float32)
            cv = c.values().astype(np.float32).reshape(n, m)
            dv = (cv + np.multiply.outer(bv, av)).astype(np.float32)
            d.iterator.memory.store(d.element_type, d.elements(), dv.reshape(-1))
            return
        A, B, C = (_values(t, s) for t, s in zip((a, b, c), shapes))
        acc = C.astype(np.float64)
        for k in range(ka):
            acc = (acc + A[:, :, None, k] * B[:, None, :, k]).astype(np.float32) \
                .astype(np.float64)
        d.iterator.memory.store(d.element_type, d.elements(), _flat(acc))
        return
    machine.collective("mma.sync", site, (mma, d, a, b, c, shapes),
                       lambda waits: _mma_warp(mma, waits, site))


def _rank(t: Tensor) -> int:
    return len(t.shape) if isinstance(t.shape, tuple) else 1


def _values(t: Tensor, shape3) -> np.ndarray:
    v, x, y = shape3
    vals = np.asarray(t.values(), dtype=np.float64)
    return vals.reshape(y, x, v).transpose(2, 1, 0)


def _flat(arr3: np.ndarray) -> np.ndarray:
    return arr3.transpose(2, 1, 0).reshape(-1)


def _check_initialised(t: Tensor, doing: str, meaning: str, site) -> None:
    if not _is_registers(t):
        return
    regs: Registers = t.iterator.memory
    unset = regs.unwritten(t.element_type, t.elements())
    if unset:
        thread = machine.current_thread()
        who = report.threads_text([thread.tid]) if thread else "a thread"
        raise Hazard(report.UNINITIALISED, f"{who}'s cute.gemm {doing} no instruction wrote "
                                           f"({unset} of {t.size}): {meaning}", site)


def _mma_warp(mma: TiledMma, waits, site) -> list:
    atom_m, atom_n, atom_k = (int(x) for x in mma.shape_mnk)
    tva = _tv_index(mma.tv_layout_A)
    tvb = _tv_index(mma.tv_layout_B)
    tvc = _tv_index(mma.tv_layout_C)
    lanes = [w.payload for w in waits]
    threads = [w.thread for w in waits]
    (va, m, k), (vb, n, _), (vc, _, _) = lanes[0][5]
    if (va, vb, vc) != (tva.shape[1], tvb.shape[1], tvc.shape[1]):
        raise Hazard(report.CRASH, f"mma.sync fragments of {va}/{vb}/{vc} values per atom; "
                                   f"the atom takes {tva.shape[1]}/{tvb.shape[1]}/"
                                   f"{tvc.shape[1]}", site)
    A = np.zeros((m, k, atom_m * atom_k))
    B = np.zeros((n, k, atom_n * atom_k))
    C = np.zeros((m, n, atom_m * atom_n))
    for (_, d, a, b, c, shapes), t in zip(lanes, threads):
        if shapes != lanes[0][5]:
            raise Hazard(report.DIVERGENT, "lanes of a warp call mma.sync with fragments of "
                                           "different shapes", site)
        A[:, :, tva[t.lane]] = _values(a, shapes[0]).transpose(1, 2, 0)
        B[:, :, tvb[t.lane]] = _values(b, shapes[1]).transpose(1, 2, 0)
        C[:, :, tvc[t.lane]] = _values(c, shapes[2]).transpose(1, 2, 0)
    A4 = A.reshape(m, k, atom_k, atom_m).transpose(0, 1, 3, 2)  # [mi, ki, am, ak]
    B4 = B.reshape(n, k, atom_k, atom_n).transpose(0, 1, 3, 2)  # [ni, ki, an, ak]
    acc = C.reshape(m, n, atom_n, atom_m).transpose(0, 1, 3, 2).astype(np.float64)
    for ki in range(k):
        acc = (acc + np.einsum("iab,jcb->ijac", A4[:, ki], B4[:, ki])).astype(np.float32) \
            .astype(np.float64)
    D = acc.transpose(0, 1, 3, 2).reshape(m, n, atom_m * atom_n)
    for (_, d, *_), t in zip(lanes, threads):
        vals = D[:, :, tvc[t.lane]].transpose(2, 0, 1)  # (vc, m, n)
        d.iterator.memory.store(d.element_type, d.elements(), _flat(vals))
    return [None] * len(waits)
