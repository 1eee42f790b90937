"""Ownership maps: every cell of a tile coloured by the thread (warp, CTA...) that holds it.

One drawing for every map of the course -- TiledCopy, TiledMMA, mma.sync fragments,
WGMMA accumulators, TMEM lanes, CTA pairs -- from a course.models.ownership.Ownership:

  * each owner gets its own colour (neighbouring ids get distant hues);
  * cells large enough are labelled "T5/v3" (owner 5, value 3), smaller ones "5";
  * cells nobody holds are light grey, cells held several times are striped with
    the count ("x4");
  * `highlight=t` fades every other owner, writes t's value (register) index in
    each of its cells and joins them in register order with a line;
  * `cell=(r, c)` frames one cell and names its owner(s) in the title.

Tiles up to 256x256 cells and any number of owners draw in well under a second.
"""

from __future__ import annotations

import colorsys

import matplotlib.pyplot as plt
import numpy as np

from course.models.ownership import Ownership

GOLDEN = 0.6180339887498949
NOBODY = (0.92, 0.92, 0.92)


def owner_colour(t: int) -> tuple[float, float, float]:
    """A colour per owner id: hues spread by the golden ratio, three lightness bands."""
    hue = (t * GOLDEN) % 1.0
    light = (0.62, 0.74, 0.52)[(t // 7) % 3]
    return colorsys.hls_to_rgb(hue, light, 0.62)


def _rgb(own: Ownership, highlight: int | None) -> np.ndarray:
    rows, cols = own.shape
    img = np.empty((rows, cols, 3))
    img[:] = NOBODY
    ids = np.unique(own.thread[own.thread >= 0])
    for t in ids:
        img[own.thread == t] = owner_colour(int(t))
    if highlight is not None:
        held = np.zeros((rows, cols), bool)
        for r, c, _ in own.cells_of(highlight):
            held[r, c] = True
        img[~held] = 0.86 + 0.12 * img[~held]  # everyone else washed out
    return img


def _upsample_with_stripes(img: np.ndarray, count: np.ndarray, k: int) -> np.ndarray:
    """k x k pixels per cell; cells held more than once get dark diagonal stripes."""
    big = np.repeat(np.repeat(img, k, axis=0), k, axis=1)
    if (count > 1).any() and k >= 4:
        yy, xx = np.mgrid[0 : big.shape[0], 0 : big.shape[1]]
        stripe = ((xx + yy) % max(k // 2, 2)) == 0
        multi = np.repeat(np.repeat(count > 1, k, axis=0), k, axis=1)
        big[stripe & multi] *= 0.7
    return big


def draw(
    ownership: Ownership,
    highlight: int | None = None,
    ax=None,
    cell: tuple[int, int] | None = None,
    source: str = "",
    labels: bool | None = None,
    title: str | None = None,
):
    """The ownership map as a matplotlib Figure."""
    own = ownership
    rows, cols = own.shape
    lab = own.thread_label
    cell_w, cell_h = min(0.6, 10.0 / cols), min(0.35, 8.5 / rows)
    own_fig = ax is None
    if own_fig:
        fig, ax = plt.subplots(figsize=(cols * cell_w + 1.8, rows * cell_h + 1.7))
    else:  # someone else's axes: estimate the cell size from them
        bbox = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
        cell_w, cell_h = bbox.width / cols, bbox.height / rows
    fig = ax.figure
    k = max(1, min(24, 768 // max(rows, cols)))
    img = _upsample_with_stripes(_rgb(own, highlight), own.count, k)
    ax.imshow(
        img, interpolation="nearest", extent=(-0.5, cols - 0.5, rows - 0.5, -0.5), aspect="auto"
    )
    if labels is None:
        labels = cell_w >= 0.25 and cell_h >= 0.14
    if labels:
        _write_labels(ax, own, highlight, rows, cols, cell_w, cell_h)
    if highlight is not None:
        path = own.cells_of(highlight)
        if len(path) > 1:
            ax.plot(
                [c for _, c, _ in path],
                [r for r, _, _ in path],
                "-",
                color="black",
                lw=0.8,
                alpha=0.6,
            )
        if path:
            r0, c0, _ = path[0]
            ax.plot([c0], [r0], "o", ms=5, mfc="none", mec="black", mew=1.2)
    if cell is not None:
        r, c = cell
        ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
    heading = title if title is not None else (own.title or "ownership map")
    extra = []
    if highlight is not None:
        n = len(own.cells_of(highlight))
        extra.append(f"{lab}{highlight}: {n} cells, v0..v{max(n - 1, 0)} in register order")
    if cell is not None:
        extra.append(own.describe_cell(*cell))
    ax.set_title("\n".join([heading] + extra), fontsize=9)
    ax.set_xlabel(f"column (tile {rows}x{cols}; {own.threads} owners, colour = owner)", fontsize=8)
    ax.set_ylabel("row", fontsize=8)
    ax.set_xticks(range(0, cols, 1 if cols <= 16 else max(1, cols // 8)))
    ax.set_yticks(range(0, rows, 1 if rows <= 16 else max(1, rows // 8)))
    ax.tick_params(labelsize=7, length=0)
    if own_fig:
        if source:
            fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
        fig.tight_layout(rect=(0, _source_margin(fig) if source else 0, 1, 1))
    return fig


def _write_labels(
    ax, own: Ownership, highlight, rows: int, cols: int, cell_w: float, cell_h: float
) -> None:
    lab = own.thread_label
    full = cell_w >= 0.5 and cell_h >= 0.25
    size = max(4.0, min(8.0, cell_h * 72 * (0.3 if full else 0.45), cell_w * 72 * 0.28))
    mine = {(r, c): v for r, c, v in own.cells_of(highlight)} if highlight is not None else {}
    for r in range(rows):
        for c in range(cols):
            t, v, n = int(own.thread[r, c]), int(own.value[r, c]), int(own.count[r, c])
            if highlight is not None:
                if (r, c) in mine:
                    ax.text(
                        c,
                        r,
                        f"v{mine[(r, c)]}",
                        ha="center",
                        va="center",
                        fontsize=size,
                        fontweight="bold",
                    )
                continue
            if t < 0:
                continue
            text = f"{lab}{t}/v{v}" if full else f"{t}"
            if n > 1:
                text += f"\nx{n}" if full else "+"
            ax.text(c, r, text, ha="center", va="center", fontsize=size)


__all__ = ["draw", "owner_colour"]


def _source_margin(fig) -> float:
    """Fraction of the figure's height kept free at the bottom for the source line."""
    return min(0.2, 0.28 / fig.get_figheight())
