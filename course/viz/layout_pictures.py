"""Pictures of layouts: the coordinate grid coloured by offset, and memory as a strip.

`draw(layout)` puts mode 0 down the rows and everything else across the columns
(colexicographic, as CuTe reads it), writes each cell's offset when cells are big
enough, and marks the boundaries of nested sub-modes with heavier lines, so
((2,4),(4,2)) visibly splits into 2x4 blocks. `draw_memory(layout)` shows the other
direction: each offset of memory and the coordinate that lands on it (gaps blank,
offsets reached twice marked). Offsets come from course.models.layout, which is tested
against CuTe DSL; the layouts themselves come from CuTe (course.cute.algebra).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize

from course.models import layout as pl

CMAP = "viridis"


def _mode_leaves(layout: pl.AnyLayout, mode: int) -> tuple:
    shape = layout.shape
    if not pl.is_tuple(shape):
        return (shape,) if mode == 0 else (1,)
    if mode == 0:
        return pl.flatten(shape[0])
    return tuple(x for s in shape[1:] for x in pl.flatten(s))


def _boundaries(leaves: tuple) -> list[tuple[int, float]]:
    """(position, line width) for the edges of every nested sub-mode."""
    out, step = [], 1
    n = int(np.prod(leaves)) if leaves else 1
    widths = np.linspace(1.2, 2.6, max(len(leaves) - 1, 1))
    for level, s in enumerate(leaves[:-1]):
        step *= s
        if step < n:
            out.extend((p, widths[level]) for p in range(step, n, step))
    return out


def _text_colour(rgba) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def cell_label(layout: pl.AnyLayout, row: int, col: int) -> str:
    """'(r, c) = hierarchical coordinate -> offset', for widgets and titles."""
    rows = layout.grid().shape[0]
    idx = row + rows * col
    crd = pl.idx2crd(idx, layout.shape)
    return (
        f"cell ({row}, {col}): index {idx}, coordinate {pl._fmt(crd)} -> offset "
        f"{int(layout.grid()[row, col])}"
    )


def draw(
    layout,
    ax=None,
    title: str | None = None,
    source: str = "",
    highlight: tuple[int, int] | None = None,
    values: bool | None = None,
    cmap: str = CMAP,
):
    """The layout's grid: rows = mode 0, columns = the other modes; colour = offset."""
    lay = pl.as_layout(layout)
    grid = lay.grid()
    rows, cols = grid.shape
    own_fig = ax is None
    if own_fig:
        w = min(11.0, max(3.2, 0.42 * cols + 1.6))
        h = min(9.0, max(2.0, 0.42 * rows + 1.3))
        fig, ax = plt.subplots(figsize=(w, h))
    fig = ax.figure
    norm = Normalize(vmin=0, vmax=max(int(grid.max()) if grid.size else 0, 1))
    colours = plt.get_cmap(cmap)(norm(grid))
    ax.imshow(colours, interpolation="nearest", aspect="equal")
    if values is None:
        values = rows * cols <= 32 * 32 and max(rows, cols) <= 32
    if values:
        size = 9 if max(rows, cols) <= 12 else 7 if max(rows, cols) <= 20 else 5
        for r in range(rows):
            for c in range(cols):
                ax.text(
                    c,
                    r,
                    str(int(grid[r, c])),
                    ha="center",
                    va="center",
                    fontsize=size,
                    color=_text_colour(colours[r, c]),
                )
    for p, lw in _boundaries(_mode_leaves(lay, 0)):
        ax.axhline(p - 0.5, color="white", lw=lw)
    for p, lw in _boundaries(_mode_leaves(lay, 1)):
        ax.axvline(p - 0.5, color="white", lw=lw)
    if highlight is not None:
        r, c = highlight
        ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
    ax.set_title(title if title is not None else str(lay), fontsize=10)
    ax.set_xlabel(
        f"column = index into mode{'s 1..' if lay.rank > 2 else ' 1'} (size {cols})", fontsize=8
    )
    ax.set_ylabel(f"row = index into mode 0 (size {rows})", fontsize=8)
    _ticks(ax, rows, cols)
    if own_fig:
        if source:
            fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
        fig.tight_layout(rect=(0, _source_margin(fig) if source else 0, 1, 1))
    return fig


