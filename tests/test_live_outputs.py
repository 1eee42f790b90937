"""What a labelled live cell prints on a GPU is recorded under `course run --record`, and
shown after the fallback on a machine without one."""

import json
import os

import pytest

from course.runtime import live_outputs, results
from course.runtime.live import Mode, compile_only, live_or

from .helpers import CPU, H100, use_machine

COMMAND = "python -m course run --record 7"


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.delenv(live_outputs.RECORD_ENV, raising=False)
    monkeypatch.delenv(live_outputs.COMMAND_ENV, raising=False)
    monkeypatch.delenv(live_outputs.NOTEBOOK_ENV, raising=False)
    return tmp_path


@pytest.fixture
def recording(monkeypatch, results_dir):
    monkeypatch.setenv(live_outputs.RECORD_ENV, "1")
    monkeypatch.setenv(live_outputs.COMMAND_ENV, COMMAND)
    monkeypatch.setenv(live_outputs.NOTEBOOK_ENV, "07_tiled_gemm.ipynb")
    return results_dir


def sweep():
    print("256x128x64 bf16: ok")
    print("1/1 passed")
    return "verdicts"


def fallback():
    return compile_only(lambda arch: print(f"compiled for {arch}; nothing launched"))


def test_recording_keeps_what_the_live_cell_printed_and_still_prints_it(
    monkeypatch, capsys, recording
):
    use_machine(monkeypatch, H100)
    out = live_or("sm_80+", sweep, fallback(), label="07.sm80_sweep")
    assert out.mode is Mode.LIVE and out.value == "verdicts"
    assert "1/1 passed" in capsys.readouterr().out  # the tee still prints
    rec = results.latest(live_outputs.FAMILY)
    assert rec.data == {
        "label": "07.sm80_sweep",
        "notebook": "07_tiled_gemm.ipynb",
        "text": "256x128x64 bf16: ok\n1/1 passed\n",
    }
    assert rec.gpu == "NVIDIA H100 80GB HBM3" and rec.command == COMMAND
    assert rec.provenance["driver"] == "580.159.04" and rec.provenance["date"]


def test_nothing_is_recorded_when_recording_is_off(monkeypatch, capsys, results_dir):
    use_machine(monkeypatch, H100)
    live_or("sm_80+", sweep, fallback(), label="07.sm80_sweep")
    assert "1/1 passed" in capsys.readouterr().out
    assert results.load(live_outputs.FAMILY) == []


def test_nothing_is_recorded_without_a_label(monkeypatch, recording):
    use_machine(monkeypatch, H100)
    live_or("sm_80+", sweep, fallback())
    assert results.load(live_outputs.FAMILY) == []


def test_a_long_output_is_cut_and_says_so(monkeypatch, recording):
    use_machine(monkeypatch, H100)
    live_or("sm_80+", lambda: print("x" * 20_000 + "END"), fallback(), label="07.long")
    text = results.latest(live_outputs.FAMILY).data["text"]
    assert len(text) < live_outputs.MAX_CHARS + 200
    assert "characters cut here" in text and text.rstrip().endswith("END")


def write_recording(root, label: str, text: str, date: str) -> None:
    prov = {
        "gpu": "NVIDIA H100 80GB HBM3",
        "compute_capability": "9.0",
        "driver": "580.159.04",
        "cuda_runtime": "13.0",
        "torch": "2.11",
        "cutlass_dsl": "4.8.1",
        "date": date,
        "command": COMMAND,
    }
    path = root / f"{live_outputs.FAMILY}.json"
    raw = json.loads(path.read_text()) if path.exists() else {"records": []}
    raw["records"].append({"provenance": prov, "data": {"label": label, "text": text}})
    path.write_text(json.dumps(raw))


