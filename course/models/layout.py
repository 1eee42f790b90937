"""CuTe's layout algebra in plain Python and numpy, for drawing and for widgets.

Notebooks print and compute layouts with CuTe DSL itself (`course.cute.algebra` runs
its algebra on a CPU). This module is the course's own evaluator of the same
algebra: a widget that redraws a 128x128 grid on every click cannot afford CuTe
DSL's ~75 microseconds per evaluated coordinate, so pictures evaluate here, in one
numpy expression per layout. It is tested against CuTe DSL on hundreds of random
layouts and operations (tests/test_layout_vs_cute.py): every result below must be
the layout CuTe DSL 4.8.1 returns, shape and stride, not merely an equal function.

Conventions are CuTe's:
  * an IntTuple is an int or a (nested) tuple of IntTuples;
  * a Layout maps a coordinate to an offset: crd2idx(c) = sum(c_i * d_i);
  * an integer coordinate is read colexicographically (the first mode fastest);
  * `str(layout)` prints exactly as CuTe DSL does, e.g. ``((2,4),(4,2)):((1,8),(2,32))``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Union

import numpy as np

IntTuple = Union[int, tuple]


class LayoutError(ValueError):
    """An operation the algebra does not define for these operands (CuTe rejects it too)."""


# ---------------------------------------------------------------- IntTuple helpers


def is_tuple(x: Any) -> bool:
    return isinstance(x, tuple)


def _as_int_tuple(x: Any) -> IntTuple:
    """Lists become tuples; numpy integers become ints; anything else is refused."""
    if isinstance(x, (list, tuple)):
        return tuple(_as_int_tuple(e) for e in x)
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"not an integer: {x!r}")
    if isinstance(x, (int, np.integer)):
        return int(x)
    raise TypeError(f"not an integer or a tuple of integers: {x!r}")


def flatten(t: IntTuple) -> tuple:
    """All leaves of `t`, left to right."""
    if is_tuple(t):
        return tuple(x for e in t for x in flatten(e))
    return (t,)


def product(t: IntTuple) -> int:
    return math.prod(flatten(t)) if is_tuple(t) else t


def rank_of(t: IntTuple) -> int:
    return len(t) if is_tuple(t) else 1


def depth_of(t: IntTuple) -> int:
    if not is_tuple(t):
        return 0
    return 1 + max((depth_of(e) for e in t), default=0)


def congruent(a: IntTuple, b: IntTuple) -> bool:
    """Same tree structure (profile)."""
    if is_tuple(a) != is_tuple(b):
        return False
    if not is_tuple(a):
        return True
    return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))


def unwrap(t: IntTuple) -> IntTuple:
    """((x,)) -> x: strip 1-tuples."""
    while is_tuple(t) and len(t) == 1:
        t = t[0]
    return t


def _signum(x: int) -> int:
    return (x > 0) - (x < 0)


def ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe's ceil_div: elementwise, or a tuple divided by an int left to right."""
    if is_tuple(a):
        if is_tuple(b):
            return tuple(ceil_div(x, y) for x, y in zip(a, b)) + a[len(b) :]
        out, rest = [], b
        for ai in a:
            out.append(ceil_div(ai, rest))
            rest = ceil_div(rest, ai)
        return tuple(out)
    if is_tuple(b):
        return ceil_div(a, product(b))
    return -(-a // b)


def shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe's shape_div: a / b where one divides the other (1 when b > a)."""
    if is_tuple(a):
        if is_tuple(b):
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out, rest = [], b
        for ai in a:
            out.append(shape_div(ai, rest))
            rest = shape_div(rest, ai)
        return tuple(out)
    if is_tuple(b):
        return shape_div(a, product(b))
    q = int(a / b) if b else 0
    return q if q != 0 else _signum(a) * _signum(b)


def compact_col_major(shape: IntTuple, current: int = 1) -> IntTuple:
    """Strides of the compact column-major (LayoutLeft) layout of `shape`.

    As in CuTe, a mode of extent 1 gets stride 0 (it is never stepped along).
    """
    if is_tuple(shape):
        out = []
        for s in shape:
            out.append(compact_col_major(s, current))
            current *= product(s)
        return tuple(out)
    return 0 if shape == 1 else current


def compact_row_major(shape: IntTuple, current: int = 1) -> IntTuple:
    """Strides of the compact row-major (LayoutRight) layout of `shape` (extent 1: stride 0)."""
    if is_tuple(shape):
        out = []
        for s in reversed(shape):
            out.append(compact_row_major(s, current))
            current *= product(s)
        return tuple(reversed(out))
    return 0 if shape == 1 else current


def idx2crd(idx: int, shape: IntTuple) -> IntTuple:
    """The colexicographic coordinate of `idx` in `shape` (the last mode takes the rest)."""
    if is_tuple(shape):
        out = []
        for i, s in enumerate(shape):
            if i == len(shape) - 1:
                out.append(idx2crd(idx, s))
            else:
                n = product(s)
                out.append(idx2crd(idx % n, s))
                idx //= n
        return tuple(out)
    return idx


def crd2idx(crd: IntTuple, shape: IntTuple, stride: IntTuple) -> int:
    """Offset of coordinate `crd` (hierarchical, or an int read colexicographically)."""
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            raise LayoutError(f"coordinate {_fmt(crd)} does not match shape {_fmt(shape)}")
        return sum(crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride))
    if is_tuple(shape):
        return crd2idx(idx2crd(crd, shape), shape, stride)
    return crd * stride


