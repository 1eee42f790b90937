"""The class hub against a hostile learner, through its own pages and a learner's terminal:
the hub started as the README says (`./course.sh hub`, NativeAuthenticator, an account per
learner), on free ports, with its state folder in an open folder (as /var/lib is).

Each test is an attack that worked before the hub was hardened:
* racing the teacher for the admin's name at the first start;
* signing up as an account of the machine (`root`, or one made for the test the way
  `ubuntu` exists on a rented GPU machine), which once ran a server as that account;
* one-character passwords, and guessing the teacher's password without end;
* reading the hub's database (every password's hash), its cookie secret and the class
  report as a learner, from a shell of their own account;
* a first login on a machine whose Python learners cannot run: a bare "500" before.

The tests that create Unix accounts need root (they remove them again); without root they
say so and skip.
"""

import html
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import requests

from .test_hub import (
    PASSWORD,
    TEACHER_PASSWORD,
    approve,
    free_port,
    log_in,
    proxy_binary,
    running_hub,
    sign_up,
    try_log_in,
)

NO_ROOT = (
    ""
    if os.geteuid() == 0 and shutil.which("useradd")
    else "creating a learner's Unix account needs root and useradd"
)
LOCKOUT = 10  # the window of wrong passwords (300 in a class): six tries fit in it, loaded


@pytest.fixture(scope="module")
def open_folder():
    """A folder every account may enter, like /var/lib: what is private inside it must be
    made so by the hub."""
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="course-hub-test-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def machine_account():
    """An account of this machine that is not the hub's, as `ubuntu` is on a rented GPU
    machine (with sudo there). Removed after."""
    if NO_ROOT:
        yield None
        return
    name = f"ct{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--create-home", "--shell", "/bin/sh", name],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        yield name
    finally:
        subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def class_hub(tmp_path_factory, open_folder):
    """A class hub as the README starts it, whose learners' Python sits in a folder only
    root can open (a Python under /root, as pyenv installs it)."""
    tmp = tmp_path_factory.mktemp("class-hub")
    closed = open_folder / "root-only"
    closed.mkdir(mode=0o700)
    python = closed / "python3"
    shutil.copy(os.path.realpath(sys.executable), python)
    with running_hub(
        tmp,
        users="system",
        native=True,
        state=open_folder / "state",
        env={"COURSE_HUB_PYTHON": str(python), "COURSE_HUB_LOCKOUT_SECONDS": str(LOCKOUT)},
    ) as (base, _):
        yield base, tmp / "hub.log", open_folder / "state"


def learners_info(state: Path) -> set[str]:
    """The names NativeAuthenticator holds a password for."""
    with sqlite3.connect(state / "jupyterhub.sqlite") as db:
        return {name for (name,) in db.execute("select username from users_info")}


