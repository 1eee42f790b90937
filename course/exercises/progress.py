"""Record every check() verdict as one JSON line in the learner's own space.

The teacher later gathers these files (`python -m course progress`, course.tools.class_progress).
Recording must never get in a learner's way: any failure (a read-only home, a full disk) is
swallowed, and a line is one append, so two notebooks checking at once cannot interleave
inside a line.

    COURSE_PROGRESS_FILE=path   where the lines go (default ~/.course/progress.jsonl)
    COURSE_PROGRESS=off         record nothing
"""

from __future__ import annotations

import functools
import getpass
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from course import ROOT
from course.exercises.verdicts import MACHINE_FAULT, WRONG, Verdict
from course.runtime.results import checkout_version

FILE_NAME = "progress.jsonl"
DEFAULT_FILE = Path("~") / ".course" / FILE_NAME
HINT_CHARS = 200  # enough to tell mistakes apart, short enough to group them


def record(verdict: Verdict) -> None:
    """Append `verdict` to this learner's progress file; never raises."""
    try:
        path = progress_file()
        if path is not None:
            append_line(path, json.dumps(progress_entry(verdict), ensure_ascii=False))
    except Exception:  # a learner's check() must work even where nothing can be written
        pass


def progress_file() -> Path | None:
    """Where this learner's verdicts go, or None when recording is switched off."""
    if os.environ.get("COURSE_PROGRESS", "").strip().lower() in ("off", "0", "no", "false"):
        return None
    return Path(os.environ.get("COURSE_PROGRESS_FILE") or DEFAULT_FILE).expanduser()


def progress_entry(verdict: Verdict) -> dict:
    """The fields a teacher's table needs from one verdict."""
    entry = {
        "learner": learner(),
        "exercise": verdict.id,
        "verdict": verdict.status,
        "hint": mistake_key(verdict),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    version = course_version()
    if version:
        entry["course"] = version
    return entry


def mistake_key(verdict: Verdict) -> str:
    """For a wrong answer, the hint that names the mistake, so equal mistakes group together:
    a kernel verdict's `hint:` line (its first line says what was observed, which differs
    from run to run), else the message's first line. For a machine fault, what the machine
    lacked (the message's first line), so the teacher sees which machines need mending."""
    if verdict.status not in (WRONG, MACHINE_FAULT):
        return ""
    lines = [line.strip() for line in verdict.message.strip().splitlines()]
    hint = next((line[len("hint: ") :] for line in lines if line.startswith("hint: ")), None)
    return (hint if hint is not None else lines[0] if lines else "")[:HINT_CHARS]


def learner() -> str:
    """The hub's user name where there is one, else the account's."""
    try:
        return os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
    except Exception:  # no user name at all (some containers)
        return "unknown"


@functools.cache
def course_version() -> str:
    """`git describe` of the course checkout, asked once per session; '' without git."""
    return checkout_version(ROOT)


def append_line(path: Path, line: str) -> None:
    """One write with O_APPEND: lines from concurrent notebooks never interleave."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # the learner (and root)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
