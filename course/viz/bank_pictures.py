"""Pictures of shared memory: bank maps, per-request bank heat, the swizzle's bits,
and the prediction set beside the measurement."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.patches import Rectangle

from course.models import bank_model
from course.models.smem_access import SmemTile
from course.models.layout import Swizzle

# 32 distinguishable colours, cycling twice through a qualitative palette with two shades
_BANK_COLOURS = ListedColormap(
    [plt.get_cmap("tab20")(2 * (i % 10) + (i // 10) % 2) for i in range(bank_model.BANKS)]
)


def _caption(fig, source: str) -> None:
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")


def bank_map(
    tile: SmemTile,
    title: str | None = None,
    lanes: dict | None = None,
    ax=None,
    source: str = "",
    label: bool | None = None,
):
    """The tile's cells coloured and labelled by bank; `lanes` {(r, c): lane} outlines the
    cells one request reads and names the lane reading each. Tiles of more than 256 cells
    are coloured only (label=True forces the numbers; drawing them is slow)."""
    bm = tile.bank_map()
    rows, cols = bm.shape
    if label is None:
        label = rows * cols <= 256
    if ax is None:
        fig, ax = plt.subplots(figsize=(min(1.0 + 0.42 * cols, 12), min(1.0 + 0.36 * rows, 10)))
    else:
        fig = ax.figure
    ax.imshow(bm, cmap=_BANK_COLOURS, vmin=-0.5, vmax=bank_model.BANKS - 0.5, aspect="auto")
    small = rows * cols > 300
    if label:
        for r in range(rows):
            for c in range(cols):
                text = f"{bm[r, c]}" if small else f"B{bm[r, c]:02d}"
                ax.text(c, r, text, ha="center", va="center", fontsize=5 if small else 7)
    for (r, c), lane in (lanes or {}).items():
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, lw=2, ec="black"))
        if not small:
            ax.text(
                c + 0.45,
                r - 0.45,
                f"L{lane}",
                ha="right",
                va="top",
                fontsize=5,
                color="black",
                fontweight="bold",
            )
    ax.set_xticks(range(cols) if cols <= 16 else range(0, cols, 8))
    ax.set_yticks(range(rows) if rows <= 16 else range(0, rows, 8))
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    ax.set_title(title or f"Bank of each element: {tile}", fontsize=9)
    _caption(fig, source)
    return fig


def request_heat(
    analysis: bank_model.Analysis, ax=None, title: str | None = None, source: str = ""
):
    """Distinct 4-byte words each bank must serve, per phase of one request."""
    heat = analysis.heat()
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.9 + 0.45 * heat.shape[0]))
    else:
        fig = ax.figure
    vmax = max(2, int(heat.max()))
    # 0: idle bank (white), 1: served in one wavefront (green), 2+: conflict (reds)
    reds = plt.get_cmap("Reds")
    colours = ["white", "#a1d99b"] + [
        reds(0.35 + 0.65 * (k - 2) / max(1, vmax - 2)) for k in range(2, vmax + 1)
    ]
    ax.imshow(
        heat,
        cmap=ListedColormap(colours),
        norm=BoundaryNorm(np.arange(-0.5, vmax + 1), len(colours)),
        aspect="auto",
    )
    for p in range(heat.shape[0]):
        for b in range(bank_model.BANKS):
            if heat[p, b]:
                ax.text(
                    b,
                    p,
                    str(heat[p, b]),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if heat[p, b] > 2 + (vmax - 2) / 2 else "black",
                )
    lanes = bank_model.PHASE_LANES[analysis.request.width]
    ax.set_yticks(
        range(heat.shape[0]),
        [
            f"phase {i} (lanes {i * lanes}-{i * lanes + lanes - 1}): {ph.wavefronts} wf"
            for i, ph in enumerate(analysis.phases)
        ],
        fontsize=7,
    )
    ax.set_xticks(range(0, bank_model.BANKS, 4))
    ax.set_xlabel("bank (cell = distinct 4-byte words that bank serves; >1 is a conflict)")
    ax.set_title(title or f"{analysis.request.label}\n{analysis.summary()}", fontsize=8)
    fig.tight_layout()
    _caption(fig, source)
    return fig


_ROLE_COLOURS = {"kept": "#d0d7de", "target": "#54aeff", "source": "#ffb77c", "other": "#ffffff"}


def bit_diagram(
    swizzle: Swizzle,
    offset: int,
    width: int | None = None,
    unit: str = "element",
    note: str = "",
    ax=None,
    source: str = "",
):
    """Swizzle<B,M,S> on one offset, bit by bit: the offset, the source bits shifted down,
    and their XOR. Colours: grey = the M kept bits, blue = target bits, orange = source bits."""
    tr = swizzle.trace(offset, width)
    width = tr["width"]
    roles = swizzle.bit_roles(width)
    if ax is None:
        fig, ax = plt.subplots(figsize=(0.55 * width + 3.2, 2.6))
    else:
        fig = ax.figure
    rows = [
        ("offset", tr["binary"]),
        (f">> {swizzle.shift} of source", tr["moved_binary"]),
        ("XOR = result", tr["result_binary"]),
    ]
    for y, (name, bits) in enumerate(rows):
        for i, ch in enumerate(bits):  # bits[0] is the highest bit
            b = width - 1 - i
            ax.add_patch(
                Rectangle((i, -y), 0.95, 0.9, fc=_ROLE_COLOURS[roles[b]], ec="black", lw=0.6)
            )
            ax.text(
                i + 0.47,
                -y + 0.45,
                ch,
                ha="center",
                va="center",
                fontsize=10,
                fontweight="bold" if ch == "1" else "normal",
            )
        value = int(bits, 2)
        ax.text(-0.3, -y + 0.45, name, ha="right", va="center", fontsize=8)
        ax.text(width + 0.2, -y + 0.45, f"= {value}", ha="left", va="center", fontsize=8)
    for i in range(width):
        ax.text(
            i + 0.47, 1.15, str(width - 1 - i), ha="center", va="center", fontsize=7, color="grey"
        )
    ax.set_xlim(-5.5, width + 2.5)
    ax.set_ylim(-2.3, 1.5)
    ax.axis("off")
    ax.set_title(
        f"{swizzle} on the {unit} offset {offset}{': ' + note if note else ''}  "
        f"(grey: {swizzle.base} kept bits, orange: source, blue: target)",
        fontsize=9,
    )
    _caption(fig, source)
    return fig


def predicted_vs_measured(rows: Sequence[dict], title: str, source: str = "", ax=None):
    """Wavefronts per pass, predicted (hollow) and measured by Nsight Compute (filled)."""
    names = [r["case"] for r in rows]
    pred = [r["predicted"]["wavefronts"] for r in rows]
    meas = [r["measured"]["wavefronts"] if r.get("measured") else np.nan for r in rows]
    ideal = [r["predicted"]["ideal"] for r in rows]
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.9 + 0.3 * len(rows)))
    else:
        fig = ax.figure
    y = np.arange(len(rows))
    ax.barh(y - 0.2, pred, 0.38, fc="white", ec="C0", label="predicted wavefronts (model)")
    if not all(np.isnan(meas)):
        ax.barh(y + 0.2, meas, 0.38, color="C1", label="measured wavefronts (Nsight Compute)")
    ax.scatter(ideal, y, marker="|", s=120, color="black", label="ideal (no conflict)", zorder=3)
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("shared-memory wavefronts for one warp's pass over the pattern (log)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.2, which="both")
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    _caption(fig, source)
    return fig


def time_vs_wavefronts(rows: Sequence[dict], title: str, source: str = "", ax=None):
    """Measured time per request against predicted wavefronts per request."""
    pts = [
        (
            r["predicted"]["wavefronts"] / r["predicted"]["requests"],
            r["timing"]["ns_per_request"],
            r["case"],
        )
        for r in rows
        if r.get("timing")
    ]
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
    else:
        fig = ax.figure
    if pts:
        x, yv, labels = zip(*pts)
        ax.scatter(x, yv, color="C1", zorder=3)
        for xi, yi, name in zip(x, yv, labels):
            ax.annotate(name, (xi, yi), fontsize=6, xytext=(3, 2), textcoords="offset points")
        slope = float(np.dot(x, yv) / np.dot(x, x))
        xs = np.array([min(x), max(x)])
        ax.plot(
            xs,
            slope * xs,
            color="grey",
            ls="--",
            lw=1,
            label=f"{slope:.2f} ns per predicted wavefront",
        )
        ax.legend(fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted wavefronts per request (model)")
    ax.set_ylabel("measured ns per request, per SM")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    _caption(fig, source)
    return fig


def bank_maps(
    tiles: Sequence[SmemTile],
    titles: Sequence[str],
    lanes: dict | None = None,
    source: str = "",
    label: bool = False,
):
    """Bank maps of several tiles side by side, the same cells `lanes` {(r, c): lane}
    outlined in each (one request, or one phase of it); colours are banks."""
    fig, axes = plt.subplots(1, len(tiles), figsize=(6.5 * len(tiles), 4.6), squeeze=False)
    for ax, tile, title in zip(axes[0], tiles, titles):
        bank_map(tile, ax=ax, lanes=lanes, label=label, title=title)
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    _caption(fig, source)
    return fig
