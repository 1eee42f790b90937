"""Test-session policy shared by tests/ and the notebooks.

* Tests marked `gpu` (optionally `gpu(needs="sm_90a")`) run when this machine
  satisfies the need and are skipped, with the reason shown, when it does not:
  a skip is never reported as a pass.
* COURSE_REQUIRE_GPU=1 (set by the GPU CI script) turns "no GPU" into an error,
  so a GPU job can never silently take the CPU fallback paths.
* tests/browser/ (marked `browser`) drives JupyterLab in Chromium. Without a
  Chromium those tests FAIL with the reason; COURSE_BROWSER=0 leaves them out on
  purpose, and the session header and summary say so (deselected, not skipped).
* A test run is not a learner: exercise checks record no progress
  (COURSE_PROGRESS=off, course.exercises.progress) unless a test asks for it.
"""
import os

import pytest

os.environ.setdefault("COURSE_PROGRESS", "off")  # notebook kernels started by nbval inherit it


def pytest_sessionstart(session):
    if os.environ.get("COURSE_REQUIRE_GPU") == "1":
        from course.runtime.hardware import machine

        m = machine()
        if not m.has_gpu:
            raise pytest.UsageError(f"COURSE_REQUIRE_GPU=1 but {m.describe()}")


BROWSER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "browser")


def browser_suite_on() -> bool:
    return os.environ.get("COURSE_BROWSER", "1") != "0"


def pytest_collection_modifyitems(config, items):
    from course.runtime.hardware import machine

    browser = [i for i in items if str(i.path).startswith(BROWSER_DIR + os.sep)]
    for item in browser:
        item.add_marker(pytest.mark.browser)
    if browser and not browser_suite_on():
        config.hook.pytest_deselected(items=browser)
        items[:] = [i for i in items if i not in browser]

    m = machine()
    for item in items:
        marker = item.get_closest_marker("gpu")
        if marker is None:
            continue
        needs = marker.kwargs.get("needs", "gpu")
        if not m.can(needs):
            item.add_marker(pytest.mark.skip(reason=f"needs {needs}; {m.describe()}"))


def pytest_report_header(config):
    from course.runtime.hardware import machine

    lines = [f"course tier: {machine().describe()}"]
    if not browser_suite_on():
        lines.append("browser suite: OFF (COURSE_BROWSER=0): tests/browser is deselected")
    return lines
