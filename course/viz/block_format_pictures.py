"""Pictures of block-scaled formats (notebook 16): every FP4 value beside e4m3's range, one
block before and after MXFP4 / NVFP4 quantization, each format's error on data with outlier
channels, and which 16-byte line of the blocked layout holds each scale factor."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Patch

from course.models import block_formats as bs
from course.models.fp8 import E4M3

DPI = 90  # the notebooks store these figures: small files
COLOURS = {
    "FP8 tensorwise": "tab:red",
    "FP8 1x128": "tab:blue",
    "MXFP8": "tab:cyan",
    "MXFP4": "tab:orange",
    "NVFP4": "tab:green",
}


def e2m1_values():
    """Top: all 16 e2m1 codes at their values on a linear axis, labelled with their bits.
    Bottom: e2m1's positive values beside e4m3's on a log axis: FP4 spans 0.5..6 (a factor
    12), e4m3 2^-9..448 -- why an FP4 block needs a scale of its own."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(9, 4.2), dpi=DPI, gridspec_kw={"height_ratios": [1.2, 1]}
    )
    for code, v in enumerate(bs.E2M1_VALUES):
        colour = "tab:orange" if code >> 3 else "tab:blue"
        top.plot([v], [0], "o", color=colour, ms=7)
        dy = 10 if code < 8 else (-28 if code == 8 else -16)  # -0 (1000) sits on +0 (0000)
        top.annotate(
            f"{code:04b}", (v, 0), (0, dy), textcoords="offset points", ha="center", fontsize=7
        )
    top.plot([], [], "o", color="tab:blue", label="sign bit 0")
    top.plot([], [], "o", color="tab:orange", label="sign bit 1 (-0 sits on +0)")
    top.axhline(0, color="grey", lw=0.5)
    top.set_yticks([])
    top.set_xlabel("value (linear); label: the 4 bits s ee m")
    top.set_xticks(sorted(set(bs.E2M1_VALUES)))
    top.tick_params(axis="x", labelsize=7)
    top.legend(fontsize=7, loc="upper left")
    top.set_title("All 16 e2m1 (FP4) values, and beside them e4m3's range")
    fp4 = [v for v in bs.E2M1_VALUES[:8] if v > 0]
    e4m3 = [v for v in E4M3.finite_values() if v > 0]
    bottom.vlines(e4m3, 0.7, 1.3, color="tab:blue", lw=0.8, label="e4m3 (FP8)")
    bottom.vlines(fp4, -0.3, 0.3, color="tab:orange", lw=1.5, label="e2m1 (FP4)")
    bottom.set_xscale("log", base=2)
    bottom.set_yticks([0, 1], ["e2m1", "e4m3"])
    bottom.set_ylim(-0.6, 1.6)
    bottom.set_xlabel("positive value (log scale, base 2)")
    bottom.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def one_block(x: torch.Tensor | None = None, seed: int = 0):
    """One row of 32 values, and what MXFP4 (one power-of-two SF for all 32) and NVFP4 (one
    e4m3 SF per 16) make of them: the dequantized values and each format's SF(s)."""
    if x is None:
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(1, 32, generator=g, dtype=torch.float64)
        x[0, 16:] *= 0.15  # a quiet second half: NVFP4's second SF can follow it
    mx, nv = bs.quantize(x, bs.MXFP4), bs.quantize(x, bs.NVFP4)
    idx = np.arange(x.shape[1])
    fig, ax = plt.subplots(figsize=(9, 3.8), dpi=DPI)
    ax.bar(idx - 0.27, x[0].numpy(), 0.27, color="lightgrey", label="original")
    ax.bar(
        idx,
        mx.dequantize()[0].numpy(),
        0.27,
        color="tab:orange",
        label=f"MXFP4: SF 2^{int(mx.scales.view(torch.uint8)[0, 0]) - 127} for all 32",
    )
    sf = [float(s) * float(nv.global_scale) for s in nv.scales[0].to(torch.float64)]
    ax.bar(
        idx + 0.27,
        nv.dequantize()[0].numpy(),
        0.27,
        color="tab:green",
        label=f"NVFP4: SFs {sf[0]:.3g} | {sf[1]:.3g} (e4m3 x global) per 16",
    )
    ax.axvline(15.5, color="black", ls=":", lw=1)
    ax.text(15.6, ax.get_ylim()[1] * 0.9, "NVFP4's 2nd block", fontsize=7)
    ax.set_xlabel("element of the block (along K)")
    ax.set_ylabel("value")
    ax.set_title("One 1x32 block: original, and dequantized from MXFP4 and NVFP4")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
    fig.tight_layout()
    return fig


