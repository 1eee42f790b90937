"""The GEMM notebooks' lessons (07, 10, 11): the check sweep (judged here on torch's own
matmul on a CPU, right and wrong), benchmarks or their recorded rows, compile reports,
configurations, the WGMMA accumulator formula, the Hopper presets and the goal."""

import dataclasses
import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course.bench import report  # noqa: E402
from course.lessons import gemm_configs, gemm_lesson, hopper_lesson, wgmma_lesson  # noqa: E402
from course.models.tile_order import wave_panels  # noqa: E402
from course.models.wgmma_descriptor import core_matrix_bytes  # noqa: E402
from course.runtime import live  # noqa: E402
from course.viz.tile_order_pictures import compare_orders  # noqa: E402
from course.viz.wgmma_pictures import swizzled_chunks  # noqa: E402

from .helpers import CPU, use_machine  # noqa: E402


def _torch_gemm(a, b, c):
    torch.mm(a, b.t(), out=c)


def test_check_sweep_passes_a_right_gemm_and_fails_a_wrong_one(capsys):
    shapes = [(16, 24, 8), (3, 5, 7)]
    verdicts = gemm_lesson.check_sweep(_torch_gemm, shapes, dtypes=(torch.float32,), device="cpu")
    assert len(verdicts) == 2 and all(v.ok for v in verdicts)
    assert "2/2 passed" in capsys.readouterr().out

    def forgets_the_last_row(a, b, c):
        c[:-1] = a[:-1] @ b.t()

    verdicts = gemm_lesson.check_sweep(
        forgets_the_last_row, shapes, dtypes=(torch.float32,), device="cpu"
    )
    assert not any(v.ok for v in verdicts) and "0/2 passed" in capsys.readouterr().out


def test_check_sweep_hands_the_kernel_operands_of_the_asked_majors():
    seen = []

    def record(a, b, c):
        seen.append((a.stride(), b.stride()))
        _torch_gemm(a, b, c)

    assert all(
        v.ok
        for v in gemm_lesson.check_sweep(
            record, [(4, 6, 8)], dtypes=(torch.float32,), device="cpu", a_major="m", b_major="n"
        )
    )
    assert seen == [((1, 4), (1, 6))]  # M- and N-contiguous


def _art(ptx: dict[str, list[str]], sass: str = ""):
    return types.SimpleNamespace(
        resource_usage=lambda: {"kernel_x": {"registers": 96, "stack_frame_bytes": 0}},
        compile_seconds=1.25,
        ptx_lines=lambda pattern: ptx.get(pattern, []),
        sass=lambda: sass,
    )


def test_compile_report_counts_ptx_and_sass(capsys):
    art = _art({"mma": ["mma.sync a", "mma.sync b", "mma.sync c"]}, sass="HMMA HMMA LDSM")
    counts = gemm_lesson.compile_report(
        art, {"mma.sync": "mma", "ldmatrix": "ldm"}, show=1, sass=("HMMA", "LDSM", "UTMALDG")
    )
    assert counts == {"mma.sync": 3, "ldmatrix": 0}
    out = capsys.readouterr().out
    assert "96 registers/thread" in out and "mma.sync b" not in out  # show=1: one line
    assert "SASS: {'HMMA': 2, 'LDSM': 1, 'UTMALDG': 0}" in out


def test_bench_or_recorded_prints_the_recorded_rows_off_the_gpu(monkeypatch, capsys):
    use_machine(monkeypatch, CPU)
    out = gemm_lesson.bench_or_recorded("sm80", "sm_80+", sizes=(4096,))
    assert out.mode is live.Mode.RECORDED
    rows, rec = gemm_lesson.recorded_rows("sm80")
    assert out.value == rows and rec is not None
    text = capsys.readouterr().out
    assert all(r["problem"] in text for r in rows)


