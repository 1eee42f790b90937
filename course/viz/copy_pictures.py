"""Pictures for notebook 04: a TiledCopy's ownership map, a warp's lines and sectors,
and the copies' bandwidth against the ceiling."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from course.models.coalescing import LINE_BYTES, SECTOR_BYTES, Coalescing


def _caption(fig, source: str) -> None:
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")


def warp_lines(accesses: dict[str, Coalescing], title: str = "", source: str = ""):
    """For each access, the 128-byte lines one warp touches: wanted bytes dark, the rest of
    each moved 32-byte sector light. Lines that are not neighbours are drawn side by side."""
    n = len(accesses)
    widest = max(len(a.lines) for a in accesses.values())
    fig, axes = plt.subplots(
        n, 1, figsize=(min(2 + 0.55 * widest, 14), 0.9 + 0.75 * n), squeeze=False
    )
    for ax, (name, acc) in zip(axes[:, 0], accesses.items()):
        wanted = {a + k for a in acc.addresses for k in range(acc.width)}
        sectors = set(acc.sectors)
        for i, line in enumerate(acc.lines):
            base = line * LINE_BYTES
            ax.add_patch(Rectangle((i, 0), 0.96, 1, fill=False, ec="black", lw=0.8))
            for s in range(LINE_BYTES // SECTOR_BYTES):
                sec = base // SECTOR_BYTES + s
                if sec in sectors:
                    ax.add_patch(Rectangle((i + s * 0.24, 0.05), 0.23, 0.9, color="C0", alpha=0.18))
            used = sorted(b - base for b in wanted if base <= b < base + LINE_BYTES)
            if used:  # runs of wanted bytes inside the line
                runs, start, prev = [], used[0], used[0]
                for b in used[1:]:
                    if b != prev + 1:
                        runs.append((start, prev))
                        start = b
                    prev = b
                runs.append((start, prev))
                for lo, hi in runs:
                    ax.add_patch(
                        Rectangle(
                            (i + 0.96 * lo / LINE_BYTES, 0.25),
                            0.96 * (hi - lo + 1) / LINE_BYTES,
                            0.5,
                            color="C0",
                        )
                    )
        ax.set_xlim(-0.1, max(widest, 4) + 0.1)
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        ax.set_xticks([])
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
        ax.text(
            max(widest, 4) + 0.1,
            0.5,
            f" {len(acc.lines)} line(s), {len(acc.sectors)} sectors, "
            f"{100 * acc.efficiency:.0f}% useful",
            fontsize=7,
            va="center",
            ha="left",
        )
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    fig.suptitle(
        title
        or "One warp's request: 128-byte lines touched (boxes), 32-byte sectors "
        "moved (light), bytes wanted (dark)",
        fontsize=9,
    )
    fig.tight_layout(rect=(0.02, 0.04 if source else 0, 0.86, 0.95))
    _caption(fig, source)
    return fig


def bandwidth_bars(
    rows: Sequence[dict], ceiling_gbps: float, title: str, source: str = "", ax=None
):
    """GB/s of each copy (read + write) against the device's measured copy ceiling."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 3.8))
    else:
        fig = ax.figure
    names = [r["variant"] for r in rows]
    gbps = np.array([r["gbps"] for r in rows])
    bars = ax.bar(names, gbps, color=[f"C{i}" for i in range(len(rows))])
    ax.axhline(ceiling_gbps, color="black", ls="--", lw=1)
    ax.text(
        len(rows) - 0.5,
        ceiling_gbps,
        f"copy ceiling {ceiling_gbps:.0f} GB/s",
        ha="right",
        va="bottom",
        fontsize=8,
    )
    ax.axhline(0.9 * ceiling_gbps, color="grey", ls=":", lw=1)
    for b, r in zip(bars, rows):
        ax.text(
            b.get_x() + b.get_width() / 2,
            b.get_height(),
            f"{r['pct_of_ceiling']:.0f}%",
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylabel("GB/s (bytes read + written)")
    ax.set_ylim(0, ceiling_gbps * 1.15)
    ax.set_title(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.04 if source else 0, 1, 1))
    _caption(fig, source)
    return fig
