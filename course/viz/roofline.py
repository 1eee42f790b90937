"""The roofline: attainable TFLOP/s against arithmetic intensity (FLOP per DRAM byte).

The solid roofs are measured (cuBLAS's bf16 rate and a device-to-device copy), so cuBLAS
sits on its own roof by construction; the dashed roofs, where the GPU's datasheet is
known, are the published ceilings the measured ones fall short of."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from course.models.datasheet import Datasheet
from course.models.gemm_model import attainable_tflops


@dataclass(frozen=True)
class Point:
    label: str
    intensity: float  # FLOP / byte
    tflops: float | None = None  # measured; None -> drawn on the roof as a prediction


MEASURED = "measured (cuBLAS / copy)"


def roofline(
    peak_tflops: float,
    bandwidth_gbps: float,
    points: list[Point] = (),
    title: str = "Roofline",
    source: str = "",
    ax=None,
    datasheet: Datasheet | None = None,
):
    """Draw the measured ceilings (matmul rate `peak_tflops`, copy bandwidth) and, when given,
    the datasheet's beside them, then the given kernels; returns the matplotlib Figure."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7.5, 4.6))
    ridge = peak_tflops * 1e3 / bandwidth_gbps
    xs = np.logspace(-1, 4, 400)
    top = peak_tflops
    if datasheet is not None:
        top = max(top, datasheet.tflops)
        ax.loglog(
            xs,
            [attainable_tflops(x, datasheet.tflops, datasheet.gbps) for x in xs],
            color="grey",
            ls="--",
            lw=1.5,
            label=f"datasheet: {datasheet.tflops:.0f} TFLOP/s, {datasheet.gbps:,.0f} GB/s",
        )
    ax.loglog(
        xs,
        [attainable_tflops(x, peak_tflops, bandwidth_gbps) for x in xs],
        color="black",
        lw=2,
        label=f"{MEASURED}: {peak_tflops:.0f} TFLOP/s, {bandwidth_gbps:,.0f} GB/s",
    )
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(
        f"measured ridge {ridge:.0f} FLOP/B",
        (ridge, peak_tflops * 0.003),
        rotation=90,
        ha="right",
        va="bottom",
        fontsize=8,
        color="grey",
    )
    for i, p in enumerate(points):
        y = (
            p.tflops
            if p.tflops is not None
            else attainable_tflops(p.intensity, peak_tflops, bandwidth_gbps)
        )
        marker = "o" if p.tflops is not None else "D"
        ax.plot(
            p.intensity,
            y,
            marker,
            ms=7,
            color=f"C{i % 10}",
            mfc="white" if p.tflops is None else f"C{i % 10}",
            label=p.label,
        )
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_xlim(0.1, 1e4)
    ax.set_ylim(max(0.01, 0.05 * bandwidth_gbps / 1e3), top * 5)  # room for the legend
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")
    if source:
        fig.text(0.01, 0.005, source, fontsize=7, color="grey", ha="left", va="bottom")
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout(rect=(0, 0.03 if source else 0, 1, 1))
    return fig
