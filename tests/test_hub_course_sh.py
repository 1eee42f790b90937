"""course.sh's part in a class: COURSE_BASE_PYTHON takes effect (a .venv made with another
interpreter is rebuilt with the one named, as a class on a machine whose Python sits under
/root needs), and the README's progress command works as written."""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys

import pytest

from course import ROOT
from course.tools.hub_accounts import learner_of


def interpreter(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import os, sys; print(os.path.realpath(sys.executable))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def two_pythons() -> tuple[str, str] | None:
    """This Python and another of version 3.11 or newer (Debian's), if the machine has one."""
    ours = interpreter(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    for other in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if (
            os.path.exists(other)
            and interpreter(other) != ours
            and subprocess.run(
                [other, "-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"],
                capture_output=True,
            ).returncode
            == 0
        ):
            return ours, interpreter(other)
    return None


@pytest.mark.skipif(two_pythons() is None, reason="needs a second Python 3.11+ with venv")
def test_course_base_python_rebuilds_a_venv_made_with_another(tmp_path):
    """course.sh itself, over an empty requirements list: the first setup makes .venv with
    one interpreter; naming another in COURSE_BASE_PYTHON rebuilds it with that one."""
    first, second = two_pythons()
    shutil.copy(ROOT / "course.sh", tmp_path / "course.sh")
    (tmp_path / "requirements.txt").write_text("# nothing: only the interpreter matters here\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("COURSE_PYTHON", "COURSE_VENV", "VIRTUAL_ENV")
    }

    def setup(base):
        return subprocess.run(
            ["bash", str(tmp_path / "course.sh"), "setup"],
            cwd=tmp_path,
            env={**env, "COURSE_BASE_PYTHON": base},
            capture_output=True,
            text=True,
            timeout=600,
        )

    assert setup(first).returncode == 0
    assert interpreter(str(tmp_path / ".venv" / "bin" / "python")) == first
    again = setup(second)
    assert again.returncode == 0, again.stderr
    assert f"COURSE_BASE_PYTHON names {second}: rebuilding it" in again.stderr
    assert interpreter(str(tmp_path / ".venv" / "bin" / "python")) == second
    same = setup(second)  # the same interpreter again: nothing rebuilt
    assert same.returncode == 0 and "rebuilding" not in same.stderr


def test_the_readmes_progress_command_works_as_written(tmp_path):
    readme = (ROOT / "README.md").read_text()
    commands = set(re.findall(r"\./course\.sh progress /home[^`\n]*", readme))
    assert commands == {"./course.sh progress /home"}, commands
    home = tmp_path / "home"
    (home / "ann" / ".course").mkdir(parents=True)
    (home / "ann" / ".course" / "progress.jsonl").write_text(
        json.dumps(
            {
                "learner": learner_of(pwd.getpwuid(os.geteuid()).pw_name),
                "exercise": "00.tiles",
                "verdict": "right",
            }
        )
        + "\n"
    )
    done = subprocess.run(
        ["bash", str(ROOT / "course.sh"), "progress", str(home), "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COURSE_PYTHON": sys.executable},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| 00.tiles |" in done.stdout and (tmp_path / "out" / "progress.md").exists()
