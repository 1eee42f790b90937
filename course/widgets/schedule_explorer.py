"""Notebook 15's explorer: pipeline depth, CTA pairs, TMEM slots and the tile scheduler.

A small grid on a few SMs, so every tile is visible: the per-SM timeline (tensor core and
epilogue, one colour per output tile) and the numbers (cycles, utilisation per SM), with
the same workload under the static schedule beside them, so the scheduler's gain is read
off directly. "uneven tiles" is one random draw of heavy tiles (the `draw` slider picks
it): a single draw can be unlucky for a greedy in-order scheduler like CLC (draw 0 is),
which is why notebook 15's table averages eight.
"""

from __future__ import annotations

import html

import ipywidgets as w

from course.sim import schedule_sim
from course.viz import schedule_pictures
from course.widgets.static_widget import StaticWidget

WORKLOADS = ("even tiles", "uneven tiles", "2 SMs busy at start")


def config(
    stages: int,
    cluster: int,
    acc_slots: int,
    scheduler: str,
    workload: str,
    epilogue_latency: int,
    handshake_latency: int,
    sms: int = 4,
    tiles_m: int = 4,
    tiles_n: int = 6,
    k_tiles: int = 6,
    draw: int = 0,
) -> dict:
    """simulate() arguments for one setting of the explorer."""
    kw = dict(
        sms=sms,
        cluster=cluster,
        tiles_m=tiles_m,
        tiles_n=tiles_n,
        k_tiles=k_tiles,
        stages=stages,
        acc_slots=acc_slots,
        scheduler=scheduler,
        epilogue_latency=epilogue_latency,
        handshake_latency=handshake_latency,
    )
    units = schedule_sim.ScheduleConfig(**kw).units
    if workload == "uneven tiles":
        kw["tile_k"] = schedule_sim.uneven_work(units, k_tiles, seed=draw)
    elif workload == "2 SMs busy at start":
        busy = 4 * k_tiles * 256
        kw["sm_busy_until"] = (busy, busy)
    elif workload != "even tiles":
        raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    return kw


def report(sim: schedule_sim.ScheduleSim, static: schedule_sim.ScheduleSim | None = None) -> str:
    """The explorer's text (HTML); `static`: the same workload under the static schedule
    (`sim` itself when it is the static one: then there is nothing to compare)."""
    per_sm = ", ".join(f"SM {i}: {u:.0%}" for i, u in enumerate(sim.per_sm_utilisation))
    text = f"<b>{html.escape(sim.summary())}</b><br>tensor core busy per SM: {per_sm}"
    if static is not None and static is not sim and static.ok and sim.ok:
        ratio = static.total_cycles / sim.total_cycles
        text += (
            f"<br>the same workload, static schedule: {static.total_cycles:,.0f} cycles "
            f"(static takes {ratio:.2f}x as long as {sim.config.scheduler})"
        )
    if sim.config.scheduler == "clc":
        text += f"<br>{sim.clc_queries} CLC queries (the last one of each pair finds no work)"
    if not sim.ok:
        text += f"<pre>{html.escape(sim.explain())}</pre>"
    return text


def schedule_explorer(
    stages: int = 4,
    cluster: int = 2,
    acc_slots: int = 2,
    scheduler: str = "clc",
    workload: str = "uneven tiles",
    epilogue_latency: int = 800,
    handshake_latency: int = 100,
    draw: int = 1,
) -> StaticWidget:
    stages_w = w.IntSlider(value=stages, min=1, max=8, description="stages")
    cluster_w = w.ToggleButtons(
        options=[("single CTAs", 1), ("CTA pairs", 2)], value=cluster, description="CTAs"
    )
    acc_w = w.ToggleButtons(
        options=[("1", 1), ("2 (ping-pong)", 2)], value=acc_slots, description="TMEM slots"
    )
    sched_w = w.ToggleButtons(
        options=list(schedule_sim.SCHEDULERS), value=scheduler, description="scheduler"
    )
    work_w = w.Dropdown(options=list(WORKLOADS), value=workload, description="workload")
    draw_w = w.IntSlider(
        value=draw,
        min=0,
        max=7,
        description="draw",
        tooltip="which random draw of heavy tiles ('uneven tiles')",
    )
    ep_w = w.IntSlider(value=epilogue_latency, min=0, max=3000, step=100, description="epilogue")
    hs_w = w.IntSlider(value=handshake_latency, min=0, max=600, step=25, description="handshake")
    text = w.HTML()
    out = w.Output()
    controls = (stages_w, cluster_w, acc_w, sched_w, work_w, draw_w, ep_w, hs_w)

    def current(scheduler: str | None = None) -> schedule_sim.ScheduleSim:
        return schedule_sim.simulate(
            **config(
                stages_w.value,
                cluster_w.value,
                acc_w.value,
                scheduler or sched_w.value,
                work_w.value,
                ep_w.value,
                hs_w.value,
                draw=draw_w.value,
            )
        )

    def redraw(*_):
        sim = current()
        text.value = report(sim, sim if sched_w.value == "static" else current("static"))
        out.clear_output(wait=True)
        with out:
            import matplotlib.pyplot as plt

            fig = schedule_pictures.timeline(sim)
            plt.show()
            plt.close(fig)

    for c in controls:
        c.observe(redraw, "value")
    redraw()
    view = w.VBox(
        [
            w.HBox([stages_w, ep_w, hs_w]),
            w.HBox([cluster_w, acc_w]),
            w.HBox([sched_w, work_w, draw_w]),
            text,
            out,
        ]
    )
    return StaticWidget(view, lambda: schedule_pictures.timeline(current()))
