"""One value per lane of a warp: how the executor runs 32 threads as one Python execution.

The executor runs a warp's lanes together (SIMT as SIMD): a value that is the same for every
lane is a plain Python/numpy scalar, a value that differs is `Lanes` (a numpy vector with
one entry per lane), and arithmetic and comparisons on `Lanes` give `Lanes`. Where Python
needs one answer for all lanes -- `if`, `while`, `range(...)`, an index into a tuple -- a
uniform `Lanes` gives it; a divergent one raises `Divergent`, which course.execute.simt
turns into masked execution of both branches (the kernel's source is rewritten for that by
course.execute.translate), or into a clear "not modelled" where that is not possible.
"""

from __future__ import annotations

import numpy as np


class Divergent(Exception):
    """The lanes of a warp disagree where Python needs one value."""


class Lanes:
    """A value per lane (numpy array `v`, one entry per lane of the warp)."""

    __slots__ = ("v",)
    __array_priority__ = 100  # numpy scalars defer to Lanes' operators

    def __init__(self, v):
        self.v = np.asarray(v)

    def __repr__(self) -> str:
        return f"Lanes({self.v.tolist()})"

    # --- one value for all lanes
    def uniform(self):
        first = self.v[0]
        if (self.v == first).all():
            return first.item() if hasattr(first, "item") else first
        raise Divergent(f"lanes hold different values {self.v.tolist()[:8]}...")

    def __bool__(self) -> bool:
        return bool(self.uniform())

    def __index__(self) -> int:
        return int(self.uniform())

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.uniform())

    def __hash__(self):
        raise TypeError("a per-lane value is not hashable")

    def __len__(self):
        raise Divergent("len() of a per-lane value")

    def __iter__(self):
        raise Divergent("iterating over a per-lane value")

    def to(self, dtype, **_):
        """Each lane's value converted, as CuTe DSL's `Numeric.to(dtype)` converts it."""
        return dtype(self)

    def ir_value(self, **_):
        """The MLIR value a CuTe DSL scalar wraps (what inline PTX and dialect ops take):
        on the executor, the per-lane value itself."""
        return self

    # --- arithmetic
    def _op(self, other, fn):
        o = other.v if isinstance(other, Lanes) else other
        return Lanes(fn(self.v, o))

    def _rop(self, other, fn):
        o = other.v if isinstance(other, Lanes) else other
        return Lanes(fn(o, self.v))

    def __add__(self, o):
        return self._op(o, np.add)

    def __radd__(self, o):
        return self._rop(o, np.add)

    def __sub__(self, o):
        return self._op(o, np.subtract)

    def __rsub__(self, o):
        return self._rop(o, np.subtract)

    def __mul__(self, o):
        return self._op(o, np.multiply)

    def __rmul__(self, o):
        return self._rop(o, np.multiply)

    def __truediv__(self, o):
        return self._op(o, np.true_divide)

    def __rtruediv__(self, o):
        return self._rop(o, np.true_divide)

    def __floordiv__(self, o):
        return self._op(o, np.floor_divide)

    def __rfloordiv__(self, o):
        return self._rop(o, np.floor_divide)

    def __mod__(self, o):
        return self._op(o, np.mod)

    def __rmod__(self, o):
        return self._rop(o, np.mod)

    def __pow__(self, o):
        return self._op(o, np.power)

    def __rpow__(self, o):
        return self._rop(o, np.power)

    def __lshift__(self, o):
        return self._op(o, np.left_shift)

    def __rlshift__(self, o):
        return self._rop(o, np.left_shift)

    def __rshift__(self, o):
        return self._op(o, np.right_shift)

    def __rrshift__(self, o):
        return self._rop(o, np.right_shift)

    def __xor__(self, o):
        return self._op(o, np.bitwise_xor)

    def __rxor__(self, o):
        return self._rop(o, np.bitwise_xor)

    def __neg__(self):
        return Lanes(-self.v)

    def __pos__(self):
        return self

    def __abs__(self):
        return Lanes(np.abs(self.v))

    def __invert__(self):
        return Lanes(~self.v if self.v.dtype == bool else np.invert(self.v))

    def __and__(self, o):
        o = o.v if isinstance(o, Lanes) else o
        return Lanes(
            np.logical_and(self.v, o)
            if self.v.dtype == bool or isinstance(o, bool)
            else np.bitwise_and(self.v, o)
        )

    __rand__ = __and__

    def __or__(self, o):
        o = o.v if isinstance(o, Lanes) else o
        return Lanes(
            np.logical_or(self.v, o)
            if self.v.dtype == bool or isinstance(o, bool)
            else np.bitwise_or(self.v, o)
        )

    __ror__ = __or__

    def __lt__(self, o):
        return self._op(o, np.less)

    def __le__(self, o):
        return self._op(o, np.less_equal)

    def __gt__(self, o):
        return self._op(o, np.greater)

    def __ge__(self, o):
        return self._op(o, np.greater_equal)

    def __eq__(self, o):
        return self._op(o, np.equal)  # noqa: PLE0302

    def __ne__(self, o):
        return self._op(o, np.not_equal)


def lanes(values) -> "Lanes | object":
    """Lanes of `values`, or the one value when every lane holds it."""
    v = np.asarray(values)
    if v.size and (v == v.flat[0]).all():
        first = v.flat[0]
        return first.item() if v.dtype.kind in "iub" else first
    return Lanes(v)


def uniform(x, what: str) -> int:
    """The one value every lane of the warp holds (an address, a count, a parity): one
    instruction takes one value; lanes that disagree are a case the executor does not model."""
    from course.execute.hazards import Unmodelled

    if isinstance(x, Lanes):
        v = np.asarray(x.v).reshape(-1)
        if not (v == v[0]).all():
            raise Unmodelled(f"{what} that differs between the lanes of a warp")
        return int(v[0])
    return int(x)
