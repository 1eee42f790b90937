"""Notebook 09's lessons: the ring's parities, the mistakes and the watchdog, and the
stage sweep's three sources (measured, recorded, predicted)."""

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from course.execute import hazards  # noqa: E402
from course.lessons import pipeline_lesson, stage_sweep_lesson  # noqa: E402
from course.runtime import live, watchdog  # noqa: E402
from kernels import tma_gemm  # noqa: E402


def test_parities_flip_every_trip_round_the_ring(capsys):
    parities = pipeline_lesson.print_parities(stages=3, k_tiles=9)
    assert [full for full, _ in parities] == [(t // 3) % 2 for t in range(9)]
    assert all(empty == 1 - full for full, empty in parities)  # a fresh barrier passes parity 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10 and lines[4].split()[:3] == ["3", "0", "1"]  # k-tile 3: stage 0, trip 1


def test_each_mistake_is_run_to_its_diagnosis(capsys):
    sims = pipeline_lesson.print_deadlocks(("producer_parity", "tx_bytes"), k_tiles=6)
    out = capsys.readouterr().out
    assert set(sims) == {"producer_parity", "tx_bytes"}
    for bug, sim in sims.items():
        assert f"--- {bug}:" in out and sim.summary() in out
    assert sims["producer_parity"].deadlock is not None and "Most likely" in out


def test_protocol_checks_pass_the_kernel_and_fail_every_bug(capsys):
    verdicts = pipeline_lesson.print_protocol_checks()
    assert verdicts.pop("") == "ok"
    assert set(verdicts) == set(tma_gemm.BUGS[1:])
    assert all("deadlock" in v or "race" in v for v in verdicts.values())
    assert capsys.readouterr().out.startswith("correct")


def test_modelled_bugs_never_finish():
    verdicts = pipeline_lesson.bugs_modelled(stages=2, k_tiles=8)
    assert set(verdicts) == set(tma_gemm.BUGS[1:])
    assert not any(v.startswith("ok") for v in verdicts.values())


def test_watchdog_demo_stops_the_hung_wait(capsys):
    err = pipeline_lesson.watchdog_demo(timeout_s=1)
    assert isinstance(err, watchdog.PipelineHang)
    assert "PipelineHang" in capsys.readouterr().out


@pytest.mark.compile
def test_ring_instructions_count_the_barriers(capsys):
    pipeline_lesson.ring_instructions("sm_90a")
    out = capsys.readouterr().out
    assert "TMA loads: " in out and "cp.async (notebook 07): 0 in the PTX" in out
    assert "'UTMALDG'" in out


@pytest.mark.parametrize("ring", tma_gemm.RINGS)
def test_the_executor_fallback_runs_either_ring_against_torch(ring, capsys):
    runs = pipeline_lesson.check_executed(ring, cases=[(1, 8, 8, "fp16")])
    assert [r.ok for r in runs] == [True]
    assert f"tma_gemm (m=1, n=8, k=8, ring={ring})" in capsys.readouterr().out


def test_every_kernel_bug_is_a_deadlock_on_the_executor(capsys):
    caught = pipeline_lesson.bugs_executed(shape=(1, 8, 200))
    assert list(caught) == list(tma_gemm.BUGS[1:])
    assert all(h is not None and h.kind == hazards.DEADLOCK for h in caught.values()), caught
    assert "wait on mbarrier" in capsys.readouterr().out


@pytest.mark.gpu(needs="sm_90+")
def test_every_kernel_bug_is_caught_on_the_gpu():
    caught = pipeline_lesson.bugs_on_gpu()
    assert caught and all(v is not None for v in caught.values())


def test_stage_sweep_before_anything_is_recorded_is_the_prediction(capsys, cpu_results):
    out = stage_sweep_lesson.stage_sweep()
    assert out.mode is live.Mode.SIMULATED and out.value is None
    text = capsys.readouterr().out
    assert stage_sweep_lesson.RECORD_COMMAND in text and "load = 3 x MMA" in text
    assert all(f"{s} stage(s), 64 k-tiles" in text for s in (1, 2, 3, 4))
    assert stage_sweep_lesson.calibrated_figure(out) is None


def test_recorded_stage_sweep_is_fitted_and_drawn(capsys, cpu_results):
    cpu_results("stage_sweep")
    out = stage_sweep_lesson.stage_sweep()
    assert out.mode is live.Mode.RECORDED
    assert "stages=1:" in capsys.readouterr().out
    fig = stage_sweep_lesson.calibrated_figure(out)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any(out.record.gpu in label for label in labels)
    assert "worst error" in capsys.readouterr().out