def test_the_hub_does_not_open_before_the_teacher_has_a_password(tmp_path):
    """JupyterHub started on the class configuration without the teacher's account: it
    stops before listening, and says how to start it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_HUB_")}
    env.update(
        COURSE_HUB_STATE=str(tmp_path / "state"),
        COURSE_HUB_PORT=str(port),
        COURSE_HUB_HUB_PORT=str(free_port()),
        COURSE_HUB_USERS="shared",
        COURSE_HUB_PROXY_API_PORT=str(free_port()),
        PATH=os.path.dirname(proxy_binary()) + os.pathsep + os.environ["PATH"],
    )
    from course import ROOT

    hub = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(ROOT / "hub" / "jupyterhub_config.py")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, said = hub.communicate(timeout=300)
    except subprocess.TimeoutExpired:  # it started: stop it as a teacher would (Ctrl-C)
        hub.terminate()
        _, said = hub.communicate(timeout=60)
    assert hub.returncode != 0
    assert "has no password yet" in said and "./course.sh hub" in said
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/hub/api", timeout=5)


def test_racing_for_the_teachers_name_loses(class_hub):
    base, _, state = class_hub
    said = sign_up(base, "teacher", "the racer's password 1")
    assert "already in use" in said
    assert not try_log_in(base, "teacher", "the racer's password 1")[1]
    assert try_log_in(base, "teacher", TEACHER_PASSWORD)[1]
    assert learners_info(state) >= {"teacher"}


def test_signing_up_as_root_or_an_account_of_the_machine_gets_nothing(class_hub, machine_account):
    base, _, state = class_hub
    root_course = "/root/course"  # lexists: False where /root cannot be opened (not root)
    before = os.path.lexists(root_course)
    names = ["root"] + ([machine_account] if machine_account else [])
    for name in names:
        said = sign_up(base, name, "a long enough password 7")
        assert "is an account of this machine" in said or "is reserved" in said, said
        teacher = log_in(base, "teacher", TEACHER_PASSWORD)
        approve(base, teacher, name)  # the teacher approves anyway
        assert not try_log_in(base, name, "a long enough password 7")[1]
    assert not learners_info(state) & set(names)  # no password kept for any of them
    for name in names:
        assert subprocess.run(["id", f"course-{name}"], capture_output=True).returncode != 0
    assert os.path.lexists(root_course) == before  # no notebooks written into root's home


def test_short_and_common_passwords_are_refused(class_hub):
    base, _, state = class_hub
    assert "at least 10 characters" in sign_up(base, "ola", "x")
    assert "at least 10 characters" in sign_up(base, "ola", "1234567890")  # a common one
    assert "ola" not in learners_info(state)
    assert "sent to the admin" in sign_up(base, "ola", "ola's own long password")


def test_guessing_the_teachers_password_locks_the_name_for_a_while(class_hub):
    base, _, _ = class_hub
    for attempt in range(6):
        assert not try_log_in(base, "teacher", f"guess number {attempt}")[1]
    assert not try_log_in(base, "teacher", TEACHER_PASSWORD)[1]  # locked, even the right one
    time.sleep(LOCKOUT + 1.5)
    assert try_log_in(base, "teacher", TEACHER_PASSWORD)[1]


def test_a_first_login_where_learners_cannot_run_python_says_what_to_do(class_hub):
    base, log, _ = class_hub
    assert "course hub: WARNING: learners' accounts cannot run the course" in log.read_text()
    sign_up(base, "pia", "pia's own long password")
    approve(base, log_in(base, "teacher", TEACHER_PASSWORD), "pia")
    learner = log_in(base, "pia", "pia's own long password")
    page = learner.get(f"{base}/hub/spawn", timeout=60)
    assert page.status_code >= 500
    said = html.unescape(page.text)
    assert "learners' accounts cannot run the course" in said
    assert "root-only is closed to other accounts" in said
    assert "COURSE_BASE_PYTHON=/usr/bin/python3 ./course.sh hub" in said


@pytest.mark.skipif(bool(NO_ROOT), reason=NO_ROOT or "-")
def test_a_learner_cannot_read_the_hubs_state_or_the_class_report(
    class_hub, machine_account, open_folder, tmp_path
):
    """From a shell of a learner's account: the password hashes, the cookie secret and the
    teacher's report stay closed."""
    _, _, state = class_hub
    hub_secrets = [state / "jupyterhub.sqlite", state / "jupyterhub_cookie_secret"]
    assert all(path.exists() for path in hub_secrets)
    for path in hub_secrets:
        done = as_account(machine_account, f"cat '{path}' > /dev/null")
        assert done.returncode != 0 and "Permission denied" in done.stderr, path
    assert as_account(machine_account, f"ls '{state}'").returncode != 0

    from course.tools import class_progress_report

    home = tmp_path / "home" / "ann" / ".course"
    home.mkdir(parents=True)
    (home / "progress.jsonl").write_text(
        '{"learner": "ann", "exercise": "00.tiles", "verdict": "wrong", "hint": "too low"}\n'
    )
    report = open_folder / "classroom"
    assert class_progress_report.progress([str(tmp_path / "home")], report, "folder") == 0
    for path in (report / "progress.md", report / "progress.png"):
        done = as_account(machine_account, f"cat '{path}' > /dev/null")
        assert done.returncode != 0 and "Permission denied" in done.stderr, path


def as_account(name: str, command: str) -> subprocess.CompletedProcess:
    """A shell command as account `name`, as in a terminal of theirs."""
    return subprocess.run(
        ["su", name, "--shell", "/bin/sh", "--command", command],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(bool(NO_ROOT), reason=NO_ROOT or "-")
def test_the_admin_api_cannot_make_a_learner_of_an_account_of_the_machine(
    tmp_path, machine_account
):
    """Even added by hand (the admin page, the REST API) or logging in with the hub's
    password, an account of the machine never becomes a learner's."""
    with running_hub(tmp_path, users="system") as (base, admin):
        for name in ("root", machine_account):
            added = requests.post(f"{base}/hub/api/users/{name}", headers=admin, timeout=30)
            assert added.status_code == 400, (name, added.status_code)
            assert not try_log_in(base, name, PASSWORD)[1]
        assert not any(Path("/home").glob(f"course-{machine_account}"))
