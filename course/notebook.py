"""Small helpers notebooks call to introduce themselves and the course map.

Every notebook opens with `course.notebook.header(N)`: what it teaches, what it
assumes, and -- from the hardware check, so it is true on the reader's machine --
what its live cells will do here.
"""

from __future__ import annotations

import os

from course.catalogue import LESSONS, course_map
from course.runtime.hardware import machine, tiers_for
from course.runtime.live import Mode, show

_MEANING = {
    Mode.LIVE.value: "run live on this machine",
    Mode.EXECUTED.value: "run the kernel's own code on the course's CPU executor at a small size "
    "(values and hazards; no speed)",
    Mode.COMPILE_ONLY.value: "compile for the target GPU and show the PTX/SASS (nothing launched)",
    Mode.SIMULATED.value: "run the course's CPU simulator/emulator instead",
    Mode.RECORDED.value: "show results recorded on a named GPU (GPU, date and command are cited)",
}


class Markdown:
    """Markdown that also prints as plain text outside a notebook."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def header(number: int, assumes: str = "") -> Markdown:
    """The opening box of notebook `number`."""
    lesson = LESSONS[number]
    m = machine()
    here = lesson.here(m)
    text = (
        f"**Notebook {number:02d} -- {lesson.title}.** Teaches: {lesson.idea}.  \n"
        + (f"Assumes: {assumes}.  \n" if assumes else "")
        + f"Live cells need **{lesson.needs}** (tier {tiers_for(lesson.needs)}). "
        f"This machine: {m.describe()}.  \n"
        f"Here its live cells will **{'; '.join(_MEANING.get(h, h) for h in here.split(' + '))}**."
    )
    share = os.environ.get("COURSE_GPU_SHARE")  # set by a class's hub (course.tools.gpu_share)
    if share:
        text += (
            f"  \nYour GPU in this class: {share}. Timings move while others run on "
            "the same GPU: compare ratios measured in one run, not numbers across runs."
        )
    return Markdown(text)


def rows_table(rows: list[dict], key: str | None = None) -> Markdown:
    """A list of dicts (one per row, same keys) as a Markdown table; `key` first."""
    columns = list(rows[0]) if rows else []
    if key in columns:
        columns.remove(key)
        columns.insert(0, key)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return Markdown("\n".join(lines))


def course_map_table() -> Markdown:
    """The ladder as a Markdown table with what each notebook does on this machine."""
    rows = course_map()
    lines = ["| # | notebook | idea | live on | here |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['#']} | {r['notebook']} | {r['idea']} | {r['live on']} | {r['here']} |" for r in rows
    ]
    return Markdown("\n".join(lines))


__all__ = ["header", "course_map_table", "rows_table", "show", "Markdown"]
