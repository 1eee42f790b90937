import json

import pytest

from course.runtime import live, results
from course.runtime.live import Mode, compile_only, live_or, recorded, simulated

from .helpers import B200, CPU, H100, use_machine


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    prov = {
        "gpu": "NVIDIA H100 80GB HBM3",
        "compute_capability": "9.0",
        "driver": "580",
        "cuda_runtime": "13.0",
        "torch": "2.11",
        "cutlass_dsl": "4.8.1",
        "date": "2026-11-22T10:00:00+00:00",
        "command": "python -m course.bench x --record",
    }
    (tmp_path / "x.json").write_text(
        json.dumps(
            {
                "records": [
                    {"provenance": prov, "data": {"v": 1}},
                    {"provenance": prov, "data": {"v": 2}},
                ]
            }
        )
    )
    return tmp_path


def test_live_when_the_machine_can(monkeypatch, capsys):
    use_machine(monkeypatch, H100)
    out = live_or("sm_90a", lambda: 42, recorded("x"))
    assert out.mode is Mode.LIVE and out.value == 42 and out.live
    assert "LIVE" in capsys.readouterr().out


def test_recorded_fallback_cites_gpu_date_and_command(monkeypatch, capsys, results_dir):
    use_machine(monkeypatch, CPU)
    out = live_or("gpu", lambda: pytest.fail("must not run live"), recorded("x"))
    assert out.mode is Mode.RECORDED and out.value == {"v": 2}  # the newest record
    text = capsys.readouterr().out
    assert "RECORDED" in text and "H100" in text and "2026-11-22" in text
    assert "python -m course.bench x --record" in text


def test_missing_recorded_result_is_a_clear_error(monkeypatch, results_dir):
    use_machine(monkeypatch, CPU)
    with pytest.raises(LookupError, match="no recorded result 'nothing'"):
        live_or("gpu", lambda: 0, recorded("nothing"))


def test_compile_only_targets_the_needed_arch(monkeypatch, capsys):
    use_machine(monkeypatch, H100)  # an H100 cannot run sm_100a code
    out = live_or("sm_100a", lambda: pytest.fail("must not run"), compile_only(lambda arch: arch))
    assert out.mode is Mode.COMPILE_ONLY and out.value == "sm_100a"
    assert "nothing was launched" in capsys.readouterr().out
    out = live_or("sm_90a", lambda: 0, compile_only(lambda arch: arch), quiet=True)
    assert out.mode is Mode.LIVE


def test_simulated_fallback(monkeypatch, capsys):
    use_machine(monkeypatch, B200)
    out = live_or("sm_90a", lambda: 0, simulated(lambda: "sim", "the pipeline simulator"))
    assert out.mode is Mode.SIMULATED and out.value == "sim"
    assert "pipeline simulator" in capsys.readouterr().out


def test_executed_prints_a_summary_or_text_and_keeps_verdicts_as_the_value(monkeypatch, capsys):
    use_machine(monkeypatch, CPU)

    class Run:
        def summary(self):
            return "ran: PASS"

    out = live_or("gpu", lambda: 0, live.executed(Run, "a kernel"))
    assert out.mode is Mode.EXECUTED and capsys.readouterr().out.endswith("ran: PASS\n")
    live_or("gpu", lambda: 0, live.executed(lambda: "one line", "a kernel"))
    assert capsys.readouterr().out.endswith("one line\n")
    # a check that printed its own lines returns verdicts: the value, not printed twice
    out = live_or("gpu", lambda: 0, live.executed(lambda: print("its line") or [True], "a kernel"))
    assert out.value == [True] and capsys.readouterr().out.endswith("its line\n")


def test_banner_renders_as_html_and_text():
    b = live.Banner(Mode.RECORDED, "a <b> c")
    assert "RECORDED" in str(b) and "&lt;b&gt;" in b._repr_html_()


def test_recorded_or_shows_the_record_when_there_is_one(monkeypatch, capsys, results_dir):
    use_machine(monkeypatch, CPU)
    fb = live.recorded_or(
        "x",
        simulated(lambda: pytest.fail("must not simulate"), "a model"),
        "python -m course.bench x --record",
    )
    out = live_or("gpu", lambda: pytest.fail("must not run live"), fb)
    assert out.mode is Mode.RECORDED and out.value == {"v": 2} and out.record is not None
    assert "No GPU measurement" not in capsys.readouterr().out


def test_recorded_or_says_nothing_is_recorded_and_runs_the_stand_in(
    monkeypatch, capsys, results_dir
):
    use_machine(monkeypatch, CPU)
    fb = live.recorded_or(
        "nothing",
        compile_only(lambda arch: f"compiled for {arch}"),
        "python -m course.bench nothing --record",
    )
    out = live_or("sm_90a", lambda: pytest.fail("must not run live"), fb)
    assert out.mode is Mode.COMPILE_ONLY and out.value == "compiled for sm_90a"
    assert out.record is None
    text = capsys.readouterr().out
    assert (
        text.count("COMPILE-ONLY") == 1 and "No GPU measurement of this has been recorded" in text
    )
    assert "`python -m course.bench nothing --record`" in text and "results/nothing.json" in text
    assert str(out.banner) in text  # the outcome carries the banner that was shown


def test_outcome_caption_names_where_the_value_came_from(monkeypatch, results_dir):
    use_machine(monkeypatch, H100)
    out = live_or("gpu", lambda: 1, recorded("x"), quiet=True)
    assert out.caption("x") == f"measured now on {H100.describe()}"
    use_machine(monkeypatch, CPU)
    out = live_or("gpu", lambda: 1, recorded("x"), quiet=True)
    assert out.caption("x").startswith("x measured on NVIDIA H100") and "2026-11-22" in out.caption(
        "x"
    )
    out = live_or("gpu", lambda: 1, simulated(lambda: 0, "a model"), quiet=True)
    assert out.caption("x", otherwise="the model only") == "the model only"


def test_compiled_here_compiles_for_this_gpu_or_the_target(monkeypatch, capsys):
    use_machine(monkeypatch, H100)
    out = live.compiled_here("gpu", lambda arch: f"for {arch}")
    assert out.mode is Mode.LIVE and out.value == f"for {H100.arch}"
    use_machine(monkeypatch, CPU)
    out = live.compiled_here("sm_90+", lambda arch: f"for {arch}")
    assert out.mode is Mode.COMPILE_ONLY and out.value == "for sm_90a"
    assert "nothing was launched" in capsys.readouterr().out
