"""Who holds which cell, read off CuTe's own partitions: the course's one ownership extractor.

Every ownership map of the course asks CuTe the same question: partition a tensor whose
elements name cells -- an identity (coordinate) tensor, or a counting tensor of addresses
-- the way a kernel partitions its data, and read which elements each owner (thread, warp,
CTA) got, in value (register) order. A TiledMMA's partition_A/B/C, a local_tile per CTA
and a TiledCopy's or tcgen05.ld's TV layout are all such partitions. A *view* is one
owner's partition: `views()` yields (owner, tensor) pairs inside a CPU trace
(course.cute.trace.on_cpu), and `owner_pairs` returns

    [((owner, value), cell), ...]

the pairs course.models.ownership.Ownership is built from (`ownership` builds it;
`owner_table` gives the same as one integer array, for maps with many thousand cells).

    tiled_mma_pairs(lambda: mma_atom.make_tiled_mma(cutlass.BFloat16, cfg), "C", (16, 8), 32)
    owner_pairs(lambda: tv_partitions(cute.make_identity_tensor((16, 8)), tv, tiler))

Elements are evaluated with course.models.layout (numpy) from the view's static layout,
not one by one through CuTe (~0.3 ms per element); tests/test_naive_gemm.py checks the
two agree.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from course.cute.trace import on_cpu
from course.models import layout as pl
from course.models.ownership import Ownership

Pair = tuple[tuple[int, int], Any]  # ((owner, value), cell)
Views = Callable[[], Iterable[tuple[int, Any]]]


def owner_table(views: Views, *, arch: str | None = None) -> np.ndarray:
    """(n, 2 + d) int64 rows (owner, value, *element) of every view `views()` yields, in
    one CPU trace (`arch`: the target, see course.cute.trace.on_cpu), sorted by owner,
    then value. An owner yielded again continues its value numbering."""
    return on_cpu(lambda: _table(views()), arch=arch)


def owner_pairs(
    views: Views, *, arch: str | None = None, cell: Callable[[Any], Any] | None = None
) -> list[Pair]:
    """owner_table as [((owner, value), cell), ...]. cell: turns an element into the cell
    it names (e.g. a TMEM address into (lane, column)); default: the element itself,
    (row, col) for a coordinate tensor, an int for a counting tensor."""
    table = owner_table(views, arch=arch)
    owner, value, *element = (table[:, i].tolist() for i in range(table.shape[1]))
    found = list(zip(*element)) if len(element) > 1 else element[0] if element else []
    return list(zip(zip(owner, value), map(cell, found) if cell else found))


def ownership(
    shape, views: Views, *, arch: str | None = None, title: str = "", thread_label: str = "T"
) -> Ownership:
    """The owner_table of coordinate-tensor views as course.models.ownership.Ownership
    over a tile of `shape`."""
    return Ownership.from_rows(shape, owner_table(views, arch=arch), title, thread_label)


def tiled_mma_pairs(
    make_tiled_mma: Callable[[], Any], operand: str, shape, threads: int, *, arch: str | None = None
) -> list[Pair]:
    """Where each thread's values of operand A, B or C sit in a tile of `shape`: CuTe's
    partition_<operand> of a coordinate tensor by the TiledMMA `make_tiled_mma()` builds
    (inside the trace; `arch` where the MMA exists on one architecture only)."""
    if operand not in ("A", "B", "C"):
        raise ValueError("operand must be 'A', 'B' or 'C'")
    return owner_pairs(lambda: mma_partitions(make_tiled_mma(), operand, shape, threads), arch=arch)


# ---------------------------------------------------------------- views (call inside a trace)


def mma_partitions(tiled_mma, operand: str, shape, threads: int):
    """(thread, partition_<operand> of a coordinate tensor of `shape`) for each thread."""
    import cutlass.cute as cute

    coords = cute.make_identity_tensor(tuple(shape))
    for t in range(threads):
        yield t, getattr(tiled_mma.get_slice(t), f"partition_{operand}")(coords)


def tv_partitions(target, tv, tiler=None, threads: Iterable[int] | None = None):
    """(thread, its values of `target`) under a TV layout: tv maps (thread, value) to the
    column-major index of a cell of the `tiler` tile (CuTe's TiledCopy TV layouts), so
    thread t holds target(tiler(tv(t, v))) -- what partition_S/D compute."""
    import cutlass.cute as cute

    tiled = target if tiler is None else cute.composition(target, tiler)
    by_thread = cute.composition(tiled, tv)
    for t in range(cute.size(tv, mode=[0])) if threads is None else threads:
        yield t, by_thread[t, None]


def _table(views: Iterable[tuple[int, Any]]) -> np.ndarray:
    """owner_table's rows, inside the trace."""
    rows, next_value = [], {}
    for owner, view in views:
        cells = _element_array(view)
        start = next_value.get(owner, 0)
        next_value[owner] = start + len(cells)
        index = np.stack([np.full(len(cells), owner), start + np.arange(len(cells))], axis=1)
        rows.append(np.concatenate([index, cells], axis=1))
    if not rows:
        return np.zeros((0, 2), np.int64)
    table = np.concatenate(rows).astype(np.int64)
    return table[np.lexsort((table[:, 1], table[:, 0]))]


def elements(tensor) -> list:
    """The value of each element of a static coordinate tensor (a partitioned
    cute.make_identity_tensor: tuples) or counting tensor (cute.make_tensor(0, layout):
    ints), in element order. Call inside a trace."""
    cells = _element_array(tensor)
    return [tuple(row) for row in cells.tolist()] if cells.shape[1] > 1 else cells[:, 0].tolist()


def _element_array(tensor) -> np.ndarray:
    """(size, d) array of a coordinate (d = rank of the coordinate) or counting (d = 1)
    tensor's elements: origin + layout offsets, one integer layout per coordinate mode
    (CuTe writes a coordinate tensor's strides as ScaledBasis: 1@0 steps the row, 64@1
    the column by 64)."""
    import cutlass.cute as cute

    origin = tensor.iterator
    counting = not isinstance(origin, tuple)
    try:
        origin = tuple(int(o) for o in ((origin,) if counting else origin))
    except (TypeError, ValueError):
        raise ValueError(f"not a static coordinate or counting tensor: {tensor}") from None
    lay = tensor.layout

    def part(stride, mode):
        if isinstance(stride, tuple):
            return tuple(part(s, mode) for s in stride)
        if isinstance(stride, cute.ScaledBasis):
            if counting:
                raise ValueError(f"a basis stride in a counting tensor: {tensor}")
            return int(stride.value) if list(stride.mode) == [mode] else 0
        if counting or int(stride) == 0:
            return int(stride)
        raise ValueError(
            f"not a coordinate tensor: integer stride {stride} among basis strides in {tensor}"
        )

    columns = [
        o + pl.Layout(lay.shape, part(lay.stride, d)).offsets() for d, o in enumerate(origin)
    ]
    return np.stack(columns, axis=1).astype(np.int64)
