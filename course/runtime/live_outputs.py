"""What a live cell printed on a GPU, kept so a reader without one can see it.

`python -m course run --record` runs the notebooks with COURSE_RECORD_LIVE=1: every
labelled `live_or` that runs live copies what it prints into results/live_outputs.json
(one record per label and run, with the usual provenance). On a machine that takes the
fallback, `live_or` shows the newest recorded text for its label after the fallback's own
output. Text only: figures are not kept.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Iterator

from course.runtime import results

FAMILY = "live_outputs"
RECORD_ENV = "COURSE_RECORD_LIVE"  # "1": record what labelled live cells print
COMMAND_ENV = "COURSE_RECORD_COMMAND"  # the `course run` command line (a kernel's argv is not)
# the notebook file a kernel runs, set by the runner that started it: only it knows the file
NOTEBOOK_ENV = "COURSE_RECORD_NOTEBOOK"
MAX_CHARS = 8000
_TAIL_CHARS = 2000  # a sweep's verdict ("N/N passed") comes last: keep the end too


def recording() -> bool:
    return os.environ.get(RECORD_ENV) == "1"


class _Tee:
    """A stdout that still prints and keeps a copy of what went through it."""

    def __init__(self, stream):
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):  # encoding, isatty, fileno, ...: the real stream's
        return getattr(self.stream, name)


@contextlib.contextmanager
def teed_stdout() -> Iterator[io.StringIO]:
    """Print as usual; the yielded buffer holds a copy of what was printed (Python's
    sys.stdout only: a GPU's printf writes to the process's file descriptor directly)."""
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield tee.copy


def capped(text: str) -> str:
    """`text`, or its start and end with a note saying how much was cut between them."""
    if len(text) <= MAX_CHARS:
        return text
    head = MAX_CHARS - _TAIL_CHARS
    return (
        text[:head] + f"\n[... {len(text) - MAX_CHARS:,} characters cut here: the live "
        f"output was {len(text):,} characters long ...]\n" + text[-_TAIL_CHARS:]
    )


def record(label: str, text: str) -> results.Record:
    """Append what the cell `label` printed live to results/live_outputs.json, with the
    notebook it ran in where the runner named it."""
    data = {"label": label, "text": capped(text)}
    notebook = os.environ.get(NOTEBOOK_ENV)
    if notebook:
        data["notebook"] = notebook
    return results.record(FAMILY, data, command=os.environ.get(COMMAND_ENV) or None)


def latest(label: str) -> results.Record | None:
    """The newest recorded live output of the cell `label`, if any."""
    return results.latest(FAMILY, match=lambda rec: rec.data.get("label") == label)
