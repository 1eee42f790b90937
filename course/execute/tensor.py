"""Tensors on the executor: an iterator (a pointer into a memory, or a coordinate) composed
with a static layout, as CuTe defines them -- for all lanes of a warp at once.

* `Pointer`: a memory (course.execute.memory), a byte offset (one, or one per lane:
  course.execute.lanes.Lanes), an element type, and the swizzle a shared-memory pointer
  may carry (applied to the element index within the memory, as the GPU applies it to the
  address).
* `Coordinates`: the iterator of an identity tensor. Its layout's strides pack the modes of
  a coordinate into one integer (mode i is worth BASE[rank]**i), so every layout operation
  CuTe does on it is plain integer algebra, and a tile that hangs over the tensor's edge
  still names coordinates past it, as a ScaledBasis stride would.
* `Tensor`: element access (`t[i]`, `t[3, 4]`; a per-lane index reads per lane), slicing
  (`t[None, 2]`), `load()`/`store()` as `TensorSSA`, `fill`. Only the warp's active lanes
  touch memory (course.execute.simt); shared memory goes through its hazard watch with the
  lanes' thread ids and the kernel's line.
"""

from __future__ import annotations

import enum

import numpy as np

from course.execute import hazards, oracle
from course.execute.dynamic import DynamicInt, extent
from course.execute.lanes import Lanes, lanes
from course.execute.static_layout import ComposedLayout, Layout, LayoutError, fmt
from course.models.layout import compact_col_major
from course.execute.memory import RMEM, SMEM, Memory, Registers
from course.execute.numeric import Boolean, DType, Int32, is_sub_byte, of_value, promoted
from course.execute.hazards import Unmodelled

# mode i of a rank-r coordinate is worth BASE[r]**i: as wide as int64 (numpy's per-lane
# arithmetic) allows, each mode a signed digit below BASE[r] // 2
BASE = {1: 1, 2: 1 << 16, 3: 1 << 16, 4: 1 << 15, 5: 1 << 12, 6: 1 << 10}


# ---------------------------------------------------------------- who accesses


def _lanes_now():
    """(warp or None, active lane indices (R,), their thread ids (R,))."""
    from course.execute import machine

    w = machine.current_warp()
    if w is None:
        return None, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    if w.mask is None:
        return w, np.arange(w.width), w.tids
    rows = np.nonzero(w.mask)[0]
    return w, rows, w.tids[rows]


def _width() -> int:
    from course.execute import machine

    w = machine.current_warp()
    return 1 if w is None else w.width


