"""Fixtures of the browser suite: one JupyterLab server and one Chromium per session.

`lab` is the only fixture a test needs: `lab.notebook(name)` opens a notebook (in a
tab of its own, Run All once per session) and `lab.page()` a bare tab. Every test
that fails leaves build/browser/FAILED-<test>.png of each tab it used.
"""

from __future__ import annotations

import re

import pytest

from .jupyterlab import (
    BrowserUnavailable,
    LabServer,
    NotebookPage,
    find_chromium,
    launch_chromium,
    screenshot,
)


class Lab:
    def __init__(self, server: LabServer, browser):
        self.server, self.browser = server, browser
        self._notebooks: dict[str, NotebookPage] = {}
        self.run_seconds: dict[str, float] = {}
        self.used: list = []  # pages the current test touched (screenshot on failure)

    def page(self, **context_args):
        page = self.browser.new_context(
            viewport={"width": 1400, "height": 1000}, **context_args
        ).new_page()
        self.used.append(page)
        return page

    def open(self, name: str) -> NotebookPage:
        """A fresh tab on notebook `name` (not run)."""
        return NotebookPage(self.page(), self.server, name)

    def notebook(self, name: str) -> NotebookPage:
        """Notebook `name` open and run top to bottom (once per session, then shared)."""
        if name not in self._notebooks:
            nb = self.open(name)
            self.run_seconds[name] = nb.run_all()
            self._notebooks[name] = nb
        nb = self._notebooks[name]
        if nb.page not in self.used:
            self.used.append(nb.page)
        return nb


@pytest.fixture(scope="session")
def playwright_session():
    """One Playwright for the whole session: its sync API runs an event loop in this thread
    until it stops, and a second `sync_playwright()` while one runs is refused -- so every
    browser test takes this one, in whatever order the files run (pytest-xdist's too)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise BrowserUnavailable(
            "the Playwright client is not installed (it is in requirements.txt: ./course.sh setup)"
        ) from exc
    find_chromium()  # fail at once, before starting anything, if there is none
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def _lab_session(playwright_session, tmp_path_factory):
    server = LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    try:
        browser = launch_chromium(playwright_session)
        try:
            yield Lab(server, browser)
        finally:
            browser.close()
    finally:
        server.stop()


@pytest.fixture
def lab(_lab_session, request):
    _lab_session.used = []
    yield _lab_session
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        for i, page in enumerate(_lab_session.used):
            try:
                screenshot(page, f"FAILED-{name}" + (f"-{i}" if i else ""))
            except Exception:  # a crashed page cannot be photographed; the error says why
                pass


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
