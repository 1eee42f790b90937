"""The notebook copy a class hub makes at every server start, against a hostile learner:
the copy used to run as root in the learner's home (course.tools.hub.prepare_home), so

* a process of the learner's swapping ~/course for a link in a loop (renameat2 with
  RENAME_EXCHANGE) made root write notebooks and `.course-copy-*.tmp` files into a folder
  only root may write to (under /root, or /etc/bash_completion.d, which root's and a sudo
  account's shells run);
* a 3 GiB sparse notebook in ~/course made the hub read all 3 GiB.

Now the copy runs in a child process that is the learner (course.tools.learner_copy
.copy_as_owner) and reads no notebook bigger than learner_copy.MAX_FILE_BYTES. Each test
makes a learner's account the way the hub does (course.tools.hub_accounts) and removes it
after; without root they skip.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from course import ROOT
from course.tools import hub, hub_accounts, learner_copy
from course.tools.hub import prepare_home

NO_ROOT = (
    ""
    if os.geteuid() == 0 and shutil.which("useradd")
    else "creating a learner's Unix account needs root and useradd"
)
pytestmark = pytest.mark.skipif(bool(NO_ROOT), reason=NO_ROOT or "-")
# a Python the learner's account can run (this venv's may sit under /root, closed to them);
# the copy needs nothing but its standard library
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
RUNS = 30  # server starts raced; the unfixed copy wrote outside the home within a few
# a learner swapping ~/course with each link in turn, and back, as fast as it can
RACER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
os.chdir(sys.argv[1])
links = []
for number, target in enumerate(sys.argv[2:]):
    links.append(f"link-{number}".encode())
    os.symlink(target, links[-1])
print("racing", flush=True)
while True:
    for link in links:
        libc.renameat2(AT_FDCWD, b"course", AT_FDCWD, link, RENAME_EXCHANGE)
        libc.renameat2(AT_FDCWD, b"course", AT_FDCWD, link, RENAME_EXCHANGE)
"""
# prepare_home in a fresh process as the hub calls it: its own and its children's peak memory
# (a child forked from it starts with its size: the child's growth is child_peak - hub_before)
MEASURE = r"""
import json, resource, sys, time
from pathlib import Path
from course.tools.hub import prepare_home
peak = lambda who: resource.getrusage(who).ru_maxrss * 1024
before, started = peak(resource.RUSAGE_SELF), time.monotonic()
report = prepare_home(Path(sys.argv[1]), sys.argv[2])
print(json.dumps({"seconds": time.monotonic() - started, "hub_before": before,
                  "hub_grew": peak(resource.RUSAGE_SELF) - before,
                  "child_peak": peak(resource.RUSAGE_CHILDREN),
                  "yours": getattr(report, "yours", None), "report": str(report)}))
"""


@pytest.fixture
def open_folder():
    """A folder every account may enter, like /etc or /var/lib: what is closed inside it
    must be closed by its own mode."""
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="course-copy-attack-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def learner(tmp_path):
    """A learner's account and home, made as the hub makes them (course-<name>, home 700),
    with the course's notebooks copied once as at their first start; removed after."""
    name = f"atk{uuid.uuid4().hex[:8]}"
    account = hub_accounts.ensure_account(name, tmp_path / "accounts.json")
    try:
        first = prepare_home(Path(account.pw_dir), PYTHON)
        assert isinstance(first, learner_copy.SyncReport) and first.new, first
        yield account
    finally:
        subprocess.run(["userdel", "--remove", account.pw_name], capture_output=True, timeout=60)


def as_learner(account, argv, **kwargs) -> subprocess.Popen:
    """A process of the learner's own, as one started from their terminal."""
    return subprocess.Popen(
        argv,
        user=account.pw_uid,
        group=account.pw_gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": os.defpath},
        **kwargs,
    )


def notebook(text: str) -> str:
    cell = {"cell_type": "markdown", "metadata": {}, "source": [text]}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def emptied(folder_fd: int) -> None:
    """Every file of the learner's real course folder removed (by its handle, whatever name
    the racer gave it), so that the next start copies every notebook again."""
    for name in os.listdir(folder_fd):
        os.unlink(name, dir_fd=folder_fd)


