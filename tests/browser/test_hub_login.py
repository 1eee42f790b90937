"""A learner on the class hub, in Chromium: the login page, their own JupyterLab on their
copy of the notebooks, and notebook 00 run top to bottom, exercise checks included. The
hub, its proxy and the learner's server are real (tests/test_hub.py starts them)."""
import re

from ..test_hub import PASSWORD, running_hub
from .jupyterlab import (TIMEOUT_MS, LabServer, NotebookPage, find_chromium, launch_chromium,
                         screenshot)


class LearnersLab:
    """What NotebookPage needs of a server: where a notebook opens, here in the learner's
    JupyterLab behind the hub (the hub's login cookie is the credential)."""

    def __init__(self, base: str, learner: str):
        self.base, self.learner = base, learner

    def notebook_url(self, name: str) -> str:
        workspace = "".join(c if c.isalnum() else "-" for c in name)
        return f"{self.base}/user/{self.learner}/lab/workspaces/{workspace}/tree/{name}?reset"


def test_a_learner_logs_in_and_runs_notebook_00(tmp_path):
    from playwright.sync_api import sync_playwright

    find_chromium()
    settings = LabServer(tmp_path)._settings()  # the browser suite's quiet, testable Lab
    lab_args = ("--LabApp.expose_app_in_browser=True",
                f"--LabApp.user_settings_dir={settings}")
    with running_hub(tmp_path, lab_args=lab_args) as (base, _), sync_playwright() as pw:
        browser = launch_chromium(pw)
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
        except Exception:
            screenshot(page, "FAILED-hub-login")
            raise
        finally:
            browser.close()
