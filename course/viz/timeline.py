"""Timelines (Gantt charts) of simulated kernels: one row per warp role, unit or buffer.

`gantt(rows, ...)` draws rows of bars whose `kind` picks the colour and the legend
entry (STYLES), so every timeline in the course speaks the same visual language:
green = the tensor core computing, blue = a TMA copy in flight, orange = a warp
waiting on an mbarrier, red hatching = blocked forever (deadlock).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

# kind -> (face colour, legend text, hatch)
STYLES: dict[str, tuple[str, str, str | None]] = {
    "mma": ("#2da44e", "tensor core busy (MMA)", None),
    "read": ("#2da44e", "stage being read by the MMA", None),
    "write": ("#0969da", "stage being written by TMA", None),
    "load": ("#0969da", "TMA copy in flight", None),
    "held": ("#b6d7f5", "stage full, not yet read", None),
    "wait": ("#f3b36b", "warp waiting on an mbarrier", None),
    "epilogue": ("#8250df", "epilogue (TMEM -> registers -> global)", None),
    "busy": ("#8c959f", "warp busy", None),
    "clc": ("#bf8700", "scheduler query (CLC try_cancel)", None),
    "other": ("#d0d7de", "SM busy with other work", "//"),
    "blocked": ("#ffebe9", "blocked forever (deadlock)", "xx"),
}


@dataclass
class Bar:
    start: float
    end: float
    kind: str
    text: str = ""
    color: str | None = None  # overrides the kind's colour (e.g. one colour per tile)


@dataclass
class Row:
    label: str
    bars: list[Bar] = field(default_factory=list)


@dataclass
class Marker:
    """A point event on a row (e.g. a race), drawn as a red x."""

    time: float
    row: int
    text: str = ""


def gantt(
    rows: list[Row],
    title: str,
    xlabel: str = "time (cycles)",
    source: str = "",
    markers: list[Marker] = (),
    vlines: list[tuple[float, str]] = (),
    end: float | None = None,
    ax=None,
    height: float | None = None,
    legend_extra: list[tuple[str, str]] = (),
):
    """Draw the rows (first row at the top); returns the Figure."""
    n = len(rows)
    if ax is None:
        fig, ax = plt.subplots(figsize=(11, height or max(2.6, 0.42 * n + 1.6)))
    else:
        fig = ax.figure
    xmax = (
        end
        if end is not None
        else max([b.end for r in rows for b in r.bars] + [m.time for m in markers] + [1.0])
    )
    used = set()
    for i, row in enumerate(rows):
        y = n - 1 - i
        for b in row.bars:
            if b.end < b.start:
                continue
            face, _, hatch = STYLES.get(b.kind, STYLES["busy"])
            width = max(b.end - b.start, xmax * 0.0015)
            ax.barh(
                y,
                width,
                left=b.start,
                height=0.72,
                color=b.color or face,
                edgecolor="#cf222e" if b.kind == "blocked" else "white",
                linewidth=0.6 if b.kind == "blocked" else 0.3,
                hatch=hatch,
            )
            if b.color is None:
                used.add(b.kind)
            if b.text and (b.end - b.start) > xmax * 0.011 * (len(b.text) + 1):
                ax.text(
                    b.start + (b.end - b.start) / 2,
                    y,
                    b.text,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white"
                    if b.kind in ("mma", "read", "write", "load", "epilogue")
                    else "black",
                )
    for m in markers:
        ax.plot(m.time, n - 1 - m.row, "x", color="#cf222e", ms=9, mew=2.2)
    for x, text in vlines:
        ax.axvline(x, color="#cf222e", lw=1.5, ls="--")
        ax.text(x, n - 0.45, text + " ", color="#cf222e", fontsize=8, va="bottom", ha="right")
    ax.set_yticks(range(n))
    ax.set_yticklabels([r.label for r in reversed(rows)], fontsize=8)
    ax.set_ylim(-0.6, n - 0.4 + (0.5 if vlines else 0))
    ax.set_xlim(0, xmax * 1.01)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.25)
    handles = [
        Patch(
            facecolor=STYLES[k][0],
            hatch=STYLES[k][2],
            label=STYLES[k][1],
            edgecolor="#cf222e" if k == "blocked" else "white",
        )
        for k in STYLES
        if k in used
    ]
    handles += [Patch(facecolor=c, label=t) for c, t in legend_extra]
    if markers:
        handles.append(
            plt.Line2D([], [], marker="x", color="#cf222e", ls="none", mew=2, label="hazard (race)")
        )
    if handles:
        ax.legend(
            handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1), frameon=False
        )
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    return fig


TILE_COLOURS = [
    "#2da44e",
    "#0969da",
    "#8250df",
    "#bf3989",
    "#bc4c00",
    "#1b7c83",
    "#4d2d00",
    "#6639ba",
    "#116329",
    "#953800",
]


def tile_colour(tile: int) -> str:
    """A stable colour per output tile, so one tile is one colour across SM rows."""
    return TILE_COLOURS[tile % len(TILE_COLOURS)]