@pytest.mark.gpu(needs="sm_80+")
def test_bench_or_recorded_measures_live_on_a_gpu():
    out = gemm_lesson.bench_or_recorded("sm80", "sm_80+", sizes=(2048,))
    assert out.live and out.value[0]["kernel_tflops"] > 0


@dataclasses.dataclass(frozen=True)
class _Config:
    tile_m: int = 128
    tile_n: int = 256
    stages: int = 3

    @property
    def threads(self):
        return 256

    def smem_bytes(self, elem):
        return (self.tile_m + self.tile_n) * 64 * elem * self.stages


def test_overrides_name_what_differs_from_the_default():
    module = types.SimpleNamespace(__name__="k", Config=_Config)
    assert gemm_configs.overrides(module, {"tile_m": 128, "stages": 4}) == {"stages": 4}
    with pytest.raises(KeyError, match="no field"):
        gemm_configs.overrides(module, {"tile_q": 1})


def test_try_config_off_the_gpu_compiles_and_shows_the_record(monkeypatch, capsys):
    use_machine(monkeypatch, CPU)
    compiled = []

    def artifacts(arch, dtype, cfg):
        compiled.append((arch, cfg))
        return types.SimpleNamespace(
            resource_usage=lambda: {"k": {"registers": 200, "stack_frame_bytes": 0}}
        )

    module = types.SimpleNamespace(__name__="k", Config=_Config, artifacts=artifacts)
    out = gemm_configs.try_config(module, "sm80", {"stages": 4})
    assert out.mode is live.Mode.COMPILE_ONLY and compiled == [("sm_90a", _Config(stages=4))]
    text = capsys.readouterr().out
    assert "200 registers per thread" in text
    rows, rec = gemm_lesson.recorded_rows("sm80", config={"stages": 4})
    at_4096 = [r for r in rows if r["problem"].startswith("4096x")]
    assert at_4096 and all(r["problem"] in text for r in at_4096)
    assert not any(r["problem"] in text for r in rows if r not in at_4096)  # only the size asked
    # the recorded numbers come under their own banner, with the GPU, date and command
    banner = next(line for line in text.splitlines() if "RECORDED" in line)
    assert rec.citation() in banner
    assert (
        text.index("registers per thread") < text.index(banner) < text.index(at_4096[0]["problem"])
    )
    gemm_configs.try_config(module, "sm80", {"stages": 7})
    assert "no H100 measurement at 4096^3 recorded" in capsys.readouterr().out


def test_recorded_configs_show_one_size_per_configuration(capsys):
    shown = gemm_configs.recorded_configs("sm80", [{}, {"stages": 2}], size=4096)
    assert [r["problem"][:4] for r in shown] == ["4096", "4096"]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("default") and lines[1].startswith("{'stages': 2}")


def test_the_wgmma_accumulator_formula_matches_cute(capsys):
    from course.cute import kernel_traces

    pairs = kernel_traces.wgmma_accumulator_pairs(64)
    assert wgmma_lesson.accumulator_rows(pairs, threads=(0, 37, 127)) == {
        0: True,
        37: True,
        127: True,
    }
    assert "thread  37: 32 values, rows [17, 25]" in capsys.readouterr().out
    swapped = [((t ^ 1, v), rc) for (t, v), rc in pairs]  # neighbouring threads swapped
    assert not wgmma_lesson.accumulator_rows(swapped, threads=(0,))[0]


def test_executor_line_names_a_recorded_case_by_its_problem(capsys):
    from course.execute import ladder_runs

    run = ladder_runs.run_naive_gemm()  # the recorded case "naive_gemm"
    assert gemm_lesson.executor_line(run) is run and run.ok
    assert capsys.readouterr().out.startswith("naive_gemm (m=129, n=130, k=17), ")


def test_the_wgmma_fallback_runs_the_kernel_on_the_executor(capsys):
    runs = wgmma_lesson.check_executed(shapes=[(1, 8, 8)])
    assert [r.ok for r in runs] == [True]
    assert "wgmma_gemm (m=1, n=8, k=8)" in capsys.readouterr().out


