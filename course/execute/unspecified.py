"""The result of an integer division or remainder by zero: unspecified, not an error.

The PTX ISA says of `div` and `rem` on integers: "Division by zero yields an unspecified,
machine-specific value." A kernel may compute such a value and never use it: NVIDIA's
Hopper `dense_gemm` takes `cluster_id % num_reg_cids` with `num_reg_cids == 0` on a small
grid and then overwrites what came of it in the branch for that case. So on the executor
`a // 0` and `a % 0` of integers (course.execute.branches rewrites kernel code's `//` and
`%` into `floordiv` / `mod`) give an `Unspecified`: arithmetic and comparisons on it give
another, a layout's coordinate of it is a coordinate of Unspecified leaves, and only where
its value would decide something -- a branch, an index, an address, a conversion to int --
is it a hazard, naming the line of the division.
"""

from __future__ import annotations

from course.execute import hazards

UNSPECIFIED_USED = hazards.UNSPECIFIED_USED  # its kind (hazards.KINDS says what it means)
DIVISION_BY_ZERO = hazards.DIVISION_BY_ZERO  # its Cause.what (hazards.CAUSES)


class Unspecified:
    """An integer the hardware gives no defined value: where it came from, for the hazard."""

    __slots__ = ("site",)

    def __init__(self, site: hazards.Site):
        self.site = site

    def _used(self, how: str):
        raise hazards.Hazard(
            UNSPECIFIED_USED,
            f"{how} the value of `{self.site.text()}` ({self.site.describe()}), an integer "
            "division or remainder by zero, whose result the PTX ISA leaves unspecified",
            hazards.site(3),
            hazards.Cause(DIVISION_BY_ZERO, self.site.text(), observed=self.site.lineno),
        )

    def _same(self, *_):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _same
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _same
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _same
    __neg__ = __pos__ = __abs__ = __invert__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _same
    __hash__ = object.__hash__

    def __bool__(self):
        self._used("a branch on")

    def __index__(self):
        self._used("an index or address from")

    def __int__(self):
        self._used("a conversion to int of")

    __float__ = __int__

    def like(self, shape):
        """A coordinate congruent with `shape`, every leaf this value."""
        if isinstance(shape, tuple):
            return tuple(self.like(s) for s in shape)
        return self

    def __repr__(self) -> str:
        return f"<unspecified: {self.site.text()}>"


def _is_int(x) -> bool:
    import numpy as np

    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def floordiv(a, b):
    """Kernel code's `a // b`: Unspecified for integers divided by zero."""
    if _is_int(b) and b == 0 and (_is_int(a) or isinstance(a, bool)):
        return Unspecified(hazards.site(2))
    return a // b


def mod(a, b):
    """Kernel code's `a % b`: Unspecified for an integer remainder by zero."""
    if _is_int(b) and b == 0 and (_is_int(a) or isinstance(a, bool)):
        return Unspecified(hazards.site(2))
    return a % b
