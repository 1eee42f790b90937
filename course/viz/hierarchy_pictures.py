"""The thread / warp / CTA / cluster / grid hierarchy in one picture (notebook 01), each level
with what it shares, how it is numbered, and the notebook that puts it to work."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

# (name, what it is, what it shares / how it is numbered, where the course uses it)
LEVELS = (
    (
        "thread",
        "one program instance",
        "its own registers (at most 255)\nthread_idx() inside its CTA",
        "every kernel (01)",
    ),
    (
        "warp",
        "32 threads",
        "issue one instruction together\nlane = thread_idx % 32",
        "coalescing (04), banks (05), mma.sync (06);\n4 warps = a warpgroup: WGMMA (10)",
    ),
    (
        "CTA (thread block)",
        "up to 1024 threads\n= up to 32 warps",
        "one SM; shared memory,\nsync_threads(); block_idx()",
        "tiles of C (03), staging (07)",
    ),
    (
        "cluster",
        "up to 8 CTAs\n(Hopper and later)",
        "SMs of one GPC; each other's\nshared memory, multicast",
        "TMA multicast (08, 11),\nCTA pairs (15)",
    ),
    (
        "grid",
        "every CTA of\none launch",
        "the whole GPU (132 SMs on an\nH100 SXM), in waves",
        "the launch: grid=[...] (01)",
    ),
)


def _grid_of_boxes(ax, x0, y0, w, h, cols, rows, color, inner=None):
    """rows x cols boxes filling (x0, y0, w, h); `inner(x, y, w, h)` draws inside each."""
    gap_x, gap_y = w * 0.06 / max(cols, 1), h * 0.06 / max(rows, 1)
    bw, bh = (w - gap_x * (cols + 1)) / cols, (h - gap_y * (rows + 1)) / rows
    for r in range(rows):
        for c in range(cols):
            x, y = x0 + gap_x + c * (bw + gap_x), y0 + gap_y + r * (bh + gap_y)
            ax.add_patch(Rectangle((x, y), bw, bh, fc=color, ec="black", lw=0.6))
            if inner is not None:
                inner(x, y, bw, bh)


def thread_hierarchy(
    source: str = "CUDA C++ Programming Guide (thread hierarchy); H100 SXM: 132 SMs",
):
    """Five panels, thread to grid: each drawn as the level below it, repeated."""
    fig, axes = plt.subplots(1, 5, figsize=(14, 4.2))
    colors = ("#cfe2f3", "#9fc5e8", "#f9cb9c", "#b6d7a8", "#d9d2e9")

    def threads(x, y, w, h):
        _grid_of_boxes(ax, x, y, w, h, 8, 4, colors[0])

    def warps(x, y, w, h):
        _grid_of_boxes(ax, x, y, w, h, 1, 4, colors[1])

    def ctas(x, y, w, h):
        _grid_of_boxes(ax, x, y, w, h, 2, 1, colors[2])

    for i, (ax, (name, what, shares, used)) in enumerate(zip(axes, LEVELS)):
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.75, 1.12)
        ax.axis("off")
        ax.set_title(f"{name}\n{what}", fontsize=10)
        if i == 0:
            ax.add_patch(Rectangle((0.44, 0.44), 0.12, 0.12, fc=colors[0], ec="black", lw=0.8))
        elif i == 1:
            _grid_of_boxes(ax, 0.05, 0.25, 0.9, 0.5, 8, 4, colors[0])
        elif i == 2:
            _grid_of_boxes(ax, 0.05, 0.05, 0.9, 0.9, 1, 4, colors[1], threads)
        elif i == 3:
            _grid_of_boxes(ax, 0.05, 0.05, 0.9, 0.9, 2, 1, colors[2], warps)
        else:
            _grid_of_boxes(ax, 0.02, 0.05, 0.96, 0.9, 2, 4, colors[3], ctas)
        ax.text(0.5, -0.08, shares, ha="center", va="top", fontsize=8)
        ax.text(0.5, -0.47, "used in: " + used, ha="center", va="top", fontsize=8, color="#444")
        if i < 4:
            fig.add_artist(
                FancyArrowPatch(
                    (0.185 + 0.196 * i, 0.6),
                    (0.215 + 0.196 * i, 0.6),
                    transform=fig.transFigure,
                    arrowstyle="-|>",
                    mutation_scale=14,
                    color="grey",
                )
            )
    fig.suptitle(
        "The thread hierarchy: each level is the one before it, repeated (drawn "
        "here as a CTA of 4 warps, clusters of 2 CTAs, a grid of 8 clusters)",
        fontsize=10,
    )
    fig.text(0.01, 0.01, source, fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    return fig
