"""Pictures of notebook 15's schedule simulations (course.sim.schedule_sim).

    from course.sim import schedule_sim
    from course.viz import schedule_pictures
    schedule_pictures.timeline(schedule_sim.simulate())        per SM, coloured by tile
    schedule_pictures.lesson(schedule_sim.pingpong_lesson())   a lesson's numbers, drawn

The simulator returns data only; everything drawn from it is drawn here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from course.sim.event_engine import fmt_cycles
from course.sim.schedule_sim import SCHEDULERS, Lesson, ScheduleSim
from course.viz.timeline import Bar, Row, gantt, tile_colour

SOURCE = "course.sim.schedule_sim (simulated)"


def rows(sim: ScheduleSim, sms: int | None = None, warps: bool = False) -> list[Row]:
    """Rows per SM (the first `sms`): [TMA warp,] tensor core, epilogue -- coloured by tile."""
    cfg, k = sim.config, sim.kernel
    out = []
    for sm in range(min(sms or cfg.sms, cfg.sms)):
        other = [Bar(0, k.sm_busy[sm], "other", "other work")] if k.sm_busy[sm] > 0 else []
        if warps:
            bars = list(other)
            for r in sim.engine.roles:
                if r.group == f"SM {sm}" and r.name.endswith(".tma"):
                    bars += [
                        Bar(
                            i.start,
                            i.end,
                            i.kind,
                            i.label.split(".")[-1] if i.kind != "busy" else "",
                        )
                        for i in r.intervals
                    ]
            bars += [
                Bar(o.issued, o.end, "clc", "")
                for o in sim.engine.ops
                if o.unit is k.clc and o.issuer.group == f"SM {sm}"
            ]
            out.append(Row(f"SM {sm} TMA warp", bars))
        unit = k.tensor[sm // cfg.cluster]
        out.append(
            Row(
                f"SM {sm} tensor core",
                other
                + [
                    Bar(s, e, "mma", f"T{tag}", tile_colour(tag))
                    for s, e, tag in _merge(unit.intervals)
                ],
            )
        )
        ep = list(other)
        for r in sim.engine.roles:
            if r.group == f"SM {sm}" and r.name.endswith(".epilogue"):
                ep += [
                    Bar(
                        i.start,
                        i.end,
                        "epilogue" if i.kind == "busy" else i.kind,
                        f"T{i.tag}" if i.kind == "busy" else "",
                        tile_colour(i.tag) if i.kind == "busy" else None,
                    )
                    for i in r.intervals
                    if i.kind in ("busy", "blocked")
                ]
        out.append(Row(f"SM {sm} epilogue", ep))
    return out


def _merge(intervals):
    """Back-to-back intervals of the same tile as one bar (start, end, tile)."""
    out = []
    for i in sorted(intervals, key=lambda i: i.start):
        if out and out[-1][2] == i.tag and i.start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], i.end)
        else:
            out.append([i.start, i.end, i.tag])
    return [tuple(x) for x in out]


def timeline(
    sim: ScheduleSim, sms: int | None = None, warps: bool = False, ax=None, title: str | None = None
):
    """The per-SM timeline (the first `sms` SMs; `warps` adds the TMA warp's waits)."""
    c = sim.config
    if title is None:
        title = (
            f"{c.scheduler} scheduling, {c.sms} SMs as "
            f"{'CTA pairs' if c.cluster == 2 else 'single CTAs'}, {c.stages} stages, "
            f"{c.acc_slots} TMEM slot(s)\n"
        )
        title += (
            f"{fmt_cycles(sim.total_cycles)} cycles, tensor cores busy {sim.utilisation:.0%}"
            if sim.ok
            else sim.summary()
        )
    vlines = [(sim.deadlock.time, "deadlock")] if sim.deadlock else []
    return gantt(
        rows(sim, sms, warps),
        title,
        vlines=vlines,
        ax=ax,
        source="course.sim.schedule_sim (simulated; illustrative cycle counts); "
        "colour = output tile",
    )


# ---------------------------------------------------------------- the lessons' charts


def _chart(title: str, width: float = 6.8):
    fig, ax = plt.subplots(figsize=(width, 4))
    ax.set_title(title)
    return fig, ax


def _finish(fig, ax, grid_axis: str = "both"):
    ax.grid(True, axis=grid_axis, alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.005, SOURCE, fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def handshake(lesson: Lesson):
    """Total cycles against pipeline depth: single CTAs, CTA pairs, pairs with a free
    handshake (schedule_sim.handshake_lesson)."""
    fig, ax = _chart("A deep pipeline hides the CTA pair's handshake")
    xs = lesson.column("stages")
    ax.plot(
        xs, lesson.column("single CTAs"), "s-", label="single CTAs (no handshake, no multicast)"
    )
    ax.plot(xs, lesson.column("CTA pairs"), "o-", label="CTA pairs")
    ax.plot(
        xs,
        lesson.column("pairs, free handshake"),
        ":",
        color="grey",
        label="CTA pairs if the handshake were free",
    )
    ax.set_xlabel("pipeline stages")
    ax.set_ylabel("total cycles (lower is better)")
    return _finish(fig, ax)


def pingpong(lesson: Lesson):
    """Tensor-core utilisation against epilogue length, one TMEM slot vs two
    (schedule_sim.pingpong_lesson)."""
    fig, ax = _chart("TMEM ping-pong hides the epilogue")
    xs = lesson.column("epilogue")
    ax.plot(xs, lesson.column("util 1 slot"), "s-", label="1 TMEM accumulator")
    ax.plot(xs, lesson.column("util 2 slots"), "o-", label="2 TMEM accumulators (ping-pong)")
    ax.set_xlabel("epilogue cycles per tile")
    ax.set_ylabel("tensor core utilisation")
    ax.set_ylim(0, 1.05)
    return _finish(fig, ax)


def scheduler(lesson: Lesson):
    """Total cycles per workload under each scheduler (schedule_sim.scheduler_lesson)."""
    fig, ax = _chart("Static persistent vs Cluster Launch Control vs a launch per tile", width=7.2)
    x = np.arange(len(lesson.rows))
    for i, (s, col) in enumerate(zip(SCHEDULERS, ("#8c959f", "#2da44e", "#0969da"))):
        ax.bar(x + (i - 1) * 0.27, lesson.column(s), 0.27, label=s, color=col)
    ax.set_xticks(x, [w.replace(" (", "\n(") for w in lesson.column("workload")], fontsize=8)
    ax.set_ylabel("total cycles (lower is better)")
    return _finish(fig, ax, grid_axis="y")


CHARTS = {"handshake": handshake, "pingpong": pingpong, "scheduler": scheduler}


def lesson(result: Lesson):
    """The chart of one of schedule_sim's lessons (picked by its `kind`)."""
    return CHARTS[result.kind](result)
