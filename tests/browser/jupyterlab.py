"""Drive the course in a real JupyterLab, in a real Chromium, through Playwright.

The pieces a browser test needs, so that a test for a new widget is a few lines:

    def test_layout_explorer(lab):
        nb = lab.notebook("02_layouts.ipynb")          # opened and run (Run All) once per session
        w = nb.widget("layout_explorer(")              # the live view in the output of the cell
        before = w.state()                             #   whose source contains this text
        w.type_text("layout", "(4,8):(8,1)")  # or press_slider / drag_slider / choose / click
        w.wait_changed(before)                         # the summary text or the picture changed
        assert "(4,8):(8,1)" in w.summary()
        w.screenshot("layout_explorer-typed")          # -> build/browser/layout_explorer-typed.png

* `LabServer` starts `python -m jupyter lab` on 127.0.0.1 (random token, free port, no
  browser, isolated settings) on a temporary copy of notebooks/, so the committed
  notebooks are never touched.
* `launch_chromium` starts Chromium headless with the flags this closed network needs
  and fails, never skips, when no Chromium can be found or started.
* `NotebookPage.run_all()` uses JupyterLab's own menu (Run > Run All Cells) and waits
  until every code cell has an execution number; an error output fails at once with
  its text.
* `WidgetView` finds the ipywidgets view of a StaticWidget (asserting it is the live
  view, not the static PNG fallback) and interacts with it as a person would.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "browser"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_MS = 120_000  # one notebook's Run All on a 2-core CPU machine, with margin


class BrowserUnavailable(RuntimeError):
    """No Chromium to drive: the browser suite fails (it never skips) with this message."""


def find_chromium() -> str:
    """COURSE_CHROMIUM, else the first Chromium/Chrome on PATH."""
    given = os.environ.get("COURSE_CHROMIUM")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise BrowserUnavailable(f"COURSE_CHROMIUM={given} is not an executable file")
        return given
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    why = os.environ.get("COURSE_CHROMIUM_PROBLEM", "")
    raise BrowserUnavailable(
        "no Chromium for the browser tests" + (f" ({why})" if why else "") + ". "
        "`./course.sh test` installs Debian's chromium with apt-get when run as root; "
        "otherwise install chromium or point COURSE_CHROMIUM at a Chromium/Chrome binary. "
        "To leave the browser suite out on purpose: COURSE_BROWSER=0 (reported as deselected)."
    )


def launch_chromium(playwright):
    """Chromium through Playwright, with the executable of find_chromium()."""
    path = find_chromium()
    try:
        return playwright.chromium.launch(
            executable_path=path, args=CHROMIUM_FLAGS, headless=True, timeout=60_000
        )
    except Exception as exc:  # a Playwright error names what went wrong
        raise BrowserUnavailable(f"Chromium at {path} did not start: {exc}") from exc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """`python -m jupyter lab` on loopback over a temporary copy of notebooks/."""

    def __init__(self, workdir: Path, notebooks: Path = ROOT / "notebooks"):
        self.workdir = Path(workdir)
        self.root = self.workdir / "notebooks"
        shutil.copytree(notebooks, self.root)
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.log_path = self.workdir / "jupyterlab.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _settings(self) -> Path:
        """User settings for a quiet, testable Lab: no news pop-up, every cell in the DOM."""
        settings = self.workdir / "lab-settings"
        files = {
            "@jupyterlab/apputils-extension/notification.jupyterlab-settings": '{"fetchNews": "false", "checkForUpdates": false}',  # noqa: E501
            # JupyterLab 4 renders only the cells on screen by default; tests look at all
            "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',  # noqa: E501  (a settings file's name)
        }
        for name, text in files.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(text)
        return settings

    def start(self, timeout: float = 90) -> "LabServer":
        cmd = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            f"--IdentityProvider.token={self.token}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.allow_root=True",
            "--LabApp.extension_manager=readonly",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--LabApp.user_settings_dir={self._settings()}",
            f"--LabApp.workspaces_dir={self.workdir / 'lab-workspaces'}",
            # lets a test wait until the kernel is connected (the UI still runs the cells)
            "--LabApp.expose_app_in_browser=True",
        ]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
        }
        self.proc = subprocess.Popen(
            cmd, cwd=self.root, env=env, stdout=self.log_path.open("w"), stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(
                    f"{self.url}/api/status?token={self.token}", timeout=2
                ) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer /api/status in {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:] if self.log_path.exists() else ""

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a workspace of its own (no other tabs restored)."""
        workspace = "".join(c if c.isalnum() else "-" for c in name)
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"


