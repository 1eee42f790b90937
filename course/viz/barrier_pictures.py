"""Pictures of the mbarrier: its three counters step by step (notebook 08), and the phases
of a ring's full and empty barriers on a simulated timeline (notebook 14).

Both are drawn from the course's one model of the barrier (course.models.mbarrier) and the
pipeline simulator built on it (course.sim.pipeline_sim); nothing here computes barrier
behaviour of its own.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from course.models.mbarrier import MBarrier

# The TMA load of notebook 08: one arrival expected, one box of 64 x 64 bf16 = 8192 bytes,
# landing in two parts. (who, what, operation on the model)
TMA_LOAD_STEPS = (
    ("one thread", "mbarrier.init(bar, 1)", None),
    ("one lane of warp 0", "arrive.expect_tx(bar, 8192)", lambda b: b.arrive(tx=8192)),
    ("TMA unit", "4096 bytes land\n(complete_tx)", lambda b: b.complete_tx(4096)),
    ("TMA unit", "the last 4096 bytes\nland (complete_tx)", lambda b: b.complete_tx(4096)),
)


def mbarrier_states(steps=TMA_LOAD_STEPS, count: int = 1):
    """The barrier after each step: its phase (and parity), the arrivals still pending,
    the transaction bytes still expected, and what `try_wait.parity(0)` answers. The
    states are the model's (course.models.mbarrier.MBarrier), run through `steps`."""
    bar = MBarrier(count, "bar")
    states = []
    for who, what, op in steps:
        if op is not None:
            op(bar)
        states.append((who, what, bar.phase, bar.pending, max(bar.tx, 0), bar.try_wait(0)))
    fig, ax = plt.subplots(figsize=(11, 3.6))
    width, gap = 2.2, 0.75
    for i, (who, what, phase, pending, tx, passed) in enumerate(states):
        x = i * (width + gap)
        done = i > 0 and phase != states[i - 1][2]
        ax.add_patch(
            FancyBboxPatch(
                (x, 0),
                width,
                2.0,
                boxstyle="round,pad=0.05",
                fc="#dafbe1" if done else "#f6f8fa",
                ec="#1a7f37" if done else "#57606a",
                lw=1.5,
            )
        )
        lines = [
            f"phase {phase} (parity {phase & 1})",
            f"arrivals pending: {pending} of {count}",
            f"tx bytes pending: {tx:,}",
        ]
        for j, text in enumerate(lines):
            ax.text(
                x + width / 2,
                1.62 - 0.42 * j,
                text,
                ha="center",
                va="center",
                fontsize=8.5,
                weight="bold" if j == 0 else "normal",
            )
        ax.text(
            x + width / 2,
            0.28,
            f"try_wait.parity(0): {passed}",
            ha="center",
            va="center",
            fontsize=8,
            color="#1a7f37" if passed else "#cf222e",
        )
        ax.text(x + width / 2, 2.55, f"{who}:\n{what}", ha="center", va="center", fontsize=8)
        if i:
            ax.add_patch(
                FancyArrowPatch(
                    (x - gap + 0.05, 1.0),
                    (x - 0.05, 1.0),
                    arrowstyle="->",
                    mutation_scale=12,
                    color="#57606a",
                )
            )
        if done:
            ax.text(
                x + width / 2,
                -0.35,
                "both counts reached 0: phase 0 completed,\n"
                "the parity flipped, the counts reloaded",
                ha="center",
                va="top",
                fontsize=7.5,
                color="#1a7f37",
            )
    ax.set_xlim(-0.2, len(states) * (width + gap) - gap + 0.2)
    ax.set_ylim(-1.0, 3.05)
    ax.axis("off")
    ax.set_title(
        "An mbarrier during one TMA load: a phase completes when its arrivals AND its "
        "transaction bytes are all in",
        fontsize=10,
    )
    fig.text(
        0.01,
        0.01,
        "source: course.models.mbarrier (the course's model of PTX's "
        "mbarrier), run through these steps",
        fontsize=7,
        color="grey",
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def barrier_timeline(sim, title: str | None = None):
    """A pipeline simulation (course.sim.pipeline_sim) with one row per mbarrier under its
    roles: each barrier's phases as alternating bars (a bar ends where its phase completed),
    so a full barrier completes when a stage's bytes land, an empty barrier when the MMA's
    commit fires, the accumulator's when the last MMA of the tile is done or the epilogue
    has drained it."""
    from course.viz.pipeline_pictures import rows as sim_rows
    from course.viz.timeline import Bar, Row, gantt

    roles, markers = sim_rows(sim, stages=False)  # the stages' contents: the barriers' story
    log = sim.engine.log
    end = sim.total_cycles * 1.04  # room for the phase that began as the run ended
    colours = ("#9ec5f0", "#f6c48f")  # parity 0, parity 1
    barrier_rows = []
    for pipe in (sim.parts["ab"], sim.parts["acc"]):
        for kind in ("full", "empty"):
            for bar in getattr(pipe, kind):
                starts = [0.0] + log[id(bar)].completions
                bars = [
                    Bar(a, b, "phase", f"ph {n}", color=colours[n % 2])
                    for n, (a, b) in enumerate(zip(starts, starts[1:] + [end]))
                ]
                barrier_rows.append(Row(bar.name, bars))
    c = sim.config
    return gantt(
        roles + barrier_rows,
        title
        or (
            f"{c.stages}-stage ring, {c.k_tiles} k-tiles: who waits, and each barrier's phases "
            "(a bar ends where its phase completed)"
        ),
        markers=markers,
        source="source: course.sim.pipeline_sim (simulated; illustrative cycle counts)",
        legend_extra=[
            (colours[0], "barrier in a phase of parity 0"),
            (colours[1], "barrier in a phase of parity 1"),
        ],
    )


__all__ = ["mbarrier_states", "barrier_timeline", "TMA_LOAD_STEPS"]
