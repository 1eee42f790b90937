"""Layouts as the executor holds them: static shapes and strides, evaluated with numpy.

A kernel run on the executor has concrete sizes, so every layout it builds is static. The
executor keeps them as plain Python (`Layout`, `Swizzle`, `ComposedLayout`) and does here
only what a thread does many times and CuTe defines simply: evaluate a layout at a
coordinate or for every coordinate, slice it (`layout[None, 3]`), read its shape. The
algebra that makes new layouts (divides, products, TV partitions, ...) is asked of CuTe DSL
itself, in a CPU trace (course.execute.oracle), and comes back as these objects.

A shape leaf may be a DynamicInt (course.execute.dynamic): an extent the GPU's build holds
as a dynamic value, which CuTe's algebra treats differently (it keeps a size-1 mode's
stride); the layout's key says which leaves are.

A stride may be a ScaledBasis (course.execute.basis: `make_identity_layout`, `E(m) * v`):
such a layout maps a coordinate to a coordinate (a tuple), as CuTe's does.

Coordinates follow CuTe: an int where a mode is a tuple is a colexicographic index into
that mode; an index past the end runs on in the last mode (so a tile that hangs over the
edge of a tensor addresses memory past it, as on the GPU). An offset maps back to its
coordinate per leaf, (offset / stride) % shape (get_hier_coord, get_flat_coord). Integers
divide as C's do, as CuTe's: a negative index gets CuTe's coordinate. All of it is compared
with CuTe DSL's own answers in tests/test_execute_layout_algebra.py.
"""

from __future__ import annotations


import numpy as np

from course.execute import dynamic
from course.execute.basis import Basis, has_basis, plain
from course.execute.dynamic import DynamicInt, dynamic_leaves
from course.execute.hazards import Standin, Unmodelled
from course.execute.lanes import Lanes, lanes
from course.execute.unspecified import Unspecified
from course.models.layout import LayoutError, compact_col_major, congruent, product
from course.models.layout import _fmt as fmt  # CuTe's way of writing a shape: (4,(2,8))
from course.models.layout import flatten as leaves


def _check_congruent(shape, stride) -> None:
    if not congruent(shape, stride):
        raise LayoutError(f"shape {shape} and stride {stride} differ in structure")


# CuTe DSL's answer to a static property of a layout, (layout, name) -> value: set by
# course.execute.oracle when it loads (oracle imports this module, so this one cannot
# import it back)
ASK_CUTE = None