def test_fallback_shows_the_recorded_output_after_its_own(monkeypatch, capsys, results_dir):
    write_recording(results_dir, "07.sm80_sweep", "old run\n", "2026-11-20T10:00:00+00:00")
    write_recording(results_dir, "07.sm80_sweep", "1/1 passed\n", "2026-11-24T10:00:00+00:00")
    write_recording(results_dir, "07.other", "another cell\n", "2026-11-25T10:00:00+00:00")
    use_machine(monkeypatch, CPU)
    out = live_or(
        "sm_80+", lambda: pytest.fail("must not run live"), fallback(), label="07.sm80_sweep"
    )
    assert out.mode is Mode.COMPILE_ONLY
    text = capsys.readouterr().out
    assert text.index("nothing launched") < text.index("RECORDED] What this cell printed")
    banner = text[text.index("RECORDED] What this cell printed") :].splitlines()[0]
    for fact in ("NVIDIA H100 80GB HBM3", "580.159.04", "CUDA 13.0", "2026-11-24", COMMAND):
        assert fact in banner
    assert text.endswith(banner + "\n1/1 passed\n")  # the newest, verbatim, for this label
    assert "old run" not in text and "another cell" not in text


def test_fallback_without_a_recording_prints_nothing_more(monkeypatch, capsys, results_dir):
    write_recording(results_dir, "07.other", "another cell\n", "2026-11-25T10:00:00+00:00")
    use_machine(monkeypatch, CPU)
    live_or("sm_80+", lambda: 0, fallback(), label="07.sm80_sweep")
    text = capsys.readouterr().out
    assert "RECORDED" not in text and "another cell" not in text
    assert text.rstrip().endswith("nothing launched")


def test_the_run_report_does_not_count_a_recorded_output_as_what_the_cell_did(
    monkeypatch, capsys, results_dir
):
    import nbformat

    from course.tools.notebook_runner import _count_modes

    write_recording(results_dir, "07.sm80_sweep", "1/1 passed\n", "2026-11-24T10:00:00+00:00")
    use_machine(monkeypatch, CPU)
    live_or("sm_80+", lambda: 0, fallback(), label="07.sm80_sweep")
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=capsys.readouterr().out)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert _count_modes(nb) == {
        "live": 0,
        "executed": 0,
        "compile-only": 1,
        "simulated": 0,
        "recorded": 0,
    }


def test_course_run_record_switches_recording_on_for_the_notebooks(monkeypatch, results_dir):
    from course.tools import notebook_runner

    main = str(results.ROOT / "course" / "__main__.py")
    monkeypatch.setattr("sys.argv", [main, "run", "--record", "7"])
    for name in (live_outputs.RECORD_ENV, live_outputs.COMMAND_ENV):
        monkeypatch.setenv(name, "")  # so that monkeypatch undoes what the runner sets
    notebook_runner.record_live_outputs()
    assert live_outputs.recording()
    assert os.environ[live_outputs.COMMAND_ENV] == COMMAND


def test_a_record_names_no_notebook_where_no_runner_named_one(monkeypatch, recording):
    monkeypatch.delenv(live_outputs.NOTEBOOK_ENV)
    use_machine(monkeypatch, H100)
    live_or("sm_80+", sweep, fallback(), label="07.sm80_sweep")
    assert "notebook" not in results.latest(live_outputs.FAMILY).data


def test_the_runner_tells_each_notebooks_kernel_which_notebook_it_runs(tmp_path):
    """The kernel is a process of its own: the notebook's name reaches it in its
    environment, and a cell that finds another name fails the run."""
    import nbformat

    from course.tools import notebook_runner

    path = tmp_path / "42_probe.ipynb"
    check = f"import os; assert os.environ[{live_outputs.NOTEBOOK_ENV!r}] == {path.name!r}"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(check)]), path)
    assert notebook_runner.execute(path).error is None
    wrong = tmp_path / "43_probe.ipynb"
    wrong.write_text(path.read_text())
    assert "AssertionError" in notebook_runner.execute(wrong).error
