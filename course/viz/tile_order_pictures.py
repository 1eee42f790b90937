"""The order in which CTAs visit the tiles of C, and what that means for L2.

Every tile needs one panel of A (its tile row) and one of B (its tile column). The
CTAs that run at the same time -- one wave, about one per SM -- want their panels in
L2 together: the fewer distinct panels a wave touches, the fewer bytes come from DRAM.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from course.models.tile_order import visit_order, wave_panels


def draw(
    tiles_m: int, tiles_n: int, group: int, wave: int, ax=None, title: str = "", unit: str = "CTAs"
):
    """Tiles coloured by visit time; the first wave outlined, with its panel count. `unit` names
    what computes one tile and runs `wave` at a time: "CTAs", or "clusters" when a tile is a
    cluster's (notebook 11's 2-CTA clusters, 66 at a time on an H100)."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5.2, 4.6))
    order = np.array(visit_order(tiles_m, tiles_n, group))
    ax.imshow(order, cmap="viridis", origin="upper")
    first = order < wave
    ys, xs = np.nonzero(first)
    ax.scatter(
        xs,
        ys,
        marker="s",
        s=max(4, 900 // max(tiles_m, tiles_n)),
        facecolors="none",
        edgecolors="red",
        linewidths=1.0,
    )
    if tiles_m * tiles_n <= 256:
        for (m, n), t in np.ndenumerate(order):
            ax.text(n, m, str(t), ha="center", va="center", fontsize=6, color="white")
    panels = wave_panels(tiles_m, tiles_n, group, wave)
    ax.set_title(
        title
        or f"group of {group} tile rows: first wave ({wave} {unit}, red) "
        f"touches {panels[0]} panels",
        fontsize=9,
    )
    ax.set_xlabel("tile column n (B panel)")
    ax.set_ylabel("tile row m (A panel)")
    fig.tight_layout()
    return fig


def compare_orders(tiles_m: int, tiles_n: int, groups=(1, 8), wave: int = 40):
    """Side by side, the visit order of a tiles_m x tiles_n grid of C tiles for each group
    size (1 = row-major), the first `wave` CTAs outlined and their panel count in the title."""
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4.6))
    for ax, group in zip(np.atleast_1d(axes), groups):
        order = "row-major order" if group == 1 else f"groups of {group} rows"
        draw(
            tiles_m,
            tiles_n,
            group,
            wave,
            ax=ax,
            title=f"{order}: first {wave} CTAs (red) touch "
            f"{wave_panels(tiles_m, tiles_n, group, wave)[0]} panels",
        )
    fig.suptitle(
        f"Visit order of a {tiles_m} x {tiles_n} grid of C tiles "
        "(colour = when the tile is computed)"
    )
    fig.tight_layout()
    return fig
