"""Attacks on the teacher's progress table (issue 39): root reads the learners' progress
files (`./course.sh progress /home`), and a learner chooses what is in them and where they
point. Each test is an attack that worked on the table before the fix:

* a 64 GiB sparse file crashed the report (MemoryError) and 40,000 exercise ids took it
  minutes and drew a picture 880,388 pixels wide;
* a learner swapping a folder of her home with a link to another learner's, in a loop,
  made root read the other learner's file through her path;
* an exercise id (or a folder name) with newlines and table markup printed fake rows, a
  hint passed raw HTML into progress.md, and an id with mathtext broke the picture.

The tests that race a real second account create Unix accounts (root only) and remove them.
"""

import json
import os
import re
import struct
import subprocess
import time
import tracemalloc

import mistune
import pytest

from course.tools import class_progress as gather
from course.tools.class_progress_report import progress as progress_command
from tests.test_classroom import NO_ACCOUNTS, as_learner, two_accounts  # noqa: F401

LINES = 10_000  # the README's cap on the lines read of one learner's files


def line(learner, exercise, verdict="wrong", hint=""):
    return json.dumps({"learner": learner, "exercise": exercise, "verdict": verdict, "hint": hint})


def write(path, *lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write("".join(text + "\n" for text in lines))
    return path


def png_size(path):
    """(width, height) in pixels, from the PNG's header."""
    return struct.unpack(">II", path.read_bytes()[16:24])


def test_a_sparse_64_gib_progress_file_is_read_only_up_to_the_cap(tmp_path):
    """The attack: `truncate -s 64G ~/.course/progress.jsonl` after one real line. The
    report read it whole (MemoryError, no report for anyone); now it reads a few MiB, keeps
    the real line and says the file was cut."""
    home = tmp_path / "home"
    huge = write(home / "eve" / ".course" / "progress.jsonl", line("eve", "00.tiles"))
    write(home / "ann" / ".course" / "progress.jsonl", line("ann", "00.tiles", "right"))
    subprocess.run(["truncate", "-s", "64G", str(huge)], check=True)
    gather.course_exercise_ids()  # the catalogue's imports are not the read's memory
    tracemalloc.start()
    started = time.perf_counter()
    try:
        found = gather.gather([home], gather.by_folder(home))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB held at once"
    assert len(found.attempts) == 2
    assert progress_command([str(home)], tmp_path / "out", learner_from="folder") == 0
    report = (tmp_path / "out" / "progress.md").read_text()
    assert "| ann | ✅ |" in report and "| eve | ❌ |" in report
    (cut,) = [text for text in report.splitlines() if "eve/.course/progress.jsonl" in text]
    assert "cut" in cut and "64.0 GiB" in cut


def test_40000_exercise_ids_are_refused_and_the_lines_read_are_capped(tmp_path):
    """The attack: 40,000 distinct exercise ids in one's own file took the report 4 min and
    drew a PNG 880,388 pixels wide. Ids the course does not have are left out and counted,
    the lines read per learner are capped (and the cut said), so the table's columns are
    only the course's exercises."""
    home = tmp_path / "home"
    ids = [f"99.fake{i:05d}" for i in range(40_000)]
    write(
        home / "eve" / ".course" / "progress.jsonl",
        line("eve", "00.tiles"),
        *(line("eve", id) for id in ids),
    )
    started = time.perf_counter()
    assert progress_command([str(home)], tmp_path / "out", learner_from="folder") == 0
    assert time.perf_counter() - started < 30
    report = (tmp_path / "out" / "progress.md").read_text()
    assert "| learner | 00.tiles |" in report
    assert "99.fake" not in report
    cap = LINES
    assert f"{cap - 1} line(s) ignored: unknown exercise" in report
    assert f"only the first {cap} lines read" in report
    width, _ = png_size(tmp_path / "out" / "progress.png")
    assert width < 100 * (0.22 * len(gather.course_exercise_ids()) + 4)


def test_the_line_cap_is_per_learner_across_files_and_spares_the_others(tmp_path):
    """The attack: the lines spread over many progress files of one's home. The cap counts a
    learner's lines in all their files; another learner's file is still read whole."""
    home = tmp_path / "home"
    per_file = LINES // 2 + 1
    for folder in "abc":
        write(
            home / "eve" / folder / "progress.jsonl",
            *(line("eve", "00.tiles", hint=f"{folder}{i}") for i in range(per_file)),
        )
    write(home / "ann" / ".course" / "progress.jsonl", line("ann", "00.tiles", "right"))
    found = gather.gather([home], gather.by_folder(home))
    by_learner = {}
    for attempt in found.attempts:
        by_learner[attempt.learner] = by_learner.get(attempt.learner, 0) + 1
    assert by_learner == {"eve": LINES, "ann": 1}


def rows_of(report: str) -> list[str]:
    """The first cell of every row of the class table, as a markdown renderer sees it."""
    html = mistune.create_markdown(plugins=["table"])(report)
    return re.findall(r"<tr>\s*<td[^>]*>(.*?)</td>", html, flags=re.S)


def test_a_learner_cannot_fake_rows_or_pass_html_into_the_report(tmp_path, capsys):
    """The attack: an exercise id, a verdict and a folder name holding newlines and table
    markup (fake rows: mallory all ✅), a hint holding HTML, an id holding mathtext. None of
    it reaches the table or the picture: unknown ids and verdicts are counted and left out,
    every field is escaped."""
    home = tmp_path / "home"
    fake = "\n| mallory | ✅ | ✅ |\n| mallory2 | ✅ |\n"
    html = '<img src="/hub/authorize/mallory"><script>alert(1)</script>'
    write(
        home / "eve" / ".course" / "progress.jsonl",
        line("eve", "00.tiles", hint=html),
        line("eve", f"00.tiles{fake}"),
        line("eve", "00.bound", f"right{fake}"),
    )
    odd = home / "eve" / f"x{fake}<b>"
    odd.mkdir()
    os.mkfifo(odd / "progress.jsonl")  # reported as unreadable, with its path
    assert progress_command([str(home)], tmp_path / "out", learner_from="folder") == 0
    printed = capsys.readouterr().out
    report = (tmp_path / "out" / "progress.md").read_text()
    assert report.strip() in printed
    assert rows_of(report) == [
        "eve",
        *(f"<strong>{gather.LABELS[v]}</strong>" for v in gather.VERDICTS),
    ]
    assert not [text for text in report.splitlines() if text.startswith("| mallory")]
    rendered = mistune.create_markdown(plugins=["table"])(report)
    assert "<img" not in rendered and "<script" not in rendered and "<b>" not in rendered
    assert "1 line(s) ignored: unknown exercise" in report
    assert "1 line(s) ignored: unknown verdict" in report


def test_an_exercise_id_holding_mathtext_does_not_stop_the_report(tmp_path):
    """The attack: an exercise id `$\\undefinedcommand{$`. It became a label of the picture,
    matplotlib parsed it as mathtext and raised, and the teacher got no picture; now the id
    is refused (the course has no such exercise) and counted."""
    home = tmp_path / "home"
    write(
        home / "eve" / ".course" / "progress.jsonl",
        line("eve", "00.tiles"),
        line("eve", r"$\undefinedcommand{$"),
    )
    assert progress_command([str(home)], tmp_path / "out", learner_from="folder") == 0
    assert png_size(tmp_path / "out" / "progress.png")[0] > 0
    assert "1 line(s) ignored: unknown exercise" in (tmp_path / "out" / "progress.md").read_text()


def test_figure_labels_are_plain_text(tmp_path):
    """Whatever reaches the picture is drawn as text, never parsed as mathtext: a label
    with a broken `$...$` used to stop the picture (and the report) with a ValueError."""
    counts = {r"$\undefinedcommand{$": {v: 1 for v in gather.VERDICTS}}
    from course.tools.class_progress_report import save_progress_figure

    path = save_progress_figure(counts, 1, tmp_path / "p.png")
    assert png_size(path)[0] > 0


RACER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
os.symlink(sys.argv[2], ".swap")
for i in range(3000):  # folders the search walks after finding ~/.course: a longer window
    os.makedirs(f"work/{i}", exist_ok=True)
print("racing", flush=True)
end = time.time() + float(sys.argv[3])
while time.time() < end:  # RENAME_EXCHANGE: ~/.course and the link trade places
    if libc.renameat2(-100, b".course", -100, b".swap", 2) != 0:
        sys.exit(f"renameat2: {os.strerror(ctypes.get_errno())}")
"""


SYSTEM_PYTHON = "/usr/bin/python3"  # the racer runs as the learner, who cannot reach root's venv


@pytest.mark.skipif(bool(NO_ACCOUNTS), reason=NO_ACCOUNTS or "-")
@pytest.mark.skipif(
    not os.access(SYSTEM_PYTHON, os.X_OK), reason=f"no {SYSTEM_PYTHON} to race with"
)
def test_a_racing_learner_cannot_make_root_read_another_learners_file(two_accounts):  # noqa: F811
    """The attack: learner A, in a loop, swaps her ~/.course with a link to learner B's
    ~/.course (renameat2 RENAME_EXCHANGE) while the teacher gathers A's home. Root used to
    follow the link on the way (only the last part of the path was opened without
    following links) and read B's wrong answers into the report. Now no run's report holds
    anything of B's."""
    a, b = two_accounts
    alice, bob = (gather.learner_of(account.pw_name) for account in two_accounts)
    as_learner(
        a,
        f"mkdir -p ~/.course && echo '{line(alice, '00.tiles', hint='alice-own')}'"
        " >> ~/.course/progress.jsonl",
    )
    as_learner(
        b,
        f"mkdir -p ~/.course && echo '{line(bob, '00.tiles', hint='BOB-SECRET')}'"
        " >> ~/.course/progress.jsonl",
    )
    racer = subprocess.Popen(
        [SYSTEM_PYTHON, "-c", RACER, a.pw_dir, f"{b.pw_dir}/.course", "120"],
        user=a.pw_uid,
        group=a.pw_gid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert racer.stdout.readline().strip() == "racing"
        reports = [gather.markdown_report(gather.gather([a.pw_dir])) for _ in range(60)]
        assert racer.poll() is None, "the racer stopped before the runs were done"
    finally:
        racer.kill()
        racer.wait()
    leaked = [r for r in reports if "BOB-SECRET" in r or f"| {bob} |" in r]
    assert not leaked, f"{len(leaked)} of {len(reports)} reports hold B's file:\n{leaked[0]}"
    assert any("alice-own" in r for r in reports)  # A's own file is still read
