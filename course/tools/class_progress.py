"""Gather the learners' progress files into the teacher's view of a class.

    rows, wrong_answers = table(["/home"])   # in a teacher's notebook

`rows` has one dict per learner: {"learner": name, exercise id: ✅ solved, ❌ tried and not
solved yet, "" not tried}. `wrong_answers` maps each exercise to its wrong answers grouped by
hint, most common first. A damaged line (a file cut short, an edit by hand) is skipped and
counted, never fatal: one learner's file must not hide the class.
"""
from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from course.exercises.progress import FILE_NAME, VERDICT_WORDS

SOLVED, TRIED = "✅", "❌"
MOST_COMMON = 5  # wrong answers per exercise in the printed report
# folders that never hold a progress file: skipped when searching a whole /home
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "site-packages", "__pycache__",
             ".cache", ".ipynb_checkpoints"}


@dataclass(frozen=True)
class Attempt:
    learner: str
    exercise: str
    verdict: str  # "right", "wrong" or "not answered"
    hint: str = ""


@dataclass(frozen=True)
class WrongAnswer:
    hint: str
    times: int
    learners: int  # how many different learners gave it


@dataclass
class ClassProgress:
    files: list[Path] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    skipped_lines: int = 0  # malformed lines, left out
    unreadable: list[str] = field(default_factory=list)  # paths that could not be read

    @property
    def learners(self) -> list[str]:
        return sorted({a.learner for a in self.attempts})

    @property
    def exercises(self) -> list[str]:
        """The exercises anyone has checked, in the order the course teaches them."""
        return exercise_order({a.exercise for a in self.attempts})


def table(paths: Iterable[str | Path]) -> tuple[list[dict], dict[str, list[WrongAnswer]]]:
    """The class table and the common wrong answers of the progress files under `paths`."""
    progress = gather(paths)
    return class_rows(progress), wrong_answers(progress)


def gather(paths: Iterable[str | Path]) -> ClassProgress:
    """Read every progress file named by, or found under, `paths`."""
    progress = ClassProgress()
    for path in paths:
        path = Path(path)
        if not path.exists():
            progress.unreadable.append(f"{path} (no such file or folder)")
            continue
        for file in progress_files(path):
            if file not in progress.files:
                read_progress_file(file, progress)
    return progress


def progress_files(path: Path) -> list[Path]:
    """`path` itself if a file, else every progress file below it (unreadable folders and
    folders that never hold one are passed over)."""
    if path.is_file():
        return [path.resolve()]
    found = []
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIP_DIRS)
        if FILE_NAME in files:
            found.append((Path(folder) / FILE_NAME).resolve())
    return found


def read_progress_file(file: Path, progress: ClassProgress) -> None:
    """Add `file`'s attempts to `progress`, counting the lines that are not one."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        progress.unreadable.append(f"{file} ({exc.strerror or exc})")
        return
    progress.files.append(file)
    for line in text.splitlines():
        if line.strip():
            attempt = parse_line(line)
            if attempt is None:
                progress.skipped_lines += 1
            else:
                progress.attempts.append(attempt)


def parse_line(line: str) -> Attempt | None:
    """The attempt one progress line records, or None if the line is not one."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    learner, exercise, verdict = (entry.get(k) for k in ("learner", "exercise", "verdict"))
    hint = entry.get("hint") or ""
    if not (isinstance(learner, str) and learner and isinstance(exercise, str) and exercise
            and verdict in VERDICT_WORDS and isinstance(hint, str)):
        return None
    return Attempt(learner, exercise, verdict, hint)


def course_exercise_ids() -> list[str]:
    """Every exercise of the course, in the order learners meet them: by notebook, then as
    that notebook's module lists them."""
    import course.exercises as package
    from course.exercises.check import REGISTRY

    for module in pkgutil.iter_modules(package.__path__):
        if re.fullmatch(r"nb\d\d", module.name):
            try:
                importlib.import_module(f"course.exercises.{module.name}")
            except Exception:  # exercises that cannot load here are ordered by name
                pass
    return sorted(REGISTRY, key=lambda id: id.split(".")[0])  # stable: keeps each module's order


def exercise_order(ids: set[str]) -> list[str]:
    """`ids` in the course's order; ids the course no longer has go last, by name."""
    known = [id for id in course_exercise_ids() if id in ids]
    return known + sorted(ids - set(known))


def class_rows(progress: ClassProgress) -> list[dict]:
    """One row per learner: ✅ if any answer was right, ❌ if all were wrong, else blank."""
    verdicts = defaultdict(set)
    for a in progress.attempts:
        verdicts[a.learner, a.exercise].add(a.verdict)
    exercises = progress.exercises
    return [{"learner": learner, **{ex: cell(verdicts[learner, ex]) for ex in exercises}}
            for learner in progress.learners]


def cell(verdicts: set[str]) -> str:
    if "right" in verdicts:
        return SOLVED
    return TRIED if "wrong" in verdicts else ""


def exercise_counts(rows: list[dict], exercises: list[str]) -> dict[str, dict[str, int]]:
    """Per exercise, how many learners solved it and how many tried without solving it."""
    return {ex: {"solved": sum(r[ex] == SOLVED for r in rows),
                 "tried": sum(r[ex] == TRIED for r in rows)} for ex in exercises}


def wrong_answers(progress: ClassProgress) -> dict[str, list[WrongAnswer]]:
    """Each exercise's wrong answers grouped by hint, most common first."""
    times, who = Counter(), defaultdict(set)
    for a in progress.attempts:
        if a.verdict == "wrong":
            times[a.exercise, a.hint] += 1
            who[a.exercise, a.hint].add(a.learner)
    grouped = {}
    for ex in progress.exercises:
        answers = [WrongAnswer(hint, n, len(who[ex, hint]))
                   for (e, hint), n in times.items() if e == ex]
        if answers:
            grouped[ex] = sorted(answers, key=lambda w: (-w.times, -w.learners, w.hint))
    return grouped


def markdown_report(progress: ClassProgress) -> str:
    """The class table with per-exercise counts, then the common wrong answers."""
    rows, exercises = class_rows(progress), progress.exercises
    counts = exercise_counts(rows, exercises)
    lines = [f"# Class progress: {len(rows)} learners, {len(exercises)} exercises checked",
             "", f"{SOLVED} solved, {TRIED} tried and not solved yet, blank: not tried.", "",
             "| learner | " + " | ".join(exercises) + " |",
             "|---" * (len(exercises) + 1) + "|"]
    lines += [f"| {escape(r['learner'])} | " + " | ".join(r[ex] for ex in exercises) + " |"
              for r in rows]
    for what in ("solved", "tried"):
        label = "**solved**" if what == "solved" else "**tried, not solved**"
        lines.append(f"| {label} | " + " | ".join(str(counts[ex][what]) for ex in exercises)
                     + " |")
    lines += ["", "## Most common wrong answers", ""]
    for ex, answers in wrong_answers(progress).items():
        lines.append(f"**{ex}**")
        lines += [f"- {w.times}× by {w.learners} learner{'s' * (w.learners != 1)}: "
                  f"{escape(w.hint) or '(no hint recorded)'}" for w in answers[:MOST_COMMON]]
        lines.append("")
    lines.append(f"Read {len(progress.files)} progress file(s); skipped "
                 f"{progress.skipped_lines} malformed line(s).")
    lines += [f"Could not read {what}." for what in progress.unreadable]
    return "\n".join(lines) + "\n"


def escape(text: str) -> str:
    """`text` safe inside a markdown table cell or list item."""
    return text.replace("|", "\\|").replace("\n", " ")
