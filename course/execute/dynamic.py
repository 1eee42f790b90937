"""Extents a GPU build does not know: the shape leaves CuTe DSL holds as dynamic values.

Host code marks a tensor's layout dynamic (`from_dlpack(t).mark_layout_dynamic()`,
`mark_compact_shape_dynamic`), and the compiled kernel then works with `?` extents. That
changes more than speed: CuTe's algebra simplifies a *static* mode of size 1 to stride 0
(`zipped_divide((64,64):(64,1), (64,64))` is `((64,64),(1,1)):((64,1),(0,0))`), but never a
dynamic one (`((64,64),(?,?)):((?,1),(64*?,64))`). A kernel that takes the tile past the
last one of such a mode (a second warpgroup's tile where there is only one) addresses
memory past the tensor on the GPU, where TMA clips it or a predicate drops it; with the
static stride 0 the same coordinate lands on tile 0.

The executor knows every extent's value, so a dynamic extent is an int that remembers it
was dynamic: `DynamicInt`. Layouts keep such leaves; course.execute.oracle asks CuTe a
question about them twice, once with every leaf static (the values) and once with these
leaves as dynamic values in the trace (what CuTe keeps for the GPU's build), and
course.execute.dynamic_answers merges the two.

A `cutlass.Int32` value is dynamic in CuTe DSL wherever it goes: a jit's run-time argument
(a GEMM's m, n, k) or a value kernel code makes. The executor's Int32 scalar therefore
becomes a DynamicInt in any layout made from it (course.execute.api). Arithmetic on one still
gives plain ints, static where CuTe DSL's would be dynamic (`(k + 127) // 128` as a layout's
extent): a gap left open.
"""

from __future__ import annotations

# whether any DynamicInt was made in this process: until one is, a layout's shape needs no
# look for dynamic leaves (course.execute.static_layout interns layouts by their values)
SEEN = False


class DynamicInt(int):
    """An extent that is a dynamic value in CuTe DSL's build (its value is this int's).
    Arithmetic on it gives plain ints: what it is used for is asked of CuTe through the
    layout that holds it."""

    __slots__ = ()

    def __new__(cls, value):
        global SEEN
        SEEN = True
        return super().__new__(cls, value)

    def __repr__(self) -> str:  # in a layout's words: CuTe writes `?`, the value follows
        return f"?{int(self)}"

    __str__ = int.__repr__  # as a number (host code formats it): its value

    def __reduce__(self):
        return (DynamicInt, (int(self),))


def dynamic_leaves(shape) -> tuple | None:
    """The positions (in flattened order) of a shape's dynamic leaves, or None when every
    leaf is static: what a layout's key adds, so a static and a dynamic layout of the same
    values are different layouts."""
    found: list = []

    def walk(s, at: list) -> None:
        if isinstance(s, tuple):
            for e in s:
                walk(e, at)
        else:
            if isinstance(s, DynamicInt):
                found.append(at[0])
            at[0] += 1

    walk(shape, [0])
    return tuple(found) if found else None


def marked(shape, mask) -> tuple | int:
    """`shape` (a flat tuple or an int) with the leaves `mask` (0/1 per leaf) says are
    dynamic made DynamicInts: a host tensor's extents as CuTe DSL's runtime marks them."""
    mask = tuple(mask) + (0,) * (len(shape) if isinstance(shape, tuple) else 1)
    if not isinstance(shape, tuple):
        return DynamicInt(shape) if mask[0] else int(shape)
    return tuple(DynamicInt(s) if m else int(s) for s, m in zip(shape, mask))


def extent(x) -> int:
    """`x` as an int, a DynamicInt kept as one (a tensor made over a dynamic extent, such
    as a TMA tensor's coordinates over its global tensor's shape, keeps it dynamic)."""
    return x if isinstance(x, DynamicInt) else int(x)