def test_the_hopper_fallback_runs_each_preset_on_the_executor(capsys):
    runs = hopper_lesson.check_executed(presets=("pingpong",), shape=(1, 8, 8))
    assert [r.ok for r in runs] == [True]
    assert "hopper_gemm (m=1, n=8, k=8, preset=pingpong)" in capsys.readouterr().out


@pytest.mark.compile
def test_wgmma_instructions_show_hgmma(capsys):
    wgmma_lesson.wgmma_instructions("sm_90a")
    assert "'HGMMA.64x256x16': 4" in capsys.readouterr().out


def test_presets_table_names_each_presets_features(capsys):
    from kernels import hopper_gemm

    hopper_lesson.print_presets(hopper_gemm.PRESETS)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(hopper_gemm.PRESETS)
    for line, (name, cfg) in zip(lines, hopper_gemm.PRESETS.items()):
        assert line.startswith(name) and ("pingpong" in line) == cfg.pingpong


def test_register_budget_and_multicast_arithmetic(capsys):
    assert hopper_lesson.register_budget(40, 232) == 40 * 128 + 232 * 256
    assert "registers of 65,536" in capsys.readouterr().out
    assert hopper_lesson.multicast_savings(128, 256, 4096, cluster=2) == pytest.approx(1 / 3)
    assert hopper_lesson.multicast_savings(128, 128, 1024, cluster=4) == pytest.approx(3 / 8)


def test_bench_presets_off_the_gpu_shows_every_presets_record(monkeypatch, capsys):
    use_machine(monkeypatch, CPU)
    presets = {"tma_store": None, "pingpong": None}
    out = hopper_lesson.bench_presets(presets)
    assert out.mode is live.Mode.RECORDED and list(out.value) == list(presets)
    text = capsys.readouterr().out
    for name in presets:
        rows, _ = gemm_lesson.recorded_rows("hopper", preset=name)
        assert rows == out.value[name] and f"--- {name}" in text


def test_goal_verdict_judges_only_the_goal_sizes(capsys, monkeypatch):
    met = hopper_lesson.goal_verdict(dtypes=("bf16",))
    rows, rec = gemm_lesson.recorded_rows("hopper", preset="tma_store")
    goal_rows = [r for r in rows if int(r["problem"].split("x")[0]) in hopper_lesson.GOAL_SIZES]
    assert met == {r["problem"]: report.pct_of_cublas(r) >= 105 for r in goal_rows}
    assert rec.citation() in capsys.readouterr().out
    monkeypatch.setattr(hopper_lesson, "GOAL_PCT", 0)
    assert all(hopper_lesson.goal_verdict(dtypes=("bf16",)).values())
    assert "goal met" in capsys.readouterr().out


def test_compare_orders_titles_count_each_orders_panels():
    fig = compare_orders(16, 16, groups=(1, 8), wave=40)
    assert len(fig.axes) == 2
    for ax, group in zip(fig.axes, (1, 8)):
        assert ax.get_title().endswith(f"touch {wave_panels(16, 16, group, 40)[0]} panels")
    assert "16 x 16 grid" in fig._suptitle.get_text()
    plt.close(fig)


def test_swizzled_chunks_colours_each_element_by_its_chunk():
    fig = swizzled_chunks(rows=16, k_elems=64, source="src")
    ax = fig.axes[0]
    image = ax.images[0].get_array()
    assert image.shape == (16, 64)
    assert all(
        image[r, c] == (core_matrix_bytes(r, 2 * c) % 128) // 16
        for r in range(16)
        for c in range(0, 64, 5)
    )
    assert (
        image[1, 0] == 1 and image[9, 8] == 0
    )  # chunk 0 of row 1 -> slot 1; chunk 1 of row 9 -> 0
    assert sum(t.get_text().startswith("k-step") for t in ax.texts) == 4
    assert "0-7 and 8-15" in ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    plt.close(fig)
