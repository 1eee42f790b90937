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
