"""Tensor memory pictures: allocations across 128 lanes x 512 columns, and who reads what.

Every figure is labelled (title, axes, source line), as the course requires.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from course.emulate.blackwell_memory import TMEM_COLUMNS, TMEM_LANES

WARP_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52")


def tmem_allocation(
    allocations, title: str = "Tensor memory: 128 lanes x 512 columns", source: str = "", ax=None
):
    """Draw TMEM with `allocations` = [(label, first_column, columns), ...] shaded.

    The lanes are split into the four 32-lane quarters; epilogue warp w (w % 4) may
    access only quarter w.
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(9, 3.6))
    ax.add_patch(
        Rectangle((0, 0), TMEM_COLUMNS, TMEM_LANES, facecolor="#f4f4f4", edgecolor="black", lw=1)
    )
    for i, (label, start, cols) in enumerate(allocations):
        ax.add_patch(
            Rectangle(
                (start, 0),
                cols,
                TMEM_LANES,
                facecolor=f"C{i % 10}",
                alpha=0.45,
                edgecolor=f"C{i % 10}",
                lw=1.5,
            )
        )
        text = textwrap.fill(label, max(8, cols // 7))  # fit the block's width
        ax.text(
            start + cols / 2,
            TMEM_LANES / 2,
            f"{text}\ncolumns\n{start}..{start + cols - 1}",
            ha="center",
            va="center",
            fontsize=8,
        )
    for q in range(1, 4):
        ax.axhline(32 * q, color="grey", lw=0.8, ls="--")
    for q in range(4):
        ax.text(
            -6,
            32 * q + 16,
            f"lanes {32 * q}-{32 * q + 31}\nwarp {q} only",
            ha="right",
            va="center",
            fontsize=7,
            color=WARP_COLOURS[q],
        )
    ax.set_xlim(-110, TMEM_COLUMNS + 4)
    ax.set_ylim(TMEM_LANES + 2, -2)
    ax.set_xticks(range(0, TMEM_COLUMNS + 1, 64))
    ax.set_yticks([0, 32, 64, 96, 128])
    ax.set_xlabel("column (32-bit cells; allocated in powers of two, 32..512)")
    ax.set_ylabel("lane")
    ax.set_title(title)
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04 if source else 0, 1, 1))
    return fig


def epilogue_ownership(
    pairs,
    shape: tuple[int, int],
    title: str,
    sub_cols: int = 32,
    threads_per_cta: int = 128,
    source: str = "",
    ax=None,
):
    """Colour each (row, column) of a tile by the epilogue warp that reads it.

    pairs: ((thread, value), (row, column)) as course.models.tmem_ownership returns them.
    Threads 0-127 are one CTA's 4 epilogue warps; 128-255 (a CTA pair) the follower's.
    """
    rows, cols = shape
    owner = np.full(shape, -1, dtype=np.int64)
    for (thread, _value), (r, c) in pairs:
        owner[r, c] = thread
    fig, ax = (
        (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7.5, 3.2 + 3.2 * rows / 128))
    )
    warp = np.where(owner >= 0, (owner % threads_per_cta) // 32, -1)
    cta = np.where(owner >= 0, owner // threads_per_cta, 0)
    rgb = np.ones(shape + (3,))
    for w, colour in enumerate(WARP_COLOURS):
        base = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
        for r in range(int(cta.max()) + 1):
            shade = base if r == 0 else 0.55 * base + 0.45
            rgb[(warp == w) & (cta == r)] = shade
    # a lighter stripe every other thread, so single lanes stay visible
    rgb[(owner >= 0) & (owner % 2 == 1)] = 0.85 * rgb[(owner >= 0) & (owner % 2 == 1)] + 0.15
    ax.imshow(rgb, aspect="auto", interpolation="nearest", extent=(0, cols, rows, 0))
    for c in range(sub_cols, cols, sub_cols):
        ax.axvline(c, color="black", lw=0.8)
    for c in range(0, cols, sub_cols):
        ax.text(c + sub_cols / 2, -2, f"ld #{c // sub_cols}", ha="center", va="bottom", fontsize=7)
    for r0 in range(0, rows, 32):
        w, r = (r0 % 128) // 32, r0 // 128
        who = f"warp {w}" + (f" of CTA {r}" if rows > 128 else "")
        t0 = r0
        ax.text(
            cols + 1,
            r0 + 16,
            f"{who}\nthreads {t0}-{t0 + 31}",
            va="center",
            fontsize=7,
            color=WARP_COLOURS[w],
        )
    if rows > 128:
        ax.axhline(128, color="black", lw=2)
    ax.set_xlim(0, cols)
    ax.set_xlabel("accumulator column = TMEM column (one tcgen05.ld 32x32b.x32 per 32 columns)")
    ax.set_ylabel(
        "tile row = TMEM lane"
        if rows <= 128
        else "tile row (TMEM lane = row mod 128, in CTA row // 128)"
    )
    ax.set_title(title, pad=20)
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04 if source else 0, 1, 1))
    return fig
