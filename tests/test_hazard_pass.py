"""After a GPU run whose values were right, the executor's hazard pass (issue 40, item 3):
a hazard the hardware hides today is still wrong, and says the GPU's values were right."""

import pytest

from course.exercises import check, executor_checks, gpu_run, kernel_check, kernel_exercises
from course.exercises.hazard_pass import HARDWARE_HIDES, HAZARD_PASS
from course.exercises.solutions.nb01_solutions import saxpy_kernel
from course.exercises.verdicts import RIGHT, WRONG


@pytest.fixture
def a_gpu_that_computes_right(monkeypatch):
    """A machine whose GPU runs the exercise and finds every output right."""
    monkeypatch.setattr(kernel_check, "runner_for", lambda *a, **k: "gpu")
    monkeypatch.setattr(
        gpu_run,
        "in_child",
        lambda ex, code: [kernel_check.Finding("ran on the GPU against torch", "pass", ran=True)],
    )


def test_a_right_kernel_passes_the_hazard_pass_too(a_gpu_that_computes_right):
    verdict = check.check("01.saxpy", saxpy_kernel, quiet=True)
    assert verdict.status == RIGHT, str(verdict)
    report = kernel_check.run_checks(kernel_exercises.lookup("01.saxpy"), saxpy_kernel)
    found = [f for f in report.findings if f.check == HAZARD_PASS]
    assert found and found[0].status == kernel_check.PASS, report.text()


def test_a_hazard_the_gpu_hid_is_wrong(a_gpu_that_computes_right, monkeypatch):
    """The executor finds a race the GPU's run did not show: the verdict is wrong, and the
    finding says the values were right and the ISA does not promise them."""
    race = kernel_check.Finding(
        f"{executor_checks.CHECK}: race",
        kernel_check.FAIL,
        "thread 3 reads sA[5] that thread 37 wrote with no barrier between",
        "a barrier between the write and the read",
        ran=True,
        hazard=True,
    )
    value_check = kernel_check.Finding(
        f"{executor_checks.CHECK}: outputs", kernel_check.FAIL, "differs", "", ran=True
    )
    monkeypatch.setitem(
        executor_checks.EXECUTOR_CHECKS, "01.saxpy", lambda fn, quick: [value_check, race]
    )
    report = kernel_check.run_checks(kernel_exercises.lookup("01.saxpy"), saxpy_kernel)
    assert report.status == WRONG, report.text()
    failing = [f for f in report.findings if f.status == kernel_check.FAIL]
    assert [f.check for f in failing] == [f"{HAZARD_PASS}: race"], report.text()
    assert failing[0].detail.startswith(HARDWARE_HIDES), failing[0].detail
    assert failing[0].hint == "a barrier between the write and the read"


def test_a_hazard_that_hangs_a_gpu_stops_before_the_gpu_run(monkeypatch):
    """Exercise 08's copy moved inside elect_one hangs an H100 (the watchdog ends it after a
    minute, with no cause): the executor's pass runs first and names it; no GPU run."""
    from course.exercises.solutions import nb08_solutions

    ran = []
    monkeypatch.setattr(kernel_check, "runner_for", lambda *a, **k: "gpu")
    monkeypatch.setattr(gpu_run, "in_child", lambda ex, code: ran.append(1) or [])
    fn = nb08_solutions.arm_and_load__copy_inside_elect
    report = kernel_check.run_checks(kernel_exercises.lookup("08.arm_and_load"), fn)
    assert report.status == WRONG, report.text()
    assert not ran, "the GPU run was made"
    failing = [f for f in report.findings if f.status == kernel_check.FAIL]
    assert failing[0].check == f"{HAZARD_PASS}: collective in divergent code", report.text()
    assert "whole warp" in failing[0].hint


def test_an_executor_that_cannot_run_here_is_said_not_to_have_run(
    a_gpu_that_computes_right, monkeypatch
):
    def no_greenlet(fn, quick):
        raise ModuleNotFoundError("No module named 'greenlet'", name="greenlet")

    monkeypatch.setitem(executor_checks.EXECUTOR_CHECKS, "01.saxpy", no_greenlet)
    report = kernel_check.run_checks(kernel_exercises.lookup("01.saxpy"), saxpy_kernel)
    assert report.status == RIGHT, report.text()
    found = [f for f in report.findings if f.check == HAZARD_PASS]
    assert found[0].status == kernel_check.NOT_RUN and "not run here" in found[0].detail