def _rows_of(elems: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Element indices per active lane, (R, n), from (n,) or (W, n)."""
    if elems.ndim == 1:
        return np.broadcast_to(elems, (len(rows), elems.size))
    return elems[rows]


def _note(w, mem, site, elems2: np.ndarray, dtype: DType, width: int = 0) -> None:
    if w is not None and mem.space == SMEM and is_sub_byte(dtype):
        raise Unmodelled(f"threads accessing {dtype} elements in shared memory")
    if w is not None and mem.space == SMEM:
        per = max(width // dtype.storage.itemsize, 1) if width else 1
        w.note_smem(
            mem, site, elems2[:, ::per] * dtype.storage.itemsize, width or dtype.storage.itemsize
        )


def access_read(
    ptr_memory: Memory, dtype: DType, elems: np.ndarray, width: int = 0, site=None
) -> np.ndarray:
    """Values (W, n) of element indices (n,) or (W, n) for the warp's active lanes (rows of
    inactive lanes are 0)."""
    w, rows, tids = _lanes_now()
    e2 = _rows_of(elems, rows)
    site = site or hazards.site(3)
    _note(w, ptr_memory, site, e2, dtype, width)
    got = ptr_memory.load(dtype, rows if ptr_memory.space == RMEM else tids, e2, site)
    W = 1 if w is None else w.width
    if len(rows) == W:
        return got
    out = np.zeros((W, e2.shape[1]), dtype=got.dtype)
    out[rows] = got
    return out


def access_write(
    ptr_memory: Memory, dtype: DType, elems: np.ndarray, values, width: int = 0, site=None
) -> None:
    """Write values ((W, n), (n,) or a scalar) at element indices for the active lanes."""
    w, rows, tids = _lanes_now()
    e2 = _rows_of(elems, rows)
    v = np.asarray(values)
    if v.ndim == 2 and v.shape[0] != len(rows):
        v = v[rows]
    site = site or hazards.site(3)
    _note(w, ptr_memory, site, e2, dtype, width)
    ptr_memory.store(
        dtype, rows if ptr_memory.space == RMEM else tids, e2, np.broadcast_to(v, e2.shape), site
    )


# ---------------------------------------------------------------- iterators


class Pointer(hazards.Standin):
    """An element pointer: memory, byte offset, element type (and a shared-memory swizzle)."""

    REAL = ("cutlass.cute.core:_Pointer",)

    __slots__ = ("memory", "byte_offset", "dtype", "swizzle", "_align")

    def __init__(self, memory: Memory, byte_offset, dtype: DType, swizzle=None, align: int = 16):
        self.memory, self.byte_offset, self.dtype = memory, byte_offset, dtype
        self.swizzle, self._align = swizzle, align

    def load(self, **_):
        """`ptr.load()`: the element it points at (each lane's, for a per-lane pointer),
        read as a one-element tensor is (its memory's checks included)."""
        return Tensor(self, Layout(1, 0))[0]

    def store(self, value, **_) -> None:
        """`ptr.store(value)`: the element it points at written."""
        Tensor(self, Layout(1, 0))[0] = value

    def toint(self, **_):
        """The pointer's address as an integer, as inline PTX takes it: a shared-memory
        pointer's shared::cta address, on the executor its byte offset in the CTA's shared
        memory, per lane (course.execute.dsmem_stores decodes it); others unmodelled."""
        from course.execute import current

        if self.memory.space != SMEM:
            raise Unmodelled("Pointer.toint of a pointer not into shared memory (its address)")
        w = current.current_warp()
        if w is None or getattr(self.memory, "cta", None) is not w.cta:
            raise Unmodelled("Pointer.toint of a pointer into another CTA's shared memory")
        offset = self.byte_offset
        return Lanes(offset.v.astype(np.int64) if isinstance(offset, Lanes)
                     else np.full(w.width, int(offset), np.int64))  # fmt: skip

    def __add__(self, n):
        if is_sub_byte(self.dtype):
            if isinstance(n, Lanes) or n % 2:
                raise Unmodelled(f"a {self.dtype} pointer moved by {n} elements (half a byte)")
            return Pointer(self.memory, self.byte_offset + n // 2, self.dtype, self.swizzle,
                           self._align)  # fmt: skip
        return Pointer(
            self.memory,
            self.byte_offset + n * self.dtype.itemsize,
            self.dtype,
            self.swizzle,
            self._align,
        )

    __radd__ = __add__

    def __sub__(self, n):
        return self + (-n)

    def __str__(self) -> str:
        return f"ptr<{self.dtype}, {self.memory.space}, {self.memory.name}+{self.byte_offset}>"

    __repr__ = __str__

    @property
    def value_type(self) -> DType:
        return self.dtype

    element_type = value_type

    @property
    def memspace(self):
        from course.execute.standins import AddressSpace

        return getattr(AddressSpace, self.memory.space)

    @property
    def alignment(self) -> int:
        return self._align

    max_alignment = alignment

    @property
    def llvm_ptr(self) -> "Pointer":
        """The LLVM pointer value CuTe DSL hands to NVVM ops written inline (Hopper fmha's
        own mbarrier wait): on the executor, the pointer itself, which the stand-ins of
        those ops take (course.execute.sm90)."""
        return self

    def align(self, min_align: int = 1, **_) -> "Pointer":
        """cute.Pointer.align: this pointer moved up to a multiple of min_align bytes."""
        step = int(min_align)
        up = -(-self.byte_offset // step) * step
        return Pointer(self.memory, up, self.dtype, self.swizzle, max(self._align, step))

    @property
    def elem_base(self):
        if is_sub_byte(self.dtype):  # element 2 b is byte b's low nibble
            if isinstance(self.byte_offset, Lanes):
                return Lanes(self.byte_offset.v * 2)
            return self.byte_offset * 2
        size = self.dtype.itemsize
        if isinstance(self.byte_offset, Lanes):
            return Lanes(self.byte_offset.v // size)
        if self.byte_offset % size:
            raise Unmodelled(
                f"a {self.dtype} pointer at byte {self.byte_offset} (not element-aligned)"
            )
        return self.byte_offset // size

    def element(self, offset):
        e = self.elem_base + offset
        if self.swizzle is not None:
            e = self._swizzled(e)
        return e

    def _swizzled(self, e):
        """A pointer's swizzle acts on the byte address, as CuTe's swizzle_ptr does (a
        layout's swizzle acts on its offsets, in elements)."""
        size = self.dtype.storage.itemsize
        if is_sub_byte(self.dtype):  # the byte swizzled, the nibble kept
            if isinstance(e, Lanes):
                return Lanes(self.swizzle(e.v // 2) * 2 + e.v % 2)
            return self.swizzle(e // 2) * 2 + e % 2
        if isinstance(e, Lanes):
            return Lanes(self.swizzle(e.v * size) // size)
        return self.swizzle(e * size) // size

    def elements(self, offsets: np.ndarray) -> np.ndarray:
        """Element indices for layout offsets ((n,) or (W, n)): (n,), or (W, n) per lane."""
        base = self.elem_base
        if isinstance(base, Lanes):
            e = base.v[:, None] + (offsets if offsets.ndim == 2 else offsets[None, :])
        else:
            e = base + offsets
        return self._swizzled(e) if self.swizzle is not None else e


class Coordinates:
    """An identity tensor's iterator: the origin coordinate (entries may be per lane), one
    packed digit per leaf mode; `nest` (a shape) nests an element's coordinate as it."""

    __slots__ = ("origin", "nest")

    def __init__(self, origin: tuple, nest=None):
        self.origin, self.nest = tuple(origin), nest

    @property
    def rank(self) -> int:
        return len(self.origin)

    def __add__(self, packed):
        moved = tuple(o + d for o, d in zip(self.origin, unpack(packed, self.rank)))
        return Coordinates(moved, self.nest)

    def __str__(self) -> str:
        return fmt(tuple(o if not isinstance(o, Lanes) else "lanes" for o in self.origin))

    def decode_one(self, packed) -> tuple:
        flat = tuple(o + d for o, d in zip(self.origin, unpack(packed, self.rank)))
        return flat if self.nest is None else _nested_as(self.nest, iter(flat))


def _nested_as(shape, leaves):
    """`leaves` (an iterator) nested as `shape` is."""
    if isinstance(shape, tuple):
        return tuple(_nested_as(s, leaves) for s in shape)
    return next(leaves)


def unpack(packed, rank: int) -> tuple:
    """Signed digits of an int (or Lanes) in base BASE[rank], mode 0 first."""
    if rank == 1:
        return (packed,)
    base, half, out = BASE[rank], BASE[rank] // 2, []
    for _ in range(rank - 1):
        digit = (packed + half) % base - half
        out.append(digit)
        packed = (packed - digit) // base
    out.append(packed)
    return tuple(out)


def packed_strides(rank: int) -> tuple:
    return tuple(BASE[rank] ** i for i in range(rank))


def has_none(crd) -> bool:
    if crd is None:
        return True
    return isinstance(crd, tuple) and any(has_none(c) for c in crd)


def _as_crd(crd):
    if isinstance(crd, (np.integer,)):
        return int(crd)
    if isinstance(crd, list):
        crd = tuple(crd)
    if isinstance(crd, tuple):
        return tuple(_as_crd(c) for c in crd)
    if crd is None or isinstance(crd, (int, bool, Lanes)):
        return crd
    try:
        return int(crd)
    except (TypeError, ValueError):
        raise LayoutError(f"{crd!r} is not a coordinate") from None


# ---------------------------------------------------------------- tensors


def _check_mode_extents(ptr, layout, crd) -> None:
    """A shared-memory tensor sliced at a coordinate past one of its top-level modes (a
    stage index >= the ring's stages) reads another allocation's bytes or past the end on a
    GPU, whatever the bytes happen to be here: refused, naming the mode."""
    shape = getattr(layout, "shape", None)
    if not isinstance(ptr, Pointer) or ptr.memory.space != SMEM:
        return
    if type(ptr.byte_offset) is not int:
        return
    if not (isinstance(crd, tuple) and isinstance(shape, tuple) and len(crd) == len(shape)):
        return
    for mode, (c, size) in enumerate(zip(crd, shape)):
        if c is None or type(size) not in (int, DynamicInt) or isinstance(c, tuple):
            continue
        values = np.asarray(getattr(c, "v", c)).reshape(-1)
        bad = (values >= size) | (values < 0)
        if bad.any():
            at = int(values[np.argmax(bad)])
            name = ptr.memory.describe(ptr.byte_offset).split("[")[0].split(" (")[0]
            raise hazards.Hazard(
                hazards.OUT_OF_BOUNDS,
                f"{name} sliced at {at} in its mode {mode}, which has {size} entries "
                f"(0..{size - 1})",
                hazards.site(3),
                hazards.Cause(hazards.SLICE_PAST_MODE, name, (mode, size), at),
            )


def _swapped(exc: hazards.Hazard, layout, crd) -> hazards.Hazard | None:
    """An out-of-bounds read of a 2-D tensor at a coordinate outside its shape whose reverse
    lies inside (residual[col, row] for residual[row, col]), said as such; else None. Only
    the lanes outside the shape are looked at: masked-off lanes may hold any coordinate."""
    shape = getattr(layout, "shape", None)
    if exc.kind != hazards.OUT_OF_BOUNDS or exc.cause is None or not isinstance(crd, tuple):
        return None
    if len(crd) != 2 or not (isinstance(shape, tuple) and len(shape) == 2):
        return None
    if not all(type(e) in (int, DynamicInt) for e in shape) or any(c is None for c in crd):
        return None
    i, j = np.broadcast_arrays(*(np.asarray(getattr(c, "v", c)).reshape(-1) for c in crd))
    flipped = ((i >= shape[0]) | (j >= shape[1])) & (j < shape[0]) & (i < shape[1])
    if not flipped.any():
        return None
    k = int(np.argmax(flipped))
    at = (int(i[k]), int(j[k]))
    name = exc.cause.subject
    return hazards.Hazard(
        exc.kind,
        f"{exc.detail}: {name} has shape {shape} and was read at {at}, outside it, while "
        f"{at[::-1]} is inside (the coordinates swapped?)",
        exc.site,
        hazards.Cause(hazards.SWAPPED_COORDINATES, name, shape, at),
    )


class Tensor(hazards.Standin):
    """iterator o layout."""

    REAL = ("cutlass.cute.tensor:_Tensor",)

    __slots__ = ("iterator", "layout", "_elems")

    def __init__(self, iterator, layout):
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise TypeError(f"a tensor's layout, got {layout!r}")
        self.iterator, self.layout, self._elems = iterator, layout, None

    # --- what kernel code reads
    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        lay = self.layout.outer if isinstance(self.layout, ComposedLayout) else self.layout
        return lay.stride

    @property
    def leading_dim(self):
        """The mode of stride 1 (CuTe DSL's own `leading_dim` of shape and stride: an int,
        a tuple for a nested mode, None), which `LayoutEnum.from_tensor` reads."""
        from course.execute import oracle

        return oracle.call("leading_dim", self.shape, self.stride)

    @property
    def element_type(self):
        if isinstance(self.iterator, Pointer):
            return self.iterator.dtype
        return Int32

    dtype = element_type
    # CuTe DSL's _Tensor keeps its element type in `_dtype`, and NVIDIA's examples read it
    # there (Hopper fmha's `make_rmem_tensor_like(a_sum, a_sum._dtype)`)
    _dtype = element_type

    @property
    def memspace(self):
        if isinstance(self.iterator, Pointer):
            return self.iterator.memspace
        raise Unmodelled("memspace of a coordinate tensor")

    @property
    def is_coordinates(self) -> bool:
        return isinstance(self.iterator, Coordinates)

    @property
    def type(self) -> "TensorType":
        """What CuTe DSL's `Tensor.type` (the MLIR type) says, for host code that prints it."""
        return TensorType(self)

    @property
    def size(self) -> int:
        return self.layout.size

    def __str__(self) -> str:
        return f"tensor<{self.iterator} o {self.layout}>"

    __repr__ = __str__

    # --- slicing and elements
    def __getitem__(self, crd):
        if type(crd) is not int:
            crd = _as_crd(crd)
            if has_none(crd):
                return self.slice(crd)
        off = self.layout(crd)
        it = self.iterator
        if type(it) is Coordinates:
            return it.decode_one(off)
        if not isinstance(it, Pointer):
            return it + off
        try:
            return self._read_one(it.element(off))
        except hazards.Hazard as exc:
            raise _swapped(exc, self.layout, crd) or exc

    def slice(self, crd) -> "Tensor":
        lay = self.layout
        _check_mode_extents(self.iterator, self.domain_layout, crd)
        if isinstance(lay, ComposedLayout):
            off, sub = lay.outer.slice(crd)
            return Tensor(self.iterator, ComposedLayout(lay.inner, lay.offset + off, sub))
        off, sub = lay.slice(crd)
        return Tensor(self._advance(off), sub)

    def _advance(self, offset):
        return self.iterator + offset

    def moved(self, delta, layout) -> "Tensor":
        """This tensor after a domain operation that CuTe answered on its (outer) layout:
        `delta` moves the start, `layout` is the new one. A swizzled tensor keeps the move
        inside its swizzle (the swizzle acts on the whole offset)."""
        if isinstance(self.layout, ComposedLayout):
            if isinstance(layout, ComposedLayout):
                raise Unmodelled("a swizzled layout composed with another swizzle")
            return Tensor(
                self.iterator, ComposedLayout(self.layout.inner, self.layout.offset + delta, layout)
            )
        return Tensor(self._advance(delta), layout)

    @property
    def domain_layout(self) -> Layout:
        """The layout CuTe's domain operations act on (a swizzled tensor's outer layout)."""
        return self.layout.outer if isinstance(self.layout, ComposedLayout) else self.layout

    def __setitem__(self, crd, value):
        if type(crd) is not int:
            crd = _as_crd(crd)
            if has_none(crd):
                self.slice(crd).store_values(value)
                return
        ptr = self.iterator
        if not isinstance(ptr, Pointer):
            raise Unmodelled("writing to a coordinate or counting tensor")
        elem = ptr.element(self.layout(crd))
        value = _scalar_value(value)
        if isinstance(elem, Lanes):
            e = elem.v[:, None]
        else:
            e = np.array([elem], dtype=np.int64)
        v = value.v[:, None] if isinstance(value, Lanes) else value
        access_write(ptr.memory, ptr.dtype, e, v, site=hazards.site(2))

    def _read_one(self, elem):
        ptr = self.iterator
        e = elem.v[:, None] if isinstance(elem, Lanes) else np.array([elem], dtype=np.int64)
        got = access_read(ptr.memory, ptr.dtype, e, site=hazards.site(3))[:, 0]
        value = lanes(got) if got.size > 1 else got[0]
        if isinstance(value, Lanes):
            return value
        return ptr.dtype.of_decoded(value)

    # --- bulk
    def elements(self) -> np.ndarray:
        """Element indices of every element (colexicographic): (n,) or (W, n)."""
        if self._elems is None:
            if not isinstance(self.iterator, Pointer):
                raise Unmodelled("the elements of a coordinate or counting tensor")
            self._elems = self.iterator.elements(np.asarray(self.layout.offsets))
        return self._elems

    def values(self, width: int = 0) -> np.ndarray:
        """Every element's value for the active lanes, (W, n)."""
        ptr = self.iterator
        if not isinstance(ptr, Pointer):
            raise Unmodelled("loading a coordinate tensor as values")
        return access_read(ptr.memory, ptr.dtype, self.elements(), width, hazards.site(3))

    def load(self) -> "TensorSSA":
        return TensorSSA(self.values(), self.shape, self.element_type)

    def store(self, value) -> None:
        self.store_values(value)

    def store_values(self, value) -> None:
        ptr = self.iterator
        if not isinstance(ptr, Pointer):
            raise Unmodelled("writing to a coordinate tensor")
        if isinstance(value, TensorSSA):
            if value.values.shape[-1] != self.size:
                raise LayoutError(
                    f"storing {value.values.shape[-1]} values into a tensor of "
                    f"{self.size} ({fmt(self.shape)})"
                )
            values = value.values
        else:
            value = _scalar_value(value)
            values = value.v[:, None] if isinstance(value, Lanes) else value
        access_write(ptr.memory, ptr.dtype, self.elements(), values, site=hazards.site(3))

    def fill(self, value) -> None:
        self.store_values(value)


class TensorType:
    """A tensor's type as CuTe DSL prints it (`!cute.memref<f32, gmem, "(4,8):(8,1)">`):
    element type, memory and layout, or a coordinate tensor's origin and shape. NVIDIA's
    examples print it at trace time; nothing computes with it."""

    __slots__ = ("text",)

    def __init__(self, tensor: Tensor):
        it = tensor.iterator
        if isinstance(it, Pointer):
            self.text = f'!cute.memref<{it.dtype}, {it.memory.space}, "{tensor.layout}">'
        elif isinstance(it, Coordinates):
            self.text = f'!cute.coord_tensor<"{it}", "{fmt(tensor.shape)}">'
        else:
            self.text = f'!cute.tensor<"{it}", "{tensor.layout}">'

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _scalar_value(value):
    if isinstance(value, TensorSSA):
        if value.values.shape[-1] != 1:
            raise LayoutError("a TensorSSA of several values written to one element")
        return lanes(value.values[..., 0]) if value.values.ndim == 2 else value.values[0]
    if isinstance(value, tuple):
        raise TypeError(f"cannot store the coordinate {value} as a value")
    return value


# ---------------------------------------------------------------- making tensors


def make_tensor(iterator, layout) -> Tensor:
    if isinstance(iterator, (int, np.integer)) and not isinstance(iterator, bool):
        return Tensor(int(iterator), layout)
    if not isinstance(iterator, (Pointer, Coordinates, int, Lanes)):
        raise Unmodelled(f"a tensor over {type(iterator).__name__}")
    return Tensor(iterator, layout)


def identity_tensor(shape) -> Tensor:
    """CuTe's make_identity_tensor for a flat shape (ints): coordinates, packed."""
    dims = shape if isinstance(shape, tuple) else (shape,)
    if any(isinstance(s, tuple) for s in dims):
        return _nested_identity(dims)
    rank = len(dims)
    if rank not in BASE:
        raise Unmodelled(f"make_identity_tensor of rank {rank}")
    # a mode below the last is one signed digit; the last takes what int64 leaves
    limits = [BASE[rank] // 2] * (rank - 1) + [(1 << 62) // BASE[rank] ** (rank - 1)]
    for mode, (s, limit) in enumerate(zip(dims, limits)):
        if rank > 1 and int(s) >= limit:
            raise Unmodelled(
                f"make_identity_tensor{fmt(tuple(dims))}: mode {mode} of {limit} or more"
            )
    layout = (
        Layout(tuple(extent(s) for s in dims), packed_strides(rank))
        if isinstance(shape, tuple)
        else Layout(extent(shape), 1)
    )
    return Tensor(Coordinates((0,) * rank), layout)


def _nested_identity(shape: tuple) -> Tensor:
    """make_identity_tensor of a hierarchical shape: CuTe's coordinates are as nested as the
    shape (its strides are bases E<0,1>, ...); here each leaf mode is one packed digit (the
    flat case's, with its limits), and an element reads back as the nested coordinate."""

    def leaves(x):
        return sum((leaves(e) for e in x), ()) if isinstance(x, tuple) else (extent(x),)

    flat = identity_tensor(leaves(shape))
    static = _nested_as(shape, iter(leaves(shape)))
    strides = _nested_as(shape, iter(flat.layout.stride))
    return Tensor(Coordinates(flat.iterator.origin, static), Layout(static, strides))


def register_tensor(layout, dtype: DType, name: str = "registers") -> Tensor:
    """A fresh register fragment with `layout`, one bank per lane (poisoned until written)."""
    outer = layout.outer if isinstance(layout, ComposedLayout) else layout
    mem = Registers(outer.cosize * dtype.storage.itemsize, dtype, _width(), name)
    return Tensor(Pointer(mem, 0, dtype), layout)


# ---------------------------------------------------------------- TensorSSA


def _static_coordinate(crd) -> bool:
    """A coordinate of Python ints and None (at any depth): one a TensorSSA is sliced by."""
    if isinstance(crd, tuple):
        return all(_static_coordinate(c) for c in crd)
    return crd is None or (isinstance(crd, (int, np.integer)) and not isinstance(crd, bool))


def _integer_safe(fn, flip: bool = False):
    """A `//` or `%` of TensorSSA values; an integer divisor of zero (the PTX ISA's
    unspecified value, course.execute.unspecified) is not modelled element-wise."""

    def op(a, b):
        a, b = (b, a) if flip else (a, b)
        b = np.asarray(b)
        if b.dtype.kind in "iub" and np.asarray(a).dtype.kind in "iub" and (b == 0).any():
            raise Unmodelled("an integer division by zero in a TensorSSA")
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(a, b)

    return op


def _has_none(crd) -> bool:
    return crd is None or (isinstance(crd, tuple) and any(_has_none(c) for c in crd))


class TensorSSA(hazards.Standin):
    """Values loaded from a tensor (`t.load()`): numpy, (W, n) or (n,), colexicographic."""

    REAL = ("cutlass.cute.tensor:TensorSSA",)

    __slots__ = ("values", "shape", "dtype")

    def __init__(self, values, shape, dtype: DType):
        self.values = np.asarray(values)
        self.shape, self.dtype = shape, dtype

    element_type = property(lambda self: self.dtype)

    def ir_value(self, **_) -> np.ndarray:
        """The MLIR value CuTe DSL's TensorSSA wraps: on the executor, its values (what an
        MLIR dialect op takes, course.execute.mlir_dialects, and TensorSSA(...) takes back)."""
        return self.values

    def __str__(self) -> str:
        return f"TensorSSA<{self.dtype}, {fmt(self.shape)}>"

    __repr__ = __str__

    def to(self, dtype: DType) -> "TensorSSA":
        if dtype.kind == "bool":
            values = self.values.astype(bool)
        elif dtype.kind in ("int", "uint"):
            values = (
                np.trunc(self.values).astype(np.int64)
                if self.dtype.is_float
                else self.values.astype(np.int64)
            )
        elif dtype.name == "BFloat16":
            values = dtype.decode(dtype.encode(self.values.astype(np.float32)))
        else:
            values = self.values.astype(dtype.compute)
        return TensorSSA(values, self.shape, dtype)

    def _result_type(self, other) -> DType:
        """The type of `self <op> other`, as CuTe DSL's TensorSSA promotes its operands: a
        Python float is a Float32, an int an Int32 (as_numeric), so an fp16 tensor minus a
        Float32 mean is computed, and kept, in Float32 (numeric.promoted)."""
        if other is None:
            return self.dtype
        if isinstance(other, TensorSSA):
            kind = other.dtype
        else:
            sample = other.v.reshape(-1)[0] if isinstance(other, Lanes) else other
            kind = of_value(sample[()] if isinstance(sample, np.ndarray) else sample)
        return promoted(self.dtype, kind)

    def _other(self, other):
        if isinstance(other, TensorSSA):
            return other.values
        if isinstance(other, Lanes):
            return other.v[:, None]
        return other

    def broadcast_to(self, shape, **_) -> "TensorSSA":
        """The values stretched along the modes of extent 1 to `shape` (of the same rank,
        flat), as CuTe DSL's TensorSSA.broadcast_to."""
        target = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        mine = self.shape if isinstance(self.shape, tuple) else (self.shape,)
        if mine == target:
            return self
        flat = all(isinstance(e, int) for e in (*mine, *target)) and len(mine) == len(target)
        if not flat or any(a not in (1, b) for a, b in zip(mine, target)):
            raise Unmodelled(f"TensorSSA.broadcast_to from {fmt(mine)} to {fmt(target)}")
        lead = self.values.shape[:-1]  # (W,) for per-lane values
        grid = self.values.reshape(*lead, *reversed(mine))  # colexicographic: mode 0 last
        grown = np.broadcast_to(grid, (*lead, *reversed(target)))
        return TensorSSA(grown.reshape(*lead, -1).copy(), target, self.dtype)

    def _broadcast_with(self, other):
        """self and other (a TensorSSA) stretched to their common shape, as CuTe DSL's
        binary operators broadcast modes of extent 1."""
        if not isinstance(other, TensorSSA) or other.shape == self.shape:
            return self, other
        mine = self.shape if isinstance(self.shape, tuple) else (self.shape,)
        theirs = other.shape if isinstance(other.shape, tuple) else (other.shape,)
        if len(mine) != len(theirs) or not all(isinstance(e, int) for e in (*mine, *theirs)):
            return self, other
        common = tuple(max(a, b) for a, b in zip(mine, theirs))
        return self.broadcast_to(common), other.broadcast_to(common)

    def _op(self, fn, other=None, dtype=None):
        if isinstance(other, TensorSSA) and other.shape != self.shape:
            me, other = self._broadcast_with(other)
            if me is not self:
                return me._op(fn, other, dtype)
        values = fn(self.values) if other is None else fn(self.values, self._other(other))
        values = np.asarray(values)
        if dtype is None:
            dtype = Boolean if values.dtype == bool else self._result_type(other)
        if dtype.is_float and dtype.name != "Float64":
            values = values.astype(np.float32 if dtype.name == "BFloat16" else dtype.compute)
        return TensorSSA(values, self.shape, dtype)

    def __add__(self, o):
        return self._op(np.add, o)

    def __radd__(self, o):
        return self._op(lambda a, b: np.add(b, a), o)

    def __sub__(self, o):
        return self._op(np.subtract, o)

    def __rsub__(self, o):
        return self._op(lambda a, b: np.subtract(b, a), o)

    def __mul__(self, o):
        return self._op(np.multiply, o)

    def __rmul__(self, o):
        return self._op(lambda a, b: np.multiply(b, a), o)

    def __truediv__(self, o):
        return self._op(np.true_divide, o)

    def __rtruediv__(self, o):
        return self._op(lambda a, b: np.true_divide(b, a), o)

    # `//` and `%` as CuTe DSL lowers them for ints and floats alike: Python's (the floor
    # of the quotient; a remainder with the divisor's sign)
    def __floordiv__(self, o):
        return self._op(_integer_safe(np.floor_divide), o)

    def __rfloordiv__(self, o):
        return self._op(_integer_safe(np.floor_divide, flip=True), o)

    def __mod__(self, o):
        return self._op(_integer_safe(np.mod), o)

    def __rmod__(self, o):
        return self._op(_integer_safe(np.mod, flip=True), o)

    def __neg__(self):
        return self._op(np.negative)

    def __abs__(self):
        return self._op(np.abs)

    def __lt__(self, o):
        return self._op(np.less, o, Boolean)

    def __le__(self, o):
        return self._op(np.less_equal, o, Boolean)

    def __gt__(self, o):
        return self._op(np.greater, o, Boolean)

    def __ge__(self, o):
        return self._op(np.greater_equal, o, Boolean)

    # bitwise on integers, logical on Booleans (the same bits), as CuTe DSL's `&`, `|`, `^`
    def __and__(self, o):
        return self._op(np.bitwise_and, o)

    def __or__(self, o):
        return self._op(np.bitwise_or, o)

    def __xor__(self, o):
        return self._op(np.bitwise_xor, o)

    def __invert__(self):
        return self._op(np.logical_not, dtype=Boolean)

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            col = self.values[..., int(i)]
            return lanes(col) if col.ndim else self.dtype.of_decoded(col)
        if isinstance(i, tuple) and _static_coordinate(i):
            # CuTe's slice of the values' compact (colexicographic) layout: a coordinate
            # whole gives one value, one with None modes the TensorSSA of those modes
            whole = Layout(self.shape, compact_col_major(self.shape))
            if not _has_none(i):
                return self[whole.offset_of(i)]
            offset, kept = whole.slice(i)
            picked = self.values[..., offset + np.asarray(kept.offsets)]
            return TensorSSA(picked, kept.shape, self.dtype)
        raise Unmodelled(f"slicing a TensorSSA by {i!r}")

    def reduce(self, op, init_val, reduction_profile):
        """TensorSSA.reduce: the modes the profile marks (any value but None) folded with
        `op` (a ReductionOp) from `init_val`, each lane its own; a profile of depth 0 (an
        int) folds every value into one scalar. MAX/MIN propagate NaN, as MLIR's
        maximumf/minimumf (what CuTe DSL lowers them to) do."""
        return reduce_values(self, op, init_val, reduction_profile)


# ---------------------------------------------------------------- reductions


class ReductionOp(enum.Enum):
    """cute.ReductionOp (CuTe DSL's MLIR enum, the same four members)."""

    ADD = 0
    MUL = 1
    MIN = 2
    MAX = 3


_FOLDS = {
    ReductionOp.ADD: np.add,
    ReductionOp.MUL: np.multiply,
    ReductionOp.MIN: np.minimum,  # NaN-propagating, as minimumf
    ReductionOp.MAX: np.maximum,
}


def _profile_leaves(profile, shape) -> list:
    """[(extent, folded)] per mode of the profile, the shape's subtree under a profile leaf
    taken whole (CuTe's weak congruence: a leaf of the profile may cover a tuple)."""
    if profile is None or not isinstance(profile, tuple):
        extent = int(np.prod(_flat(shape), dtype=np.int64))
        return [(extent, profile is not None)]
    if not isinstance(shape, tuple) or len(shape) != len(profile):
        raise ValueError(
            "Expected reduction_profile be weakly congruent to the shape of the tensor, "
            f"but got {profile} and {shape}"
        )
    return [leaf for p, s in zip(profile, shape) for leaf in _profile_leaves(p, s)]


def _flat(shape) -> list:
    if isinstance(shape, tuple):
        return [x for s in shape for x in _flat(s)]
    return [int(shape)]


def reduce_values(ssa: TensorSSA, op, init_val, profile):
    if profile is None:
        return ssa
    if op not in _FOLDS:
        raise NotImplementedError(f"{op} is not supported, expected one of {tuple(_FOLDS)}")
    dtype = ssa.dtype
    compute = np.float32 if dtype.name == "BFloat16" else dtype.compute
    init = np.asarray(dtype(init_val), dtype=compute)
    fold = _FOLDS[op]
    values = np.asarray(ssa.values, dtype=compute)
    per_lane = values.ndim == 2
    if not isinstance(profile, tuple):  # depth 0: every value into one
        out = fold(init, fold.reduce(values, axis=-1))
        return _scalar_of(out, dtype)
    leaves = _profile_leaves(profile, ssa.shape)
    extents = [e for e, _ in leaves]
    axes = tuple(i for i, (_, folded) in enumerate(leaves) if folded)
    # colexicographic: the first mode fastest (Fortran order), the lanes last
    if per_lane:
        grid = values.T.reshape(extents + [values.shape[0]], order="F")
    else:
        grid = values.reshape(extents, order="F")
    out = fold(init, fold.reduce(grid, axis=axes)) if axes else grid
    kept = oracle.call("slice_", ssa.shape, profile)
    if kept == () or not isinstance(kept, (tuple, int)):
        raise Unmodelled(f"TensorSSA.reduce with profile {profile} folding every mode")
    if per_lane:
        out = out.reshape(-1, values.shape[0], order="F").T
    else:
        out = out.reshape(-1, order="F")
    if dtype.name == "BFloat16":
        out = dtype.decode(dtype.encode(out))
    return TensorSSA(out, kept, dtype)


def _scalar_of(out, dtype: DType):
    if dtype.name == "BFloat16":
        out = dtype.decode(dtype.encode(out))
    if np.ndim(out):
        return lanes(out.astype(dtype.compute if dtype.name != "BFloat16" else np.float32))
    return dtype.of_decoded(out)
