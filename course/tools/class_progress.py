"""Gather the learners' progress files into the teacher's view of a class.

    rows, wrong_answers = table(["/home"])   # in a teacher's notebook

`rows` has one dict per learner: {"learner": name, exercise id: a mark}, the best verdict
they got: ✅ right, ❔ not proven here (every check this machine could make passed, the
kernel was not run), ❌ wrong (tried, not solved yet), ○ not answered (checked with no
answer), "" never checked. `wrong_answers` maps each exercise to its wrong answers grouped
by hint, most common first.

Whose a line is comes from the file, never from the line: by default the file's owner (on a
class hub, learner alice's files belong to her account, course-alice, and only she can
write there), or with `by_folder(root)` the folder under `root` the file sits in (a hub whose
servers all run as one account). A line naming anyone else is ignored and reported: a
learner can write what they like into their own file, but not into someone else's row.
Those lines are still the learner's own claims: the table shows what each learner's checks
(or edits) recorded, and a teacher who grades re-checks the answers themselves.
A damaged line (a file cut short, an edit by hand) is skipped and counted, never fatal, and
so is a file that is a link or not a plain file: one learner's file must not hide the class.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import pwd
import re
import stat
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from course.exercises.progress import FILE_NAME
from course.exercises.verdicts import RIGHT, UNANSWERED, UNPROVEN, WRONG
from course.tools.hub_accounts import learner_of

# the four verdicts a check records, best first (old files hold no "not proven")
VERDICTS = (RIGHT, UNPROVEN, WRONG, UNANSWERED)
MARKS = {RIGHT: "✅", UNPROVEN: "❔", WRONG: "❌", UNANSWERED: "○"}
LABELS = {
    RIGHT: "right",
    UNPROVEN: "not proven here",
    WRONG: "wrong (not solved yet)",
    UNANSWERED: "not answered",
}
SOLVED, TRIED = MARKS[RIGHT], MARKS[WRONG]
MOST_COMMON = 5  # wrong answers per exercise in the printed report
# folders that never hold a progress file: skipped when searching a whole /home
SKIP_DIRS = {
    ".git",
    ".venv",
    "venv",
    "node_modules",
    "site-packages",
    "__pycache__",
    ".cache",
    ".ipynb_checkpoints",
}


@dataclass(frozen=True)
class Attempt:
    learner: str
    exercise: str
    verdict: str  # one of VERDICTS
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
    # lines that named another learner than the file's: "FILE: N line(s) naming X"
    foreign: list[str] = field(default_factory=list)

    @property
    def learners(self) -> list[str]:
        return sorted({a.learner for a in self.attempts})

    @property
    def exercises(self) -> list[str]:
        """The exercises anyone has checked, in the order the course teaches them."""
        return exercise_order({a.exercise for a in self.attempts})


Identify = Callable[[Path, os.stat_result], str]


def by_owner(file: Path, info: os.stat_result) -> str:
    """The learner a file belongs to: its owner's account (course-alice -> alice)."""
    try:
        return learner_of(pwd.getpwuid(info.st_uid).pw_name)
    except KeyError:
        return f"uid {info.st_uid}"


def by_folder(*roots: str | Path) -> Identify:
    """The learner a file belongs to: the folder it sits in under whichever of `roots` holds
    it (root/alice/.course/progress.jsonl -> alice)."""
    roots = [Path(os.path.abspath(root)) for root in roots]

    def identify(file: Path, info: os.stat_result) -> str:
        root = next(r for r in roots if file == r or r in file.parents)
        return file.relative_to(root).parts[0] if file != root else file.parent.name

    return identify


def table(
    paths: Iterable[str | Path], identify: Identify = by_owner
) -> tuple[list[dict], dict[str, list[WrongAnswer]]]:
    """The class table and the common wrong answers of the progress files under `paths`."""
    progress = gather(paths, identify)
    return class_rows(progress), wrong_answers(progress)


def gather(paths: Iterable[str | Path], identify: Identify = by_owner) -> ClassProgress:
    """Read every progress file named by, or found under, `paths`."""
    progress = ClassProgress()
    for path in paths:
        path = Path(path)
        if not os.path.lexists(path):
            progress.unreadable.append(f"{path} (no such file or folder)")
            continue
        for file in progress_files(path):
            if file not in progress.files:
                read_progress_file(file, progress, identify)
    return progress


def progress_files(path: Path) -> list[Path]:
    """`path` itself if not a folder, else every progress file below it (unreadable folders
    and folders that never hold one are passed over; links are not followed)."""
    path = Path(os.path.abspath(path))
    if not path.is_dir() or path.is_symlink():
        return [path]
    found = []
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIP_DIRS)
        if FILE_NAME in files:
            found.append(Path(folder) / FILE_NAME)
    return found


