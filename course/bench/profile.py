"""Nsight Compute's view of one GEMM launch, ours and cuBLAS's, recorded with provenance.

    python -m course.bench.profile --kernel hopper --size 4096 [--config preset=NAME]
        [--dtype bf16|fp16|e4m3|e5m2] [--record]

Runs this module as a child process under `ncu` twice -- once catching the course's
kernel, once cuBLAS's -- with the Speed Of Light, compute and memory workload sections,
and records the headline metrics (and the raw reports) in results/profile.json.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys

SECTIONS = (
    "SpeedOfLight",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis",
    "Occupancy",
    "LaunchStats",
)
HEADLINE = (
    "Duration",
    "Elapsed Cycles",
    "SM Frequency",
    "SM Active Cycles",
    "Compute (SM) Throughput",
    "Memory Throughput",
    "DRAM Throughput",
    "L2 Cache Throughput",
    "L2 Hit Rate",
    "Registers Per Thread",
    "Achieved Occupancy",
    "Executed Ipc Active",
    "SM Busy",
    "L1/TEX Hit Rate",
    "Max Bandwidth",
)


def ncu_binary() -> str:
    for candidate in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.path.exists(candidate):
            return candidate
    raise FileNotFoundError("Nsight Compute (ncu) not found")


def parse_csv(text: str) -> dict[str, dict[str, str]]:
    """ncu --csv --page details output -> {metric name: {'value':..., 'unit':...}}."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError("no ncu CSV table in the output")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    return {
        r["Metric Name"]: {
            "value": r["Metric Value"],
            "unit": r["Metric Unit"],
            "section": r["Section Name"],
            "kernel": r["Kernel Name"],
        }
        for r in rows
    }


def profile(
    kernel: str,
    size: int,
    config: dict,
    which: str,
    sections=SECTIONS,
    metrics: tuple[str, ...] = (),
    clock_control: str = "base",
    dtype: str = "bf16",
) -> dict:
    """Run ncu on a child that launches `which` ('kernel' or 'cublas') a few times, reading
    `sections` and the raw counters `metrics`. ncu holds the SM clock at its base value
    by default (`clock_control="base"`); "none" lets it run as it would unprofiled."""
    # cuBLAS's GEMM kernels on Hopper are named nvjet_* or *gemm*/*xmma*; the operands'
    # conversion kernels that run first must not be caught
    regex = "regex:kernel_cutlass" if which == "kernel" else "regex:nvjet|gemm|xmma"
    cmd = [
        ncu_binary(),
        "--csv",
        "--page",
        "details",
        "-k",
        regex,
        "--launch-skip",
        "3",
        "--launch-count",
        "1",
        "--clock-control",
        clock_control,
    ]
    for s in sections:
        cmd += ["--section", s]
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    cmd += [
        sys.executable,
        "-m",
        "course.bench.profile",
        "_launch",
        kernel,
        str(size),
        dtype,
        which,
    ]
    cmd += [f"{k}={v}" for k, v in config.items()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"ncu failed ({out.returncode}): {out.stderr[-2000:]}")
    read = parse_csv(out.stdout)
    return {
        "kernel_name": next(iter(read.values()))["kernel"][:120],
        "headline": {k: v for k, v in read.items() if k in HEADLINE or k in metrics},
        "all": read,
    }


def _launch(argv: list[str]) -> None:
    """Child: prepare the GEMM and launch it (or cuBLAS) five times."""
    import torch

    from course.bench.__main__ import DTYPES
    from course.bench.gemm_bench import GemmProblem, cublas, prepare

    kernel, size, dtype, which, *overrides = argv
    config = {}
    for o in overrides:
        k, v = o.split("=", 1)
        config[k] = int(v) if v.isdigit() else v
    problem = GemmProblem(int(size), int(size), int(size), DTYPES[dtype])
    a, b = problem.operands()
    c = problem.output()
    fn = prepare(kernel, problem, **config) if which == "kernel" else cublas
    for _ in range(5):
        fn(a, b, c)
    torch.cuda.synchronize()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_launch":
        _launch(argv[1:])
        return 0
    p = argparse.ArgumentParser(prog="python -m course.bench.profile")
    p.add_argument("--kernel", required=True)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--dtype", default="bf16", help="bf16, fp16, e4m3 or e5m2")
    p.add_argument("--config", nargs="*", default=[])
    p.add_argument("--sections", nargs="*", default=list(SECTIONS))
    p.add_argument("--metrics", nargs="*", default=[], help="raw counters to read as well")
    p.add_argument("--no-cublas", action="store_true", help="profile the course's kernel only")
    p.add_argument(
        "--clock-control",
        choices=("base", "none"),
        default="base",
        help="none: let the SM clock run free, as it does outside the profiler",
    )
    p.add_argument("--dump", help="write every metric read to this JSON file")
    p.add_argument("--record", action="store_true")
    args = p.parse_args(argv)
    config = dict(o.split("=", 1) for o in args.config)
    data = {
        "kernel": args.kernel,
        "size": args.size,
        "dtype": args.dtype,
        "config": config,
        "clock_control": args.clock_control,
    }
    for who, which in (("ours", "kernel"), ("cublas", "cublas")):
        if not (args.no_cublas and which == "cublas"):
            data[who] = profile(
                args.kernel,
                args.size,
                config,
                which,
                args.sections,
                tuple(args.metrics),
                args.clock_control,
                args.dtype,
            )
    if args.dump:
        import json

        with open(args.dump, "w") as f:
            json.dump(data, f, indent=1)
    for who in ("ours", "cublas"):
        if who not in data:
            continue
        print(f"== {who}: {data[who]['kernel_name']}")
        for name, m in data[who]["headline"].items():
            print(f"   {name:28s} {m['value']:>12s} {m['unit']}")
    if args.record:
        from course.runtime import results
        from course.bench import report

        for who in ("ours", "cublas"):
            if who in data:
                data[who].pop("all")  # keep the file small: headline metrics only
        results.record("profile", data)
        report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
