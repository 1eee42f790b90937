"""Who holds each cell of a tile: the data model behind every ownership map of the course.

A TiledCopy, a TiledMMA, an mma.sync fragment, a WGMMA accumulator, a TMEM load or
a CTA pair all answer the same question: for each cell (row, col) of a 2-D tile,
which thread (or warp, or CTA) holds it, and in which of its values (registers)?
`Ownership` stores the answer once, whatever produced it, so one picture
(course.viz.ownership_pictures) and one widget (course.widgets.ownership_map) serve them all.

Build one from
  * explicit pairs: Ownership.from_pairs(shape, [((thread, value), (row, col)), ...]),
    or the same as an (n, 4) array of (thread, value, row, col): Ownership.from_rows;
  * a TV layout: Ownership.from_tv_layout(tv, (rows, cols)), where tv maps
    (thread, value) to the column-major index of a cell, as CuTe's TV layouts do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from course.models import layout as pl


@dataclass(frozen=True)
class Ownership:
    """Who holds each cell of a 2-D tile: thread id and value (register) index."""

    shape: tuple[int, int]  # (rows, cols) of the tile
    thread: np.ndarray  # int64, shape `shape`: lowest owning thread, -1 where nobody
    value: np.ndarray  # int64, same shape: that owner's value index, -1 where nobody
    count: np.ndarray  # int64, same shape: how many (thread, value) pairs hold the cell
    title: str = ""
    thread_label: str = "T"  # "T" for threads, "W" for warps, "CTA" ... used in labels
    # every (thread, value, row, col), sorted; empty when built from the arrays alone
    pairs: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 4), np.int64), repr=False, compare=False
    )

    # ------------------------------------------------------------ construction
    @classmethod
    def from_pairs(
        cls, shape, pairs: Iterable, title: str = "", thread_label: str = "T"
    ) -> "Ownership":
        """pairs: iterable of ((thread, value), (row, col)); duplicates (replication) allowed."""
        flat = [(int(t), int(v), int(r), int(c)) for (t, v), (r, c) in pairs]
        return cls.from_rows(shape, np.array(flat, dtype=np.int64), title, thread_label)

    @classmethod
    def from_rows(cls, shape, rows_tvrc, title: str = "", thread_label: str = "T") -> "Ownership":
        """The same from an (n, 4) integer array of (thread, value, row, col) rows, for
        maps too large to spell out as Python pairs (a CTA tile has 16K of them)."""
        rows, cols = (int(s) for s in shape)
        arr = np.asarray(rows_tvrc, dtype=np.int64).reshape(-1, 4)
        if len(arr):
            bad = (arr[:, 2] < 0) | (arr[:, 2] >= rows) | (arr[:, 3] < 0) | (arr[:, 3] >= cols)
            if bad.any():
                t, v, r, c = arr[np.argmax(bad)]
                raise ValueError(
                    f"{thread_label}{t}/v{v} holds cell ({r}, {c}), outside the {rows}x{cols} tile"
                )
            if (arr[:, :2] < 0).any():
                raise ValueError("thread and value indices must be >= 0")
            arr = np.unique(arr, axis=0)  # sorted by thread, then value, row, col
        thread = np.full((rows, cols), -1, np.int64)
        value = np.full((rows, cols), -1, np.int64)
        count = np.zeros((rows, cols), np.int64)
        if len(arr):
            cell = arr[:, 2] * cols + arr[:, 3]
            np.add.at(count.reshape(-1), cell, 1)
            # arr is sorted by (thread, value): the first pair of each cell is its lowest owner
            cells, first = np.unique(cell, return_index=True)
            thread.reshape(-1)[cells] = arr[first, 0]
            value.reshape(-1)[cells] = arr[first, 1]
        arr.setflags(write=False)
        for a in (thread, value, count):
            a.setflags(write=False)
        return cls((rows, cols), thread, value, count, title, thread_label, arr)

    @classmethod
    def from_tv_layout(
        cls, tv, tile_shape, title: str = "", thread_label: str = "T"
    ) -> "Ownership":
        """tv: a CuTe TV layout ((thread modes),(value modes)) -> index into tile_shape
        (column-major coordinate of the tile, as CuTe's TV layouts are), evaluated with
        CuTe DSL's own algebra or the course's tested evaluator.

        `tv` may be a course.models.layout.Layout, its string ('((32,4),(8,4)):((4,1),(128,32))'),
        or a CuTe DSL layout inside a trace. Mode 0 is the thread, mode 1 the value.
        """
        lay = pl.as_layout(tv)
        if lay.rank != 2:
            raise ValueError(f"a TV layout has two modes (thread, value); {lay} has {lay.rank}")
        rows, cols = (int(s) for s in tile_shape)
        threads, values = lay[0].size, lay[1].size
        idx = lay.offsets().reshape((threads, values), order="F")
        if idx.size and (idx.min() < 0 or idx.max() >= rows * cols):
            raise ValueError(
                f"TV layout {lay} reaches index {int(idx.max())}, outside the {rows}x{cols} tile"
            )
        t, v = np.meshgrid(np.arange(threads), np.arange(values), indexing="ij")
        pairs = zip(zip(t.ravel(), v.ravel()), zip(idx.ravel() % rows, idx.ravel() // rows))
        return cls.from_pairs((rows, cols), pairs, title or f"TV layout {lay}", thread_label)

    # ------------------------------------------------------------ questions
    def _all_pairs(self) -> np.ndarray:
        if len(self.pairs) or not (self.thread >= 0).any():
            return self.pairs
        r, c = np.nonzero(self.thread >= 0)
        return np.stack([self.thread[r, c], self.value[r, c], r, c], axis=1)

    def owners(self, row, col) -> list[tuple[int, int]]:
        """Every (thread, value) holding the cell, lowest first."""
        rows, cols = self.shape
        if not (0 <= row < rows and 0 <= col < cols):
            raise IndexError(f"cell ({row}, {col}) is outside the {rows}x{cols} tile")
        p = self._all_pairs()
        hit = p[(p[:, 2] == row) & (p[:, 3] == col)]
        return [(int(t), int(v)) for t, v in hit[:, :2]]

    def cells_of(self, thread) -> list[tuple[int, int, int]]:
        """(row, col, value) of every cell `thread` holds, by value index."""
        p = self._all_pairs()
        mine = p[p[:, 0] == thread]
        mine = mine[np.lexsort((mine[:, 3], mine[:, 2], mine[:, 1]))]
        return [(int(r), int(c), int(v)) for _, v, r, c in mine]

    @property
    def threads(self) -> int:
        """Number of distinct threads."""
        p = self._all_pairs()
        return int(len(np.unique(p[:, 0]))) if len(p) else 0

    @property
    def thread_ids(self) -> np.ndarray:
        p = self._all_pairs()
        return np.unique(p[:, 0]) if len(p) else np.zeros(0, np.int64)

    @property
    def replicated(self) -> bool:
        """True if some cell is held by more than one (thread, value)."""
        return bool((self.count > 1).any())

    def describe_cell(self, row: int, col: int) -> str:
        """One line naming the owner(s) of a cell."""
        owners = self.owners(row, col)
        lab = self.thread_label
        if not owners:
            return f"cell ({row}, {col}): nobody holds it"
        names = ", ".join(f"{lab}{t} value {v}" for t, v in owners)
        extra = f" (replicated {len(owners)}x)" if len(owners) > 1 else ""
        return f"cell ({row}, {col}) is held by {names}{extra}"

    def describe_thread(self, thread: int, limit: int = 16) -> str:
        """One line listing a thread's cells in value (register) order."""
        cells = self.cells_of(thread)
        lab = self.thread_label
        if not cells:
            return f"{lab}{thread} holds no cell of this tile"
        shown = ", ".join(f"v{v}=({r},{c})" for r, c, v in cells[:limit])
        more = f", ... ({len(cells)} in all)" if len(cells) > limit else ""
        rows = sorted({r for r, _, _ in cells})
        cols = sorted({c for _, c, _ in cells})
        return (
            f"{lab}{thread} holds {len(cells)} cells: {shown}{more}; rows {_ranges(rows)}, "
            f"columns {_ranges(cols)}"
        )


def _ranges(values: list[int]) -> str:
    """[0,1,2,3,64,65] -> '0-3, 64-65'."""
    if not values:
        return "none"
    out, start, prev = [], values[0], values[0]
    for v in values[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def text_map(own: Ownership, width: int | None = None) -> str:
    """The map as text, one row per line: 'r0  T00 T04 ...' (replicated cells get a '+')."""
    rows, cols = own.shape
    top = max(int(own.thread.max()), 0)
    digits = width or len(str(top))
    lab = own.thread_label
    cell_w = len(lab) + digits + 1
    lines = [(" " * 5 + "".join(f"c{c:<{cell_w}d}"[: cell_w + 1] for c in range(cols))).rstrip()]
    for r in range(rows):
        cells = []
        for c in range(cols):
            t, n = int(own.thread[r, c]), int(own.count[r, c])
            cells.append(
                (f"{lab}{t:0{digits}d}" if t >= 0 else "." * (len(lab) + digits))
                + ("+" if n > 1 else " ")
            )
        lines.append(f"r{r:<4d}" + " ".join(cells).rstrip())
    return "\n".join(lines)


def from_thread_value_function(
    shape, threads: int, values: int, where, title: str = "", thread_label: str = "T"
) -> Ownership:
    """Ownership from a plain function where(thread, value) -> (row, col) (or None)."""
    pairs = []
    for t in range(threads):
        for v in range(values):
            cell = where(t, v)
            if cell is not None:
                pairs.append(((t, v), cell))
    return Ownership.from_pairs(shape, pairs, title, thread_label)


__all__ = ["Ownership", "from_thread_value_function", "text_map"]
