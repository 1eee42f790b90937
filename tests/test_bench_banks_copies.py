"""The copies/banks benchmarks' CPU side: predictions, tables, recorded-result formatting,
the 'not measured yet' fallback, and the CLI's refusal without a GPU."""

import os
import subprocess
import sys

import pytest

from course.runtime import live, results
from course.bench import bank_conflicts as bench_banks
from course.bench import copy_bandwidth as bench_copies
from course.bench import report

from .helpers import CPU, H100, use_machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Shapes of the records the GPU commands write; the numbers are invented for the formatter
# tests and only ever live in a temporary folder.
COPIES = {
    "bytes": 2**30,
    "ceiling_gbps": 3000.0,
    "ceiling_spread": 0.01,
    "best": "tiled",
    "best_pct_of_ceiling": 95.0,
    "variants": [
        {
            "variant": "scalar",
            "gbps": 2500.0,
            "pct_of_ceiling": 83.3,
            "median_ms": 0.86,
            "spread": 0.01,
            "samples": 60,
            "values": None,
            "threads_per_block": 256,
            "checks": [],
        },
        {
            "variant": "tiled",
            "gbps": 2850.0,
            "pct_of_ceiling": 95.0,
            "median_ms": 0.75,
            "spread": 0.01,
            "samples": 60,
            "values": 4,
            "threads_per_block": 256,
            "checks": [],
        },
    ],
}


def banks_record():
    data = bench_banks.run(
        ["float8x8_rows", "float8x8_rows_swizzled"], with_ncu=False, with_timing=False
    )
    data["cases"][0]["measured"] = {"requests": 8.0, "wavefronts": 16.0, "conflicts": 8.0}
    data["cases"][0]["agree"] = True
    data["cases"][0]["timing"] = {
        "ns_per_request": 1.1,
        "ns_per_wavefront": 0.55,
        "ms": 1.0,
        "iters": 512,
        "blocks": 1056,
        "threads": 256,
    }
    return data


def test_predict_and_table_without_a_gpu():
    pred = bench_banks.predict(["float8x8_rows", "transpose_rows"])
    assert pred["float8x8_rows"]["conflicts"] == 8 and pred["transpose_rows"]["worst_degree"] == 32
    data = banks_record()
    text = bench_banks.table(data)
    assert "float8x8_rows " in text and "yes" in text and "1.100" in text
    assert "float8x8_rows_swizzled" in text and " - " in text  # not measured: shown as such


def test_copies_table():
    text = bench_copies.table(COPIES)
    assert "tiled" in text and "95.0%" in text and "ceiling" in text
    assert text.splitlines()[0].split()[-1] == "spread"  # each timing's noise, ceiling's too
    assert all(line.split()[4] == "1.00%" for line in text.splitlines()[1:])


def past_the_ceiling(edge_pct: float, spread: float) -> dict:
    """COPIES with its best copy `edge_pct` percent past the ceiling, both spreads `spread`."""
    best = {**COPIES["variants"][1], "pct_of_ceiling": 100 + edge_pct, "spread": spread}
    return {
        **COPIES,
        "ceiling_spread": spread,
        "best_pct_of_ceiling": 100 + edge_pct,
        "variants": [COPIES["variants"][0], best],
    }


def test_a_copy_past_the_ceiling_is_explained_against_the_spreads():
    assert bench_copies.above_ceiling(COPIES) is None  # 95%: nothing to explain
    real = bench_copies.above_ceiling(past_the_ceiling(0.5, 0.002))
    assert real.startswith("Above 100%: tiled is 0.5% past the ceiling")
    assert "torch's copy_" in real and "0.20% (tiled) and 0.20% (ceiling)" in real
    assert "more than either spread" in real
    assert "within the noise" in bench_copies.above_ceiling(past_the_ceiling(0.5, 0.01))


def test_report_formats_both_families(monkeypatch, tmp_path):
    use_machine(monkeypatch, H100)
    results.record(
        "copies", COPIES, command="python -m course.bench copies --record", root=tmp_path
    )
    results.record(
        "bank_conflicts",
        banks_record(),
        command="python -m course.bench banks --record",
        root=tmp_path,
    )
    md = report.markdown(tmp_path)
    assert "## copies" in md and "| tiled | 2850 | 95.0% | 3000 |" in md
    assert (
        "## bank_conflicts" in md and "| float8x8_rows | 4 B | 16 / 8 | 16 / 8 | yes | 1.10 |" in md
    )
    assert "| float8x8_rows_swizzled | 4 B | 8 / 0 | not measured | - | - |" in md


def test_not_measured_yet_fallback(monkeypatch, tmp_path):
    use_machine(monkeypatch, CPU)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    shown = []
    monkeypatch.setattr(live, "show", shown.append)
    fb = live.recorded_or(
        "bank_conflicts",
        live.simulated(lambda: "the model", "the prediction"),
        "python -m course.bench banks --record",
    )
    out = live.live_or("gpu", lambda: "live!", fb)
    assert out.mode is live.Mode.SIMULATED and out.value == "the model" and out.record is None
    assert "No GPU measurement" in str(out.banner) and "banks --record" in str(out.banner)
    use_machine(monkeypatch, H100)
    results.record(
        "bank_conflicts", {"cases": []}, command="python -m course.bench banks", root=tmp_path
    )
    use_machine(monkeypatch, CPU)
    out = live.live_or("gpu", lambda: "live!", fb)
    assert out.mode is live.Mode.RECORDED and out.value == {"cases": []}
    assert "H100" in str(out.banner)


@pytest.mark.parametrize("cmd", ["copies", "banks"])
def test_cli_refuses_without_a_gpu(cmd):
    out = subprocess.run(
        [sys.executable, "-m", "course.bench", cmd, "--record"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COURSE_TIER": "cpu"},
    )
    assert out.returncode != 0 and "needs a CUDA GPU" in out.stderr
