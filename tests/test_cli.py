import os
import subprocess
import sys


from course.catalogue import LESSONS, course_map

from .helpers import B200, CPU, H100

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, env=None):
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_doctor_tells_the_truth_about_this_machine():
    from course.runtime.hardware import machine

    out = run("-m", "course", "doctor")
    assert out.returncode == 0, out.stderr
    assert f"Tier: {machine().tier}" in out.stdout
    for lesson in LESSONS:
        assert lesson.path.name in out.stdout


def test_doctor_with_forced_cpu_tier():
    out = run("-m", "course", "doctor", env={"COURSE_TIER": "cpu"})
    assert out.returncode == 0 and "Tier: cpu" in out.stdout


def test_course_map_depends_on_the_machine():
    on = {m.tier: {r["#"]: r["here"] for r in course_map(m)} for m in (CPU, H100, B200)}
    assert on["sm_90"]["00"] == "live" and on["cpu"]["00"] == "recorded + executed + compile-only"
    assert on["sm_100"]["00"] == "live"
    from course.catalogue import Lesson
    from course.runtime.live import Mode

    wgmma = Lesson(0, "orientation", "t", "t", "sm_90a", (Mode.RECORDED,))  # an existing file
    assert wgmma.here(H100) == "live" and wgmma.here(B200) == "recorded"
    assert len(on["cpu"]) == len(LESSONS) == 17  # every lesson listed, written or not
    unwritten = Lesson(99, "not_a_notebook", "t", "t", "cpu", (Mode.LIVE,))
    assert not unwritten.written and unwritten.here(H100) == "not written yet"


def test_bench_cli_lists_and_refuses_to_record_without_gpu():
    out = run("-m", "course.bench", "list")
    assert out.returncode == 0 and "cublas" in out.stdout
    out = run("-m", "course.bench", "ceilings", "--record", env={"COURSE_TIER": "cpu"})
    assert out.returncode != 0 and "needs a CUDA GPU" in out.stderr


def test_runner_counts_banners():
    import nbformat

    from course.tools.notebook_runner import _count_modes

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output(
            "stream", name="stdout", text="[⏺ RECORDED] a\n[▶ LIVE] b\n[▶ LIVE] c\n"
        )
    ]
    nb.cells = [cell]
    counts = _count_modes(nb)
    assert counts["live"] == 2 and counts["recorded"] == 1 and counts["simulated"] == 0


def test_the_runner_skips_a_lesson_not_written_yet(monkeypatch, tmp_path, capsys):
    """A lesson the catalogue lists before its notebook exists is named and skipped."""
    from course.catalogue import Lesson
    from course.runtime.live import Mode
    from course.tools import notebook_runner

    unwritten = Lesson(99, "not_a_notebook", "t", "t", "cpu", (Mode.LIVE,))
    monkeypatch.setattr(notebook_runner, "LESSONS", (unwritten,))
    monkeypatch.setattr(notebook_runner, "REPORT", tmp_path / "run-report.md")
    monkeypatch.setattr(notebook_runner, "REPORT_JSON", tmp_path / "run-report.json")
    assert notebook_runner.run_all([99]) == []
    assert "skipping 99_not_a_notebook.ipynb: not written yet" in capsys.readouterr().out


def test_recording_a_notebook_run_is_refused_without_a_gpu(monkeypatch):
    import pytest

    from course.tools import notebook_runner

    monkeypatch.setenv("COURSE_TIER", "cpu")
    from course.runtime import hardware

    if hasattr(hardware.machine, "cache_clear"):
        hardware.machine.cache_clear()
    with pytest.raises(SystemExit, match="recording needs a GPU"):
        notebook_runner.record_runs([])
