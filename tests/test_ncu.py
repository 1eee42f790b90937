"""course.bench.ncu and the counting side of course.bench.bank_conflicts, on canned Nsight
Compute output (the real thing runs on the GPU machine:
tests/test_smem_banks.py::test_ncu_agrees...)."""

import json
import stat
import sys
import textwrap

import pytest

from course.bench import ncu
from course.bench import bank_conflicts as bench_banks

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
    '"Metric Value"'
)


def row(i, kernel, metric, value, unit=""):
    return (
        f'"{i}","4242","python3","gpu","{kernel}","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0",'
        f'"Command line profiler metrics","{metric}","{unit}","{value}"'
    )


CANNED = "\n".join(
    [
        "==PROF== Connected to process 4242 (/usr/bin/python3)",
        "some line the application printed",
        HEADER,
        row(0, "kernel_cutlass_smem_read_kernel_a", ncu.SHARED_LOAD_METRICS["conflicts"], "8"),
        row(0, "kernel_cutlass_smem_read_kernel_a", ncu.SHARED_LOAD_METRICS["wavefronts"], "16"),
        row(
            0, "kernel_cutlass_smem_read_kernel_a", ncu.SHARED_LOAD_METRICS["requests"], "8", "inst"
        ),
        row(1, "kernel_cutlass_smem_read_kernel_b", ncu.SHARED_LOAD_METRICS["conflicts"], "992"),
        row(1, "kernel_cutlass_smem_read_kernel_b", ncu.SHARED_LOAD_METRICS["wavefronts"], "1,024"),
        row(
            1,
            "kernel_cutlass_smem_read_kernel_b",
            ncu.SHARED_LOAD_METRICS["requests"],
            "32",
            "inst",
        ),
        "==PROF== Disconnected from process 4242",
    ]
)


def test_parse_canned_csv():
    launches = ncu.parse_csv(CANNED)
    assert [l.id for l in launches] == [0, 1]
    assert launches[0].kernel.startswith("kernel_cutlass_smem_read_kernel")
    assert launches[1].metrics[ncu.SHARED_LOAD_METRICS["wavefronts"]] == 1024.0  # "1,024"
    assert launches[0].metrics[ncu.SHARED_LOAD_METRICS["requests"]] == 8.0


def test_parse_without_a_table_explains():
    with pytest.raises(ncu.NcuError, match="no CSV table"):
        ncu.parse_csv("==PROF== Connected\n==ERROR== something broke\n")


def test_explain_common_failures():
    assert "ERR_NVGPUCTRPERM" in ncu.explain(
        1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"
    )
    assert "query-metrics" in ncu.explain(1, "==ERROR== Failed to find metric l1tex__foo")
    assert "matched nothing" in ncu.explain(0, "==WARNING== No kernels were profiled.")
    assert "status 3" in ncu.explain(3, "boom")


def test_command_line():
    cmd = ncu.command("/x/ncu", ["a.sum", "b.sum"], "smem_read_kernel", ["python", "-m", "m"])
    assert cmd[:2] == ["/x/ncu", "--csv"] and "--print-units" in cmd
    assert cmd[cmd.index("--metrics") + 1] == "a.sum,b.sum"
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:smem_read_kernel"
    assert cmd[-3:] == ["python", "-m", "m"]


def test_missing_ncu_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_NCU", str(tmp_path / "nope"))
    assert ncu.find_ncu() is None
    with pytest.raises(ncu.NcuError, match="not found"):
        ncu.profile(["true"], "x")


FAKE_NCU = textwrap.dedent('''\
    #!{python}
    """A stand-in for ncu: acts like the probe (writes its manifest) and prints canned CSV."""
    import json, os, sys
    args = sys.argv[1:]
    if os.environ.get("FAKE_NCU_FAIL"):
        print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", file=sys.stderr)
        sys.exit(1)
    metrics = args[args.index("--metrics") + 1].split(",")
    manifest = args[args.index("--manifest") + 1]
    cases = args[args.index("--cases") + 1].split(",")
    values = json.loads(os.environ["FAKE_NCU_VALUES"])
    json.dump([{{"case": c, "warps": 1, "passes": 1, "requests": values[c][2]}} for c in cases],
              open(manifest, "w"))
    print("==PROF== Connected to process 1")
    print({header!r})
    for i, c in enumerate(cases):
        for m, v in zip(metrics, values[c]):
            print(f'"{{i}}","1","python3","h","kernel_cutlass_smem_read_kernel_x","1","7",'
                  f'"(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","{{m}}","",'
                  f'"{{v:,}}"')
''')


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable, header=HEADER))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("COURSE_NCU", str(path))
    return path


def test_counters_through_a_fake_ncu(fake_ncu, monkeypatch):
    names = ["float8x8_rows", "float8x8_rows_swizzled", "vec128_rows"]
    pred = bench_banks.predict(names)
    values = {n: (pred[n]["conflicts"], pred[n]["wavefronts"], pred[n]["requests"]) for n in names}
    values["vec128_rows"] = (27, 31, 1)  # a GPU that disagrees with the model
    monkeypatch.setenv("FAKE_NCU_VALUES", json.dumps(values))
    got = bench_banks.measure_counters(names)
    assert got["float8x8_rows"]["conflicts"] == 8 and got["float8x8_rows"]["wavefronts"] == 16
    assert bench_banks.compare(pred["float8x8_rows"], got["float8x8_rows"]) == {"agree": True}
    assert bench_banks.compare(pred["float8x8_rows_swizzled"], got["float8x8_rows_swizzled"])[
        "agree"
    ]
    assert bench_banks.compare(pred["vec128_rows"], got["vec128_rows"]) == {"agree": False}
    assert bench_banks.compare(pred["float8x8_rows"], None) == {"agree": None}


def test_ncu_failure_reaches_the_record(fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_FAIL", "1")
    with pytest.raises(ncu.NcuError, match="permission|ERR_NVGPUCTRPERM"):
        bench_banks.measure_counters(["float8x8_rows"])
    data = bench_banks.run(["float8x8_rows"], with_ncu=True, with_timing=False)
    assert "ERR_NVGPUCTRPERM" in data["ncu_error"]
    assert data["cases"][0]["measured"] is None and data["cases"][0]["agree"] is None
    assert "Nsight Compute:" in bench_banks.table(data)