class Layout(Standin):
    """shape:stride, both nested tuples of ints (or ints). Layouts are interned: equal
    layouts are one object, so what is computed from one (offsets, slices) is computed
    once for every thread that uses it."""

    REAL = ("cutlass.cute.core:_Layout",)

    __slots__ = (
        "shape",
        "stride",
        "key",
        "basis",
        "_size",
        "_flat",
        "_offsets",
        "_slices",
        "__weakref__",
    )
    _interned: dict = {}

    def __new__(cls, shape, stride=None):
        # a dynamic extent equals its static value: the key tells them apart
        raw = (shape, stride) if not dynamic.SEEN else (shape, stride, dynamic_leaves(shape))
        try:
            hit = cls._interned.get(raw)
        except TypeError:  # lists: normalise first
            hit = None
        if hit is not None:
            return hit
        shape = _ints(shape)
        stride = compact_col_major(shape) if stride is None else _ints(stride)
        _check_congruent(shape, stride)
        dyn = dynamic_leaves(shape) if dynamic.SEEN else None
        key = ("L", shape, stride) if dyn is None else ("L", shape, stride, ("dyn", dyn))
        self = cls._interned.get(key)
        if self is None:
            self = object.__new__(cls)
            self.shape, self.stride, self.key = shape, stride, key
            self.basis = has_basis(stride)  # strides of ScaledBasis: it maps to coordinates
            self._size = self._flat = self._offsets = None
            self._slices = {}
            cls._interned[key] = self
        try:
            cls._interned[raw] = self
        except TypeError:
            pass
        return self

    def __reduce__(self):
        return (Layout, (self.shape, self.stride))

    # --- what CuTe DSL code reads
    def __str__(self) -> str:
        return f"{fmt(self.shape)}:{fmt(self.stride)}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, Layout) and self.key == other.key)

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def size(self) -> int:
        if self._size is None:
            self._size = product(self.shape)
        return self._size

    @property
    def cosize(self) -> int:
        """The span of offsets, max - min + 1, as CuTe DSL gives it (a negative stride
        counts by its size: (4,8):(-8,1) spans 32)."""
        shapes, strides = self.flat
        return (
            int(sum((s - 1) * abs(d) for s, d in zip(shapes.tolist(), strides.tolist()))) + 1
            if self.size
            else 0
        )

    @property
    def rank(self) -> int:
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    def mode(self, i: int) -> "Layout":
        """Mode i as a layout of its own (a rank-1 layout is its own mode 0)."""
        if not isinstance(self.shape, tuple):
            if i != 0:
                raise LayoutError(f"mode {i} of a rank-1 layout {self}")
            return self
        return Layout(self.shape[i], self.stride[i])

    def __getitem__(self, i: int) -> "Layout":
        """`layout[i]`: CuTe DSL's top-level get of mode i."""
        return self.mode(i)

    @property
    def max_alignment(self) -> int:
        """CuTe DSL's `Layout.max_alignment` (what its layout type proves about contiguity),
        asked of CuTe for these static values. The executor's layouts are all static: where
        host code marked a mode dynamic, the GPU's compiled type may prove less, and the
        kernel picks narrower copies of the same values."""
        if ASK_CUTE is None:
            raise Unmodelled("Layout.max_alignment without course.execute.oracle loaded")
        return ASK_CUTE(self, "max_alignment")

    @property
    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        if self._flat is None:
            if self.basis:
                raise Unmodelled(f"offsets of {self}, a layout of ScaledBasis strides")
            self._flat = (
                np.array(leaves(self.shape), dtype=np.int64),
                np.array(leaves(self.stride), dtype=np.int64),
            )
        return self._flat

    # --- evaluation
    def __call__(self, *coord) -> int:
        crd = coord[0] if len(coord) == 1 else coord
        return self.offset_of(crd)

    def offset_of(self, crd):
        """The offset of one coordinate (an int: a colexicographic index; per-lane values
        give per-lane offsets). A layout of ScaledBasis strides gives a coordinate (a
        tuple), as CuTe's: course.execute.basis."""
        if self.basis:
            return plain(_crd_offset(crd, self.shape, self.stride))
        if isinstance(crd, (int, np.integer)):
            i = int(crd)
            offs = self.offsets
            if 0 <= i < offs.size:
                return int(offs[i])
            return self.offset_of_index(i)
        if isinstance(crd, Lanes):
            offs = self.offsets
            v = crd.v.astype(np.int64)
            if v.size and v.min() >= 0 and v.max() < offs.size:
                return Lanes(offs[v])
            return Lanes(self.offsets_of(v))
        return _crd_offset(crd, self.shape, self.stride)

    def offset_of_index(self, i: int) -> int:
        return int(self.offsets_of(np.int64(i)))

    @property
    def offsets(self) -> np.ndarray:
        """Every element's offset, in colexicographic order (read-only, computed once)."""
        if self._offsets is None:
            shapes, strides = self.flat
            off = np.zeros(1, dtype=np.int64)
            for s, d in zip(shapes.tolist(), strides.tolist()):
                off = np.add.outer(np.arange(s, dtype=np.int64) * d, off).reshape(-1)
            off.setflags(write=False)
            self._offsets = off
        return self._offsets

    def offsets_of(self, indices: np.ndarray) -> np.ndarray:
        """Offsets of many colexicographic indices at once (past the end: on in the last
        mode; negative: C's division, as CuTe's crd2idx)."""
        shapes, strides = self.flat
        idx = np.asarray(indices, dtype=np.int64)
        off = np.zeros_like(idx)
        for k in range(len(shapes) - 1):
            off += _cmod(idx, shapes[k]) * strides[k]
            idx = _cdiv(idx, shapes[k])
        if len(shapes):
            off += idx * strides[-1]
        return off

    def get_hier_coord(self, index, **_):
        """The coordinate of offset `index` (per lane for Lanes): static_layout.hier_coord.
        NVIDIA's pipelines and epilogues call it (loc=/ip= ignored)."""
        if isinstance(index, Unspecified):  # an unspecified index: an unspecified coordinate
            return index.like(self.shape)
        if self.basis:
            raise Unmodelled(f"get_hier_coord of {self}, a layout of ScaledBasis strides")
        return hier_coord(index, self.shape, self.stride)

    def get_flat_coord(self, index, **_):
        """get_hier_coord with each top-level mode one index: static_layout.flat_coord."""
        if isinstance(index, Unspecified):
            return tuple(index for _ in self.shape) if isinstance(self.shape, tuple) else index
        if self.basis:
            raise Unmodelled(f"get_flat_coord of {self}, a layout of ScaledBasis strides")
        return flat_coord(index, self.shape, self.stride)

    # --- slicing
    def slice(self, crd) -> tuple[int, "Layout"]:
        """(offset of the fixed part, layout of the modes where crd is None): CuTe's
        slice_and_offset. The kept modes are the result's modes, in order."""
        try:
            hit = self._slices.get(crd)
        except TypeError:
            hit = None
        if hit is not None:
            return hit
        kept_shape, kept_stride = [], []
        off = _slice(crd, self.shape, self.stride, kept_shape, kept_stride)
        hit = (off, Layout(tuple(kept_shape), tuple(kept_stride)))
        if len(self._slices) < 4096 and not isinstance(off, Lanes):
            try:
                self._slices[crd] = hit
            except TypeError:  # a per-lane coordinate: not kept
                pass
        return hit


