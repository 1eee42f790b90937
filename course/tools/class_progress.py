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

The teacher reads as root what learners wrote, so nothing a learner controls is trusted:
* where: every folder on the way to a file, and the file, is opened one at a time from `/`
  without following a link (a link a learner swaps in, even in a loop, is refused, never
  followed into someone else's folder), and is owned by root or by the file's owner;
* how much: at most BYTES_PER_LEARNER bytes and LINES_PER_LEARNER lines of each learner's
  files are read (a 64 GiB sparse file costs a few MiB), and the report says what was cut;
* what: only the course's exercises (its catalogue) and verdicts (verdicts.VERDICTS) are
  taken; other lines are counted and left out, and every field a learner chose is escaped
  wherever it is shown (the printed report, progress.md, the picture).
A damaged line (a file cut short, an edit by hand) is skipped and counted, never fatal, and
so is a file that is a link or not a plain file: one learner's file must not hide the class.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import pkgutil
import pwd
import re
import stat
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from course.exercises import verdicts
from course.exercises.progress import FILE_NAME, HINT_CHARS
from course.exercises.verdicts import MACHINE_FAULT, RIGHT, UNANSWERED, UNPROVEN, WRONG
from course.tools.hub_accounts import learner_of

# How the table shows each verdict, best first (a cell shows the best a learner got). Which
# verdicts a line may hold is course.exercises.verdicts.VERDICTS, the one list: one added
# there and not placed here yet is taken all the same, shown last by its word.
SHOWN = {
    RIGHT: ("✅", "right"),
    UNPROVEN: ("❔", "not proven here"),
    WRONG: ("❌", "wrong (not solved yet)"),
    MACHINE_FAULT: ("⚠", "the checker could not run here"),  # says nothing of the answer
    UNANSWERED: ("○", "not answered"),
}
VERDICTS = tuple(v for v in SHOWN if v in verdicts.VERDICTS) + tuple(
    v for v in verdicts.VERDICTS if v not in SHOWN
)
MARKS = {v: SHOWN.get(v, ("?", v))[0] for v in VERDICTS}
LABELS = {v: SHOWN.get(v, ("?", v))[1] for v in VERDICTS}
SOLVED, TRIED = MARKS[RIGHT], MARKS[WRONG]
MOST_COMMON = 5  # wrong answers per exercise in the printed report
NAMES_PER_FILE = 5  # other learners a file's lines name, listed in the report
# What root reads of one learner's files in all: a real term's checks are a few hundred
# lines of ~150 bytes, a learner's 64 GiB sparse file or 40,000 made-up lines are cut.
BYTES_PER_LEARNER = 4 << 20
LINES_PER_LEARNER = 10_000
FOLDER_DEPTH = 16  # how far below a PATH the search looks (~/.course is 2)
FIELD_CHARS = 300  # of any text a learner chose (a name, a path), in the report
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
UNKNOWN_EXERCISE, UNKNOWN_VERDICT = "unknown exercise", "unknown verdict"
# every component is opened without following a link; a file also without blocking (a pipe)
# and without becoming the reader's terminal (a device)
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


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
    # lines left out for what they name: (learner, UNKNOWN_EXERCISE or UNKNOWN_VERDICT) -> n
    ignored: Counter = field(default_factory=Counter)
    cut: list[str] = field(default_factory=list)  # what the caps kept from being read whole
    bytes_read: Counter = field(default_factory=Counter)  # per learner
    lines_read: Counter = field(default_factory=Counter)  # per learner
    capped: set[str] = field(default_factory=set)  # learners whose lines reached the cap
    catalogue: tuple[str, ...] = field(default_factory=lambda: tuple(course_exercise_ids()))

    @property
    def learners(self) -> list[str]:
        return sorted({a.learner for a in self.attempts})

    @property
    def exercises(self) -> list[str]:
        """The exercises anyone has checked, in the order the course teaches them."""
        checked = {a.exercise for a in self.attempts}
        return [id for id in self.catalogue if id in checked]


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
    roots = [resolve_root_links(root) for root in roots]

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
        if not os.path.lexists(path):
            progress.unreadable.append(f"{path} (no such file or folder)")
            continue
        top = resolve_root_links(path)
        for file in progress_files(top):
            if file not in progress.files:
                read_progress_file(file, progress, identify, top)
    return progress


def resolve_root_links(path: str | Path) -> Path:
    """`path` made absolute, with the links root owns resolved (a system's /home ->
    /var/home) and every other left in place: a learner's link stays a link, which the
    reads below refuse. The teacher names the path; the learners choose what is under it."""
    resolved = Path("/")
    for name in Path(os.path.abspath(path)).parts[1:]:
        resolved /= name
        if os.path.islink(resolved) and os.lstat(resolved).st_uid == 0:
            resolved = Path(os.path.realpath(resolved))
    return resolved


def open_no_links(path: Path, flags: int = FOLDER_FLAGS) -> tuple[int, list[int]]:
    """A descriptor of the absolute `path` (the caller closes it), opened one component at a
    time from `/`, each relative to the folder before and none through a link, with the
    owner of each component: a learner who swaps a folder of hers with a link to someone
    else's, however fast, gets a refusal, never the other folder. The last component is
    opened with `flags`."""
    names = path.parts[1:]
    fd, owners = os.open("/", FOLDER_FLAGS), []
    try:
        for i, name in enumerate(names):
            try:
                opened = os.open(name, flags if i == len(names) - 1 else FOLDER_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise refused_link(exc, name, fd, path) from None
            os.close(fd)
            fd = opened
            owners.append(os.fstat(fd).st_uid)
    except BaseException:
        os.close(fd)
        raise
    return fd, owners


def refused_link(exc: OSError, name: str, folder: int, path: Path) -> OSError:
    """`exc`, or an ELOOP naming the link when `name` (in `folder`) is one: a folder that is
    a link fails its no-follow open as "not a directory", which would hide the attack."""
    try:
        link = stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        link = False
    return OSError(errno.ELOOP, "a link, not read", str(path)) if link else exc


def progress_files(path: Path) -> list[Path]:
    """`path` itself if not a folder, else every progress file below it, FOLDER_DEPTH deep at
    most (unreadable folders and folders that never hold one are passed over; links are not
    followed, at any depth, even if swapped in during the search)."""
    path = resolve_root_links(path)
    try:
        fd, _ = open_no_links(path)
    except OSError:  # a file, or not there: read (or reported) as one
        return [path]
    found: list[Path] = []
    try:
        search(fd, path, found, FOLDER_DEPTH)
    finally:
        os.close(fd)
    return found


def search(fd: int, folder: Path, found: list[Path], depth: int) -> None:
    """Add to `found` the progress files in the open `folder` and below, in name order."""
    try:
        with os.scandir(fd) as entries:
            listed = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in entries)
    except OSError:
        return
    found += [folder / name for name, is_dir in listed if name == FILE_NAME and not is_dir]
    for name, is_dir in listed:
        if not is_dir or name in SKIP_DIRS or depth == 0:
            continue
        try:
            below = os.open(name, FOLDER_FLAGS, dir_fd=fd)
        except OSError:  # gone, closed, or swapped for a link since it was listed
            continue
        try:
            search(below, folder / name, found, depth - 1)
        finally:
            os.close(below)


def read_progress_file(
    file: Path, progress: ClassProgress, identify: Identify = by_owner, top: Path | None = None
) -> None:
    """Add `file`'s attempts to `progress` as its learner's, counting the lines that are not
    one and setting aside those that name someone else. `top` is the PATH it was found
    under: from there down every folder must be root's or the file owner's."""
    top = top or file
    try:
        fd, owners = open_no_links(file, FILE_FLAGS)
    except OSError as exc:
        progress.unreadable.append(f"{file} ({exc.strerror or exc})")
        return
    try:
        info = os.fstat(fd)
        problem = refusal(info, owners[max(len(top.parts) - 2, 0) :])
        if problem:
            progress.unreadable.append(f"{file} ({problem})")
            return
        learner = identify(file, info)
        if at_line_cap(learner, progress):
            return
        text = read_capped(fd, file, info, learner, progress)
    finally:
        os.close(fd)
    progress.files.append(file)
    take_lines(text, file, learner, progress)


def refusal(info: os.stat_result, owners: list[int]) -> str:
    """Why an opened file is not read ('' if it is): not a plain file (a pipe, a device), or
    somewhere a learner put another account's file (a hard link, a folder given to her)."""
    if not stat.S_ISREG(info.st_mode):
        return "not a plain file"
    if any(owner not in (0, info.st_uid) for owner in owners):
        return "in a folder another account owns, not read"
    return ""


def read_capped(
    fd: int, file: Path, info: os.stat_result, learner: str, progress: ClassProgress
) -> str:
    """The text of `fd` up to what is left of the learner's BYTES_PER_LEARNER, whole lines
    only; a cut is noted. The size is never trusted (a file grows, or is mostly a hole)."""
    left = max(BYTES_PER_LEARNER - progress.bytes_read[learner], 0)
    chunks, size = [], 0
    while size <= left:
        chunk = os.read(fd, min(1 << 20, left + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)[:left]
    progress.bytes_read[learner] += len(data)
    if size > left:
        progress.cut.append(
            f"{file} ({human(info.st_size)}): cut, only its first {human(len(data))} read"
            f" (at most {human(BYTES_PER_LEARNER)} of a learner's files are read)"
        )
        data = data[: data.rfind(b"\n") + 1]  # a line cut in two is no line
    return data.decode("utf-8", errors="replace")


def human(size: int) -> str:
    """A size in bytes as a person reads it: 812 bytes, 4.0 MiB, 64.0 GiB."""
    power = 0
    while power < 3 and size >= 1024 ** (power + 1):
        power += 1
    return f"{size} bytes" if power == 0 else f"{size / 1024**power:.1f} {'KMG'[power - 1]}iB"


def take_lines(text: str, file: Path, learner: str, progress: ClassProgress) -> None:
    """Add the attempts of `text`, a file of `learner`'s, up to their LINES_PER_LEARNER."""
    others = Counter()
    for line in text.split("\n"):
        if not line.strip():
            continue
        if at_line_cap(learner, progress):
            break
        progress.lines_read[learner] += 1
        attempt = parse_line(line)
        if attempt is None:
            progress.skipped_lines += 1
        elif attempt.learner != learner:
            others[attempt.learner] += 1
        elif why := unknown(attempt, progress.catalogue):
            progress.ignored[learner, why] += 1
        else:
            progress.attempts.append(attempt)
    progress.foreign += foreign_lines(file, learner, others)


def at_line_cap(learner: str, progress: ClassProgress) -> bool:
    """Whether `learner`'s lines have reached LINES_PER_LEARNER, said once in the report."""
    if progress.lines_read[learner] < LINES_PER_LEARNER:
        return False
    if learner not in progress.capped:
        progress.capped.add(learner)
        progress.cut.append(
            f"{learner}: only the first {LINES_PER_LEARNER} lines read (the cap per"
            " learner); their later lines and files were not read"
        )
    return True


def foreign_lines(file: Path, learner: str, others: Counter) -> list[str]:
    """What the report says of the lines of `file` that name other learners than `learner`:
    the most common few by name (a learner may name thousands), then how many more."""
    named = others.most_common()
    listed = sorted(named[:NAMES_PER_FILE])
    rest = named[NAMES_PER_FILE:]
    notes = [f"{file} (belongs to {learner}): {n} line(s) naming {name}" for name, n in listed]
    if rest:
        notes.append(
            f"{file} (belongs to {learner}): {sum(n for _, n in rest)} line(s) naming"
            f" {len(rest)} other learner(s)"
        )
    return notes


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
    if not all(isinstance(value, str) and value for value in (learner, exercise, verdict)):
        return None
    if not isinstance(hint, str):
        return None
    return Attempt(learner, exercise, verdict, hint)


def unknown(attempt: Attempt, catalogue: Iterable[str]) -> str:
    """Why the table leaves `attempt` out ('' if it takes it): an exercise the course does
    not have, or a verdict no check gives. Only what the course knows becomes a column or a
    mark, so a learner's file cannot widen the table or write into it."""
    if attempt.exercise not in catalogue:
        return UNKNOWN_EXERCISE
    if attempt.verdict not in verdicts.VERDICTS:
        return UNKNOWN_VERDICT
    return ""


def course_exercise_ids() -> list[str]:
    """Every exercise of the course, in the order learners meet them: by notebook, then as
    that notebook's module lists them."""
    import course.exercises as package
    from course.exercises.check import REGISTRY

    for module in pkgutil.iter_modules(package.__path__):
        if re.fullmatch(r"nb\d\d", module.name):
            try:
                importlib.import_module(f"course.exercises.{module.name}")
            except Exception:  # not loadable here: not in the catalogue, their lines unknown
                pass
    return sorted(REGISTRY, key=lambda id: id.split(".")[0])  # stable: keeps each module's order


def class_rows(progress: ClassProgress) -> list[dict]:
    """One row per learner: for each exercise the mark of the best verdict they got."""
    verdicts_of = defaultdict(set)
    for a in progress.attempts:
        verdicts_of[a.learner, a.exercise].add(a.verdict)
    exercises = progress.exercises
    return [
        {"learner": learner, **{ex: cell(verdicts_of[learner, ex]) for ex in exercises}}
        for learner in progress.learners
    ]


def cell(given: set[str]) -> str:
    best = next((v for v in VERDICTS if v in given), None)
    return MARKS[best] if best else ""


def exercise_counts(rows: list[dict], exercises: list[str]) -> dict[str, dict[str, int]]:
    """Per exercise, how many learners' best verdict is each of the known ones."""
    return {ex: {v: sum(r[ex] == MARKS[v] for r in rows) for v in VERDICTS} for ex in exercises}


def wrong_answers(progress: ClassProgress) -> dict[str, list[WrongAnswer]]:
    """Each exercise's wrong answers grouped by hint, most common first."""
    times, who = defaultdict(Counter), defaultdict(set)
    for a in progress.attempts:
        if a.verdict == WRONG:
            times[a.exercise][a.hint] += 1
            who[a.exercise, a.hint].add(a.learner)
    return {
        ex: sorted(
            (WrongAnswer(hint, n, len(who[ex, hint])) for hint, n in times[ex].items()),
            key=lambda w: (-w.times, -w.learners, w.hint),
        )
        for ex in progress.exercises
        if times[ex]
    }


def markdown_report(progress: ClassProgress) -> str:
    """The class table with per-exercise counts, then the common wrong answers, then what
    was not read or not counted. Every field a learner chose is escaped."""
    rows, exercises = class_rows(progress), progress.exercises
    counts = exercise_counts(rows, exercises)
    legend = ", ".join(f"{MARKS[v]} {LABELS[v]}" for v in VERDICTS)
    lines = [
        f"# Class progress: {len(rows)} learners, {len(exercises)} exercises checked",
        "",
        f"{legend}; blank: never checked.",
        "",
        "| learner | " + " | ".join(escape(ex) for ex in exercises) + " |",
        "|---" * (len(exercises) + 1) + "|",
    ]
    lines += [
        f"| {escape(r['learner'])} | " + " | ".join(r[ex] for ex in exercises) + " |" for r in rows
    ]
    for verdict in VERDICTS:
        lines.append(
            f"| **{escape(LABELS[verdict])}** | "
            + " | ".join(str(counts[ex][verdict]) for ex in exercises)
            + " |"
        )
    lines += ["", "## Most common wrong answers", ""]
    for ex, answers in wrong_answers(progress).items():
        lines.append(f"**{escape(ex)}**")
        lines += [
            f"- {w.times}× by {w.learners} learner{'s' * (w.learners != 1)}: "
            f"{escape(w.hint, HINT_CHARS) or '(no hint recorded)'}"
            for w in answers[:MOST_COMMON]
        ]
        lines.append("")
    return "\n".join(lines + footer(progress)) + "\n"


def footer(progress: ClassProgress) -> list[str]:
    """What was read, and what was not read or not counted, and why: escaped lines (paths
    and names are the learners' choice) for the report and for "no verdicts found"."""
    lines = [
        f"Read {len(progress.files)} progress file(s); skipped "
        f"{progress.skipped_lines} malformed line(s)."
    ]
    lines += [
        f"{n} line(s) ignored: {why} (in {escape(learner)}'s files; the table takes only"
        " the course's exercises and verdicts)."
        for (learner, why), n in sorted(progress.ignored.items())
    ]
    if progress.foreign:
        lines.append(
            "Ignored lines that name another learner than the file's (a file "
            "counts only for the learner it belongs to):"
        )
        lines += [f"- {escape(what)}" for what in progress.foreign]
    if progress.cut:
        lines.append("Not read whole (the caps on what is read of each learner):")
        lines += [f"- {escape(what)}" for what in progress.cut]
    lines += [f"Could not read {escape(what)}." for what in progress.unreadable]
    return lines


# markdown that would make a learner's text more than text: table cells (|), emphasis (*),
# code, links and images ([ ]), HTML and entities (< > &), strikethrough (~), math ($).
# Not `_`: inside a word (the course's ids: 02.padded_tiles) it is no emphasis, and around
# one it is emphasis only, so the ids stay readable in the terminal.
MARKDOWN = re.compile(r"([\\`*\[\]<>|~&$])")


def plain(text: str, limit: int = FIELD_CHARS) -> str:
    """`text` as one line of visible characters, at most `limit` of them: every line break
    or other space a space, every control or format character (a terminal escape, a
    direction override) U+FFFD, the rest cut with an ellipsis."""
    shown = "".join(
        " " if ch.isspace() else "\ufffd" if unicodedata.category(ch)[0] == "C" else ch
        for ch in text[: limit + 1]
    )
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def escape(text: str, limit: int = FIELD_CHARS) -> str:
    """`text` shown as itself inside a markdown table cell or list item, and in a terminal:
    plain (one line, no control characters) and every markdown character escaped."""
    return MARKDOWN.sub(r"\\\1", plain(text, limit))