def screenshot(target, name: str) -> Path:
    """Save a PNG of a page or locator as build/browser/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    target.screenshot(path=str(path))
    return path


# every cell of a course.widgets.cell_grid: a button whose title names it, "(r, c)"
GRID_CELLS = '.jupyter-widgets button[title^="("]'

_ALL_CODE_CELLS_NUMBERED = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""
_PANEL = """const app = window.jupyterapp;
  const panel = app && [...app.shell.widgets('main')].find(
      w => w.context && w.context.path === path);"""
_FIRST_ERROR = (
    """(path) => {
  // read the notebook model: an output of type "error" is an exception, whatever its colours
  """
    + _PANEL
    + """
  const cells = panel && panel.content && panel.content.model ? panel.content.model.cells : [];
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code') continue;
    for (const out of cell.outputs.toJSON()) {
      if (out.output_type === 'error') {
        return `cell ${i}: ${out.ename}: ${out.evalue}\n` + cell.sharedModel.getSource();
      }
    }
  }
  return null;
}"""
)
_KERNEL_READY = (
    """async (path) => {
  """
    + _PANEL
    + """
  if (!panel || !panel.sessionContext) return false;
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""
)


class NotebookPage:
    """One notebook open in JupyterLab in its own browser tab."""

    def __init__(self, page, server: LabServer, name: str):
        self.page, self.server, self.name = page, server, name
        self.console_errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        page.goto(server.notebook_url(name))
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=TIMEOUT_MS)
        page.wait_for_function(_KERNEL_READY, arg=name, timeout=TIMEOUT_MS)

    def menu(self, *path: str) -> None:
        """Click through the menu bar, e.g. menu("Run", "Run All Cells")."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=path[0]).first.click()
        for label in path[1:]:
            self.page.locator(".lm-Menu-itemLabel", has_text=label).first.click()

    def run_all(self, timeout_ms: int = TIMEOUT_MS) -> float:
        """Clear the stored outputs, Run > Run All Cells, wait for every code cell; seconds."""
        self.menu("Edit", "Clear Outputs of All Cells")
        start = time.monotonic()
        self.menu("Run", "Run All Cells")
        deadline = start + timeout_ms / 1000
        while time.monotonic() < deadline:
            if self.page.evaluate(_ALL_CODE_CELLS_NUMBERED):
                return time.monotonic() - start
            error = self.page.evaluate(_FIRST_ERROR, self.name)
            if error:
                raise AssertionError(f"{self.name}: a cell failed in JupyterLab:\n{error}")
            self.page.wait_for_timeout(250)
        raise AssertionError(f"{self.name}: Run All did not finish in {timeout_ms / 1000:.0f} s")

    def cell(self, source_snippet: str):
        """The code cell whose source contains `source_snippet` (exactly one must)."""
        cells = self.page.locator(".jp-Notebook .jp-CodeCell").filter(
            has=self.page.locator(".jp-InputArea-editor", has_text=source_snippet)
        )
        count = cells.count()
        assert count == 1, f"{self.name}: {count} code cells contain {source_snippet!r}"
        return cells.first

    def widget(self, source_snippet: str) -> "WidgetView":
        return WidgetView(self, self.cell(source_snippet))

    def screenshot(self, name: str) -> Path:
        return screenshot(self.page, name)


class WidgetView:
    """The live ipywidgets view in one cell's output, and a person's ways to use it."""

    def __init__(self, nb: NotebookPage, cell):
        self.nb, self.cell, self.page = nb, cell, nb.page
        self.output = cell.locator(".jp-Cell-outputArea")
        self.root = self.output.locator(".jp-OutputArea-output .jupyter-widgets").first
        self.root.wait_for(state="visible", timeout=30_000)
        # JupyterLab must render the widget itself, not the StaticWidget's fallback PNG
        # (the PNG sits beside the view in the same output; only pictures drawn inside
        # the widget, e.g. in its Output area, may appear)
        stray = (
            self.output.locator("img").count() - self.output.locator(".jupyter-widgets img").count()
        )
        assert stray == 0, "the static PNG is shown next to (or instead of) the live widget"
        assert "Error displaying widget" not in self.output.inner_text()

    def _labelled(self, css: str, label: str):
        found = self.output.locator(css).filter(
            has=self.page.locator(".widget-label", has_text=label)
        )
        assert found.count() >= 1, f"no {css} labelled {label!r} in this widget"
        return found.first

    def slider(self, label: str):
        """The slider whose description is `label`."""
        return self._labelled(".widget-slider", label)

    def slider_value(self, label: str) -> str:
        return self.slider(label).locator(".widget-readout").inner_text().strip()

    def press_slider(self, label: str, key: str, times: int = 1) -> None:
        """Focus the slider's handle and press a key (ArrowLeft, ArrowRight, Home, End)."""
        handle = self.slider(label).locator(".noUi-handle").first
        handle.focus()
        for _ in range(times):
            handle.press(key)

    def drag_slider(self, label: str, fraction: float) -> None:
        """Drag the slider's handle with the mouse to `fraction` (0..1) of its track."""
        slider = self.slider(label)
        handle = slider.locator(".noUi-handle").first.bounding_box()
        track = slider.locator(".noUi-target").first.bounding_box()
        y = handle["y"] + handle["height"] / 2
        self.page.mouse.move(handle["x"] + handle["width"] / 2, y)
        self.page.mouse.down()
        self.page.mouse.move(track["x"] + fraction * track["width"], y, steps=10)
        self.page.mouse.up()

    def type_text(self, label: str, text: str, submit: bool = True) -> None:
        """Replace the text of the Text/Textarea labelled `label` (Enter submits it)."""
        box = (
            self._labelled(".widget-text, .widget-textarea", label).locator("input, textarea").first
        )
        box.fill(text)
        if submit:
            box.press("Enter")

    def choose(self, label: str, option: str) -> None:
        """Pick `option` in the Dropdown labelled `label`."""
        self._labelled(".widget-dropdown", label).locator("select").select_option(label=option)

    def click(self, text: str) -> None:
        """Click the button (or toggle button) that says `text`."""
        self.output.locator("button", has_text=text).first.click()

    def summary(self) -> str:
        """The text of the widget's HTML/Label parts (its numbers, in words)."""
        parts = self.output.locator(".widget-html, .widget-label-basic")
        return "\n".join(parts.nth(i).inner_text() for i in range(parts.count()))

    def grid(self) -> dict[tuple[int, int], str]:
        """(row, col) -> text of every cell of a cell grid (course.widgets.cell_grid draws
        each cell as a button whose title names its cell)."""
        cells = self.output.evaluate(
            """(root, sel) => [...root.querySelectorAll(sel)].map(
            b => [b.title, b.innerText.trim()])""",
            GRID_CELLS,
        )
        return {tuple(int(x) for x in title.strip("()").split(",")): text for title, text in cells}

    def click_cell(self, row: int, col: int) -> None:
        """Click cell (row, col) of the widget's cell grid with the mouse."""
        self.output.locator(f'.jupyter-widgets button[title="({row}, {col})"]').first.click()

    def picture(self) -> str:
        """A digest of everything the widget draws (img src, svg and canvas contents, and
        the text, colour and selection frame of every cell of its cell grid, so a redraw
        counts as settled only when every cell is repainted)."""
        digest = self.output.evaluate(
            """(root, sel) => [
            ...[...root.querySelectorAll(sel)].map(
                b => b.title + b.innerText + b.className + b.style.background),
            ...[...root.querySelectorAll('.jupyter-widgets img')].map(i => i.src),
            ...[...root.querySelectorAll('.jupyter-widgets svg')].map(s => s.outerHTML),
            ...[...root.querySelectorAll('.jupyter-widgets canvas')].map(c => c.toDataURL()),
        ].join('|')""",
            GRID_CELLS,
        )
        return hashlib.sha256(digest.encode()).hexdigest()

    def state(self) -> tuple[str, str]:
        return self.summary(), self.picture()

    def wait_changed(
        self,
        before: tuple[str, str],
        timeout_s: float = 30,
        quiet_s: float = 1.0,
        picture: bool = True,
    ) -> tuple[str, str]:
        """Wait until the summary text and the picture both differ from `before` (only
        the text with picture=False), then
        until nothing has changed for `quiet_s` (a drag sends several values; the
        kernel redraws each in turn) and return that settled state."""
        deadline = time.monotonic() + timeout_s
        now = self.state()
        while not (now[0] != before[0] and (now[1] != before[1] or not picture)):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the widget did not redraw in {timeout_s} s: text changed "
                    f"{now[0] != before[0]}, picture changed {now[1] != before[1]}"
                )
            self.page.wait_for_timeout(200)
            now = self.state()
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < quiet_s:
            if time.monotonic() > deadline:
                raise AssertionError(f"the widget kept redrawing for {timeout_s} s")
            self.page.wait_for_timeout(200)
            latest = self.state()
            if latest != now:
                now, quiet_since = latest, time.monotonic()
        return now

    def screenshot(self, name: str) -> Path:
        self.cell.scroll_into_view_if_needed()
        return screenshot(self.cell, name)
