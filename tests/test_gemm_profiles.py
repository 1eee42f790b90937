"""course.lessons.gemm_profiles: the newest recorded ncu launch per (preset, clock), cuBLAS
once per clock, and the rows notebook 11 prints (no GPU: records are written with a
pretend H100, or the committed ones are read)."""

from course.bench import report
from course.lessons import gemm_profiles
from course.runtime import results

from .helpers import H100, use_machine


def _record(root, preset, clock, duration, with_cublas=False):
    def headline(value):
        return {
            "Duration": {"value": value, "unit": "ns"},
            "L2 Cache Throughput": {"value": "50.00", "unit": "%"},
        }

    data = {
        "kernel": "hopper",
        "size": 4096,
        "config": {"preset": preset},
        "clock_control": clock,
        "ours": {"kernel_name": "k", "headline": headline(duration)},
    }
    if with_cublas:
        data["cublas"] = {"kernel_name": "nvjet", "headline": headline("1")}
    results.record(
        "profile", data, command=f"python -m course.bench.profile {preset} {clock}", root=root
    )


def test_the_newest_launch_per_preset_and_clock_with_cublas_once(monkeypatch, tmp_path):
    use_machine(monkeypatch, H100)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    _record(tmp_path, "persistent", "base", "300")
    _record(tmp_path, "persistent", "base", "217")  # newer: replaces the first
    _record(tmp_path, "persistent", "none", "199")
    _record(tmp_path, "tma_store", "none", "181", with_cublas=True)
    _record(tmp_path, "specialized", "base", "999")  # not asked for
    rows = gemm_profiles.profile_rows(("persistent", "tma_store"))
    assert [(r["who"], r["clock"], r["Duration"]) for r in rows] == [
        ("persistent", "base", "217"),
        ("persistent", "free", "199"),
        ("tma_store", "free", "181"),
        ("cuBLAS", "free", "1"),
    ]
    assert rows[0]["Elapsed Cycles"] == "-"  # not in that record: shown as a dash
    text = report.markdown(tmp_path)
    assert "4096^3 (SM clock: free)" in text and "4096^3 (SM clock: held at base)" in text


def test_the_committed_profiles_show_the_l2_bound_rungs(cpu_results, capsys):
    cpu_results("profile")
    rows = gemm_profiles.profile_rows(("persistent", "cluster"))
    gemm_profiles.print_rows(rows)
    out = capsys.readouterr().out
    assert "recorded: measured on NVIDIA H100" in out
    cycles = {(r["who"], r["clock"]): int(r["Elapsed Cycles"].replace(",", "")) for r in rows}
    # with multicast the cycle count hardly moves with the clock; without, it grows
    assert cycles[("cluster", "free")] < 1.03 * cycles[("cluster", "base")]
    assert cycles[("persistent", "free")] > 1.05 * cycles[("persistent", "base")]
