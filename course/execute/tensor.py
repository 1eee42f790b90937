"""Tensors on the executor: an iterator (a pointer into a memory, or a coordinate) composed
with a static layout, as CuTe defines them.

* `Pointer`: a memory (course.execute.memory), a byte offset, an element type, and the
  swizzle a shared-memory pointer may carry (applied to the element index within the
  memory, as the GPU applies it to the address).
* `Coordinates`: the iterator of an identity tensor. Its layout's strides pack the modes of
  a coordinate into one integer (mode i is worth BASE[rank]**i), so every layout operation
  CuTe does on it is plain integer algebra, and a tile that hangs over the tensor's edge
  still names coordinates past it, as a ScaledBasis stride would.
* `Tensor`: element access (`t[i]`, `t[3, 4]`), slicing (`t[None, 2]`), `load()`/`store()`
  as `TensorSSA` (numpy values in colexicographic order), `fill`. Reads and writes of shared
  memory go through its hazard watch with the current thread and the kernel's line.
"""
from __future__ import annotations

import numpy as np

from course.execute import report
from course.execute.layout import ComposedLayout, Layout, LayoutError, fmt, product
from course.execute.memory import RMEM, SMEM, Memory, Registers
from course.execute.numeric import Boolean, DType, Float32, Int32, of_value
from course.execute.report import Unmodelled

BASE = {1: 1, 2: 1 << 16, 3: 1 << 10, 4: 1 << 7}


class Pointer:
    """An element pointer: memory, byte offset, element type (and a shared-memory swizzle)."""

    __slots__ = ("memory", "byte_offset", "dtype", "swizzle", "align")

    def __init__(self, memory: Memory, byte_offset: int, dtype: DType, swizzle=None,
                 align: int = 16):
        self.memory, self.byte_offset, self.dtype = memory, int(byte_offset), dtype
        self.swizzle, self.align = swizzle, align

    def __add__(self, n):
        return Pointer(self.memory, self.byte_offset + int(n) * self.dtype.itemsize,
                       self.dtype, self.swizzle, self.align)

    __radd__ = __add__

    def __sub__(self, n):
        return self + (-int(n))

    def __str__(self) -> str:
        return f"ptr<{self.dtype}, {self.memory.space}, {self.memory.name}+{self.byte_offset}>"

    __repr__ = __str__

    @property
    def value_type(self) -> DType:
        return self.dtype

    element_type = dtype_ = value_type

    @property
    def memspace(self):
        from course.execute.api import AddressSpace

        return getattr(AddressSpace, self.memory.space)

    @property
    def alignment(self) -> int:
        return self.align

    max_alignment = alignment

    @property
    def elem_base(self) -> int:
        size = self.dtype.itemsize
        if self.byte_offset % size:
            raise Unmodelled(f"a {self.dtype} pointer at byte {self.byte_offset} (not "
                             f"element-aligned)")
        return self.byte_offset // size

    def elements(self, offsets) -> np.ndarray:
        """Element indices in the memory for layout offsets from this pointer."""
        e = self.elem_base + np.asarray(offsets, dtype=np.int64)
        return self.swizzle(e) if self.swizzle is not None else e


class Coordinates:
    """An identity tensor's iterator: the origin coordinate, and how offsets pack modes."""

    __slots__ = ("origin",)

    def __init__(self, origin: tuple):
        self.origin = tuple(int(o) for o in origin)

    @property
    def rank(self) -> int:
        return len(self.origin)

    @property
    def base(self) -> int:
        return BASE[self.rank]

    def __add__(self, packed):
        return Coordinates(tuple(o + d for o, d in zip(self.origin, unpack(int(packed),
                                                                             self.rank))))

    def __str__(self) -> str:
        return fmt(self.origin)

    def decode(self, packed: np.ndarray) -> np.ndarray:
        """(n, rank) coordinates of packed offsets from this origin."""
        comps = unpack_array(np.asarray(packed, dtype=np.int64), self.rank)
        return comps + np.array(self.origin, dtype=np.int64)


