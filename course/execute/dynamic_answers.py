"""One answer from CuTe's two: a question about dynamic extents asked static and dynamic.

course.execute.oracle asks CuTe DSL a question whose layouts hold dynamic extents
(course.execute.dynamic's DynamicInt) twice. Asked with every leaf static, CuTe gives every
value but simplifies as a static build would (a size-1 mode's stride becomes 0). Asked with
those extents as dynamic values in the trace, CuTe gives what the GPU's build keeps: every
leaf it can still compute (strides, offsets: the executor keeps strides static, so they
come back as numbers) and `?` for the leaves that depend on a dynamic extent. The GPU's
answer is the dynamic one, with the static one's values where it says `?`: `merge`. Where
the two differ in structure (CuTe merged static modes it could not merge dynamic), the
static answer stands, as before dynamic extents were told apart.
"""

from __future__ import annotations

from course.execute.basis import Basis
from course.execute.dynamic import DynamicInt
from course.execute.static_layout import ComposedLayout, Layout


class _Unknown:
    """A leaf CuTe's dynamic asking left dynamic (`?`): its value is the static answer's."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown()


class Read:
    """A layout as the dynamic asking read it: shape and stride with UNKNOWN leaves."""

    __slots__ = ("shape", "stride")

    def __init__(self, shape, stride):
        self.shape, self.stride = shape, stride


class ComposedRead:
    """A composed layout as the dynamic asking read it."""

    __slots__ = ("inner", "offset", "outer")

    def __init__(self, inner, offset, outer):
        self.inner, self.offset, self.outer = inner, offset, outer


def asks_dynamic(key) -> bool:
    """Whether a question's key holds a dynamic extent (a layout's ("dyn", ...) entry or
    a DynamicInt's), so it must be asked twice."""
    if isinstance(key, tuple):
        if key and key[0] == "dyn":
            return True
        return any(asks_dynamic(e) for e in key)
    return False


def merge(static, dynamic):
    """The GPU's answer: `dynamic` where it is known, `static`'s values where it is `?`;
    `static` alone where the dynamic asking failed (None) or came back in another shape."""
    if dynamic is None or dynamic is UNKNOWN:
        return _dynamic_int(static) if dynamic is UNKNOWN else static
    if isinstance(static, Layout) and isinstance(dynamic, Read):
        return _layout(static, dynamic)
    if isinstance(static, ComposedLayout) and isinstance(dynamic, ComposedRead):
        offset = static.offset if dynamic.offset is UNKNOWN else dynamic.offset
        return ComposedLayout(
            merge(static.inner, dynamic.inner), offset, merge(static.outer, dynamic.outer)
        )
    if isinstance(static, tuple) and isinstance(dynamic, tuple) and len(static) == len(dynamic):
        return tuple(merge(s, d) for s, d in zip(static, dynamic))
    if isinstance(static, int) and isinstance(dynamic, int) and not isinstance(static, bool):
        return dynamic
    if isinstance(static, Basis) and isinstance(dynamic, Basis):
        return dynamic
    return static


def _dynamic_int(value):
    """A number the GPU's build holds dynamic (a dynamic mode's size) stays so."""
    if isinstance(value, int) and not isinstance(value, bool):
        return DynamicInt(value)
    return value


def _layout(static: Layout, read: Read) -> Layout:
    if not _same_nesting(static.shape, read.shape):
        return static
    shape = _leaves2(static.shape, read.shape, lambda s, r: DynamicInt(s) if r is UNKNOWN else s)
    stride = _leaves2(static.stride, read.stride, lambda s, r: s if r is UNKNOWN else r)
    return Layout(shape, stride)


def _same_nesting(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(_same_nesting(x, y) for x, y in zip(a, b))
        )
    return True


def _leaves2(a, b, fn):
    if isinstance(a, tuple):
        return tuple(_leaves2(x, y, fn) for x, y in zip(a, b))
    return fn(a, b)
