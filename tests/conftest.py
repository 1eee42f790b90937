"""Fixtures shared by the lesson tests."""

import pytest

from course.runtime import results

from .helpers import CPU, use_machine


@pytest.fixture
def cpu_results(tmp_path, monkeypatch):
    """A CPU-only machine with an empty results folder; call the fixture's value with a
    family name to bring in that family's committed records."""
    use_machine(monkeypatch, CPU)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)

    def bring(name: str) -> None:
        (tmp_path / f"{name}.json").write_text(
            (results.ROOT / "results" / f"{name}.json").read_text()
        )

    return bring


_CPU_REPORTS: dict = {}


@pytest.fixture
def cpu_reports_shared(monkeypatch):
    """kernel_check.run_checks without a GPU run, remembered for the session: the tests that
    check the same solution (tests/test_kernel_exercises.py's CPU verdicts and its comparison
    with the H100's record) share one report of it. Its compile is cached anyway; its run on
    the CPU executor is not."""
    from course.exercises import kernel_check
    from course.exercises.learner_code import LearnerCode

    real = kernel_check.run_checks

    def remembered(ex, fn, sanitize=None, gpu=None, executor=None):
        if gpu is not False:
            return real(ex, fn, sanitize=sanitize, gpu=gpu, executor=executor)
        key = (ex.id, LearnerCode.from_function(fn).digest, sanitize, executor)
        if key not in _CPU_REPORTS:
            _CPU_REPORTS[key] = real(ex, fn, sanitize=sanitize, gpu=gpu, executor=executor)
        return _CPU_REPORTS[key]

    monkeypatch.setattr(kernel_check, "run_checks", remembered)


@pytest.fixture
def launch_notes(monkeypatch):
    """The notes (course.execute.hazards.Note) of every executor launch the test makes:
    what the run did that is no hazard (a list, filled as the launches finish)."""
    from course.execute import launches

    notes: list = []
    real_launch = launches.launch

    def launch(*args, **kwargs):
        real_launch(*args, **kwargs)
        notes.extend(launches._ACTIVE[-1].launches[-1].notes)

    monkeypatch.setattr(launches, "launch", launch)
    return notes
