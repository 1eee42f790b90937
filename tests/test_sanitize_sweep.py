"""course.bench.sanitize without a GPU: which runs the sweep makes, and how a tool's log
becomes a row of the record (a stand-in for compute-sanitizer prints the logs)."""

import stat
import sys

import pytest

from course.bench import sanitize
from course.bench import sanitizer_log
from course.bench.sanitize import FAIL, NOT_RUN, PASS
from kernels import fp8_gemm, hopper_gemm


def test_the_sweep_covers_every_preset_and_the_pdl_kernel():
    assert set(sanitize.presets("fp8_gemm")) == set(fp8_gemm.PRESETS)
    hopper = sanitize.presets("hopper_gemm")
    assert set(hopper) == {*hopper_gemm.PRESETS, "pdl"} and hopper["pdl"].pdl


@pytest.mark.parametrize("kernel", ["fp8_gemm", "hopper_gemm"])
def test_the_problem_wraps_every_presets_ring(kernel):
    """More k-tiles than the preset's ring has stages (its kernel object's own count), and
    ragged in M and N, so the sweep exercises the stages' reuse and the edges."""
    import torch

    from kernels import gemm_host

    module = {"fp8_gemm": fp8_gemm, "hopper_gemm": hopper_gemm}[kernel]
    dtype = torch.float8_e4m3fn if kernel == "fp8_gemm" else torch.bfloat16
    types = module.GEMM.operands.types(dtype, torch.bfloat16)
    m, n, k = sanitize.SHAPE
    assert m % 128 and n % 128
    for name, config in sanitize.presets(kernel).items():
        gemm = module.GEMM.kernel(types, config, "sm_90a", "k", "k")
        assert k // gemm_host.tile_k(dtype.itemsize * 8) > gemm.stages, name


def _fake_tool(tmp_path, monkeypatch, log: str, code: int):
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(f"#!/bin/sh\ncat <<'LOG'\n{log}\nLOG\nexit {code}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(sanitizer_log, "sanitizer", lambda: str(tool))
    monkeypatch.setattr(sanitize, "_sass", lambda kernel, preset: lambda: "")


VALUES = "  ok   fp8_gemm block 129x264x1024: relative error 1.70e-03 (tolerance 8e-03)"


def test_a_clean_run_with_right_values_passes(tmp_path, monkeypatch):
    log = f"{VALUES}\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    _fake_tool(tmp_path, monkeypatch, log, 0)
    row = sanitize.one("fp8_gemm", "block", "racecheck", logs=tmp_path / "logs")
    assert row["status"] == PASS and row["values"] == VALUES.strip(), row
    assert "RACECHECK SUMMARY" in (tmp_path / "logs" / "fp8_gemm.block.racecheck.log").read_text()


def test_reported_errors_fail_with_their_count(tmp_path, monkeypatch):
    log = (
        "========= Error: Race reported between Read access at k+0x10\n"
        f"{VALUES}\n========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)"
    )
    _fake_tool(tmp_path, monkeypatch, log, 99)
    row = sanitize.one("fp8_gemm", "block_staged", "racecheck")
    assert row["status"] == FAIL and row["detail"].startswith("3 error(s)"), row


def test_wrong_values_under_a_clean_tool_are_not_clean(tmp_path, monkeypatch):
    log = (
        "  FAIL fp8_gemm block: relative error 4.1e-01 (tolerance 8e-03)\n"
        "✘ fp8_gemm block: the values are wrong (the line above says by how much)\n"
        "========= ERROR SUMMARY: 0 errors"
    )
    _fake_tool(tmp_path, monkeypatch, log, 1)
    row = sanitize.one("fp8_gemm", "block", "memcheck")
    assert row["status"] == FAIL and "the values are wrong" in row["detail"], row


def test_no_sanitizer_is_not_run_not_clean(monkeypatch):
    monkeypatch.setattr(sanitizer_log, "sanitizer", lambda: None)
    assert sanitize.one("hopper_gemm", "pdl", "synccheck")["status"] == NOT_RUN


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in tool is a shell script")
def test_the_sweep_runs_every_case_it_names(tmp_path, monkeypatch):
    log = "========= ERROR SUMMARY: 0 errors"
    _fake_tool(tmp_path, monkeypatch, log, 0)
    data = sanitize.sweep(["hopper_gemm"], tools=("memcheck", "synccheck"), only=("pdl",), jobs=2)
    assert [(r["preset"], r["tool"]) for r in data["rows"]] == [
        ("pdl", "memcheck"),
        ("pdl", "synccheck"),
    ]
    assert all(r["status"] == PASS for r in data["rows"])
    assert data["rows"][0]["grid"] == "one cluster, every tile"
    specialized = sanitize.one("hopper_gemm", "specialized", "memcheck")
    assert specialized["grid"] == "a cluster per tile (not persistent)"


def test_a_recorded_sweep_reaches_the_results_table(tmp_path, monkeypatch):
    from course.bench import report
    from course.runtime import results

    from .helpers import H100, use_machine

    use_machine(monkeypatch, H100)
    row = {"kernel": "fp8_gemm", "preset": "block_staged", "tool": "racecheck"}
    row["grid"] = "one cluster, every tile"
    data = {
        "part": "sanitizer",
        "shape": list(sanitize.SHAPE),
        "rows": [{**row, "status": FAIL, "detail": "3 error(s); first: ...", "values": VALUES}],
    }
    results.record("sanitizer", data, command="python -m course.bench.sanitize", root=tmp_path)
    md = report.markdown(tmp_path)
    assert "## sanitizer" in md
    line = "| fp8_gemm `block_staged` | 129x264x1024, one cluster, every tile | racecheck | fail"
    assert line in md


def test_a_variant_runs_on_the_kernel_that_holds_its_preset(tmp_path, monkeypatch):
    _fake_tool(tmp_path, monkeypatch, "========= ERROR SUMMARY: 0 errors", 0)
    spec = "block_staged:cluster_m=1"
    data = sanitize.sweep(
        ["fp8_gemm", "hopper_gemm"], ("synccheck",), only=("tensor",), variants=(spec,),
        logs=tmp_path / "logs",
    )  # fmt: skip
    assert [(r["kernel"], r["preset"]) for r in data["rows"]] == [
        ("fp8_gemm", "tensor"),
        ("fp8_gemm", spec),
    ]
    assert (tmp_path / "logs" / "fp8_gemm.block_staged_cluster_m_1.synccheck.log").exists()
    assert sanitize.config_of("fp8_gemm", spec).cluster_m == 1


def test_a_variant_no_kernel_holds_is_refused_before_any_gpu_time():
    with pytest.raises(ValueError, match="no preset"):
        sanitize.main(["--kernels", "hopper_gemm", "--variant", "block_staged:cluster_m=1"])
    with pytest.raises(ValueError):  # a field fp8_gemm's Config does not have
        sanitize.main(["--kernels", "fp8_gemm", "--variant", "block_staged:tile_q=1"])
