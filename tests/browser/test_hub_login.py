"""A learner on the class hub, in Chromium: the login page, their own JupyterLab on their
copy of the notebooks, notebook 00 run top to bottom, exercise checks included, and saved
(File > Save Notebook) without an edit; the course's next version still reaches it. The
hub, its proxy and the learner's server are real (tests/test_hub.py starts them)."""

import json
import re
import shutil
import time

from course import ROOT
from course.tools import learner_copy

from ..test_hub import PASSWORD, running_hub
from .jupyterlab import (
    TIMEOUT_MS,
    LabServer,
    NotebookPage,
    launch_chromium,
    screenshot,
)


class LearnersLab:
    """What NotebookPage needs of a server: where a notebook opens, here in the learner's
    JupyterLab behind the hub (the hub's login cookie is the credential)."""

    def __init__(self, base: str, learner: str):
        self.base, self.learner = base, learner

    def notebook_url(self, name: str) -> str:
        workspace = "".join(c if c.isalnum() else "-" for c in name)
        return f"{self.base}/user/{self.learner}/lab/workspaces/{workspace}/tree/{name}?reset"


def test_a_learner_logs_in_and_runs_notebook_00(tmp_path, playwright_session):
    settings = LabServer(tmp_path)._settings()  # the browser suite's quiet, testable Lab
    lab_args = ("--LabApp.expose_app_in_browser=True", f"--LabApp.user_settings_dir={settings}")
    with running_hub(tmp_path, lab_args=lab_args) as (base, _):
        browser = launch_chromium(playwright_session)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        try:
            page.goto(f"{base}/hub/login")
            page.fill("#username_input", "carol")
            page.fill("#password_input", PASSWORD)
            page.click("#login_submit")
            # the first login starts carol's server, then opens her course folder in Lab
            page.wait_for_url(re.compile(r"/user/carol/lab"), timeout=TIMEOUT_MS)
            nb = NotebookPage(page, LearnersLab(base, "carol"), "course/00_orientation.ipynb")
            nb.run_all()
            verdict = nb.cell('check("00.tiles"').locator(".jp-OutputArea").inner_text()
            assert "[00.tiles]" in verdict and "not answered yet" in verdict
            # the learner's server sends a Content-Security-Policy (course.tools.hub): the
            # widgets still draw live under it, ipywidgets and anywidget's blob: modules
            nb.widget("tile_roofline(")
            saved = saved_by_lab(nb, tmp_path / "homes" / "carol" / "course" / NOTEBOOK)
            assert saved != (ROOT / "notebooks" / NOTEBOOK).read_bytes()  # a real save
            layouts = NotebookPage(page, LearnersLab(base, "carol"), "course/02_layouts.ipynb")
            layouts.run_all()
            assert len(layouts.widget('LayoutExplorer("(8,8):(1,8)"').grid()) == 64
        except Exception:
            screenshot(page, "FAILED-hub-login")
            raise
        finally:
            browser.close()
    # the course moves on: carol's run-and-saved copy holds the cells she was given, so it
    # is updated, not counted as hers
    update = tmp_path / "course-update"
    shutil.copytree(ROOT / "notebooks", update)
    changed = json.loads((update / NOTEBOOK).read_text())
    changed["cells"][0]["source"] = ["# Orientation, revised\n"]
    (update / NOTEBOOK).write_text(json.dumps(changed, indent=1))
    report = learner_copy.sync_notebooks(update, tmp_path / "homes" / "carol" / "course", "next")
    assert NOTEBOOK in report.updated and not report.offered
    assert (tmp_path / "homes" / "carol" / "course" / NOTEBOOK).read_bytes() == (
        update / NOTEBOOK
    ).read_bytes()


NOTEBOOK = "00_orientation.ipynb"


def saved_by_lab(nb, path, timeout_s=60) -> bytes:
    """File > Save Notebook in the learner's JupyterLab; the bytes that landed on disk."""
    before = path.stat().st_mtime_ns
    nb.menu("File", "Save Notebook")
    deadline = time.monotonic() + timeout_s
    while path.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, "JupyterLab did not save the notebook"
        time.sleep(0.25)
    time.sleep(1)  # the server writes through a temporary file: let it finish
    return path.read_bytes()
