"""Notebook 00's explorer: how the tile size moves a GEMM along the roofline.

Pick a problem size and a CTA tile; see the DRAM traffic, the arithmetic intensity,
which roof caps it, and where it sits against this machine's (or the recorded) ceilings.
"""

from __future__ import annotations

import ipywidgets as w

from course.models.gemm_model import Gemm, attainable_tflops, bound
from course.viz.roofline import Point, roofline
from course.widgets.static_widget import StaticWidget

TILES = (1, 16, 32, 64, 128, 256)


def summary(gemm: Gemm, tile: int, peak_tflops: float, bandwidth_gbps: float) -> str:
    """One paragraph of numbers for the chosen tile."""
    traffic = gemm.tiled_bytes(tile, tile)
    ai = gemm.intensity(tile, tile)
    cap = attainable_tflops(ai, peak_tflops, bandwidth_gbps)
    return (
        f"{gemm.m}x{gemm.n}x{gemm.k}, {tile}x{tile} tiles: {gemm.tiles(tile, tile):,} CTAs, "
        f"{traffic / 1e9:,.2f} GB of DRAM traffic (ideal {gemm.min_bytes() / 1e9:.2f} GB), "
        f"{ai:,.1f} FLOP/B -> {bound(ai, peak_tflops, bandwidth_gbps)}-bound, "
        f"at most {cap:,.0f} TFLOP/s"
    )


def figure(size: int, tile: int, peak_tflops: float, bandwidth_gbps: float, source: str = ""):
    gemm = Gemm(size, size, size)
    points = [
        Point("naive (1x1 tiles)", gemm.intensity(1, 1)),
        Point(f"{tile}x{tile} tiles, no L2 reuse", gemm.intensity(tile, tile)),
        Point("ideal (each operand read once)", gemm.intensity()),
    ]
    return roofline(
        peak_tflops,
        bandwidth_gbps,
        points,
        title=f"{size}^3 bf16 GEMM: where tiling puts it",
        source=source,
    )


def tile_roofline(
    peak_tflops: float, bandwidth_gbps: float, source: str = "", size: int = 4096, tile: int = 128
) -> StaticWidget:
    """The explorer; `source` says where the ceilings came from (live or recorded)."""
    size_w = w.SelectionSlider(
        options=[512, 1024, 2048, 4096, 8192, 16384], value=size, description="M=N=K"
    )
    tile_w = w.SelectionSlider(options=TILES, value=tile, description="tile")
    text = w.HTML()
    out = w.Output()

    def redraw(*_):
        text.value = summary(
            Gemm(size_w.value, size_w.value, size_w.value),
            tile_w.value,
            peak_tflops,
            bandwidth_gbps,
        )
        out.clear_output(wait=True)
        with out:
            import matplotlib.pyplot as plt

            figure(size_w.value, tile_w.value, peak_tflops, bandwidth_gbps, source)
            plt.show()

    size_w.observe(redraw, "value")
    tile_w.observe(redraw, "value")
    redraw()
    view = w.VBox([w.HBox([size_w, tile_w]), text, out])
    return StaticWidget(
        view, lambda: figure(size_w.value, tile_w.value, peak_tflops, bandwidth_gbps, source)
    )
