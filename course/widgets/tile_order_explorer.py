"""Notebook 11's explorer: tile visit order and the L2 footprint of a wave of CTAs (or of
clusters, when each tile is computed by a cluster).

Sliders: the problem (tiles of C), the group size of the grouped order, and the wave
(how many CTAs run at once: ~132 on an H100; 66 for 2-CTA clusters). The picture colours
tiles by visit time and outlines the first wave; the text counts the distinct A and B
panels each wave needs in L2.
"""

from __future__ import annotations

import ipywidgets as w

from course.models.tile_order import wave_panels
from course.viz.tile_order_pictures import draw
from course.widgets.static_widget import StaticWidget


def summary(
    tiles_m: int, tiles_n: int, group: int, wave: int, panel_mb: float, unit: str = "CTAs"
) -> str:
    panels = wave_panels(tiles_m, tiles_n, group, wave)
    worst = max(panels)
    return (
        f"{tiles_m} x {tiles_n} tiles, groups of {group} rows, waves of {wave} {unit}: "
        f"{len(panels)} waves; a wave touches {min(panels)}-{worst} panels "
        f"(up to {worst * panel_mb:.0f} MB of A and B to keep in L2)"
    )


def tile_order_explorer(
    tiles_m: int = 32,
    tiles_n: int = 16,
    group: int = 8,
    wave: int = 132,
    panel_mb: float = 1.0,
    unit: str = "CTAs",
) -> StaticWidget:
    """`panel_mb`: megabytes of one A or B panel (e.g. 128 x 4096 bf16 = 1 MB); `unit`: what
    computes one tile and runs `wave` at a time ("CTAs", or "clusters")."""
    tm = w.IntSlider(value=tiles_m, min=1, max=64, description="tile rows")
    tn = w.IntSlider(value=tiles_n, min=1, max=64, description="tile cols")
    g = w.IntSlider(value=group, min=1, max=64, description="group")
    wv = w.IntSlider(value=wave, min=1, max=264, description=f"wave ({unit})")
    text = w.HTML()
    out = w.Output()

    def redraw(*_):
        text.value = summary(tm.value, tn.value, g.value, wv.value, panel_mb, unit)
        out.clear_output(wait=True)
        with out:
            import matplotlib.pyplot as plt

            draw(tm.value, tn.value, g.value, wv.value, unit=unit)
            plt.show()

    for s in (tm, tn, g, wv):
        s.observe(redraw, "value")
    redraw()
    view = w.VBox([w.HBox([tm, tn]), w.HBox([g, wv]), text, out])
    return StaticWidget(view, lambda: draw(tm.value, tn.value, g.value, wv.value, unit=unit))