def _ticks(ax, rows: int, cols: int) -> None:
    step_r = 1 if rows <= 16 else max(1, rows // 8)
    step_c = 1 if cols <= 16 else max(1, cols // 8)
    ax.set_xticks(range(0, cols, step_c))
    ax.set_yticks(range(0, rows, step_r))
    ax.tick_params(labelsize=7, length=0)


def memory_map(layout) -> list[list[tuple[int, int]]]:
    """For each offset 0..cosize-1, the (row, col) cells of the grid that land on it."""
    lay = pl.as_layout(layout)
    grid = lay.grid()
    out: list[list[tuple[int, int]]] = [[] for _ in range(lay.cosize)]
    for (r, c), off in np.ndenumerate(grid):
        out[int(off)].append((r, c))
    return out


def draw_memory(
    layout, ax=None, title: str | None = None, source: str = "", per_row: int | None = None
):
    """Memory as strips of offsets: each box names the (row, col) stored there."""
    lay = pl.as_layout(layout)
    cells = memory_map(lay)
    n = len(cells)
    per_row = per_row or min(max(n, 1), 16)
    lines = -(-n // per_row)
    own_fig = ax is None
    if own_fig:
        fig, ax = plt.subplots(figsize=(min(12, 0.75 * per_row + 1), 0.55 * lines + 1.1))
    fig = ax.figure
    grid = lay.grid()
    rows, cols = grid.shape
    norm = Normalize(vmin=0, vmax=max(n - 1, 1))
    cm = plt.get_cmap(CMAP)
    for off, where in enumerate(cells):
        y, x = divmod(off, per_row)
        face = cm(norm(off)) if where else (0.93, 0.93, 0.93, 1)
        ax.add_patch(
            plt.Rectangle(
                (x, -y), 1, -1, fc=face, ec="white", lw=1.5, hatch="xx" if len(where) > 1 else None
            )
        )
        ax.text(
            x + 0.5,
            -y - 0.3,
            str(off),
            ha="center",
            va="center",
            fontsize=6,
            color=_text_colour(face),
        )
        if where:
            label = f"{where[0][0]},{where[0][1]}" + ("+" if len(where) > 1 else "")
            ax.text(
                x + 0.5,
                -y - 0.68,
                label,
                ha="center",
                va="center",
                fontsize=6.5,
                color=_text_colour(face),
            )
    ax.set_xlim(0, per_row)
    ax.set_ylim(-lines, 0)
    ax.set_aspect("equal")
    ax.axis("off")
    gaps = sum(not w for w in cells)
    shared = sum(len(w) > 1 for w in cells)
    ax.set_title(
        title
        if title is not None
        else f"memory of {lay}: offset (top) <- row,col of the {rows}x{cols} grid (bottom); "
        f"{gaps} gaps, {shared} offsets reached twice+",
        fontsize=8,
    )
    if own_fig:
        if source:
            fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
        fig.tight_layout(rect=(0, _source_margin(fig) if source else 0, 1, 1))
    return fig


def side_by_side(
    layouts: list, titles: list[str] | None = None, source: str = "", suptitle: str = ""
):
    """Several layouts' grids in one figure (e.g. column- vs row-major)."""
    n = len(layouts)
    lays = [pl.as_layout(l) for l in layouts]
    width = sum(min(5.5, 0.42 * l.grid().shape[1] + 1.6) for l in lays)
    height = max(min(6.5, 0.42 * l.grid().shape[0] + 1.5) for l in lays)
    fig, axes = plt.subplots(1, n, figsize=(min(14, width), height), squeeze=False)
    for i, (lay, ax) in enumerate(zip(lays, axes[0])):
        draw(lay, ax=ax, title=(titles[i] if titles else str(lay)))
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, _source_margin(fig) if source else 0, 1, 1))
    return fig


def _source_margin(fig) -> float:
    """Fraction of the figure's height kept free at the bottom for the source line."""
    return min(0.2, 0.28 / fig.get_figheight())
