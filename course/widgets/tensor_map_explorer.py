"""Notebook 08's explorer: a tensor, a box, a swizzle -> the tensor map and its boxes.

Sliders set the matrix shape, the box and the swizzle; the picture shows the boxes
(hatched where they stick out of the tensor), the text the cuTensorMapEncodeTiled
arguments and any of the driver's rules they break.
"""

from __future__ import annotations

import html

import ipywidgets as w

from course.models import tensormap
from course.viz.tma_pictures import tensor_map_picture
from course.widgets.static_widget import StaticWidget


def describe(args: tensormap.TensorMapArgs) -> str:
    """The explorer's text (HTML): the call, the box count and the rule check."""
    bad = tensormap.rule_violations(args)
    verdict = (
        "<b style='color:#1a7f37'>the driver would accept these arguments</b>"
        if not bad
        else "<b style='color:#cf222e'>the driver would reject these arguments:</b><br>"
        + "<br>".join(html.escape(b) for b in bad)
    )
    down, across = args.boxes[1], args.boxes[0]
    return (
        f"<pre>{html.escape(args.call())}</pre>{down} x {across} = {down * across:,} boxes, "
        f"{args.box_bytes:,} bytes each (the expect_tx count of one load, edge boxes "
        f"included).<br>{verdict}"
    )


def tensor_map_explorer(
    rows: int = 200,
    cols: int = 136,
    box_rows: int = 64,
    box_cols: int = 64,
    dtype: str = "bf16",
    swizzle: int = 128,
) -> StaticWidget:
    rows_w = w.IntSlider(value=rows, min=8, max=1024, step=8, description="rows")
    cols_w = w.IntSlider(value=cols, min=8, max=1024, step=8, description="cols")
    br_w = w.IntSlider(value=box_rows, min=8, max=256, step=8, description="box rows")
    bc_w = w.IntSlider(value=box_cols, min=8, max=256, step=8, description="box cols")
    dtype_w = w.Dropdown(options=sorted(tensormap.DTYPES), value=dtype, description="dtype")
    sw_w = w.Dropdown(options=sorted(tensormap.SWIZZLES), value=swizzle, description="swizzle B")
    text = w.HTML()
    out = w.Output()

    def current() -> tensormap.TensorMapArgs:
        return tensormap.tiled(
            rows_w.value, cols_w.value, dtype_w.value, (br_w.value, bc_w.value), sw_w.value
        )

    def redraw(*_):
        args = current()
        text.value = describe(args)
        out.clear_output(wait=True)
        with out:
            import matplotlib.pyplot as plt

            fig = tensor_map_picture(args, highlight=(0, 0))
            plt.show()
            plt.close(fig)

    for control in (rows_w, cols_w, br_w, bc_w, dtype_w, sw_w):
        control.observe(redraw, "value")
    redraw()
    view = w.VBox(
        [w.HBox([rows_w, cols_w, dtype_w]), w.HBox([br_w, bc_w, sw_w]), w.HBox([out, text])]
    )
    return StaticWidget(view, lambda: tensor_map_picture(current(), highlight=(0, 0)))