def _fmt(t: Any) -> str:
    """CuTe DSL's printing of an IntTuple: no spaces, 1-tuples as (x)."""
    if t is None:
        return "_"
    if is_tuple(t):
        return "(" + ",".join(_fmt(e) for e in t) + ")"
    return str(t)


# ---------------------------------------------------------------- Layout


class Layout:
    """shape:stride, a function from coordinates to offsets."""

    __slots__ = ("shape", "stride")

    def __init__(self, shape: IntTuple, stride: IntTuple | None = None):
        shape = _as_int_tuple(shape)
        stride = compact_col_major(shape) if stride is None else _as_int_tuple(stride)
        if not congruent(shape, stride):
            raise LayoutError(f"shape {_fmt(shape)} and stride {_fmt(stride)} differ in structure")
        if any(s < 0 for s in flatten(shape)):
            raise LayoutError(f"negative extent in shape {_fmt(shape)}")
        self.shape = shape
        self.stride = stride

    @classmethod
    def col_major(cls, rows: int, cols: int, ld: int | None = None) -> "Layout":
        """A rows x cols matrix stored column by column, columns `ld` apart (default
        `rows`; more pads each column): (rows,cols):(1,ld)."""
        return cls((rows, cols), (1, ld or rows))

    @classmethod
    def row_major(cls, rows: int, cols: int, ld: int | None = None) -> "Layout":
        """A rows x cols matrix stored row by row, rows `ld` apart (default `cols`; more
        pads each row): (rows,cols):(ld,1)."""
        return cls((rows, cols), (ld or cols, 1))

    # -- identity and printing
    def __str__(self) -> str:
        return f"{_fmt(self.shape)}:{_fmt(self.stride)}"

    def __repr__(self) -> str:
        return f"Layout('{self}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and (self.shape, self.stride) == (
            other.shape,
            other.stride,
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.stride))

    # -- the function
    def __call__(self, *coord) -> int:
        crd = coord[0] if len(coord) == 1 else tuple(coord)
        return crd2idx(_as_int_tuple(crd), self.shape, self.stride)

    def __getitem__(self, i: int) -> "Layout":
        """Mode i (a rank-1 layout is its own mode 0)."""
        if not is_tuple(self.shape):
            if i != 0:
                raise IndexError(f"rank-1 layout {self} has no mode {i}")
            return self
        return Layout(self.shape[i], self.stride[i])

    def modes(self) -> list["Layout"]:
        return [self[i] for i in range(self.rank)]

    @property
    def size(self) -> int:
        return product(self.shape)

    @property
    def cosize(self) -> int:
        """One past the largest offset (CuTe: layout(size - 1) + 1)."""
        return self(self.size - 1) + 1 if self.size else 0

    @property
    def rank(self) -> int:
        return rank_of(self.shape)

    @property
    def depth(self) -> int:
        return depth_of(self.shape)

    def offsets(self) -> np.ndarray:
        """layout(i) for i = 0 .. size-1, as an int64 array (vectorised)."""
        idx = np.arange(self.size, dtype=np.int64)
        out = np.zeros(self.size, dtype=np.int64)
        running = 1
        for s, d in zip(flatten(self.shape), flatten(self.stride)):
            out += ((idx // running) % s) * d
            running *= s
        return out

    def grid(self) -> np.ndarray:
        """Offsets as a 2-D array: rows = size of mode 0, columns = the other modes (colex)."""
        rows = product(self.shape[0]) if is_tuple(self.shape) else self.size
        return self.offsets().reshape((rows, self.size // max(rows, 1)), order="F")

    def with_offset(self, offset: int) -> "ComposedLayout":
        return ComposedLayout(Swizzle(0, 0, 0), offset, self)


def make_layout(shape: IntTuple, stride: IntTuple | None = None) -> Layout:
    """Like cute.make_layout: column-major (LayoutLeft) strides unless given."""
    return Layout(shape, stride)


def make_layout_row_major(shape: IntTuple) -> Layout:
    return Layout(shape, compact_row_major(_as_int_tuple(shape)))


def make_ordered_layout(shape: IntTuple, order: IntTuple) -> Layout:
    """Compact layout whose modes are laid out in increasing `order` (flat shapes)."""
    shape, order = _as_int_tuple(shape), _as_int_tuple(order)
    if not is_tuple(shape):
        return Layout(shape, 1)
    strides, current = [0] * len(shape), 1
    for i in sorted(range(len(shape)), key=lambda k: order[k]):
        strides[i] = compact_col_major(shape[i], current)
        current *= product(shape[i])
    return Layout(shape, tuple(strides))


def _join(layouts: Iterable[Layout]) -> Layout:
    """make_layout(L0, L1, ...): the layouts as the modes of one layout."""
    layouts = list(layouts)
    return Layout(tuple(l.shape for l in layouts), tuple(l.stride for l in layouts))


def append_modes(layout: Layout, n: int) -> Layout:
    """append<n>: pad with 1:0 modes up to rank n (a rank-1 int layout becomes a tuple)."""
    if layout.rank >= n:
        return layout
    modes = layout.modes() + [Layout(1, 0)] * (n - layout.rank)
    return _join(modes)


# ---------------------------------------------------------------- coalesce / filter


def _bw_coalesce(shapes: tuple, strides: tuple, new_shape, new_stride) -> Layout:
    for s, d in zip(reversed(shapes), reversed(strides)):
        if s == 1:
            continue
        if new_shape == 1:  # replace the shape-1 start (only at the beginning)
            new_shape, new_stride = s, d
            continue
        front_shape = new_shape[0] if is_tuple(new_shape) else new_shape
        front_stride = new_stride[0] if is_tuple(new_stride) else new_stride
        if s * d == front_stride:  # merge
            if is_tuple(new_shape):
                new_shape = (s * front_shape,) + new_shape[1:]
                new_stride = (d,) + new_stride[1:]
            else:
                new_shape, new_stride = s * front_shape, d
        else:  # prepend
            new_shape = (s,) + (new_shape if is_tuple(new_shape) else (new_shape,))
            new_stride = (d,) + (new_stride if is_tuple(new_stride) else (new_stride,))
    if new_shape == 1:
        return Layout(1, 0)
    return Layout(new_shape, new_stride)


def coalesce(layout: Layout, profile: IntTuple | None = None) -> Layout:
    """Merge modes that are contiguous: same function on the domain, depth <= 1.

    With a `profile` (like CuTe DSL's `target_profile`), coalesce each mode separately.
    """
    if profile is not None and is_tuple(profile):
        modes = [
            coalesce(layout[i], profile[i]) if i < len(profile) else layout[i]
            for i in range(layout.rank)
        ]
        return _join(modes)
    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    return _bw_coalesce(shapes[:-1], strides[:-1], shapes[-1], strides[-1])


def _coalesce_x(layout: Layout) -> Layout:
    """coalesce that also keeps the function outside the domain (a trailing 1 counts as 2)."""
    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    last_shape = 2 if shapes[-1] == 1 else shapes[-1]
    return _bw_coalesce(shapes[:-1], strides[:-1], last_shape, strides[-1])


def filter_zeros(layout: Layout) -> Layout:
    """Replace the extent of every stride-0 mode by 1."""

    def walk(s, d):
        if is_tuple(s):
            return tuple(walk(x, y) for x, y in zip(s, d))
        return 1 if d == 0 else s

    return Layout(walk(layout.shape, layout.stride), layout.stride)


def filter_layout(layout: Layout) -> Layout:
    """Drop stride-0 and size-1 modes (CuTe's filter)."""
    return coalesce(filter_zeros(layout))


# ---------------------------------------------------------------- composition


def _composition_impl(lshape, lstride, rshape, rstride) -> Layout:
    if is_tuple(rshape):
        return _join(_composition_impl(lshape, lstride, s, d) for s, d in zip(rshape, rstride))
    if rstride == 0:
        return Layout(rshape, 0)
    if not is_tuple(lshape):
        return Layout(rshape, rstride * lstride)
    result_shape, result_stride = [], []
    rest_shape, rest_stride = rshape, rstride
    for curr_shape, curr_stride in zip(lshape[:-1], lstride[:-1]):
        if not (rest_stride % curr_shape == 0 or abs(rest_stride) < curr_shape):
            raise LayoutError(
                f"stride divisibility condition fails: {rest_stride} vs extent "
                f"{curr_shape} of {_fmt(lshape)}:{_fmt(lstride)}"
            )
        next_shape = ceil_div(curr_shape, abs(rest_stride))
        next_stride = ceil_div(abs(rest_stride), curr_shape) * _signum(rest_stride)
        if next_shape == 1 or rest_shape == 1:
            rest_stride = next_stride
            continue
        new_shape = min(next_shape, rest_shape)
        if rest_shape % new_shape:
            raise LayoutError(
                f"shape divisibility condition fails: {rest_shape} by {new_shape} "
                f"in {_fmt(lshape)}:{_fmt(lstride)}"
            )
        result_shape.append(new_shape)
        result_stride.append(rest_stride * curr_stride)
        rest_shape //= new_shape
        rest_stride = next_stride
    if not result_shape:
        return Layout(rest_shape, rest_stride * lstride[-1])
    if rest_shape == 1:
        return Layout(unwrap(tuple(result_shape)), unwrap(tuple(result_stride)))
    return Layout(
        tuple(result_shape) + (rest_shape,), tuple(result_stride) + (rest_stride * lstride[-1],)
    )


Tiler = Union[Layout, int, tuple, None]


def composition(lhs: Layout, rhs: Tiler) -> Layout:
    """lhs o rhs: the layout R with R(c) = lhs(rhs(c)) on rhs's domain.

    `rhs` may be a Layout, an int n (meaning make_layout(n): n:1, or 1:0), None (identity), or a
    tuple tiler
    composed mode by mode (modes of lhs beyond the tiler are dropped, as in CuTe).
    """
    if rhs is None:
        return lhs
    if isinstance(rhs, Layout):
        flat = _coalesce_x(lhs)
        return _composition_impl(flat.shape, flat.stride, rhs.shape, rhs.stride)
    if is_tuple(rhs):
        if len(rhs) > lhs.rank:
            raise LayoutError(f"tiler {_fmt_tiler(rhs)} has more modes than {lhs}")
        return _join(composition(lhs[i], t) for i, t in enumerate(rhs))
    return composition(lhs, Layout(int(rhs)))


# ---------------------------------------------------------------- complement / inverses


def complement(layout: Layout, cotarget: IntTuple | None = None) -> Layout:
    """The layout that fills the gaps of `layout` up to `cotarget` (default: its cosize)."""
    flt = filter_layout(layout)
    if cotarget is None:
        cotarget = flt.cosize
    cotarget = _as_int_tuple(cotarget)
    if not is_tuple(flt.stride) and flt.stride == 0:
        return Layout(product(cotarget))
    shape = list(flt.shape) if is_tuple(flt.shape) else [flt.shape]
    stride = list(flt.stride) if is_tuple(flt.stride) else [flt.stride]
    result_shape, result_stride = [], [1]
    for i in range(len(shape) - 1):
        min_stride = min(stride)
        k = stride.index(min_stride)
        new_shape = min_stride // result_stride[i]
        if new_shape == 0:
            raise LayoutError(f"complement of a non-injective layout ({layout})")
        result_shape.append(new_shape)
        result_stride.append(min_stride * shape[k])
        del shape[k], stride[k]
    new_shape = stride[0] // result_stride[-1]
    if new_shape == 0:
        raise LayoutError(f"complement of a non-injective layout ({layout})")
    result_shape.append(new_shape)
    new_stride = stride[0] * shape[0]
    rest_shape = product(ceil_div(cotarget, new_stride))
    return coalesce(
        Layout(
            (tuple(result_shape), rest_shape),
            (tuple(result_stride), compact_col_major(rest_shape, new_stride)),
        )
    )


def _prefix_products(shapes: tuple) -> list[int]:
    out = [1]
    for s in shapes:
        out.append(out[-1] * s)
    return out


def right_inverse(layout: Layout) -> Layout:
    """R with layout(R(i)) == i for i < size(R): the largest such (CuTe's right_inverse)."""
    c = coalesce(layout)
    shapes = c.shape if is_tuple(c.shape) else (c.shape,)
    strides = c.stride if is_tuple(c.stride) else (c.stride,)
    pre = _prefix_products(shapes)
    result_shape, result_stride, curr = [1], [0], 1
    for i in sorted(range(len(strides)), key=lambda k: strides[k]):
        if strides[i] == curr:
            result_shape.append(shapes[i])
            result_stride.append(pre[i])
            curr = shapes[i] * strides[i]
    return coalesce(Layout(tuple(result_shape), tuple(result_stride)))


def left_inverse(layout: Layout) -> Layout:
    """L with L(layout(i)) == i for every i (for injective layouts; CuTe's left_inverse)."""
    c = coalesce(layout)
    shapes = c.shape if is_tuple(c.shape) else (c.shape,)
    strides = c.stride if is_tuple(c.stride) else (c.stride,)
    pre = _prefix_products(shapes)
    order = sorted(range(len(strides)), key=lambda k: strides[k])
    result_shape, result_stride = [], [0]
    for i in order:
        if strides[i] == 0:
            continue
        size_so_far = math.prod(result_shape)
        if strides[i] % size_so_far:
            raise LayoutError(f"left inverse divisibility condition fails for {layout}")
        result_shape.append(strides[i] // size_so_far)
        result_stride.append(pre[i])
    result_shape.append(shapes[order[-1]])
    return coalesce(Layout(tuple(result_shape), tuple(result_stride)))


# ---------------------------------------------------------------- divide


def _by_mode(layout: Layout, tiler: tuple, op) -> Layout:
    if len(tiler) > layout.rank:
        raise LayoutError(f"tiler {_fmt_tiler(tiler)} has more modes than {layout}")
    return _join(
        [op(layout[i], tiler[i]) if i < len(tiler) else layout[i] for i in range(layout.rank)]
    )


def logical_divide(layout: Layout, tiler: Tiler) -> Layout:
    """((tile, rest)) per tiled mode: the tiler's elements first, then what is left over."""
    if tiler is None:
        return layout
    if isinstance(tiler, Layout):
        rest = complement(tiler, coalesce(layout).shape)
        return composition(layout, _join([tiler, rest]))
    if is_tuple(tiler):
        return _by_mode(layout, tiler, logical_divide)
    return logical_divide(layout, Layout(int(tiler)))


def _zip2_by(t: IntTuple, guide) -> IntTuple:
    if is_tuple(guide) and not isinstance(guide, Layout):
        if not is_tuple(t) or len(t) < len(guide):
            raise LayoutError("tiler and layout do not match in rank")
        split = [_zip2_by(t[i], g) for i, g in enumerate(guide)]
        return (tuple(s[0] for s in split), tuple(s[1] for s in split) + t[len(guide) :])
    if not (is_tuple(t) and len(t) == 2):
        raise LayoutError("a tiled mode must split into (tile, rest); use a tiler entry for it")
    return t


def _tile_unzip(layout: Layout, tiler: Tiler) -> Layout:
    if not is_tuple(tiler):
        return layout
    return Layout(_zip2_by(layout.shape, tiler), _zip2_by(layout.stride, tiler))


def zipped_divide(layout: Layout, tiler: Tiler) -> Layout:
    """((tile modes...), (rest modes...)): every tile's elements in mode 0."""
    return _tile_unzip(logical_divide(layout, tiler), tiler)


def _unpack(layout: Layout, first: bool) -> Layout:
    """Splice the sub-modes of mode 1 (and of mode 0 if `first`) into the top level."""
    modes = []
    for i, mode in enumerate(layout.modes()):
        if (i == 1 or (i == 0 and first)) and is_tuple(mode.shape):
            modes.extend(mode.modes())
        else:
            modes.append(mode)
    return _join(modes)


def tiled_divide(layout: Layout, tiler: Tiler) -> Layout:
    """((tile modes...), rest0, rest1, ...)."""
    return _unpack(zipped_divide(layout, tiler), first=False)


def flat_divide(layout: Layout, tiler: Tiler) -> Layout:
    """(tile0, tile1, ..., rest0, rest1, ...)."""
    return _unpack(zipped_divide(layout, tiler), first=True)


# ---------------------------------------------------------------- product


def logical_product(block: Layout, tiler: Tiler) -> Layout:
    """(block, tiler laid out over the block's complement): copies of `block`, arranged by
    `tiler`."""
    if tiler is None:
        return block
    if isinstance(tiler, Layout):
        rest = complement(block, block.size * tiler.cosize)
        return _join([block, composition(rest, tiler)])
    if is_tuple(tiler):
        return _by_mode(block, tiler, logical_product)
    return logical_product(block, Layout(int(tiler)))


def zipped_product(block: Layout, tiler: Tiler) -> Layout:
    return _tile_unzip(logical_product(block, tiler), tiler)


def tiled_product(block: Layout, tiler: Tiler) -> Layout:
    return _unpack(zipped_product(block, tiler), first=False)


def flat_product(block: Layout, tiler: Tiler) -> Layout:
    return _unpack(zipped_product(block, tiler), first=True)


def _zip_layouts(a: Layout, b: Layout) -> Layout:
    """zip(a, b): mode i becomes (a_i, b_i); a rank-1 int layout zips as a whole."""
    if not is_tuple(a.shape):
        return Layout(((a.shape, b.shape),), ((a.stride, b.stride),))
    if not is_tuple(b.shape) or len(a.shape) != len(b.shape):
        raise LayoutError(f"unable to compute the product: cannot pair the modes of {a} and {b}")
    return _join(_join([x, y]) for x, y in zip(a.modes(), b.modes()))


def blocked_product(block: Layout, tiler: Layout) -> Layout:
    """Each mode i becomes (block_i, tiler_i): whole blocks repeated over the tiler."""
    r = max(block.rank, tiler.rank)
    result = logical_product(append_modes(block, r), append_modes(tiler, r))
    return _zip_layouts(result[0], result[1])


def raked_product(block: Layout, tiler: Layout) -> Layout:
    """Each mode i becomes (tiler_i, block_i): the blocks' elements interleaved."""
    r = max(block.rank, tiler.rank)
    result = logical_product(append_modes(block, r), append_modes(tiler, r))
    return coalesce(_zip_layouts(result[1], result[0]), (1,) * r)


# ---------------------------------------------------------------- swizzle


@dataclass(frozen=True)
class Swizzle:
    """Swizzle<B,M,S>: the XOR that moves shared-memory data off colliding banks.

    A function on an integer offset. It keeps the lowest M bits (a block of 2^M units
    stays contiguous), takes the B bits that start S places above them, and XORs those
    into the B bits just above the M kept bits:

        Swizzle<B,M,S>(x) = x ^ ((x & source_mask) >> S)      (S > 0)
        source_mask = (2^B - 1) << (M + S),   target_mask = (2^B - 1) << M

    Whether x counts elements or bytes is the caller's to say (course.models.swizzle
    explains why it matters). `str()` writes it as the course does, Swizzle<B,M,S>;
    `cute_str` as CuTe DSL prints it, S<B,M,S>.
    """

    bits: int  # B: how many bits are XORed
    base: int  # M: how many low bits are left alone
    shift: int  # S: how far above the target bits the source bits start

    def __post_init__(self):
        if self.bits < 0 or self.base < 0:
            raise LayoutError(f"{self}: B and M must be >= 0")
        if abs(self.shift) < self.bits:
            raise LayoutError(
                f"{self}: |S| must be >= B, or the source and target bits would overlap"
            )

    @property
    def target_mask(self) -> int:
        """The bits that get changed (the 'bank' bits when the unit is right)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, -self.shift))

    @property
    def source_mask(self) -> int:
        """The bits that are read (the 'row' bits) and XORed into the target bits."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def is_identity(self) -> bool:
        return self.bits == 0

    def _moved(self, offset):
        """The source bits of `offset`, shifted onto the target bits."""
        if self.shift >= 0:
            return (offset & self.source_mask) >> self.shift
        return (offset & self.source_mask) << -self.shift

    def __call__(self, offset):
        """The swizzled offset: an int for an int (or numpy scalar), an array for arrays."""
        offset = offset if isinstance(offset, int) else np.asarray(offset)
        out = offset ^ self._moved(offset)
        return int(out) if np.ndim(out) == 0 else out

    def on_elements(self, elem_bytes: int) -> "Swizzle":
        """This byte-address swizzle as a swizzle on element offsets of `elem_bytes` each."""
        log = _log2(elem_bytes)
        if self.is_identity:
            return Swizzle(0, max(0, self.base - log), self.shift)
        if self.base < log:
            raise ValueError(
                f"{self} keeps only {2**self.base}-byte blocks whole: it cannot "
                f"be written on {elem_bytes}-byte elements"
            )
        return Swizzle(self.bits, self.base - log, self.shift)

    def on_bytes(self, elem_bytes: int) -> "Swizzle":
        """This element-offset swizzle as a swizzle on byte addresses."""
        return Swizzle(self.bits, self.base + _log2(elem_bytes), self.shift)

    def bit_roles(self, width: int | None = None) -> list[str]:
        """Role of each bit, lowest first: 'kept' (below M), 'target', 'source' or 'other'."""
        width = width or self.base + abs(self.shift) + self.bits + 1
        roles = []
        for b in range(width):
            if (self.target_mask >> b) & 1:
                roles.append("target")
            elif (self.source_mask >> b) & 1:
                roles.append("source")
            elif b < self.base:
                roles.append("kept")
            else:
                roles.append("other")
        return roles

    def trace(self, offset: int, width: int | None = None) -> dict:
        """The worked XOR for one offset, as the bit diagram shows it."""
        width = width or max(self.base + abs(self.shift) + self.bits + 1, int(offset).bit_length())
        moved, result = int(self._moved(int(offset))), self(int(offset))
        return {
            "offset": int(offset),
            "source_bits": int(offset & self.source_mask),
            "moved": moved,
            "result": result,
            "width": width,
            "binary": format(int(offset), f"0{width}b"),
            "moved_binary": format(moved, f"0{width}b"),
            "result_binary": format(result, f"0{width}b"),
        }

    @property
    def cute_str(self) -> str:
        """As CuTe DSL prints it: S<B,M,S>."""
        return f"S<{self.bits},{self.base},{self.shift}>"

    def __str__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"


def _log2(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


class ComposedLayout:
    """swizzle o offset o layout, CuTe's composed layout (printed as CuTe DSL prints it)."""

    __slots__ = ("swizzle", "offset", "layout")

    def __init__(self, swizzle: Swizzle, offset: int, layout: Layout):
        self.swizzle, self.offset, self.layout = swizzle, int(offset), layout

    def __call__(self, *coord) -> int:
        return self.swizzle(self.offset + self.layout(*coord))

    def __str__(self) -> str:
        return f"{self.swizzle.cute_str} o {self.offset} o {self.layout}"

    def __repr__(self) -> str:
        return f"ComposedLayout('{self}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposedLayout) and (self.swizzle, self.offset, self.layout) == (
            other.swizzle,
            other.offset,
            other.layout,
        )

    def __hash__(self) -> int:
        return hash((self.swizzle, self.offset, self.layout))

    shape = property(lambda self: self.layout.shape)
    size = property(lambda self: self.layout.size)
    rank = property(lambda self: self.layout.rank)
    depth = property(lambda self: self.layout.depth)

    @property
    def cosize(self) -> int:
        return int(self.offsets().max()) + 1 if self.size else 0

    def offsets(self) -> np.ndarray:
        return self.swizzle(self.offset + self.layout.offsets())

    def grid(self) -> np.ndarray:
        return self.swizzle(self.offset + self.layout.grid())


AnyLayout = Union[Layout, ComposedLayout]


# ---------------------------------------------------------------- parsing

_TOKEN = re.compile(r"\s*(?:(-?\d+)|(S<\s*-?\d+\s*,\s*-?\d+\s*,\s*-?\d+\s*>)|(.))")


def _tokens(text: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text):
        tok = m.group(1) or m.group(2) or m.group(3)
        if tok is not None and tok.strip():
            out.append(tok)
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            want = f"'{expected}'" if expected else "more input"
            raise LayoutError(
                f"cannot read {self.text!r}: expected {want} at token {self.pos + 1} ({tok!r})"
            )
        self.pos += 1
        return tok

    def item(self):
        """int | '_' | (item, ...) , each optionally followed by ':' stride."""
        tok = self.peek()
        if tok == "(":
            self.take("(")
            elems = [self.item()]
            while self.peek() == ",":
                self.take(",")
                elems.append(self.item())
            self.take(")")
            value = tuple(elems)
        elif tok == "_":
            self.take()
            return None
        elif tok is not None and re.fullmatch(r"-?\d+", tok):
            value = int(self.take())
        else:
            raise LayoutError(f"cannot read {self.text!r}: unexpected {tok!r}")
        if self.peek() == ":":
            self.take(":")
            if not _is_int_tuple(value):
                raise LayoutError(f"cannot read {self.text!r}: a shape before ':' must be integers")
            stride = self.item()
            if isinstance(stride, Layout) or not _is_int_tuple(stride):
                raise LayoutError(f"cannot read {self.text!r}: a stride must be integers")
            return Layout(value, stride)
        return value

    def done(self):
        if self.peek() is not None:
            raise LayoutError(f"cannot read {self.text!r}: unexpected {self.peek()!r} at the end")


def _is_int_tuple(x) -> bool:
    if is_tuple(x):
        return all(_is_int_tuple(e) for e in x)
    return isinstance(x, int)


def parse_layout(text: str) -> Layout:
    """'(2,4):(1,2)' -> Layout; a bare shape '(2,4)' gets column-major strides."""
    p = _Parser(text)
    value = p.item()
    p.done()
    if isinstance(value, Layout):
        return value
    if value is None or not _is_int_tuple(value):
        raise LayoutError(f"{text!r} is not a layout: write shape:stride, e.g. (2,4):(1,2)")
    return Layout(value)


def parse_tiler(text: str) -> Tiler:
    """A tiler: a layout 'S:D' (applied to the whole layout), an int, or a tuple of
    per-mode entries (each an int, a layout 'S:D', or '_' to leave the mode alone)."""
    p = _Parser(text)
    value = p.item()
    p.done()
    return value


def parse_swizzle(text: str) -> Swizzle:
    m = re.fullmatch(r"\s*S?<?\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*>?\s*", text)
    if not m:
        raise LayoutError(f"{text!r} is not a swizzle: write S<B,M,S>, e.g. S<3,4,3>")
    return Swizzle(*(int(g) for g in m.groups()))


def _fmt_tiler(t: Tiler) -> str:
    if isinstance(t, (Layout, ComposedLayout)):
        return str(t)
    if isinstance(t, Swizzle):
        return t.cute_str
    if is_tuple(t):
        return "(" + ",".join(_fmt_tiler(e) for e in t) + ")"
    return _fmt(t)


def format_tiler(t: Tiler) -> str:
    """A tiler (or a swizzle, or a composed layout) written back in CuTe's syntax, which
    parse_tiler and parse_swizzle read."""
    return _fmt_tiler(t)


def as_layout(x: Any) -> AnyLayout:
    """A course Layout from a Layout, a 'shape:stride' string, or anything with static
    integer .shape and .stride (a CuTe DSL layout inside a jit trace)."""
    if isinstance(x, (Layout, ComposedLayout)):
        return x
    if isinstance(x, str):
        return parse_layout(x)
    if hasattr(x, "shape") and hasattr(x, "stride"):
        return Layout(x.shape, x.stride)
    raise TypeError(f"cannot read a layout from {type(x).__name__}")


OPERATIONS = {
    "coalesce": coalesce,
    "composition": composition,
    "complement": complement,
    "right_inverse": right_inverse,
    "left_inverse": left_inverse,
    "logical_divide": logical_divide,
    "zipped_divide": zipped_divide,
    "tiled_divide": tiled_divide,
    "flat_divide": flat_divide,
    "logical_product": logical_product,
    "zipped_product": zipped_product,
    "tiled_product": tiled_product,
    "flat_product": flat_product,
    "blocked_product": blocked_product,
    "raked_product": raked_product,
}

__all__ = [
    "Layout",
    "ComposedLayout",
    "Swizzle",
    "LayoutError",
    "make_layout",
    "make_layout_row_major",
    "make_ordered_layout",
    "coalesce",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "crd2idx",
    "idx2crd",
    "parse_layout",
    "parse_tiler",
    "parse_swizzle",
    "as_layout",
    "format_tiler",
    "filter_layout",
    "OPERATIONS",
]
