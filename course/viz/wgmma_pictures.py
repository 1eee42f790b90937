"""Pictures of WGMMA's operands in shared memory."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from course.models.wgmma_descriptor import core_matrix_bytes


def swizzled_chunks(rows: int = 16, k_elems: int = 64, elem_bytes: int = 2,
                    k_step: int = 16, source: str = ""):
    """The first `rows` rows of a 128B-swizzled K-major tile (`k_elems` elements of
    `elem_bytes` per row = 128 bytes): each element coloured by the 16-byte chunk it is
    stored in, the k-steps of one wgmma (`k_step` elements) boxed, and the line between
    the two 8-row core-matrix groups (SBO apart) drawn in white."""
    chunk = np.array([[(core_matrix_bytes(r, elem_bytes * c) % 128) // 16
                       for c in range(k_elems)] for r in range(rows)])
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.imshow(chunk, cmap="tab10", aspect="auto")
    for k in range(k_elems // k_step):
        ax.add_patch(plt.Rectangle((k_step * k - 0.5, -0.5), k_step, rows, fill=False, lw=2,
                                   ls="--", color="k"))
        ax.text(k_step * k + k_step / 2, -1, f"k-step {k}", ha="center", fontsize=8)
    for group in range(8, rows, 8):
        ax.axhline(group - 0.5, color="white", lw=2)
    ax.set_xlabel(f"K (element) -- one k-step of wgmma = {k_step} elements = "
                  f"{k_step * elem_bytes} bytes")
    ax.set_ylabel("row (M or N)")
    groups = " and ".join(f"{g}-{min(g + 7, rows - 1)}" for g in range(0, rows, 8))
    ax.set_title(f"128B-swizzled K-major tile: colour = 16-byte chunk each element is stored "
                 f"in;\nrows {groups} are core-matrix groups, {8 * 128} bytes apart (SBO)", pad=14)
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    return fig