def unpack(x: int, rank: int) -> tuple:
    return tuple(int(c) for c in unpack_array(np.array([x], dtype=np.int64), rank)[0])


def unpack_array(x: np.ndarray, rank: int) -> np.ndarray:
    """Signed digits of x in base BASE[rank], least significant (mode 0) first."""
    base = BASE[rank]
    out = np.empty((x.size, rank), dtype=np.int64)
    rest = x.reshape(-1).copy()
    for i in range(rank - 1):
        digit = (rest + base // 2) % base - base // 2
        out[:, i] = digit
        rest = (rest - digit) // base
    out[:, rank - 1] = rest
    return out


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
    if crd is None or isinstance(crd, (int, bool)):
        return crd
    try:
        return int(crd)
    except (TypeError, ValueError):
        raise LayoutError(f"{crd!r} is not a coordinate") from None


class Tensor:
    """iterator o layout."""

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
    def element_type(self):
        if isinstance(self.iterator, Pointer):
            return self.iterator.dtype
        return Int32

    dtype = element_type

    @property
    def memspace(self):
        if isinstance(self.iterator, Pointer):
            return self.iterator.memspace
        raise Unmodelled("memspace of a coordinate tensor")

    @property
    def is_coordinates(self) -> bool:
        return isinstance(self.iterator, Coordinates)

    @property
    def size(self) -> int:
        return self.layout.size

    def __str__(self) -> str:
        return f"tensor<{self.iterator} o {self.layout}>"

    __repr__ = __str__

    def __len__(self):
        shape = self.shape
        return len(shape) if isinstance(shape, tuple) else int(shape)

    # --- slicing and elements
    def __getitem__(self, crd):
        crd = _as_crd(crd)
        if has_none(crd):
            return self.slice(crd)
        if self.is_coordinates:
            return self._coordinate(self.layout(crd))
        return self._read_one(self.layout(crd))

    def slice(self, crd) -> "Tensor":
        lay = self.layout
        if isinstance(lay, ComposedLayout):
            off, sub = lay.outer.slice(crd)
            return Tensor(self.iterator, ComposedLayout(lay.inner, lay.offset + off, sub))
        off, sub = lay.slice(crd)
        return Tensor(self._advance(off), sub)

    def _advance(self, offset: int):
        if isinstance(self.iterator, Pointer):
            return self.iterator + offset
        if isinstance(self.iterator, Coordinates):
            return self.iterator + offset
        return self.iterator + offset  # a counting tensor's int

    def __setitem__(self, crd, value):
        crd = _as_crd(crd)
        if has_none(crd):
            self.slice(crd).store_values(value)
            return
        if not isinstance(self.iterator, Pointer):
            raise Unmodelled("writing to a coordinate or counting tensor")
        self._write(self.iterator.elements(np.array([self.layout(crd)], dtype=np.int64)),
                    _scalar_value(value))

    def _coordinate(self, packed):
        it = self.iterator
        if isinstance(it, Coordinates):
            crd = tuple(int(c) for c in it.decode(np.array([packed]))[0])
            return crd if it.rank > 1 else crd
        return it + int(packed)

    # --- bulk views
    def elements(self) -> np.ndarray:
        """Element indices into the memory of every element, colexicographic (cached)."""
        if self._elems is None:
            self._elems = self.iterator.elements(self.layout.offsets)
        return self._elems

    def coordinates(self) -> np.ndarray:
        """(size, rank) coordinates of a coordinate tensor's elements."""
        return self.iterator.decode(np.asarray(self.layout.offsets))

    def values(self) -> np.ndarray:
        """Every element's value (coordinate tensors: not values)."""
        if not isinstance(self.iterator, Pointer):
            raise Unmodelled("loading a coordinate tensor as values")
        return self._read(self.elements())

    # --- memory traffic
    def _read_one(self, offset: int):
        if not isinstance(self.iterator, Pointer):
            return self.iterator + offset
        elems = self.iterator.elements(np.array([offset], dtype=np.int64))
        return self.iterator.dtype.of_decoded(self._read(elems)[0])

    def _read(self, elems: np.ndarray) -> np.ndarray:
        ptr = self.iterator
        mem = ptr.memory
        if mem.space == SMEM:
            return _smem_read(mem, ptr.dtype, elems)
        return mem.load(ptr.dtype, elems)

    def _write(self, elems: np.ndarray, values) -> None:
        ptr = self.iterator
        mem = ptr.memory
        if mem.space == SMEM:
            _smem_write(mem, ptr.dtype, elems, values)
        else:
            mem.store(ptr.dtype, elems, values)

    def load(self) -> "TensorSSA":
        return TensorSSA(self.values(), self.shape, self.element_type)

    def store(self, value) -> None:
        self.store_values(value)

    def store_values(self, value) -> None:
        if isinstance(value, TensorSSA):
            if value.values.size != self.size:
                raise LayoutError(f"storing {value.values.size} values into a tensor of "
                                  f"{self.size} ({fmt(self.shape)})")
            values = value.values
        else:
            values = _scalar_value(value)
        if not isinstance(self.iterator, Pointer):
            raise Unmodelled("writing to a coordinate tensor")
        self._write(self.elements(), values)

    def fill(self, value) -> None:
        self.store_values(value)


def _scalar_value(value):
    if isinstance(value, TensorSSA):
        if value.values.size != 1:
            raise LayoutError("a TensorSSA of several values written to one element")
        return value.values[0]
    if isinstance(value, tuple):
        raise TypeError(f"cannot store the coordinate {value} as a value")
    return value


def _smem_read(mem, dtype, elems):
    from course.execute import machine

    thread = machine.current_thread()
    site = report.site(3)
    if thread is None:
        return mem.load(dtype, elems)
    thread.note_smem(mem, site, elems, dtype)
    return mem.read(thread.tid, dtype, elems, site)


def _smem_write(mem, dtype, elems, values):
    from course.execute import machine

    thread = machine.current_thread()
    site = report.site(3)
    if thread is None:
        mem.store(dtype, elems, values)
        return
    thread.note_smem(mem, site, elems, dtype)
    mem.write(thread.tid, dtype, elems, values, site)


# ---------------------------------------------------------------- making tensors

def make_tensor(iterator, layout) -> Tensor:
    if isinstance(iterator, (int, np.integer)) and not isinstance(iterator, bool):
        return Tensor(int(iterator), layout)
    if not isinstance(iterator, (Pointer, Coordinates, int)):
        raise Unmodelled(f"a tensor over {type(iterator).__name__}")
    return Tensor(iterator, layout)


def identity_tensor(shape) -> Tensor:
    """CuTe's make_identity_tensor for a flat shape (ints): coordinates, packed."""
    dims = shape if isinstance(shape, tuple) else (shape,)
    if any(isinstance(s, tuple) for s in dims):
        raise Unmodelled("make_identity_tensor of a hierarchical shape")
    rank = len(dims)
    if rank not in BASE:
        raise Unmodelled(f"make_identity_tensor of rank {rank}")
    if rank > 1 and max(int(s) for s in dims) >= BASE[rank] // 2:
        raise Unmodelled(f"make_identity_tensor{fmt(tuple(dims))}: a mode of "
                         f"{BASE[rank] // 2} or more")
    stride = packed_strides(rank)
    layout = Layout(tuple(int(s) for s in dims), stride) if isinstance(shape, tuple) \
        else Layout(int(shape), 1)
    return Tensor(Coordinates((0,) * rank), layout)


def register_tensor(layout, dtype: DType, name: str = "registers") -> Tensor:
    """A fresh register fragment with `layout` (poisoned until written)."""
    cosize = layout.cosize if isinstance(layout, Layout) else layout.outer.cosize
    mem = Registers(cosize * dtype.storage.itemsize, dtype, name)
    return Tensor(Pointer(mem, 0, dtype), layout)


# ---------------------------------------------------------------- TensorSSA

class TensorSSA:
    """Values loaded from a tensor (`t.load()`), as numpy, colexicographic."""

    __slots__ = ("values", "shape", "dtype")

    def __init__(self, values, shape, dtype: DType):
        self.values = np.asarray(values).reshape(-1)
        self.shape, self.dtype = shape, dtype

    element_type = property(lambda self: self.dtype)

    def __str__(self) -> str:
        return f"TensorSSA<{self.dtype}, {fmt(self.shape)}>{self.values.tolist()[:16]}"

    __repr__ = __str__

    def to(self, dtype: DType) -> "TensorSSA":
        if dtype.kind == "bool":
            values = self.values.astype(bool)
        elif dtype.kind in ("int", "uint"):
            values = np.trunc(self.values).astype(np.int64) if self.dtype.is_float \
                else self.values.astype(np.int64)
        else:
            values = dtype.decode(dtype.encode(self.values.astype(np.float64)
                                               if dtype.name != "BFloat16"
                                               else self.values.astype(np.float32)))
        return TensorSSA(values, self.shape, dtype)

    def _other(self, other):
        if isinstance(other, TensorSSA):
            if other.values.size != self.values.size:
                raise LayoutError(f"TensorSSA of {self.values.size} and {other.values.size} "
                                  f"values")
            return other.values
        return other

    def _op(self, fn, other=None, dtype=None):
        values = fn(self.values) if other is None else fn(self.values, self._other(other))
        if dtype is None:
            dtype = Boolean if values.dtype == bool else self.dtype
        if dtype.is_float and dtype.name != "Float64":
            values = values.astype(dtype.compute) if dtype.name != "BFloat16" else \
                values.astype(np.float32)
        return TensorSSA(values, self.shape, dtype)

    def __add__(self, o): return self._op(np.add, o)
    def __radd__(self, o): return self._op(lambda a, b: np.add(b, a), o)
    def __sub__(self, o): return self._op(np.subtract, o)
    def __rsub__(self, o): return self._op(lambda a, b: np.subtract(b, a), o)
    def __mul__(self, o): return self._op(np.multiply, o)
    def __rmul__(self, o): return self._op(lambda a, b: np.multiply(b, a), o)
    def __truediv__(self, o): return self._op(np.true_divide, o)
    def __rtruediv__(self, o): return self._op(lambda a, b: np.true_divide(b, a), o)
    def __neg__(self): return self._op(np.negative)
    def __abs__(self): return self._op(np.abs)
    def __lt__(self, o): return self._op(np.less, o, Boolean)
    def __le__(self, o): return self._op(np.less_equal, o, Boolean)
    def __gt__(self, o): return self._op(np.greater, o, Boolean)
    def __ge__(self, o): return self._op(np.greater_equal, o, Boolean)
    def __and__(self, o): return self._op(np.logical_and, o, Boolean)
    def __or__(self, o): return self._op(np.logical_or, o, Boolean)
    def __invert__(self): return self._op(np.logical_not, dtype=Boolean)

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            return self.dtype.of_decoded(self.values[int(i)])
        raise Unmodelled("slicing a TensorSSA")

    def reduce(self, *args, **kwargs):
        raise Unmodelled("TensorSSA.reduce")


def ssa_like(value, shape, dtype=None) -> TensorSSA:
    dtype = dtype or of_value(value)
    return TensorSSA(np.full(product(shape), value), shape, dtype)


__all__ = ["Pointer", "Coordinates", "Tensor", "TensorSSA", "make_tensor", "identity_tensor",
           "register_tensor", "has_none", "Float32", "RMEM"]
