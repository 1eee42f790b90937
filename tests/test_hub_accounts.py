"""course.tools.hub without a hub running: the check that learners' accounts can run the
course (a course under /root fails every learner), on folders made for the purpose."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("jupyterhub", reason="jupyterhub is not installed here: course.tools.hub "
                                         "builds on its spawners (requirements.txt)")

from course.tools.hub import unreadable_for_learners  # noqa: E402


def test_a_closed_folder_or_an_unreadable_file_on_the_way_is_named():
    base = Path(tempfile.mkdtemp(dir="/tmp"))  # /tmp is open to everyone, like /opt
    try:
        os.chmod(base, 0o755)
        course = base / "opt" / "course"
        course.mkdir(parents=True)
        (course / "x.py").write_text("")
        os.chmod(base / "opt", 0o700)  # like /root
        assert unreadable_for_learners([course / "x.py"]) == \
            f"{base / 'opt'} is closed to other accounts (needed for {course / 'x.py'})"
        os.chmod(base / "opt", 0o755)
        os.chmod(course / "x.py", 0o600)
        assert unreadable_for_learners([course / "x.py"]) == \
            f"{course / 'x.py'} cannot be read by other accounts"
        os.chmod(course / "x.py", 0o644)
        assert unreadable_for_learners([course / "x.py"]) == ""
    finally:
        shutil.rmtree(base)


def test_the_hub_copies_notebooks_into_a_home_but_never_through_a_link(tmp_path):
    from course.tools.hub import prepare_home

    report = prepare_home(tmp_path / "ann")
    assert len(report.new) == 14 and (tmp_path / "ann" / "course" / "00_orientation.ipynb").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "course").symlink_to(elsewhere)
    assert "is a link" in prepare_home(tmp_path / "bob")
    assert not any(elsewhere.iterdir())
