"""A class's progress: check() records each verdict in the learner's own space, and the
teacher gathers the files into the class table, the common wrong answers and a picture.
Whose a file is comes from the file (its owner, or its folder), never from its lines: the
tests that give files real owners create Unix accounts (root only) and remove them."""

import json
import os
import pwd
import subprocess
import uuid
from datetime import datetime, timezone

import pytest

from course.exercises import progress
from course.tools import class_progress as gather
from course.tools.class_progress_report import progress as progress_command
from course.exercises.check import check
from course.exercises.nb00 import TILE_M, TILE_N, TILES
from course.exercises.verdicts import Verdict

TILES_RIGHT = TILES.tiles(TILE_M, TILE_N)  # 00.tiles's answer, and two wrong ones below it
LOW, LOWER = TILES_RIGHT - 24, TILES_RIGHT - 25


@pytest.fixture
def learner_file(tmp_path, monkeypatch):
    """Point this test's check() calls at a progress file of learner `alice`."""

    def point(user="alice", path=None):
        path = path or tmp_path / "home" / user / ".course" / "progress.jsonl"
        monkeypatch.delenv("COURSE_PROGRESS", raising=False)
        monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
        monkeypatch.setenv("JUPYTERHUB_USER", user)
        return path

    return point


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_check_records_one_line_per_verdict(learner_file):
    answer = TILES_RIGHT
    path = learner_file("alice")
    assert check("00.tiles", answer - 24, quiet=True).ok is False
    assert check("00.tiles", answer, quiet=True).ok is True
    assert check("00.tiles", quiet=True).ok is None
    wrong, right, unanswered = lines(path)
    assert {k: wrong[k] for k in ("learner", "exercise", "verdict", "hint")} == {
        "learner": "alice",
        "exercise": "00.tiles",
        "verdict": "wrong",
        "hint": f"{answer - 24} is too low.",
    }
    assert (right["verdict"], right["hint"]) == ("right", "")
    assert (unanswered["verdict"], unanswered["hint"]) == ("not answered", "")
    when = datetime.fromisoformat(wrong["time"])
    assert when.utcoffset().total_seconds() == 0
    assert abs((datetime.now(timezone.utc) - when).total_seconds()) < 60


def test_a_rejected_answer_records_its_reason(learner_file):
    path = learner_file("alice")
    check("00.bound", "maybe", quiet=True)
    assert lines(path)[0]["hint"].startswith("expected a number, got 'maybe'")


def test_the_hint_is_the_first_line_capped():
    kernel_style = Verdict(
        "01.saxpy",
        "wrong",
        "observed: 3 of 257 outputs wrong\n"
        "hint: guard the last block with a predicate\n"
        "  ✘ traced and compiled: ...",
    )
    assert progress.mistake_key(kernel_style) == "guard the last block with a predicate"
    plain = Verdict("00.bound", "wrong", "answer 'memory' or 'compute'\nmore")
    assert progress.mistake_key(plain) == "answer 'memory' or 'compute'"
    long = Verdict("00.tiles", "wrong", "x" * 500)
    assert len(progress.mistake_key(long)) == progress.HINT_CHARS


