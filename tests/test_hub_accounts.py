"""course.tools.hub and hub_accounts without a hub running: the check that learners'
accounts can run the course (a course under /root fails every learner), on folders made for
the purpose, and which Unix account a learner gets (root only: made and removed here)."""

import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

pytest.importorskip(
    "jupyterhub",
    reason="jupyterhub is not installed here: course.tools.hub "
    "builds on its spawners (requirements.txt)",
)

from course.tools.hub import unreadable_for_learners  # noqa: E402


def test_a_closed_folder_or_an_unreadable_file_on_the_way_is_named():
    base = Path(tempfile.mkdtemp(dir="/tmp"))  # /tmp is open to everyone, like /opt
    try:
        os.chmod(base, 0o755)
        course = base / "opt" / "course"
        course.mkdir(parents=True)
        (course / "x.py").write_text("")
        os.chmod(base / "opt", 0o700)  # like /root
        assert (
            unreadable_for_learners([course / "x.py"])
            == f"{base / 'opt'} is closed to other accounts (needed for {course / 'x.py'})"
        )
        os.chmod(base / "opt", 0o755)
        os.chmod(course / "x.py", 0o600)
        assert (
            unreadable_for_learners([course / "x.py"])
            == f"{course / 'x.py'} cannot be read by other accounts"
        )
        os.chmod(course / "x.py", 0o644)
        assert unreadable_for_learners([course / "x.py"]) == ""
    finally:
        shutil.rmtree(base)


def test_the_hub_copies_notebooks_into_a_home_but_never_through_a_link(tmp_path):
    from course.catalogue import written_lessons
    from course.tools.hub import prepare_home

    report = prepare_home(tmp_path / "ann")
    assert len(report.new) == len(written_lessons())  # every notebook on disk, none missing
    assert (tmp_path / "ann" / "course" / "00_orientation.ipynb").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "course").symlink_to(elsewhere)
    assert "is a link" in prepare_home(tmp_path / "bob")
    assert not any(elsewhere.iterdir())


def test_names_that_must_never_become_a_learners_account_are_refused(tmp_path):
    from course.tools.hub_accounts import refusal

    assert refusal("alice") == ""
    assert "is an account of this machine" in refusal("bin")  # every Debian has one
    for name in ("root", "admin", "course-bob", "jovyan"):
        assert "reserved" in refusal(name), name
    for name in ("", "Alice", "a b", "../x", "x" * 26, "1abc", "a/b"):
        assert "cannot be used" in refusal(name), name


NO_ROOT = "" if os.geteuid() == 0 and shutil.which("useradd") else "needs root and useradd"


@pytest.mark.skipif(bool(NO_ROOT), reason=NO_ROOT or "-")
def test_a_learner_gets_a_new_account_and_never_one_that_existed(tmp_path):
    """course-<name> is made by the hub, with a home only its learner can open, and reused
    at the next login; an account of that name the hub did not make is refused."""
    from course.tools import hub_accounts

    registry = tmp_path / "accounts.json"
    mine, planted = (f"ct{uuid.uuid4().hex[:6]}{who}" for who in "ab")
    subprocess.run(
        ["useradd", "--create-home", f"course-{planted}"], check=True, capture_output=True
    )
    try:
        account = hub_accounts.ensure_account(mine, registry)
        assert account.pw_name == f"course-{mine}"
        assert Path(account.pw_dir).stat().st_mode & 0o777 == 0o700
        assert hub_accounts.ensure_account(mine, registry).pw_uid == account.pw_uid
        assert registry.stat().st_mode & 0o777 == 0o600
        with pytest.raises(hub_accounts.AccountRefused, match="was not made by this hub"):
            hub_accounts.ensure_account(planted, registry)
        assert hub_accounts.learner_of(account.pw_name) == mine
    finally:
        for name in (f"course-{mine}", f"course-{planted}"):
            subprocess.run(["userdel", "--remove", name], capture_output=True)


def test_the_state_folder_is_closed_and_a_mistyped_one_is_refused(tmp_path):
    from course.tools.hub_admin import state_folder

    state = state_folder(tmp_path / "state")
    assert state.stat().st_mode & 0o777 == 0o700
    (state / "jupyterhub.sqlite").write_text("")
    os.chmod(state, 0o755)  # an older hub's, left open: closed again
    assert state_folder(state).stat().st_mode & 0o777 == 0o700
    home = tmp_path / "home"  # COURSE_HUB_STATE=/home by mistake
    (home / "alice").mkdir(parents=True)
    os.chmod(home, 0o755)
    with pytest.raises(SystemExit, match="holds more than the hub's state"):
        state_folder(home)
    assert home.stat().st_mode & 0o777 == 0o755
