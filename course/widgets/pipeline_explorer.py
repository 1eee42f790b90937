"""Notebook 09's explorer: why 1 stage serializes and 4 stages hide the load latency.

Sliders set the stage count, the k-tiles, the load and MMA latencies; a selector injects
one of the classic mbarrier mistakes. The picture is the simulated timeline; the text
gives the cycle count against the formula, the tensor-core utilisation, and, for a
mistake, the deadlock or race explanation the simulator produced.
"""

from __future__ import annotations

import html

import ipywidgets as w

from course.sim import pipeline_sim
from course.viz import pipeline_pictures
from course.widgets.static_widget import StaticWidget


def report(sim: pipeline_sim.PipelineSim) -> str:
    """The widget's text for one simulation (HTML)."""
    c = sim.config
    need = pipeline_sim.stages_to_hide_latency(c.load_latency, c.mma_latency)
    one_stage = pipeline_sim.predicted_cycles(1, c.k_tiles, c.load_latency, c.mma_latency)
    lines = [
        f"<b>{html.escape(sim.summary())}</b>",
        f"1 stage would take {one_stage:,.0f} "
        f"cycles; the tensor core never waits from {need} stages on "
        f"(load / MMA + 1 = {c.load_latency:,.0f} / {c.mma_latency:,.0f} + 1).",
        f"Injected: {html.escape(pipeline_sim.BUGS[c.bug])}.",
    ]
    text = "<br>".join(lines)
    if sim.explain():
        text += (
            '<pre style="white-space:pre-wrap;border-left:6px solid #cf222e;'
            f'padding:4px 8px;background:#cf222e10">{html.escape(sim.explain())}</pre>'
        )
    return text


def pipeline_explorer(
    stages: int = 4,
    k_tiles: int = 12,
    load_latency: int = 600,
    mma_latency: int = 200,
    bug: str | None = None,
) -> StaticWidget:
    """The explorer; its static picture is the timeline of the starting state."""
    stages_w = w.IntSlider(value=stages, min=1, max=8, description="stages")
    k_w = w.IntSlider(value=k_tiles, min=1, max=32, description="k-tiles")
    load_w = w.IntSlider(value=load_latency, min=0, max=3000, step=50, description="load (cyc)")
    mma_w = w.IntSlider(value=mma_latency, min=25, max=1000, step=25, description="MMA (cyc)")
    bug_w = w.Dropdown(
        options=[("none", None)] + [(b.replace("_", " "), b) for b in pipeline_sim.BUGS if b],
        value=bug,
        description="bug",
    )
    text = w.HTML()
    out = w.Output()

    def current() -> pipeline_sim.PipelineSim:
        return pipeline_sim.simulate(
            stages=stages_w.value,
            k_tiles=k_w.value,
            load_latency=load_w.value,
            mma_latency=mma_w.value,
            bug=bug_w.value,
        )

    def redraw(*_):
        sim = current()
        text.value = report(sim)
        out.clear_output(wait=True)
        with out:
            import matplotlib.pyplot as plt

            fig = pipeline_pictures.timeline(sim)
            plt.show()
            plt.close(fig)

    for control in (stages_w, k_w, load_w, mma_w, bug_w):
        control.observe(redraw, "value")
    redraw()
    view = w.VBox([w.HBox([stages_w, k_w, bug_w]), w.HBox([load_w, mma_w]), text, out])
    return StaticWidget(view, lambda: pipeline_pictures.timeline(current()))