def read_own_text(file: Path) -> tuple[str, os.stat_result]:
    """A plain file's text and its status, read as it is: a link, a pipe or a device named
    progress.jsonl is refused (the teacher reads as root; a learner chooses what is there)."""
    fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError("not a plain file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read().decode("utf-8", errors="replace"), info
    finally:
        os.close(fd)


def read_progress_file(file: Path, progress: ClassProgress, identify: Identify = by_owner) -> None:
    """Add `file`'s attempts to `progress` as its learner's, counting the lines that are not
    one and setting aside those that name someone else."""
    try:
        text, info = read_own_text(file)
    except OSError as exc:
        reason = "a link, not read" if os.path.islink(file) else (exc.strerror or str(exc))
        progress.unreadable.append(f"{file} ({reason})")
        return
    progress.files.append(file)
    owner = identify(file, info)
    others = Counter()
    for line in text.splitlines():
        if line.strip():
            attempt = parse_line(line)
            if attempt is None:
                progress.skipped_lines += 1
            elif attempt.learner != owner:
                others[attempt.learner] += 1
            else:
                progress.attempts.append(attempt)
    progress.foreign += [
        f"{file} (belongs to {owner}): {n} line(s) naming {name}"
        for name, n in sorted(others.items())
    ]


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
    if not (
        isinstance(learner, str)
        and learner
        and isinstance(exercise, str)
        and exercise
        and verdict in VERDICTS
        and isinstance(hint, str)
    ):
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
    """One row per learner: for each exercise the mark of the best verdict they got."""
    verdicts = defaultdict(set)
    for a in progress.attempts:
        verdicts[a.learner, a.exercise].add(a.verdict)
    exercises = progress.exercises
    return [
        {"learner": learner, **{ex: cell(verdicts[learner, ex]) for ex in exercises}}
        for learner in progress.learners
    ]


def cell(verdicts: set[str]) -> str:
    best = next((v for v in VERDICTS if v in verdicts), None)
    return MARKS[best] if best else ""


def exercise_counts(rows: list[dict], exercises: list[str]) -> dict[str, dict[str, int]]:
    """Per exercise, how many learners' best verdict is each of the four."""
    return {ex: {v: sum(r[ex] == MARKS[v] for r in rows) for v in VERDICTS} for ex in exercises}


def wrong_answers(progress: ClassProgress) -> dict[str, list[WrongAnswer]]:
    """Each exercise's wrong answers grouped by hint, most common first."""
    times, who = Counter(), defaultdict(set)
    for a in progress.attempts:
        if a.verdict == WRONG:
            times[a.exercise, a.hint] += 1
            who[a.exercise, a.hint].add(a.learner)
    grouped = {}
    for ex in progress.exercises:
        answers = [
            WrongAnswer(hint, n, len(who[ex, hint])) for (e, hint), n in times.items() if e == ex
        ]
        if answers:
            grouped[ex] = sorted(answers, key=lambda w: (-w.times, -w.learners, w.hint))
    return grouped


def markdown_report(progress: ClassProgress) -> str:
    """The class table with per-exercise counts, then the common wrong answers."""
    rows, exercises = class_rows(progress), progress.exercises
    counts = exercise_counts(rows, exercises)
    legend = ", ".join(f"{MARKS[v]} {LABELS[v]}" for v in VERDICTS)
    lines = [
        f"# Class progress: {len(rows)} learners, {len(exercises)} exercises checked",
        "",
        f"{legend}; blank: never checked.",
        "",
        "| learner | " + " | ".join(exercises) + " |",
        "|---" * (len(exercises) + 1) + "|",
    ]
    lines += [
        f"| {escape(r['learner'])} | " + " | ".join(r[ex] for ex in exercises) + " |" for r in rows
    ]
    for verdict in VERDICTS:
        lines.append(
            f"| **{LABELS[verdict]}** | "
            + " | ".join(str(counts[ex][verdict]) for ex in exercises)
            + " |"
        )
    lines += ["", "## Most common wrong answers", ""]
    for ex, answers in wrong_answers(progress).items():
        lines.append(f"**{ex}**")
        lines += [
            f"- {w.times}× by {w.learners} learner{'s' * (w.learners != 1)}: "
            f"{escape(w.hint) or '(no hint recorded)'}"
            for w in answers[:MOST_COMMON]
        ]
        lines.append("")
    lines.append(
        f"Read {len(progress.files)} progress file(s); skipped "
        f"{progress.skipped_lines} malformed line(s)."
    )
    if progress.foreign:
        lines.append(
            "Ignored lines that name another learner than the file's (a file "
            "counts only for the learner it belongs to):"
        )
        lines += [f"- {escape(what)}" for what in progress.foreign]
    lines += [f"Could not read {what}." for what in progress.unreadable]
    return "\n".join(lines) + "\n"


def escape(text: str) -> str:
    """`text` safe inside a markdown table cell or list item."""
    return text.replace("|", "\\|").replace("\n", " ")