def test_a_learner_racing_the_copy_with_links_cannot_make_it_write_outside_their_home(
    learner, open_folder
):
    """Root's folders the learner aims ~/course at, between and during the copies of 30
    server starts: a root-only folder (as under /root) and a root-owned one every account
    may read (as /etc/bash_completion.d). Nothing may appear in either."""
    root_only = open_folder / "root-only"
    root_only.mkdir(mode=0o700)
    root_owned = open_folder / "bash_completion.d"
    root_owned.mkdir(mode=0o755)
    home = Path(learner.pw_dir)
    course_fd = os.open(home / "course", os.O_RDONLY | os.O_DIRECTORY)
    racer = as_learner(
        learner,
        [PYTHON, "-I", "-c", RACER, str(home), str(root_only), str(root_owned)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert racer.stdout.readline().strip() == "racing"
        reports = []
        for _ in range(RUNS):
            emptied(course_fd)
            time.sleep(0.05)  # the racer's turn on a busy machine, as between server starts
            reports.append(str(prepare_home(home, PYTHON)))
            assert racer.poll() is None, "the racer stopped"
    finally:
        racer.kill()
        racer.wait()
        os.close(course_fd)
    written = sorted(os.listdir(root_only)) + sorted(os.listdir(root_owned))
    assert written == [], f"root wrote {len(written)} files outside the home: {written[:5]}"
    print("\n".join(["", *reports]))


def test_a_3_gib_sparse_notebook_is_the_learners_and_never_read(learner):
    """One of the course's notebooks in ~/course made a 3 GiB sparse file (it costs the
    learner no disk): the next start leaves it as it is, within little memory and time."""
    home = Path(learner.pw_dir)
    big = home / "course" / learner_copy.course_notebooks(hub.NOTEBOOKS)[0].name
    truncate = as_learner(learner, ["truncate", "--size", "3G", str(big)])
    assert truncate.wait(timeout=60) == 0
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE, str(home), PYTHON],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert measured.returncode == 0, measured.stderr
    took = json.loads(measured.stdout.splitlines()[-1])
    print(f"\nprepare_home with a 3 GiB sparse notebook: {took}")
    assert big.name in took["yours"], took["report"]
    assert big.stat().st_size == 3 * 2**30  # left as the learner made it
    assert took["hub_grew"] < 64 * 2**20, took
    assert took["child_peak"] - took["hub_before"] < 256 * 2**20, took
    assert took["seconds"] < 20, took


def test_a_first_copy_and_an_update_through_the_hub_belong_to_the_learner(
    learner, open_folder, monkeypatch
):
    """Not an attack: the copy as the learner still copies every notebook at the first start
    and, when the course moves on, updates an untouched one and offers the new version
    beside an edited one, all files the learner's own."""
    course = open_folder / "notebooks"
    course.mkdir()
    for name in ("00_a.ipynb", "01_b.ipynb"):
        (course / name).write_text(notebook("the course's cell"))
    mine = notebook("the learner's own cell")
    monkeypatch.setattr(hub, "NOTEBOOKS", course)
    home = Path(learner.pw_dir) / "fresh"
    home.mkdir(mode=0o700)
    os.chown(home, learner.pw_uid, learner.pw_gid)
    first = prepare_home(home, PYTHON)
    assert first.new == ["00_a.ipynb", "01_b.ipynb"], first
    edited = home / "course" / "01_b.ipynb"
    edit = as_learner(learner, [PYTHON, "-c", f"open({str(edited)!r}, 'w').write({mine!r})"])
    assert edit.wait(timeout=60) == 0
    for name in ("00_a.ipynb", "01_b.ipynb"):
        (course / name).write_text(notebook("the course's new cell"))
    second = prepare_home(home, PYTHON)
    assert second.updated == ["00_a.ipynb"] and len(second.offered) == 1, second
    made = [home / "course", *(home / "course").iterdir()]
    assert {(p.stat().st_uid, p.stat().st_gid) for p in made} == {(learner.pw_uid, learner.pw_gid)}