def _ints(t):
    if isinstance(t, (Basis, DynamicInt)):
        return t
    if isinstance(t, tuple):
        return tuple(_ints(e) for e in t)
    if isinstance(t, list):
        return tuple(_ints(e) for e in t)
    try:
        return int(t)
    except (TypeError, ValueError):
        raise LayoutError(f"{t!r} is not a static integer") from None


# --- index <-> coordinate, as CuTe DSL computes them. CuTe's integers divide as C's do
# (toward zero: -7 / 4 == -1, -7 % 4 == -3), not as Python's // and % (which floor), so a
# negative index or one past the end gets CuTe's coordinate, not a Python-made one.


def _as_ints(x):
    """x as int64 numpy values (a Lanes' vector, an array or an int), and how to give a
    result back in x's kind: a Python int for an int, per-lane values for Lanes."""
    if isinstance(x, Lanes):
        return np.asarray(x.v, dtype=np.int64), lanes
    if isinstance(x, np.ndarray):
        return x.astype(np.int64), lambda v: v
    return np.int64(int(x)), int


def _cdiv(a, b):
    """C's a / b on int64 numpy values (b a nonzero static int)."""
    q = np.abs(a) // abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _cmod(a, b):
    """C's a % b: the sign of a."""
    return a - b * _cdiv(a, b)


def _colex(idx, shape):
    """The colexicographic coordinate of idx in shape, the last mode taking the rest."""
    if not isinstance(shape, tuple):
        return idx
    out = []
    for i, s in enumerate(shape):
        if i == len(shape) - 1:
            out.append(_colex(idx, s))
        else:
            n = product(s)
            out.append(_colex(_cmod(idx, n), s))
            idx = _cdiv(idx, n)
    return tuple(out)


def _map_leaves(fn, t):
    return tuple(_map_leaves(fn, e) for e in t) if isinstance(t, tuple) else fn(t)


def idx2crd(idx, shape):
    """cute.idx2crd(idx, shape): colexicographic, the last mode unbounded (an index past the
    end runs on in it), C division for negative indices. idx: an int, Lanes (every leaf of
    the coordinate per lane), or a tuple of indices, one per mode of shape."""
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape):
            raise LayoutError(f"index {fmt(idx)} does not match shape {fmt(shape)}")
        return tuple(idx2crd(i, s) for i, s in zip(idx, shape))
    v, back = _as_ints(idx)
    if not isinstance(shape, tuple):
        return idx if isinstance(idx, Lanes) else back(v)
    wrap = Lanes if isinstance(idx, Lanes) else back  # a coordinate stays per lane
    return _map_leaves(wrap, _colex(v, shape))


def hier_coord(index, shape, stride):
    """Layout.get_hier_coord(index): the coordinate whose offset is `index`, per leaf
    (index / stride) % shape, 0 where the stride is 0: CuTe's (C++ idx2crd(idx, shape,
    stride)). It inverts the layout on its image; for any other index it is still this
    formula's answer, as CuTe gives it (no error: CuTe raises none either)."""
    v, back = _as_ints(index)

    def leaf(s, d):
        return back(np.zeros_like(v) if d == 0 else _cmod(_cdiv(v, d), s))

    def walk(s, d):
        return tuple(walk(a, b) for a, b in zip(s, d)) if isinstance(s, tuple) else leaf(s, d)

    return walk(shape, stride)


def flat_coord(index, shape, stride):
    """Layout.get_flat_coord(index): get_hier_coord's coordinate with each top-level mode
    as one colexicographic index into that mode (C++ crd2crd(crd, shape, repeat<rank>(1)))."""
    if not isinstance(shape, tuple):
        return hier_coord(index, shape, stride)
    v, back = _as_ints(index)
    out = []
    for s, d in zip(shape, stride):
        crd = hier_coord(v, s, d)
        out.append(back(_crd_offset_np(crd, s, compact_col_major(s))))
    return tuple(out)


