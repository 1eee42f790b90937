"""Pictures of WGMMA's operands in shared memory."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from course.models.wgmma_descriptor import core_matrix_bytes


def swizzled_chunks(
    rows: int = 16, k_elems: int = 64, elem_bytes: int = 2, k_step: int = 16, source: str = ""
):
    """The first `rows` rows of a 128B-swizzled K-major tile (`k_elems` elements of
    `elem_bytes` per row = 128 bytes): each element coloured by the 16-byte chunk it is
    stored in, the k-steps of one wgmma (`k_step` elements) boxed, and the line between
    the two 8-row core-matrix groups (SBO apart) drawn in white."""
    chunk = np.array(
        [
            [(core_matrix_bytes(r, elem_bytes * c) % 128) // 16 for c in range(k_elems)]
            for r in range(rows)
        ]
    )
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.imshow(chunk, cmap="tab10", aspect="auto")
    for k in range(k_elems // k_step):
        ax.add_patch(
            plt.Rectangle(
                (k_step * k - 0.5, -0.5), k_step, rows, fill=False, lw=2, ls="--", color="k"
            )
        )
        ax.text(k_step * k + k_step / 2, -1, f"k-step {k}", ha="center", fontsize=8)
    for group in range(8, rows, 8):
        ax.axhline(group - 0.5, color="white", lw=2)
    ax.set_xlabel(
        f"K (element) -- one k-step of wgmma = {k_step} elements = {k_step * elem_bytes} bytes"
    )
    ax.set_ylabel("row (M or N)")
    groups = " and ".join(f"{g}-{min(g + 7, rows - 1)}" for g in range(0, rows, 8))
    ax.set_title(
        f"128B-swizzled K-major tile: colour = 16-byte chunk each element is stored "
        f"in;\nrows {groups} are core-matrix groups, {8 * 128} bytes apart (SBO)",
        pad=14,
    )
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    return fig


def group_timeline(sched=None):
    """Notebook 10's main loop on a timeline (course.models.wgmma_groups): the warpgroup
    issuing each k-tile's wgmmas and waiting in wait_group, the tensor cores running the
    committed groups, and each ring stage from its group's issue to its release (a black
    triangle): a stage goes back to the producer only once its group has completed."""
    from course.models import wgmma_groups
    from course.viz.timeline import Bar, Row, gantt

    s = sched or wgmma_groups.schedule()
    issuing, waiting = "#57606a", "#f3b36b"
    issue = Row(
        "warpgroup",
        [
            Bar(
                x.start,
                x.end,
                x.what,
                f"k{x.k_tile}"
                if x.what == "issue"
                else f"wait({s.keep if x.k_tile < s.k_tiles else 0})",
                color=issuing if x.what == "issue" else waiting,
            )
            for x in s.warpgroup
        ],
    )
    issued = {x.k_tile: x.start for x in s.warpgroup if x.what == "issue"}
    cores = Row("tensor cores", [Bar(g.start, g.end, "mma", f"group {g.k_tile}") for g in s.groups])
    stages = [
        Row(
            f"smem stage {st}",
            [
                Bar(
                    issued[t],
                    s.released[t],
                    "read",
                    f"k-tile {t}",
                )
                for t in range(s.k_tiles)
                if s.stage_of(t) == st
            ],
        )
        for st in range(min(s.stages, s.k_tiles))
    ]
    rows = [issue, cores, *stages]
    race = f"; {len(s.races)} stage(s) released while still being read" if s.races else ""
    fig = gantt(
        rows,
        f"WGMMA main loop: issue k-tile t, wait_group({s.keep}), release the "
        f"stages whose groups completed{race}",
        xlabel="time (illustrative units)",
        source="source: course.models.wgmma_groups (illustrative times: one unit to "
        "issue a k-tile, four for its group)",
        legend_extra=[
            (issuing, "issuing k-tile t: fence, 4 wgmma, commit group t"),
            (waiting, "warpgroup in wgmma.wait_group(n): wait(n)"),
            ("black", "stage released (arrive on its empty barrier)"),
        ],
    )
    ax = fig.axes[0]
    n = len(rows)
    for t, at in s.released.items():
        y = n - 1 - (2 + s.stage_of(t))
        ax.plot(
            at,
            y + 0.45,
            marker="v",
            color="#cf222e" if t in s.races else "black",
            ms=7,
            clip_on=False,
        )
    return fig
