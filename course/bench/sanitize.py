"""Every preset of the last-percent kernels under compute-sanitizer: memcheck, racecheck and
synccheck, each on a ragged problem whose ring wraps, its values checked against torch.

    python -m course.bench.sanitize [--kernels fp8_gemm hopper_gemm] [--tools ...]
                                    [--presets NAME ...] [--variant PRESET:FIELD=VALUE,...]
                                    [--jobs 6] [--logs DIR] [--record]

What each run is, and why: one process per (kernel, preset, tool), under the tool, runs the
preset once on SHAPE (129 x 264 x 1024: ragged in M and N, and eight k-tiles of FP8 or
sixteen of bf16, more than a ring has stages). A persistent preset's grid is cut to ONE
cluster, so that cluster walks every tile: the ring wraps within a tile and runs on across
tiles, and the epilogue's buffers are reused, which a grid of one tile per CTA would never
do. The output is poisoned with NaN first and compared with a float64 reference (the
kernels' tolerance table), so a run that the tool calls clean but that computed wrong values
is not counted clean. `_child` is that one run.

The runs are independent processes (CuTe DSL compiles do not persist across processes), so
`--jobs` of them share the GPU at once. `--record` keeps the verdicts in
results/sanitizer.json with the GPU, date and command.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from course.bench import sanitizer_log

SHAPE = (129, 264, 1024)
PASS, FAIL, NOT_RUN = "pass", "fail", "not run"  # a row's status
TOOLS = ("memcheck", "racecheck", "synccheck")
TIMEOUT_S = 600


def presets(kernel: str) -> dict:
    """The configurations swept for `kernel`: its PRESETS, and for hopper_gemm the SOL
    kernel with programmatic dependent launch (notebook 13's `pdl`)."""
    if kernel == "fp8_gemm":
        from kernels import fp8_gemm

        return dict(fp8_gemm.PRESETS)
    from kernels import hopper_gemm

    return {**hopper_gemm.PRESETS, "pdl": hopper_gemm.Config(pdl=True)}


def config_of(kernel: str, spec: str):
    """The Config a preset name or a variant spec (course.bench.variants) stands for."""
    from course.bench import variants

    return variants.parse(spec, presets(kernel))[1]


def _inputs(kernel: str, config, m: int, n: int, k: int):
    """(run, reference, dtype of C): one launch of the kernel on fresh random inputs with a
    NaN-poisoned output, and its float64 reference."""
    import torch

    if kernel == "fp8_gemm":
        from kernels import fp8_gemm
        from kernels.fp8_scales import dequantize, quantize

        a, sa = quantize(torch.randn(m, k, device="cuda"), config.scales)
        b, sb = quantize(torch.randn(n, k, device="cuda"), config.scales, rows_of="b")
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        ref = dequantize(a, sa, config.scales) @ dequantize(b, sb, config.scales, "b").T
        return (lambda: fp8_gemm.run(a, b, sa, sb, out, config)), ref, torch.bfloat16
    from kernels import hopper_gemm

    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    return (lambda: hopper_gemm.run(a, b, out, config)), a.double() @ b.double().T, torch.bfloat16


def check_once(kernel: str, config, m: int, n: int, k: int) -> bool:
    """One launch of `config` (persistent: on one cluster that walks every tile), its values
    checked."""
    import torch

    from kernels import hopper_gemm, selftest

    hopper_gemm.max_active_clusters = lambda device, cluster_size: 1  # one cluster, every tile
    run, ref, dtype = _inputs(kernel, config, m, n, k)
    out = run()
    torch.cuda.synchronize()
    return selftest.verdict(f"{kernel} {config} {m}x{n}x{k}", out, ref, dtype)


def _child(kernel: str, preset: str, m: int, n: int, k: int) -> int:
    """One run (under the tool the parent started) of a preset or a variant spec: exit 0 if
    the values are right, 1 if not (with a line the parent's verdict quotes)."""
    if check_once(kernel, config_of(kernel, preset), m, n, k):
        return 0
    print(f"✘ {kernel} {preset}: the values are wrong (the line above says by how much)")
    return 1


def _sass(kernel: str, preset: str):
    """The preset's SASS for naming a race's two instructions (compiled here, lazily)."""

    def disassemble() -> str:
        import importlib

        import torch

        module = importlib.import_module(f"kernels.{kernel}")
        dtype = torch.float8_e4m3fn if kernel == "fp8_gemm" else torch.bfloat16
        return module.artifacts(None, dtype, config_of(kernel, preset)).sass()

    return disassemble


def one(kernel: str, preset: str, tool: str, shape=SHAPE, logs: Path | None = None) -> dict:
    """The tool's verdict on one preset (or variant spec): a row of the record."""
    persistent = config_of(kernel, preset).persistent
    grid = "one cluster, every tile" if persistent else "a cluster per tile (not persistent)"
    row = {"kernel": kernel, "preset": preset, "tool": tool, "grid": grid}
    tool_path = sanitizer_log.sanitizer()
    if tool_path is None:
        return {**row, "status": NOT_RUN, "detail": "compute-sanitizer is not installed here"}
    cmd = [tool_path, f"--tool={tool}", "--error-exitcode=99", "--report-api-errors=no"]
    cmd += [sys.executable, "-m", "course.bench.sanitize", "_child", kernel, preset]
    cmd += [str(v) for v in shape]
    # memcheck sees only the driver's allocations: one per tensor makes every tensor's end
    # an allocation's end (as the exercise checker runs it)
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"} if tool == "memcheck" else None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
        log, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        log, code = f"did not finish within {TIMEOUT_S} s", None
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]", "_", f"{kernel}.{preset}.{tool}")  # a variant's = and ,
        (logs / f"{name}.log").write_text(log)
    sass = _sass(kernel, preset) if tool == "racecheck" else None
    status, detail = verdict(tool, code, log, sass)
    values = next((ln.strip() for ln in log.splitlines() if " relative error " in ln), "")
    return {**row, "status": status, "detail": detail, "values": values}


