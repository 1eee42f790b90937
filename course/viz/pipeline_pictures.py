"""Pictures of notebook 09's pipeline simulations (course.sim.pipeline_sim).

    from course.sim import pipeline_sim
    from course.viz import pipeline_pictures
    pipeline_pictures.timeline(pipeline_sim.simulate(stages=4))       who waits on what, when
    pipeline_pictures.sweep(pipeline_sim.sweep(range(1, 9)))          speed-up against stages

The simulator returns data only; everything drawn from it is drawn here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from course.sim.event_engine import fmt_cycles
from course.sim.pipeline_sim import PipelineSim, predicted_cycles, stages_to_hide_latency
from course.viz.timeline import Bar, Marker, Row, gantt


def rows(sim: PipelineSim, stages: bool = True) -> tuple[list[Row], list[Marker]]:
    """The timeline's rows (the producer, each smem stage, the MMA roles, the tensor core,
    the epilogue) and a marker for each race, on the stage where it happened; without
    `stages`, no stage rows, and no markers of what happened on a stage."""
    e, p = sim.engine, sim.parts
    roles = {r.name: r for r in e.roles}

    def role_row(name, busy_kind="busy"):
        r = roles[name]
        bars = []
        for i in r.intervals:
            kind = i.kind if i.kind != "busy" else busy_kind
            text = (
                i.label.replace("wait ", "").replace("blocked ", "")
                if i.kind != "busy"
                else (f"t{i.tag}" if sim.config.tiles > 1 else "")
            )
            bars.append(Bar(i.start, i.end, kind, text))
        return Row(r.label, bars)

    out = [role_row("producer")]
    buf_rows = {}
    for b in p["ab"].buffers if stages else ():
        bars = []
        for i in b.intervals:
            bars.append(Bar(i.start, i.end, i.kind, str(i.tag) if i.tag is not None else ""))
        buf_rows[b.name] = len(out)
        out.append(Row(b.name.replace("ab ", "smem "), bars))
    for r in e.roles:
        if r.name.startswith("mma"):
            out.append(role_row(r.name))
    out.append(
        Row("tensor core", [Bar(i.start, i.end, "mma", str(i.tag)) for i in p["tc"].intervals])
    )
    out.append(role_row("epilogue", busy_kind="epilogue"))
    on_a_stage = {b.name for b in p["ab"].buffers}
    markers = [
        Marker(h.time, buf_rows.get(h.where, 0))
        for h in sim.hazards
        if stages or h.where not in on_a_stage
    ]
    return out, markers


def _title(sim: PipelineSim) -> str:
    c = sim.config
    title = (
        f"{c.stages}-stage TMA->MMA pipeline, {c.k_tiles} k-tiles, load "
        f"{fmt_cycles(c.load_latency)} / MMA {fmt_cycles(c.mma_latency)} cycles"
    )
    if sim.deadlock is not None:
        title += f"\n{sim.deadlock.summary}"
    elif sim.fault is not None:
        title += f"\nstopped: {sim.fault.kind}"
    else:
        title += f"\n{fmt_cycles(sim.total_cycles)} cycles, tensor core busy {sim.utilisation:.0%}"
        if sim.engine.hazard_count:
            title += f", {sim.engine.hazard_count} race(s)"
    if c.bug:
        title += f"  [injected bug: {c.bug}]"
    return title


def timeline(sim: PipelineSim, ax=None, title: str | None = None):
    """The timeline of one simulation: each warp role, each smem stage, the tensor core;
    a deadlock or a fault is marked where the run stopped."""
    out, markers = rows(sim)
    vlines = []
    if sim.deadlock is not None:
        vlines.append((sim.deadlock.time, "deadlock: nothing can move"))
    elif sim.fault is not None:
        vlines.append((sim.fault.time, f"stopped: {sim.fault.kind}"))
    end = sim.engine.now if sim.deadlock is not None or sim.fault else None
    return gantt(
        out,
        title if title is not None else _title(sim),
        markers=markers,
        vlines=vlines,
        ax=ax,
        end=(end * 1.15 + 1) if end is not None else None,
        source="course.sim.pipeline_sim (simulated; illustrative cycle counts)",
    )


def sweep(
    sims: list[PipelineSim],
    measured: dict | None = None,
    measured_label: str = "measured",
    ax=None,
    title: str | None = None,
):
    """Speed-up over 1 stage against the stage count: simulated, the formula, and (if
    given) measured times {stages: time}. Normalising to each series' own 1-stage (or
    first) point compares shapes, whatever the units."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6.5, 4))
    xs = [s.config.stages for s in sims]
    base = sims[0].total_cycles
    ax.plot(xs, [base / s.total_cycles for s in sims], "o-", label="simulated")
    pred = [s.predicted_cycles for s in sims]
    ax.plot(xs, [pred[0] / p for p in pred], "--", color="grey", label="formula")
    if measured:
        ms = sorted(measured)
        ax.plot(
            ms,
            [measured[ms[0]] / measured[m] for m in ms],
            "s-",
            color="#cf222e",
            label=measured_label,
        )
    c = sims[0].config
    ideal = predicted_cycles(
        xs[0], c.k_tiles, c.load_latency, c.mma_latency, c.load_interval
    ) / predicted_cycles(c.k_tiles, c.k_tiles, c.load_latency, c.mma_latency, c.load_interval)
    ax.axhline(ideal, color="#2da44e", lw=1, ls=":", label="tensor core never waits")
    ax.axvline(
        stages_to_hide_latency(c.load_latency, c.mma_latency),
        color="#8250df",
        lw=1,
        ls=":",
        label="load/mma + 1 stages",
    )
    ax.set_xlabel("pipeline stages")
    ax.set_ylabel(f"speed-up over {xs[0]} stage(s)")
    ax.set_title(
        title
        or f"Stage-count sweep: load {fmt_cycles(c.load_latency)}, MMA "
        f"{fmt_cycles(c.mma_latency)} cycles, {c.k_tiles} k-tiles"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