def test_default_file_and_account_name(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("COURSE_PROGRESS_FILE", "COURSE_PROGRESS", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(progress.getpass, "getuser", lambda: "carol")
    check("00.tiles", TILES_RIGHT, quiet=True)
    assert lines(tmp_path / ".course" / "progress.jsonl")[0]["learner"] == "carol"


def test_recording_switched_off_writes_nothing(learner_file, monkeypatch):
    path = learner_file("alice")
    monkeypatch.setenv("COURSE_PROGRESS", "off")
    assert check("00.tiles", TILES_RIGHT, quiet=True).ok is True
    assert not path.exists()


def test_an_unwritable_progress_file_does_not_break_check(tmp_path, learner_file, capsys):
    not_a_folder = tmp_path / "a_file"
    not_a_folder.write_text("")
    learner_file("alice", not_a_folder / "progress.jsonl")  # its folder cannot be made
    assert check("00.tiles", TILES_RIGHT).ok is True
    assert "✅" in capsys.readouterr().out


@pytest.fixture
def two_learners(tmp_path, learner_file):
    """alice solves 00.tiles after a wrong try and misses 00.bound; bob misses 00.tiles
    twice; bob's file also holds a line cut short and one that is not a verdict."""
    learner_file("alice")
    check("00.tiles", LOW, quiet=True)
    check("00.tiles", TILES_RIGHT, quiet=True)
    check("00.bound", 64, quiet=True)
    bob = learner_file("bob")
    check("00.tiles", LOW, quiet=True)
    check("00.tiles", LOWER, quiet=True)
    with bob.open("a") as f:
        f.write('{"learner": "bob", "exercise": "00.ti\n["not", "a verdict"]\n')
    return tmp_path / "home"


def test_gathering_builds_the_class_table(two_learners):
    rows, wrong = gather.table([two_learners], gather.by_folder(two_learners))
    assert rows == [
        {"learner": "alice", "00.tiles": "✅", "00.bound": "❌"},
        {"learner": "bob", "00.tiles": "❌", "00.bound": ""},
    ]
    assert list(rows[0]) == ["learner", "00.tiles", "00.bound"]  # the course's order
    assert wrong["00.tiles"][0] == gather.WrongAnswer(f"{LOW} is too low.", 2, 2)
    assert wrong["00.tiles"][1] == gather.WrongAnswer(f"{LOWER} is too low.", 1, 1)
    assert [w.learners for w in wrong["00.bound"]] == [1]


def test_gathering_skips_and_counts_malformed_lines(two_learners):
    found = gather.gather(
        [two_learners, two_learners / "bob" / ".course" / "progress.jsonl"],
        gather.by_folder(two_learners),
    )
    assert found.skipped_lines == 2
    assert len(found.files) == 2 and len(found.attempts) == 5  # bob's file read once
    counts = gather.exercise_counts(gather.class_rows(found), found.exercises)
    none = dict.fromkeys(gather.VERDICTS, 0)  # a count for every verdict the course knows
    assert counts == {
        "00.tiles": {**none, "right": 1, "wrong": 1},
        "00.bound": {**none, "wrong": 1},
    }


def test_cli_writes_the_table_and_the_picture(two_learners, tmp_path, capsys):
    out = tmp_path / "out"
    assert progress_command([str(two_learners)], out, learner_from="folder") == 0
    report = (out / "progress.md").read_text()
    assert "| learner | 00.tiles | 00.bound |" in report
    assert "| alice | ✅ | ❌ |" in report and "| bob | ❌ |  |" in report
    assert f"2× by 2 learners: {LOW} is too low." in report
    assert "skipped 2 malformed line(s)" in report
    assert report.strip() in capsys.readouterr().out
    picture = (out / "progress.png").read_bytes()
    assert picture.startswith(b"\x89PNG") and len(picture) > 1000


def test_cli_says_when_there_is_nothing_to_gather(tmp_path, capsys):
    assert progress_command([str(tmp_path)], tmp_path / "out") == 1
    assert "no verdicts found" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_python_m_course_progress_is_the_teachers_command(two_learners, tmp_path, capsys):
    from course.__main__ import main

    assert (
        main(
            [
                "progress",
                str(two_learners),
                "--out",
                str(tmp_path / "class"),
                "--learner-from",
                "folder",
            ]
        )
        == 0
    )
    assert (tmp_path / "class" / "progress.md").read_text() in capsys.readouterr().out


def write_lines(path, *entries):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for learner, exercise, verdict in entries:
            f.write(
                json.dumps(
                    {
                        "learner": learner,
                        "exercise": exercise,
                        "verdict": verdict,
                        "hint": "",
                        "time": "2026-11-25T00:00:00+00:00",
                    }
                )
                + "\n"
            )


def test_the_four_verdicts_are_counted_apart_and_old_files_still_read(tmp_path, capsys):
    """right, not proven here, wrong and not answered each have their mark, their count
    and their colour; a file written before "not proven" existed reads as it did."""
    home = tmp_path / "home"
    write_lines(
        home / "ann" / ".course" / "progress.jsonl",
        ("ann", "01.saxpy", "wrong"),
        ("ann", "01.saxpy", "not proven"),
        ("ann", "00.tiles", "right"),
    )
    write_lines(
        home / "ben" / ".course" / "progress.jsonl",  # an old file: three verdicts
        ("ben", "01.saxpy", "not answered"),
        ("ben", "00.tiles", "wrong"),
    )
    write_lines(home / "cy" / ".course" / "progress.jsonl", ("cy", "01.saxpy", "wrong"))
    found = gather.gather([home], gather.by_folder(home))
    rows = {r["learner"]: r for r in gather.class_rows(found)}
    assert rows["ann"]["01.saxpy"] == "❔" and rows["ann"]["00.tiles"] == "✅"
    assert rows["ben"]["01.saxpy"] == "○" and rows["ben"]["00.tiles"] == "❌"
    assert rows["cy"]["01.saxpy"] == "❌" and rows["cy"]["00.tiles"] == ""
    assert gather.exercise_counts(list(rows.values()), ["01.saxpy"]) == {
        "01.saxpy": {
            **dict.fromkeys(gather.VERDICTS, 0),
            "not proven": 1,
            "wrong": 1,
            "not answered": 1,
        }
    }
    assert progress_command([str(home)], tmp_path / "out", learner_from="folder") == 0
    report = (tmp_path / "out" / "progress.md").read_text()
    assert "❔ not proven here" in report and "| **not proven here** |" in report
    assert "| **not answered** |" in report


def test_the_report_is_readable_by_the_teacher_only(two_learners, tmp_path):
    out = tmp_path / "open" / "classroom"
    out.parent.mkdir()
    os.chmod(out.parent, 0o755)
    (out).mkdir(mode=0o755)
    (out / "progress.md").write_text("an older report, open to all")
    os.chmod(out / "progress.md", 0o644)
    assert progress_command([str(two_learners)], out, learner_from="folder") == 0
    assert out.stat().st_mode & 0o777 == 0o700
    for name in ("progress.md", "progress.png"):
        assert (out / name).stat().st_mode & 0o777 == 0o600, name


def test_a_link_or_a_pipe_named_progress_is_not_read(tmp_path):
    """The teacher gathers as root: a learner's link to another file (or a pipe that would
    hang the read) is reported, never followed."""
    home = tmp_path / "home"
    secret = tmp_path / "secret.jsonl"
    write_lines(secret, ("eve", "00.tiles", "right"))
    (home / "eve" / ".course").mkdir(parents=True)
    (home / "eve" / ".course" / "progress.jsonl").symlink_to(secret)
    (home / "fay" / ".course").mkdir(parents=True)
    os.mkfifo(home / "fay" / ".course" / "progress.jsonl")
    found = gather.gather([home], gather.by_folder(home))
    assert found.attempts == []
    assert len(found.unreadable) == 2 and "a link, not read" in " ".join(found.unreadable)


def _can_make_accounts() -> str:
    if os.geteuid() != 0:
        return "giving files real owners needs root (useradd)"
    return ""


NO_ACCOUNTS = _can_make_accounts()


@pytest.fixture
def two_accounts():
    """Two Unix accounts made for the test (the hub's course-<name> kind), removed after."""
    names = [f"course-ct{uuid.uuid4().hex[:6]}{who}" for who in "ab"]
    for name in names:
        subprocess.run(["useradd", "--create-home", name], check=True, capture_output=True)
    try:
        yield [pwd.getpwnam(name) for name in names]
    finally:
        for name in names:
            subprocess.run(["userdel", "--remove", name], capture_output=True)


@pytest.mark.skipif(bool(NO_ACCOUNTS), reason=NO_ACCOUNTS or "-")
def test_a_learner_cannot_write_someone_elses_grade(two_accounts, tmp_path, capsys):
    """The attack: learner A appends, as A (in a terminal of theirs), a line to A's own
    progress file that gives B a right answer. The table takes whose each file is from its
    owner, so B keeps B's own verdict and the forged line is reported."""
    a, b = two_accounts
    alice, bob = (gather.learner_of(account.pw_name) for account in two_accounts)
    for account, entries in (
        (a, [(alice, "00.tiles", "wrong")]),
        (b, [(bob, "00.tiles", "wrong")]),
    ):
        path = f"{account.pw_dir}/.course/progress.jsonl"
        line = "".join(
            json.dumps({"learner": n, "exercise": e, "verdict": v}) + "\n" for n, e, v in entries
        )
        as_learner(account, f"mkdir -p ~/.course && printf '%s' '{line}' >> {path}")
    forged = json.dumps({"learner": bob, "exercise": "00.tiles", "verdict": "right"})
    as_learner(a, f"echo '{forged}' >> ~/.course/progress.jsonl")
    homes = [a.pw_dir, b.pw_dir]
    rows = {r["learner"]: r for r in gather.table(homes)[0]}
    assert rows[bob]["00.tiles"] == "❌" and rows[alice]["00.tiles"] == "❌"
    found = gather.gather(homes)
    assert found.foreign == [
        f"{a.pw_dir}/.course/progress.jsonl (belongs to {alice}): 1 line(s) naming {bob}"
    ]
    assert progress_command(homes, tmp_path / "out") == 0
    assert f"1 line(s) naming {bob}" in (tmp_path / "out" / "progress.md").read_text()


def as_learner(account, command: str) -> None:
    """Run a shell command as `account`, in its home, as its terminal would."""
    subprocess.run(
        ["su", "--login", account.pw_name, "--shell", "/bin/sh", "--command", command],
        check=True,
        capture_output=True,
        timeout=60,
    )
