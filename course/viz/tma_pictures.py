"""Pictures for notebook 08: a global tensor cut into TMA boxes, the swizzle a box gets
on its way into shared memory, and a cluster multicasting one tile."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from course.models.tensormap import TensorMapArgs, chunk_map


def tensor_map_picture(
    args: TensorMapArgs,
    highlight: tuple[int, int] = (1, 2),
    source: str = "course.models.tensormap",
    ax=None,
):
    """The global tensor (rows down, columns across) with its grid of boxes.

    Boxes that stick out past the tensor's edge are hatched: TMA fills their outside
    part with zeros on a load and clips it on a store. `highlight` = (box row, box
    column) is the box one instruction would move; its TMA coordinates -- the element
    offsets {column, row} an instruction passes -- are written on it.
    """
    cols, rows = args.global_dim[0], args.global_dim[1]
    bc, br = args.box_dim[0], args.box_dim[1]
    across, down = args.boxes[0], args.boxes[1]
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8.4, 6.2))
    ax.add_patch(Rectangle((0, 0), cols, rows, fc="#dbe9f6", ec="black", lw=1.5, zorder=1))
    step_r = max(1, down // 32)  # draw at most ~32 lines each way
    step_c = max(1, across // 32)
    for i in range(0, down + 1, step_r):
        ax.plot([0, across * bc], [i * br, i * br], color="#4a7ab0", lw=0.5, zorder=2)
    for j in range(0, across + 1, step_c):
        ax.plot([j * bc, j * bc], [0, down * br], color="#4a7ab0", lw=0.5, zorder=2)
    if down * br > rows:
        ax.add_patch(
            Rectangle(
                (0, rows),
                across * bc,
                down * br - rows,
                fc="none",
                hatch="///",
                ec="#c0392b",
                lw=0,
                zorder=3,
            )
        )
    if across * bc > cols:
        ax.add_patch(
            Rectangle(
                (cols, 0),
                across * bc - cols,
                down * br,
                fc="none",
                hatch="///",
                ec="#c0392b",
                lw=0,
                zorder=3,
            )
        )
    hr, hc = min(highlight[0], down - 1), min(highlight[1], across - 1)
    ax.add_patch(Rectangle((hc * bc, hr * br), bc, br, fc="#f39c12", ec="black", lw=1.5, zorder=4))
    ax.annotate(
        f"box ({hr}, {hc})\nTMA coords {{{hc * bc}, {hr * br}}}",
        (hc * bc + bc, hr * br + br / 2),
        xytext=(1.04, 0.75),
        textcoords="axes fraction",
        arrowprops=dict(arrowstyle="->"),
        fontsize=9,
        zorder=5,
        annotation_clip=False,
        bbox=dict(fc="white", ec="#f39c12"),
    )
    for i, j in {(0, 0), (0, across - 1), (down - 1, 0), (down - 1, across - 1)}:
        if step_r == 1 and step_c == 1 or (i, j) == (0, 0):
            ax.text(
                j * bc + bc / 2,
                i * br + br / 2,
                f"({i},{j})",
                ha="center",
                va="center",
                fontsize=7,
                zorder=5,
            )
    ax.set_xlim(-0.02 * cols, max(cols, across * bc) * 1.02)
    ax.set_ylim(max(rows, down * br) * 1.02, -0.02 * rows)
    ax.set_aspect("equal")
    ax.set_xlabel(f"dim 0: {cols} columns (contiguous, {args.elem_bytes} B apart)")
    ax.set_ylabel(f"dim 1: {rows} rows ({args.global_strides[0]} B apart)")
    ragged = "\nhatched: outside the tensor" if (down * br > rows or across * bc > cols) else ""
    if step_r > 1 or step_c > 1:
        ragged += f"\n(grid lines every {step_r} box rows / {step_c} box columns)"
    ax.set_title(
        f"{rows} x {cols} {args.dtype} in {br} x {bc} boxes: {down} x {across} = "
        f"{down * across:,} boxes of {args.box_bytes:,} B{ragged}",
        fontsize=10,
    )
    fig.text(0.01, 0.005, f"source: {source}", fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def swizzle_rule(swizzle: int, row_bytes: int) -> str:
    """The slot a chunk of row r goes to, in words: the chunk index XOR the index of the
    128-byte row the byte falls in, kept to the swizzle's bits."""
    if not swizzle:
        return "slot = chunk"
    rows_per_128 = max(1, 128 // row_bytes)
    row = "row" if rows_per_128 == 1 else f"(row // {rows_per_128})"
    return f"slot = chunk XOR ({row} mod {swizzle // 16})"


def swizzle_picture(swizzle: int = 128, row_bytes: int = 128, rows: int = 8, ax=None):
    """Each row of a box is `row_bytes` bytes: row_bytes / 16 chunks of 16 bytes. The cell at
    (row r, slot s) shows which logical chunk of row r TMA stored in slot s."""
    import numpy as np

    table = np.array(chunk_map(swizzle, row_bytes, rows))
    own_figure = ax is None
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5.2, 4.2))
    ax.imshow(table, cmap="tab10", vmin=0, vmax=9, aspect="auto")
    for r in range(table.shape[0]):
        for s in range(table.shape[1]):
            ax.text(s, r, str(table[r, s]), ha="center", va="center", fontsize=10, color="white")
    ax.set_xticks(range(table.shape[1]), [f"{16 * s}" for s in range(table.shape[1])])
    ax.set_yticks(range(table.shape[0]))
    ax.set_xlabel("byte offset of the 16-byte slot within the row in shared memory")
    ax.set_ylabel("box row")
    name = "no swizzle" if swizzle == 0 else f"{swizzle}B swizzle"
    ax.set_title(
        f"{name}, {row_bytes}-byte rows: logical chunk in each slot\n"
        f"({swizzle_rule(swizzle, row_bytes)})"
        if swizzle
        else f"{name}: chunks stay in order",
        fontsize=10,
    )
    if own_figure:
        fig.text(
            0.01,
            0.005,
            "source: course.models.tensormap.chunk_map (Swizzle<B,4,3> on byte addresses)",
            fontsize=7,
            color="grey",
        )
        fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def swizzle_modes_picture():
    """The three TMA swizzle modes, each on box rows as wide as its span (32, 64, 128
    bytes: the widest TMA accepts for that mode). Each pattern repeats every 8 rows."""
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.9), gridspec_kw={"width_ratios": [2, 4, 8]})
    for ax, mode in zip(axes, (32, 64, 128)):
        swizzle_picture(mode, row_bytes=mode, rows=8, ax=ax)
        ax.set_title(f"{mode}B swizzle, {mode}-byte rows\n{swizzle_rule(mode, mode)}", fontsize=8)
        ax.set_xlabel("slot (byte offset in the row)", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(
        "Each TMA swizzle mode on its own row length: logical 16-byte chunk in each "
        "slot (the pattern repeats every 8 rows)",
        fontsize=10,
    )
    fig.text(
        0.01,
        0.005,
        "source: course.models.tensormap.chunk_map (Swizzle<B,4,3> on byte "
        "addresses; B = 1, 2, 3 for 32B, 64B, 128B)",
        fontsize=7,
        color="grey",
    )
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    return fig


def multicast_picture(cluster: int = 2, ax=None):
    """One tile in L2, cut into `cluster` slices; CTA i asks for slice i and TMA writes
    it into every CTA of the cluster."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8.5, 3.8))
    colours = [f"C{i}" for i in range(cluster)]
    h = 1.0 / cluster
    for i in range(cluster):  # the tile in L2, sliced
        ax.add_patch(
            Rectangle((0, 2 - (i + 1) * h * 2), 1.2, h * 2, fc=colours[i], ec="black", alpha=0.8)
        )
        ax.text(
            0.6,
            2 - (i + 0.5) * h * 2,
            f"slice {i}",
            ha="center",
            va="center",
            fontsize=8,
            color="white",
        )
    ax.text(0.6, 2.15, "one tile in L2", ha="center", fontsize=9)
    for c in range(cluster):  # CTAs' shared memory
        x = 3 + c * 1.8
        for i in range(cluster):
            ax.add_patch(
                Rectangle(
                    (x, 2 - (i + 1) * h * 2), 1.2, h * 2, fc=colours[i], ec="black", alpha=0.8
                )
            )
        ax.text(x + 0.6, 2.15, f"CTA {c} smem", ha="center", fontsize=9)
        ax.text(
            x + 0.6, -0.35, f"issues slice {c}\nmask 0b{'1' * cluster}", ha="center", fontsize=8
        )
    for i in range(cluster):
        for c in range(cluster):
            x = 3 + c * 1.8
            y = 2 - (i + 0.5) * h * 2
            ax.add_patch(
                FancyArrowPatch(
                    (1.2, y),
                    (x, y),
                    arrowstyle="->",
                    mutation_scale=8,
                    color=colours[i],
                    lw=0.8,
                    alpha=0.7,
                )
            )
    ax.set_xlim(-0.2, 3 + cluster * 1.8)
    ax.set_ylim(-0.8, 2.4)
    ax.axis("off")
    ax.set_title(
        f"TMA multicast in a cluster of {cluster}: CTA i issues slice i, which lands "
        f"in all {cluster} CTAs\n(the model: each slice read from L2 once, 1x instead of "
        f"{cluster}x; a prediction the counters have to confirm)",
        fontsize=10,
    )
    fig.text(
        0.01, 0.005, "source: kernels/tma.py TmaMulticast (schematic)", fontsize=7, color="grey"
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig
