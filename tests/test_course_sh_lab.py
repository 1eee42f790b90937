"""`./course.sh lab` opens the course on this machine, also as root (the normal user in a
container or on a rented GPU machine, where JupyterLab refuses to start unless told)."""

import os
import re
import signal
import subprocess
import sys
import time

from course import ROOT

STARTUP_S = 90


def test_course_sh_lab_starts_jupyterlab_here(tmp_path):
    # no user configuration: a folder that does not exist yet (Jupyter makes it; an account
    # other than root cannot make /nonexistent, as in the learners' image)
    env = dict(
        os.environ, COURSE_PYTHON=sys.executable, JUPYTER_CONFIG_DIR=str(tmp_path / "no-config")
    )
    proc = subprocess.Popen(
        [
            "bash",
            str(ROOT / "course.sh"),
            "lab",
            "--no-browser",
            "--port=0",
            "--ServerApp.token=",
            "--ServerApp.open_browser=False",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen = []
    try:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if re.search(r"is running at|http://127\.0\.0\.1:\d+/lab", line):
                break
        text = "".join(seen)
        assert "Running as root is not recommended" not in text, text
        assert re.search(r"is running at|http://127\.0\.0\.1:\d+/lab", text), text
        if os.geteuid() == 0:
            assert proc.poll() is None, "JupyterLab exited as root:\n" + text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
