"""python -m course progress PATH [PATH ...] [--out DIR]: the class's progress.

Gathers the learners' progress files (each PATH a progress.jsonl, or a folder searched for
them: on a hub, /home) into the class table, the most common wrong answers per exercise and
a picture (stacked bars per exercise, one colour per verdict): printed, and written to
DIR/progress.md and DIR/progress.png, readable by the teacher's account only (the folder
mode 700, the files 600: the checkout around build/ is open to every learner). What the
learners wrote is read within caps and escaped everywhere it is shown (class_progress): in
the picture too, whose labels are drawn as plain text, never as mathtext.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from matplotlib.figure import Figure  # no pyplot: works in any backend, and headless
from matplotlib.ticker import MaxNLocator

from course import ROOT
from course.exercises.verdicts import MACHINE_FAULT, RIGHT, UNANSWERED, UNPROVEN, WRONG
from course.tools.class_progress import (
    LABELS,
    VERDICTS,
    by_folder,
    class_rows,
    escape,
    exercise_counts,
    footer,
    gather,
    markdown_report,
    plain,
)

COLOURS = {
    RIGHT: "#2e7d32",
    UNPROVEN: "#1565c0",
    WRONG: "#e65100",
    MACHINE_FAULT: "#6a1b9a",
    UNANSWERED: "#9e9e9e",
}
OTHER_COLOUR = "#6d4c41"  # a verdict added to the course before it has a colour here
DEFAULT_OUT = ROOT / "build" / "classroom"


def private_folder(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    return out


def write_private(path: Path, data: bytes) -> None:
    """`data` into `path`, readable by this account only (an older, open copy included)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


def progress(paths: list[str], out: Path, learner_from: str = "owner") -> int:
    """Print and write the class's progress; 1 when there is nothing to show. Each file is
    its owner's (`learner_from="owner"`) or, with "folder", the learner's whose folder under
    the PATH it sits in (a hub whose servers all run as one account)."""
    found = gather(paths) if learner_from == "owner" else gather(paths, by_folder(*paths))
    if not found.attempts:
        print("\n".join([f"no verdicts found in {', '.join(map(escape, paths))}", *footer(found)]))
        return 1
    report = markdown_report(found)
    print(report)
    private_folder(out)
    write_private(out / "progress.md", report.encode())
    rows = class_rows(found)
    save_progress_figure(exercise_counts(rows, found.exercises), len(rows), out / "progress.png")
    print(f"wrote {out / 'progress.md'} and {out / 'progress.png'} (readable by you only)")
    return 0


def progress_figure(counts: dict[str, dict[str, int]], learners: int) -> Figure:
    """Stacked bars per exercise: how many learners' best verdict is each verdict."""
    exercises = list(counts)
    fig = Figure(figsize=(max(6.0, 0.22 * len(exercises) + 3), 5), dpi=100)
    ax = fig.add_subplot()
    where = range(len(exercises))
    bottom = [0] * len(exercises)
    for verdict in VERDICTS:
        heights = [counts[ex][verdict] for ex in exercises]
        colour = COLOURS.get(verdict, OTHER_COLOUR)
        ax.bar(where, heights, bottom=bottom, color=colour, label=plain(LABELS[verdict]))
        bottom = [b + h for b, h in zip(bottom, heights)]
    # drawn as they are: a `$` in a label would otherwise start mathtext
    ax.set_xticks(where, [plain(ex) for ex in exercises], parse_math=False)
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
    private_folder(path.parent)
    buffer = io.BytesIO()
    progress_figure(counts, learners).savefig(buffer, format="png")
    write_private(path, buffer.getvalue())
    return path
