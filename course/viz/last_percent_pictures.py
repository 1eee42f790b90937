"""Pictures of notebook 13's measurements: time against N with its wave steps, time per GEMM
launched eagerly and from a CUDA graph, and the fused epilogue against the unfused pair.

The lessons hand over plain numbers (course.lessons.last_percent_lesson); everything drawn
is drawn here, every axis labelled and every figure titled with where its numbers came from.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt

KERNEL, CUBLAS, MODEL = "#0969da", "#cf222e", "#8c959f"


def _title(ax, title: str, source: str) -> None:
    """The figure's title, and where its numbers came from wrapped beneath it."""
    ax.set_title(title + "\n" + textwrap.fill(source, 100), fontsize=8.5)


def waves(ns, kernel_ms, cublas_ms, model_ms, edges, source: str, ax=None):
    """Time against N: the course's kernel, cuBLAS, the step model (a constant per wave) and
    a dotted line where the wave count steps up."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8.5, 4.2))
    for i, n in enumerate(edges):
        ax.axvline(n, color=MODEL, lw=0.8, ls=":", label="a wave more" if i == 0 else None)
    ax.step(ns, model_ms, where="mid", color=MODEL, lw=1.5, label="model: start + waves x per-wave")
    ax.plot(ns, kernel_ms, "o", ms=4, color=KERNEL, label="course SOL kernel (128x256 tiles, 2x1)")
    ax.plot(ns, cublas_ms, "s", ms=3, color=CUBLAS, label="cuBLAS")
    ax.set_xlabel("N (M = K = 4096, bf16)")
    ax.set_ylabel("time per GEMM (ms)")
    _title(ax, "Waves: time steps where the work items pass a multiple of the clusters", source)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def launch(sizes, series: dict, source: str, ax=None):
    """Time per GEMM against size, log-log: {label: [microseconds per size]}."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 4.2))
    styles = {
        "course, eager": (KERNEL, "o-"),
        "course, CUDA graph": (KERNEL, "o--"),
        "cuBLAS, eager": (CUBLAS, "s-"),
        "cuBLAS, CUDA graph": (CUBLAS, "s--"),
    }
    for label, us in series.items():
        color, style = styles.get(label, (MODEL, "x-"))
        ax.plot(sizes, us, style, color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("M = N = K (bf16)")
    ax.set_ylabel("time per GEMM (µs)")
    _title(ax, "Launch overhead: eager launches against a CUDA graph", source)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def fusion(shapes, contenders, ms, source: str, ax=None):
    """Grouped bars: for each shape, each contender's time relative to cuBLASLt's fused
    kernel (ms[shape][contender] in milliseconds)."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8.5, 4.2))
    width = 0.8 / len(contenders)
    colors = plt.get_cmap("tab10")
    for j, name in enumerate(contenders):
        xs = [i + (j - (len(contenders) - 1) / 2) * width for i in range(len(shapes))]
        rel = [ms[s][name] / ms[s]["cuBLASLt fused"] for s in shapes]
        ax.bar(xs, rel, width, label=name, color=colors(j))
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(shapes)), shapes)
    ax.set_xlabel("M x N x K (bf16), y = GELU(A . B^T + bias)")
    ax.set_ylabel("time / cuBLASLt's fused kernel")
    _title(ax, "A fused epilogue against the unfused pair of kernels", source)
    ax.legend(fontsize=8, ncols=2)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig
