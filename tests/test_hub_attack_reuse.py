"""A learner deleted by the teacher, and someone else signing up under the same name: before,
the Unix account course-<name> and its home stayed, and the new learner was handed them,
reading (and owning) everything the old one left. Now the deleted learner's account is
retired (course.tools.hub_accounts.retire): processes killed, home archived where only root
can look, account removed; the next sign-up gets a new account, an empty home and a uid no
one had. Each test is that attack, by one road or another:

* deleted, then signed up again (here by the hook, at the end through the real hub's admin
  API);
* a home that is a link (root must move the link, never what it points to);
* an account older than the hub user asking for it (a hub database started afresh);
* a home left at the account's path (an account removed by hand), which useradd reuses.

Root only: the tests make Unix accounts and remove them again.
"""

import os
import pwd
import shutil
import signal
import tempfile
import time
import subprocess
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from course.tools import hub_accounts

NO_ROOT = (
    ""
    if os.geteuid() == 0 and shutil.which("useradd") and shutil.which("userdel")
    else "a learner's Unix account needs root, useradd and userdel"
)
pytestmark = pytest.mark.skipif(bool(NO_ROOT), reason=NO_ROOT or "-")
SECRET = "the first alice's diary\n"


@pytest.fixture
def name():
    """A learner name no account has; whatever account of it a test leaves is removed."""
    learner = f"ct{uuid.uuid4().hex[:6]}r"
    yield learner
    for _ in range(25):  # a process just killed may hold the account for a moment
        if not hub_accounts.account_exists(f"course-{learner}"):
            break
        subprocess.run(["userdel", "--remove", f"course-{learner}"], capture_output=True)
        time.sleep(0.2)
    home = Path("/home") / f"course-{learner}"
    if home.is_symlink():  # a test's link, left if the test failed: the link only
        home.unlink()


def leave_a_secret(account: pwd.struct_passwd) -> Path:
    """A private file of the learner's in their home, as they would write it."""
    path = Path(account.pw_dir) / "diary.txt"
    path.write_text(SECRET)
    os.chown(path, account.pw_uid, account.pw_gid)
    os.chmod(path, 0o600)
    return path


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def assert_fresh(account: pwd.struct_passwd, old: pwd.struct_passwd) -> None:
    """A new learner's account: another uid, and a real home without the old one's files."""
    home = Path(account.pw_dir)
    assert account.pw_uid != old.pw_uid
    assert not home.is_symlink() and home.is_dir()
    assert not (home / "diary.txt").exists()
    assert home.stat().st_uid == account.pw_uid and home.stat().st_mode & 0o777 == 0o700


def assert_root_only(folder: Path) -> None:
    info = os.lstat(folder)
    assert info.st_uid == 0 and info.st_mode & 0o777 == 0o700, oct(info.st_mode)


def test_a_deleted_learners_name_signed_up_again_gets_a_new_empty_home(tmp_path, name):
    """Deleted, then signed up again: a process the old learner left running dies, the old
    home sits in a root-only archive, the new account starts empty under another uid."""
    registry = tmp_path / "accounts.json"
    old = hub_accounts.ensure_account(name, registry)
    leave_a_secret(old)
    leftover = subprocess.Popen(  # `nohup sleep &` from a terminal: outlives the server
        ["setsid", "sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
        user=old.pw_uid,
        group=old.pw_gid,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    sleeper = int(leftover.communicate(timeout=30)[0])
    try:
        archived = hub_accounts.retire(name, registry)  # the teacher deleted the learner
        assert not alive(sleeper)
    finally:
        if alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)
    assert not hub_accounts.account_exists(f"course-{name}")
    assert f"course-{name}" not in hub_accounts.load_registry(registry)
    assert archived.parent == tmp_path / "retired"
    assert_root_only(archived.parent)
    assert (archived / "diary.txt").read_text() == SECRET  # kept for the teacher
    new = hub_accounts.ensure_account(name, registry)
    assert_fresh(new, old)


def test_a_home_that_is_a_link_is_archived_as_the_link_and_never_followed(tmp_path, name):
    """The account's home is a link to a folder elsewhere: retiring it moves the link
    into the archive and leaves the folder it points to where it is, as it was."""
    registry = tmp_path / "accounts.json"
    old = hub_accounts.ensure_account(name, registry)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (elsewhere / "keep.txt").write_text("not the learner's\n")
    shutil.rmtree(old.pw_dir)
    os.symlink(elsewhere, old.pw_dir)

    archived = hub_accounts.retire(name, registry)

    assert archived.is_symlink() and os.readlink(archived) == str(elsewhere)
    assert (elsewhere / "keep.txt").read_text() == "not the learner's\n"
    assert elsewhere.stat().st_mode & 0o777 == 0o755 and elsewhere.stat().st_uid == 0
    assert not os.path.lexists(old.pw_dir)
    assert_fresh(hub_accounts.ensure_account(name, registry), old)


def test_an_account_older_than_its_hub_user_is_not_handed_to_the_new_user(tmp_path, name):
    """The hub's database started afresh (or a deletion the hub missed): the hub user is
    newer than the account the registry has for the name, so the account was another
    person's. Asked with the hub user's creation time (JupyterHub's naive UTC), it is
    retired first; asked by the user it was made for, it is kept."""
    registry = tmp_path / "accounts.json"
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    old = hub_accounts.ensure_account(name, registry, since=now)
    leave_a_secret(old)
    assert hub_accounts.ensure_account(name, registry, since=now).pw_uid == old.pw_uid

    new = hub_accounts.ensure_account(name, registry, since=now + timedelta(minutes=5))

    assert_fresh(new, old)
    (archived,) = (tmp_path / "retired").iterdir()
    assert (archived / "diary.txt").read_text() == SECRET


def test_a_home_left_at_the_accounts_path_is_archived_not_reused(tmp_path, name):
    """The account removed by hand without its home (userdel without --remove): useradd
    hands an existing home to the new account of the name (and often the old uid with
    it); the hub archives it first."""
    registry = tmp_path / "accounts.json"
    old = hub_accounts.ensure_account(name, registry)
    leave_a_secret(old)
    subprocess.run(["userdel", old.pw_name], check=True, capture_output=True)

    new = hub_accounts.ensure_account(name, registry)

    assert_fresh(new, old)
    (archived,) = (tmp_path / "retired").iterdir()
    assert_root_only(archived.parent)
    assert (archived / "diary.txt").read_text() == SECRET


def test_the_teacher_deletes_a_learner_on_the_hub_and_the_name_signs_up_again(tmp_path, name):
    """Through the real hub: the learner logs in, their server starts (their account is
    made), they leave a file; the teacher deletes them (the admin API that /hub/admin
    uses); someone logs in under the same name: their server starts in a new, empty home,
    and the old one is in the hub's state folder, root's only."""
    pytest.importorskip("jupyterhub", reason="the hub test needs JupyterHub (requirements.txt)")
    import requests

    from .test_hub import learner_python, log_in, running_hub, start_server

    open_folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="course-hub-test-"))
    os.chmod(open_folder, 0o755)  # the learners' Python goes here, where they can run it
    try:
        python, why_not = learner_python(open_folder)
        if not python:
            pytest.skip(why_not)
        with running_hub(tmp_path, "system", env={"COURSE_HUB_PYTHON": python}) as hub:
            base, admin = hub
            log_in(base, name)
            start_server(base, admin, name)
            old = pwd.getpwnam(f"course-{name}")
            leave_a_secret(old)

            gone = requests.delete(f"{base}/hub/api/users/{name}", headers=admin, timeout=120)
            assert gone.status_code == 204, gone.text

            log_in(base, name)
            start_server(base, admin, name)
            assert_fresh(pwd.getpwnam(f"course-{name}"), old)
    finally:
        shutil.rmtree(open_folder, ignore_errors=True)
    (archived,) = (tmp_path / "hub" / "retired").iterdir()
    assert_root_only(archived.parent)
    assert (archived / "diary.txt").read_text() == SECRET
