"""Pictures of FP8 (notebook 12): every value of a format on a log axis, the error of each
scaling granularity as outliers grow, and the accumulation error against K (the model's
curves, and the GPU's measurements beside them when they are recorded)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from course.models.fp8 import Fp8Format

DPI = 90  # the notebooks store these figures: small files
COLOURS = {"tensorwise": "tab:red", "rowwise": "tab:orange", "blockwise": "tab:blue"}


def format_values(formats: tuple[Fp8Format, ...]):
    """One row of ticks per format: each positive finite value at its place on a log axis,
    subnormals in grey; the smallest normal and the largest value marked."""
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.8 * len(formats)), dpi=DPI)
    for row, fmt in enumerate(formats):
        values = [v for v in fmt.finite_values() if v > 0]
        normal = [v for v in values if v >= fmt.smallest_normal]
        sub = [v for v in values if v < fmt.smallest_normal]
        y = len(formats) - 1 - row
        ax.vlines(normal, y - 0.3, y + 0.3, color="tab:blue", lw=1)
        ax.vlines(sub, y - 0.3, y + 0.3, color="grey", lw=1)
        ax.plot([fmt.smallest_normal], [y + 0.38], "v", color="black", ms=5)
        ax.plot([fmt.max], [y + 0.38], "v", color="tab:red", ms=5)
        ax.text(fmt.max * 1.3, y, f"max {fmt.max:g}", va="center", fontsize=8, color="tab:red")
    ax.vlines([], 0, 0, color="tab:blue", label="normal values")
    ax.vlines([], 0, 0, color="grey", label="subnormal values")
    ax.plot([], [], "v", color="black", label="smallest normal")
    ax.plot([], [], "v", color="tab:red", label="largest value")
    ax.set_xscale("log", base=2)
    ax.set_yticks(range(len(formats)), [f.name for f in reversed(formats)])
    ax.set_ylim(-0.6, len(formats) - 0.3)
    ax.set_xlim(min(f.smallest_subnormal for f in formats) / 2, max(f.max for f in formats) * 16)
    ax.set_xlabel("value (log scale, base 2); negative values mirror these")
    ax.set_title("Every positive finite value of the two FP8 formats")
    ax.legend(loc="upper left", fontsize=8, ncol=4, bbox_to_anchor=(0, -0.35))
    fig.tight_layout()
    return fig


def outlier_errors(sweep: dict, fmt_name: str = "e4m3"):
    """Each scheme's relative error (on the ordinary channels' part of A.B^T) against how
    much larger the outlier channels are."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6), dpi=DPI)
    xs = sweep["outlier scale"]
    for scheme, errors in sweep.items():
        if scheme == "outlier scale":
            continue
        label = "blocks: 1x128 (A), 128x128 (B)" if scheme == "blockwise" else scheme
        ax.loglog(xs, errors, "o-", color=COLOURS.get(scheme), label=label)
    ax.set_xlabel("outlier channels: times larger than the others")
    ax.set_ylabel("relative error (ordinary channels' part of C)")
    ax.set_title(f"{fmt_name} operands, scales amax / max: error against the outliers' size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="scales", fontsize=8)
    fig.tight_layout()
    return fig


MODEL_CUTS = {"addends": "addends cut", "sum": "sum cut"}
KERNEL_MARKS = {  # the course kernel's series in a record: label, colour, marker
    "fp8_gemm, promote_every=None": ("course kernel, no promotion", "tab:red", "s"),
    "fp8_gemm, promote_every=4": ("course kernel, promotion every 512 K", "tab:purple", "s"),
    "fp8_gemm, promote_every=1": ("course kernel, promotion every 128 K", "tab:blue", "s"),
}


def accumulation_errors(
    model: dict, measured: dict | None = None, measured_label: str = "", other: dict | None = None
):
    """The model's relative error against K, without and with promotion (dashed lines; a
    second variant of the model, `other`, dotted); the measured errors (markers) where
    `measured` has them: {"k": [...], series: [...]}, cuBLAS's as circles, the course
    kernel's as squares."""
    fig, ax = plt.subplots(figsize=(7.5, 4.4), dpi=DPI)
    ks = model["k"]
    bits, every = model["keep_bits"], model["promote_every_k"]
    for m, style in ((model, "--"), (other, ":")):
        if not m:
            continue
        cut = MODEL_CUTS.get(m.get("cut"), "model")
        ax.loglog(
            ks, m["no promotion"], style, color="tab:red",
            label=f"model ({cut}, {bits} bits): no promotion",
        )  # fmt: skip
        ax.loglog(
            ks, m["promotion"], style, color="tab:blue",
            label=f"model ({cut}): promoted every {every} K",
        )  # fmt: skip
    if measured:
        for series, colour in (("fast accumulation", "tab:red"), ("promotion", "tab:blue")):
            if series in measured:
                ax.loglog(
                    measured["k"],
                    measured[series],
                    "o",
                    color=colour,
                    label=f"cuBLAS, {measured_label}: {series}",
                )
        for series, (name, colour, marker) in KERNEL_MARKS.items():
            if series in measured:
                ax.loglog(
                    measured["k"],
                    measured[series],
                    marker,
                    mfc="none",
                    color=colour,
                    label=f"{name}, {measured_label}",
                )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("K (length of each dot product)")
    ax.set_ylabel("relative error against float64")
    ax.set_title("FP8 GEMM: error of the sums against K")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig
