"""The TMA benches: ncu output parsing (on canned output), ratios, recorded-result tables,
and the command line refusing to measure without a GPU."""

import os
import subprocess
import sys

import pytest

from course.runtime import results
from course.bench import report
from course.bench.tma_traffic import METRICS, parse_csv, ratios
from course.bench.tma_traffic import report as traffic_report

from .helpers import H100, use_machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KERNEL = "kernel_cutlass_kernel_kernelstmaTmaMulticast_object_at__CopyAtom_0"
CANNED = f"""==PROF== Connected to process 4242 (/usr/bin/python3.11)
==PROF== Profiling "{KERNEL}" - 0: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.11","127.0.0.1","{KERNEL}","1","7","(128, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","2,816"
"0","4242","python3.11","127.0.0.1","{KERNEL}","1","7","(128, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1.50"
"0","4242","python3.11","127.0.0.1","{KERNEL}","1","7","(128, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","l1tex__m_xbar2l1tex_read_bytes.sum","Mbyte","1,384.12"
"0","4242","python3.11","127.0.0.1","{KERNEL}","1","7","(128, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sectors_op_read.sum","sector","43,253,760"
"0","4242","python3.11","127.0.0.1","{KERNEL}","1","7","(128, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sectors_srcunit_tex_op_read.sum","sector","n/a"
"1","4242","python3.11","127.0.0.1","{KERNEL}","1","7","(128, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","9"
"""


def test_parse_csv_reads_the_first_launch_in_base_units():
    got = parse_csv(CANNED)
    assert got["dram__bytes_read.sum"]["value"] == 2816  # the first launch, not ID 1
    assert got["lts__t_sectors_op_read.sum"] == {
        "value": 43253760.0,
        "unit": "sector",
        "kernel": KERNEL,
    }
    assert got["l1tex__m_xbar2l1tex_read_bytes.sum"]["value"] == pytest.approx(1384.12e6)
    assert got["l1tex__m_xbar2l1tex_read_bytes.sum"]["unit"] == "byte"
    assert got["gpu__time_duration.sum"]["value"] == pytest.approx(1500.0)  # ns
    assert "lts__t_sectors_srcunit_tex_op_read.sum" not in got  # "n/a" is skipped
    with pytest.raises(ValueError, match="no ncu CSV"):
        parse_csv("==ERROR== Failed to find metric foo\n")


def _row(cluster, multicast, sectors, delivered):
    return {
        "cluster": cluster,
        "multicast": multicast,
        "missing": [],
        "metrics": {
            "lts__t_sectors_op_read.sum": sectors,
            "l1tex__m_xbar2l1tex_read_bytes.sum": delivered,
        },
    }


def test_ratios_and_report_show_which_counter_moved():
    rows = [
        _row(2, False, 4000, 1e6),
        _row(2, True, 2000, 1e6),
        _row(4, False, 4000, 1e6),
        _row(4, True, 1000, 1e6),
    ]
    rows[0]["missing"] = ["dram__bytes_read.sum"]
    got = {(r["cluster"], r["metric"]): r["ratio"] for r in ratios(rows)}
    assert got[(2, "lts__t_sectors_op_read.sum")] == 0.5
    assert got[(4, "lts__t_sectors_op_read.sum")] == 0.25
    assert got[(4, "l1tex__m_xbar2l1tex_read_bytes.sum")] == 1.0
    text = traffic_report({"rows": rows, "ratios": ratios(rows)})
    assert "0.250" in text and "not available in this ncu: dram__bytes_read.sum" in text
    assert set(METRICS) >= {"lts__t_sectors_op_read.sum", "l1tex__m_xbar2l1tex_read_bytes.sum"}


def test_recorded_tables_format_the_new_families(monkeypatch, tmp_path):
    use_machine(monkeypatch, H100)
    results.record(
        "stage_sweep",
        {
            "kernel": "tma",
            "size": 4096,
            "dtype": "bfloat16",
            "config": {},
            "results": [
                {"stages": 1, "kernel_tflops": 150.0, "pct_of_cublas": 25.0},
                {"stages": 4, "kernel_tflops": 400.0, "pct_of_cublas": 66.7},
            ],
        },
        command="python -m course.bench stages --record",
        root=tmp_path,
    )
    results.record(
        "tma",
        {
            "dtype": "bfloat16",
            "tile": [64, 64],
            "tiles_per_cta": 16,
            "results": [
                {
                    "variant": "cluster 2, separate loads",
                    "median_ms": 1.0,
                    "delivered_gbps": 3000.0,
                },
                {
                    "variant": "cluster 2, multicast",
                    "median_ms": 0.8,
                    "delivered_gbps": 3750.0,
                    "speedup_vs_separate": 1.25,
                },
            ],
        },
        command="python -m course.bench tma --record",
        root=tmp_path,
    )
    results.record(
        "tma_traffic",
        {
            "rows": [],
            "ratios": [
                {
                    "cluster": 2,
                    "metric": "lts__t_sectors_op_read.sum",
                    "separate": 4000.0,
                    "multicast": 2000.0,
                    "ratio": 0.5,
                }
            ],
        },
        command="python -m course.bench.tma_traffic",
        root=tmp_path,
    )
    text = report.markdown(tmp_path)
    assert "| tma | 4096^3 bfloat16 | 4 | 400 | 66.7% |" in text
    assert "| cluster 2, multicast | 16 x 64x64 bfloat16 | 0.800 | 3750 | 1.25x |" in text
    assert "| 2 | lts__t_sectors_op_read.sum | 4,000 | 2,000 | 0.500 |" in text


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "course.bench", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "COURSE_TIER": "cpu"},
    )


def test_cli_refuses_to_measure_tma_or_sweep_stages_without_a_gpu():
    for args in (("tma", "--record"), ("stages", "--record")):
        out = _cli(*args)
        assert out.returncode != 0 and "needs a CUDA GPU" in out.stderr, out
    assert "tma" in _cli("list").stdout


def test_unit_metrics_lists_one_unit_s_counters_from_ncu(monkeypatch):
    from course.bench import tma_traffic

    listing = (
        "Device NVIDIA H100 80GB HBM3 (GH100)\n"
        "Metric Name          Metric Type  Metric Unit  Metric Description\n"
        "lrc__xbar2lrc_requests_op_read   Counter  request  # of LRC requests for read\n"
        "lrc__lrc2xbar_sectors_op_read    Counter  sector   # of LRC read sectors\n"
        "lts__t_sectors                   Counter  sector   # of LTS sectors\n"
        "lrc__average_rate                Ratio             average rate\n"
        "lrc__xbar2lrc_requests_op_read   Counter  request  (listed twice)\n"
    )

    class Done:
        stdout = listing

    monkeypatch.setattr(tma_traffic, "ncu_binary", lambda: "ncu")
    monkeypatch.setattr(tma_traffic.subprocess, "run", lambda *a, **k: Done())
    assert tma_traffic.unit_metrics("lrc") == [
        "lrc__xbar2lrc_requests_op_read.sum",
        "lrc__lrc2xbar_sectors_op_read.sum",
    ]


def test_ratios_cover_every_metric_either_variant_read():
    from course.bench import tma_traffic

    rows = [
        {"cluster": 2, "multicast": False, "metrics": {"a": 4.0, "lrc__x.sum": 2.0}},
        {"cluster": 2, "multicast": True, "metrics": {"a": 2.0, "lrc__x.sum": 1.0}},
    ]
    got = {r["metric"]: r["ratio"] for r in tma_traffic.ratios(rows)}
    assert got == {"a": 0.5, "lrc__x.sum": 0.5}
