"""Test-session policy shared by tests/ and the notebooks.

* Tests marked `gpu` (optionally `gpu(needs="sm_90a")`) run when this machine
  satisfies the need and are skipped, with the reason shown, when it does not:
  a skip is never reported as a pass.
* COURSE_REQUIRE_GPU=1 (set by the GPU CI script) turns "no GPU" into an error,
  so a GPU job can never silently take the CPU fallback paths.
"""
import os

import pytest


def pytest_sessionstart(session):
    if os.environ.get("COURSE_REQUIRE_GPU") == "1":
        from course.hardware import machine

        m = machine()
        if not m.has_gpu:
            raise pytest.UsageError(f"COURSE_REQUIRE_GPU=1 but {m.describe()}")


def pytest_collection_modifyitems(config, items):
    from course.hardware import machine

    m = machine()
    for item in items:
        marker = item.get_closest_marker("gpu")
        if marker is None:
            continue
        needs = marker.kwargs.get("needs", "gpu")
        if not m.can(needs):
            item.add_marker(pytest.mark.skip(reason=f"needs {needs}; {m.describe()}"))


def pytest_report_header(config):
    from course.hardware import machine

    return f"course tier: {machine().describe()}"
