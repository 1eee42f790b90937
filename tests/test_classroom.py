"""A class's progress: check() records each verdict in the learner's own space, and the
teacher gathers the files into the class table, the common wrong answers and a picture."""
import json
from datetime import datetime, timezone

import pytest

from course.exercises import progress
from course.tools import class_progress as gather
from course.tools.class_progress_report import progress as progress_command
from course.exercises.check import Verdict, check


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
    path = learner_file("alice")
    assert check("00.tiles", 1000, quiet=True).ok is False
    assert check("00.tiles", 1536, quiet=True).ok is True
    assert check("00.tiles", quiet=True).ok is None
    wrong, right, unanswered = lines(path)
    assert {k: wrong[k] for k in ("learner", "exercise", "verdict", "hint")} == {
        "learner": "alice", "exercise": "00.tiles", "verdict": "wrong",
        "hint": "1000 is too low."}
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
    kernel_style = Verdict("01.saxpy", False, "guard the last block with a predicate\n"
                                               "  FAIL traced and compiled: ...")
    assert progress.mistake_key(kernel_style) == "guard the last block with a predicate"
    long = Verdict("00.tiles", False, "x" * 500)
    assert len(progress.mistake_key(long)) == progress.HINT_CHARS


def test_default_file_and_account_name(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("COURSE_PROGRESS_FILE", "COURSE_PROGRESS", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(progress.getpass, "getuser", lambda: "carol")
    check("00.tiles", 1536, quiet=True)
    assert lines(tmp_path / ".course" / "progress.jsonl")[0]["learner"] == "carol"


def test_recording_switched_off_writes_nothing(learner_file, monkeypatch):
    path = learner_file("alice")
    monkeypatch.setenv("COURSE_PROGRESS", "off")
    assert check("00.tiles", 1536, quiet=True).ok is True
    assert not path.exists()


def test_an_unwritable_progress_file_does_not_break_check(tmp_path, learner_file, capsys):
    not_a_folder = tmp_path / "a_file"
    not_a_folder.write_text("")
    learner_file("alice", not_a_folder / "progress.jsonl")  # its folder cannot be made
    assert check("00.tiles", 1536).ok is True
    assert "✅" in capsys.readouterr().out


@pytest.fixture
def two_learners(tmp_path, learner_file):
    """alice solves 00.tiles after a wrong try and misses 00.bound; bob misses 00.tiles
    twice; bob's file also holds a line cut short and one that is not a verdict."""
    learner_file("alice")
    check("00.tiles", 1000, quiet=True)
    check("00.tiles", 1536, quiet=True)
    check("00.bound", "compute", quiet=True)
    bob = learner_file("bob")
    check("00.tiles", 1000, quiet=True)
    check("00.tiles", 999, quiet=True)
    with bob.open("a") as f:
        f.write('{"learner": "bob", "exercise": "00.ti\n["not", "a verdict"]\n')
    return tmp_path / "home"


def test_gathering_builds_the_class_table(two_learners):
    rows, wrong = gather.table([two_learners])
    assert rows == [{"learner": "alice", "00.tiles": "✅", "00.bound": "❌"},
                    {"learner": "bob", "00.tiles": "❌", "00.bound": ""}]
    assert list(rows[0]) == ["learner", "00.tiles", "00.bound"]  # the course's order
    assert wrong["00.tiles"][0] == gather.WrongAnswer("1000 is too low.", 2, 2)
    assert wrong["00.tiles"][1] == gather.WrongAnswer("999 is too low.", 1, 1)
    assert [w.learners for w in wrong["00.bound"]] == [1]


def test_gathering_skips_and_counts_malformed_lines(two_learners):
    found = gather.gather([two_learners, two_learners / "bob" / ".course" / "progress.jsonl"])
    assert found.skipped_lines == 2
    assert len(found.files) == 2 and len(found.attempts) == 5  # bob's file read once
    counts = gather.exercise_counts(gather.class_rows(found), found.exercises)
    assert counts == {"00.tiles": {"solved": 1, "tried": 1}, "00.bound": {"solved": 0, "tried": 1}}


def test_cli_writes_the_table_and_the_picture(two_learners, tmp_path, capsys):
    out = tmp_path / "out"
    assert progress_command([str(two_learners)], out) == 0
    report = (out / "progress.md").read_text()
    assert "| learner | 00.tiles | 00.bound |" in report
    assert "| alice | ✅ | ❌ |" in report and "| bob | ❌ |  |" in report
    assert "2× by 2 learners: 1000 is too low." in report
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

    assert main(["progress", str(two_learners), "--out", str(tmp_path / "class")]) == 0
    assert (tmp_path / "class" / "progress.md").read_text() in capsys.readouterr().out