def verdict(tool: str, code: int | None, log: str, sass=None) -> tuple[str, str]:
    """(PASS, FAIL or NOT_RUN, what was seen) from the tool's log and the run's exit code
    (None: it did not finish): clean only where the tool found nothing and the values
    were right."""
    read = sanitizer_log.read(log)
    if code is None:
        return FAIL, read.last_line()
    if read.clean and code == 0:
        return PASS, "0 errors"
    if read.clean:
        return FAIL, f"no {tool} error, but {read.failed_check() or f'exit code {code}'}"
    if read.errors:
        return FAIL, f"{read.errors} error(s); first: {read.first_problem(sass)}"
    return FAIL, f"no {tool} summary; exit code {code}: {read.last_line()}"


def sweep(
    kernels, tools=TOOLS, only=(), jobs: int = 6, logs: Path | None = None, variants=()
) -> dict:
    """Every (kernel, preset, tool) (`only`: those presets), and each variant spec on every
    kernel whose presets hold its preset, `jobs` processes at a time."""
    cases = [
        (kernel, preset, tool)
        for kernel in kernels
        for preset in [*(p for p in presets(kernel) if not only or p in only), *variants]
        if preset.split(":")[0] in presets(kernel)
        for tool in tools
    ]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(lambda case: one(*case, logs=logs), cases))
    for row in rows:
        print(f"{row['kernel']:12s} {row['preset']:18s} {row['tool']:10s} {row['status']:8s} "
              f"{row['detail']} | {row['values']}")  # fmt: skip
    return {"part": "sanitizer", "shape": list(SHAPE), "rows": rows}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        kernel, preset, *mnk = argv[1:]
        return _child(kernel, preset, *map(int, mnk))
    p = argparse.ArgumentParser(prog="python -m course.bench.sanitize")
    p.add_argument("--kernels", nargs="+", default=["fp8_gemm", "hopper_gemm"])
    p.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    p.add_argument("--presets", nargs="*", default=[], help="only these presets")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="also a preset with fields replaced, PRESET:FIELD=VALUE,... (course.bench.variants)",
    )
    p.add_argument("--jobs", type=int, default=6)
    p.add_argument("--logs", type=Path, help="keep each run's whole log here")
    p.add_argument("--record", action="store_true")
    args = p.parse_args(argv)
    for spec in args.variant:  # refused before the GPU is asked for anything
        holders = [k for k in args.kernels if spec.split(":")[0] in presets(k)]
        if not holders:
            raise ValueError(f"{spec!r}: no preset of {args.kernels} is {spec.split(':')[0]!r}")
        for kernel in holders:
            config_of(kernel, spec)
    import torch

    if not torch.cuda.is_available():
        print("compute-sanitizer runs need a CUDA GPU (an sm_90a one for these kernels)")
        return 2
    data = sweep(args.kernels, args.tools, args.presets, args.jobs, args.logs, args.variant)
    if args.record:
        from course.runtime import results

        results.record("sanitizer", data)
    return 0 if all(row["status"] == PASS for row in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