def _crd_offset_np(crd, shape, stride):
    """The offset of a congruent coordinate whose leaves are numpy values."""
    if isinstance(shape, tuple):
        return sum(_crd_offset_np(c, s, d) for c, s, d in zip(crd, shape, stride))
    return crd * stride


def _crd_offset(crd, shape, stride):
    if crd is None:
        raise LayoutError("a coordinate with None where a value is read")
    if isinstance(crd, (int, np.integer, Lanes)):
        crd = crd if isinstance(crd, Lanes) else int(crd)
        if not isinstance(shape, tuple):
            return stride.times(crd) if isinstance(stride, Basis) else crd * stride
        return _crd_offset(idx2crd(crd, shape), shape, stride)
    if not isinstance(shape, tuple):
        if len(crd) == 1:
            return _crd_offset(crd[0], shape, stride)
        raise LayoutError(f"coordinate {crd} for a mode of shape {shape}")
    if len(crd) != len(shape):
        if len(crd) == 1:
            return _crd_offset(crd[0], shape, stride)
        raise LayoutError(f"coordinate {fmt(crd)} does not match shape {fmt(shape)}")
    return sum(_crd_offset(c, s, d) for c, s, d in zip(crd, shape, stride))


def _slice(crd, shape, stride, kept_shape, kept_stride) -> int:
    if crd is None:
        kept_shape.append(shape)
        kept_stride.append(stride)
        return 0
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple) or len(crd) != len(shape):
            if not isinstance(shape, tuple) and len(crd) == 1:
                return _slice(crd[0], shape, stride, kept_shape, kept_stride)
            raise LayoutError(f"coordinate {crd} does not match shape {fmt(shape)}")
        return sum(_slice(c, s, d, kept_shape, kept_stride) for c, s, d in zip(crd, shape, stride))
    return _crd_offset(crd, shape, stride)


class Swizzle(Standin):
    """Swizzle<B,M,S>: XOR the B bits above bit M+S... into the B bits at M (CuTe's)."""

    REAL = ("cutlass.cute.core:Swizzle",)

    __slots__ = ("bits", "base", "shift")

    def __init__(self, bits: int, base: int, shift: int):
        self.bits, self.base, self.shift = int(bits), int(base), int(shift)

    def __call__(self, offset):
        if self.bits == 0:
            return offset
        mask = ((1 << self.bits) - 1) << (self.base + max(self.shift, 0))
        if self.shift >= 0:
            return offset ^ ((offset & mask) >> self.shift)
        return offset ^ ((offset & mask) << -self.shift)

    def __str__(self) -> str:
        return f"S<{self.bits},{self.base},{self.shift}>"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return isinstance(other, Swizzle) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def key(self):
        return ("S", self.bits, self.base, self.shift)

    @property
    def num_bits(self) -> int:
        return self.bits

    @property
    def num_base(self) -> int:
        return self.base

    @property
    def num_shift(self) -> int:
        return self.shift


class ComposedLayout(Standin):
    """inner o offset o outer: coordinate c -> inner(offset + outer(c)) (CuTe's naming)."""

    REAL = ("cutlass.cute.core:_ComposedLayout",)

    __slots__ = ("inner", "offset", "outer")

    def __init__(self, inner, offset, outer: Layout):
        self.inner, self.outer = inner, outer
        self.offset = offset if isinstance(offset, Lanes) else int(offset)

    def __str__(self) -> str:
        return f"{self.inner} o {self.offset} o {self.outer}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return isinstance(other, ComposedLayout) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def key(self):
        return ("C", self.inner.key, self.offset, self.outer.key)

    @property
    def shape(self):
        return self.outer.shape

    @property
    def size(self) -> int:
        return self.outer.size

    @property
    def rank(self) -> int:
        return self.outer.rank

    def __call__(self, *coord):
        v = self.inner(self.offset + self.outer(*coord))
        return v if isinstance(v, Lanes) else int(v)

    @property
    def offsets(self) -> np.ndarray:
        """Every element's offset: (n,), or (lanes, n) when the offset is per lane."""
        outer = np.asarray(self.outer.offsets)
        if isinstance(self.offset, Lanes):
            return np.asarray(self.inner(self.offset.v[:, None] + outer[None, :]))
        return np.asarray(self.inner(self.offset + outer))

    def representative(self) -> "ComposedLayout":
        """The same layout with lane 0's offset (for questions whose answer does not
        depend on it, such as a fragment's register layout)."""
        if isinstance(self.offset, Lanes):
            return ComposedLayout(self.inner, int(self.offset.v[0]), self.outer)
        return self


def as_layout(x) -> Layout:
    if isinstance(x, Layout):
        return x
    return Layout(x)