def format_errors(table: list[dict], data: str = "outlier channels"):
    """Bars: each format's relative error on `data`, on the whole tensor and on its ordinary
    channels, with its storage (bits per element, SFs included) under its name."""
    rows = [r for r in table if r["data"] == data]
    fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=DPI)
    x = np.arange(len(rows))
    for shift, key, hatch in ((-0.2, "error (all)", ""), (0.2, "error (ordinary channels)", "//")):
        ax.bar(
            x + shift,
            [r[key] for r in rows],
            0.4,
            hatch=hatch,
            color=[COLOURS.get(r["format"], "grey") for r in rows],
            edgecolor="black",
        )
    ax.set_xticks(x, [f"{r['format']}\n{r['bits per element']:g} bits" for r in rows], fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("format (bits per element, scale factors included)")
    ax.set_ylabel("relative error of the tensor")
    ax.set_title(f"Quantization error on {data}")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(
        handles=[
            Patch(facecolor="white", edgecolor="black", label="error (all)"),
            Patch(
                facecolor="white", edgecolor="black", hatch="//", label="error (ordinary channels)"
            ),
        ],
        fontsize=8,
    )
    fig.tight_layout()
    return fig


def blocked_layout(rows: int = bs.ATOM_ROWS, kblocks: int = bs.ATOM_KBLOCKS):
    """The ownership map of the blocked SF layout: each (row, k-block) coloured by its 32-row
    group (which 4 bytes of a 16-byte line it lands in), every other 16-byte line (chunk)
    darker, with the byte offset written in a few cells: rows r, r+32, r+64, r+96 share line
    r % 32 of their atom."""
    own = bs.blocked_owner(rows, kblocks)
    cmap = plt.get_cmap("tab10")
    rgb = np.array([cmap(g)[:3] for g in range(4)])[own["row group"]]
    rgb = rgb * np.where(own["chunk"] % 2 == 1, 0.75, 1.0)[..., None]
    fig, ax = plt.subplots(figsize=(4.6, 8.5), dpi=DPI)
    ax.imshow(
        rgb, aspect="auto", extent=(-0.5, kblocks - 0.5, rows - 0.5, -0.5), interpolation="nearest"
    )
    for r in (0, 12, 24, 32, 44, 64, 76, 96, 108, 127):
        for k in range(kblocks):
            if r < rows:
                ax.text(
                    k,
                    r,
                    str(own["offset"][r, k]),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                    fontweight="bold",
                )
    for g in range(1, -(-rows // bs.ROW_GROUP)):
        ax.axhline(g * bs.ROW_GROUP - 0.5, color="black", lw=1)
    for g in range(4):
        ax.plot(
            [],
            [],
            "s",
            color=cmap(g),
            label=f"rows {32 * g}-{32 * g + 31} (+128 i): bytes {4 * g}-{4 * g + 3} of a line",
        )
    ax.set_xticks(range(kblocks))
    ax.set_xlabel("k-block (one SF each)")
    ax.set_ylabel("row (of A: M, of B: N)")
    ax.set_title("Blocked SF layout: byte offset of (row, k-block);\n16-byte line = offset // 16")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.06))
    fig.tight_layout()
    return fig
