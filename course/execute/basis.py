"""CuTe's ScaledBasis strides on the executor: `E(mode)`, its multiples, and the coordinates
a layout with such strides maps to.

A layout whose strides are basis elements maps a coordinate to a coordinate, not to an
offset: stride v@m adds v per step to mode m of the result, so make_identity_layout((4, 8))
is (4,8):(1@0,1@1), the identity. Kernels build them on the host to say which coordinates
of a global tensor a tile covers (a TMA atom's cta_v_layout, a composition with an epilogue
tile). CuTe's algebra on them is asked of CuTe itself (course.execute.oracle); evaluating
and slicing them is done here as CuTe does (tests/test_execute_hopper_more_fixes.py compares
the two): the result is a tuple as long as the highest mode named, zeros in the others
(E(1) at 3 is (0, 3)), and a mode path names a nested entry (E([0, 1]) at 3 is ((0, 3),)).
"""

from __future__ import annotations

from course.execute.hazards import Standin, Unmodelled


class Basis(Standin):
    """value * E(mode): CuTe's ScaledBasis (`cute.ScaledBasis` on the executor) with a
    static mode path (outermost first). The value is an int, or per-lane values where a
    lane's coordinate scaled it."""

    REAL = ("cutlass.cute.core:ScaledBasis",)
    __slots__ = ("value", "mode")

    def __init__(self, value, mode):
        self.value = value
        self.mode = (int(mode),) if isinstance(mode, int) else tuple(int(m) for m in mode)
        if not self.mode:
            raise Unmodelled("a ScaledBasis with an empty mode (CuTe's E([]) is the integer 1)")

    @property
    def key(self):
        return ("E", self.value, self.mode)

    def __eq__(self, other) -> bool:
        return isinstance(other, Basis) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:  # CuTe writes the innermost mode first: E([0, 1]) is 1@1@0
        return f"{self.value}@" + "@".join(str(m) for m in reversed(self.mode))

    __repr__ = __str__

    def times(self, k) -> "Basis":
        """k steps of this stride (k an int or per-lane values)."""
        return Basis(k * self.value, self.mode)

    def __mul__(self, k) -> "Basis":
        return self.times(k)

    __rmul__ = __mul__

    def point(self) -> "Point":
        """This element as a coordinate: value at its mode path, zeros before it."""
        entry = self.value
        for m in reversed(self.mode):
            entry = Point((0,) * m + (entry,))
        return entry

    def __add__(self, other) -> "Point":
        return self.point() + other

    __radd__ = __add__

    def to_real(self):
        import cutlass.cute as cute

        return cute.ScaledBasis(self.value, list(self.mode))


def _add(a, b):
    """Coordinates added mode by mode, the shorter padded with zeros (CuTe's ArithTuple
    addition); an int 0 is the empty coordinate."""
    a_tuple, b_tuple = isinstance(a, tuple), isinstance(b, tuple)
    if not a_tuple and not b_tuple:
        return a + b
    if not a_tuple or not b_tuple:
        scalar, point = (a, b) if b_tuple else (b, a)
        if isinstance(scalar, int) and scalar == 0:
            return point
        raise Unmodelled(
            f"adding the integer {scalar} to the coordinate {point} (a layout whose strides "
            f"mix integers and ScaledBasis)"
        )
    n = max(len(a), len(b))
    a, b = tuple(a) + (0,) * (n - len(a)), tuple(b) + (0,) * (n - len(b))
    return Point(_add(x, y) for x, y in zip(a, b))


class Point(tuple):
    """A coordinate a basis layout maps to, while it is summed (CuTe's ArithTuple): `+`
    adds mode by mode instead of concatenating. `plain` gives the tuple CuTe returns."""

    def __add__(self, other):
        if isinstance(other, Basis):
            other = other.point()
        return _add(self, other)

    __radd__ = __add__


def plain(x):
    """A Point (or Basis) as the plain nested tuple CuTe DSL's evaluation returns."""
    if isinstance(x, Basis):
        x = x.point()
    if isinstance(x, tuple):
        return tuple(plain(e) for e in x)
    return x


def has_basis(stride) -> bool:
    if isinstance(stride, tuple):
        return any(has_basis(s) for s in stride)
    return isinstance(stride, Basis)


def E(mode) -> Basis | int:
    """cute.E(mode): the unit basis element of a mode (E([]) is 1, as CuTe's)."""
    if not isinstance(mode, int) and not list(mode):
        return 1
    return Basis(1, mode)
