"""python -m course progress PATH [PATH ...] [--out DIR]: the class's progress.

Gathers the learners' progress files (each PATH a progress.jsonl, or a folder searched for
them: on a hub, /home) into the class table, the most common wrong answers per exercise and
a picture (stacked bars per exercise): printed, and written to DIR/progress.md and
DIR/progress.png.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure  # no pyplot: works in any backend, and headless
from matplotlib.ticker import MaxNLocator

from course import ROOT
from course.tools.class_progress import class_rows, exercise_counts, gather, markdown_report

SOLVED_COLOUR, TRIED_COLOUR = "#2e7d32", "#e65100"
DEFAULT_OUT = ROOT / "build" / "classroom"


def progress(paths: list[str], out: Path) -> int:
    """Print and write the class's progress; 1 when there is nothing to show."""
    found = gather(paths)
    if not found.attempts:
        print(f"no verdicts found in {', '.join(paths)}"
              + "".join(f"\ncould not read {what}" for what in found.unreadable)
              + (f"\nskipped {found.skipped_lines} malformed line(s)" if found.skipped_lines
                 else ""))
        return 1
    report = markdown_report(found)
    print(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / "progress.md").write_text(report)
    rows = class_rows(found)
    save_progress_figure(exercise_counts(rows, found.exercises), len(rows), out / "progress.png")
    print(f"wrote {out / 'progress.md'} and {out / 'progress.png'}")
    return 0


def progress_figure(counts: dict[str, dict[str, int]], learners: int) -> Figure:
    """Stacked bars per exercise: solved, then tried and not solved."""
    exercises = list(counts)
    solved = [counts[ex]["solved"] for ex in exercises]
    tried = [counts[ex]["tried"] for ex in exercises]
    fig = Figure(figsize=(max(6.0, 0.22 * len(exercises) + 3), 5), dpi=100)
    ax = fig.add_subplot()
    ax.bar(exercises, solved, color=SOLVED_COLOUR, label="solved")
    ax.bar(exercises, tried, bottom=solved, color=TRIED_COLOUR, label="tried, not solved yet")
    ax.set_xlabel("exercise")
    ax.set_ylabel("learners")
    ax.set_ylim(0, max(learners, 1))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"Class progress: {learners} learner{'s' * (learners != 1)}")
    ax.tick_params(axis="x", labelrotation=60)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # clear of a full bar
    fig.tight_layout()
    return fig


def save_progress_figure(counts: dict[str, dict[str, int]], learners: int, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    progress_figure(counts, learners).savefig(path)
    return path
