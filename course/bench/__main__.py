"""Command line: measure, check and record.

    python -m course.bench ceilings [--record]
    python -m course.bench gemm --kernel NAME [--sizes 2048 4096 8192] [--shapes MxNxK]
                                [--dtype bf16|fp16|e4m3|e5m2] [--record]
    python -m course.bench copies [--values 4] [--record]
    python -m course.bench banks [--cases A,B] [--no-ncu] [--no-timing] [--record]
    python -m course.bench stages [--kernel tma] [--size 4096] [--stages 1 2 3 4] [--record]
    python -m course.bench tma [--record]
    python -m course.bench clocks --kernel hopper --configs preset=A preset=B,group_m=4 [--record]
    python -m course.bench list
    python -m course.bench table

`--record` appends the result, with its provenance, to results/<family>.json and
regenerates results/README.md. Recording is refused on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import sys

import torch

from course.runtime import results
from course.runtime.hardware import machine
from course.bench import report

DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "e4m3": torch.float8_e4m3fn,  # C in bf16 (course.bench.gemm_bench.GemmProblem.c_dtype)
    "e5m2": torch.float8_e5m2,
}


def _need_gpu(what: str) -> None:
    m = machine()
    if not m.has_gpu:
        sys.exit(f"{what} needs a CUDA GPU; {m.describe()}")


def _need_ladder_gpu(kernel: str, what: str) -> None:
    """A GPU, and one that can run ladder kernel `kernel`."""
    from course.bench.gemm_bench import LADDER

    _need_gpu(what)
    needs = LADDER[kernel][1]
    if not machine().can(needs):
        sys.exit(f"{kernel} needs {needs}; {machine().describe()}")


def cmd_ceilings(args) -> dict:
    from course.bench import ceilings

    _need_gpu("measuring the ceilings")
    data = ceilings.measure()
    print(f"{machine().describe()}")
    print(
        f"  bf16 matmul (cuBLAS, n={data['matmul']['n']}): {data['matmul']['tflops']:.1f} TFLOP/s"
    )
    print(
        f"  device-to-device copy ({data['copy']['bytes'] / 2**30:.0f} GiB): "
        f"{data['copy']['gbps']:.0f} GB/s (read + write)"
    )
    print(f"  ridge point: {data['ridge_flop_per_byte']:.0f} FLOP/byte")
    if args.record:
        results.record("ceilings", data)
    return data


def cmd_gemm(args) -> dict:
    from course.bench.clocks import describe_clock
    from course.bench.gemm_bench import benchmark_gemm, check_gemm, prepare, problem_for
    from course.bench.report import pct_with_control

    _need_ladder_gpu(args.kernel, "benchmarking a GEMM")
    rows, checks = [], []
    overrides = dict(_parse_override(o) for o in args.config)
    shapes = [(s, s, s) for s in args.sizes] + [_parse_shape(t) for t in args.shapes]
    for m, n, k in shapes:
        problem = problem_for(args.kernel, m, n, k, DTYPES[args.dtype])
        gemm = prepare(args.kernel, problem, **overrides)
        verdict = check_gemm(gemm, problem)
        checks.append(str(verdict))
        if not verdict.ok:
            sys.exit(f"refusing to time a wrong kernel: {verdict}")
        res = benchmark_gemm(
            gemm,
            problem,
            args.kernel,
            rounds=args.rounds,
            reps=args.reps,
            graph=False if args.eager else "auto",
        )
        rows.append(res.as_dict())
        print(
            f"{problem}: {args.kernel} {res.kernel_tflops:7.1f} TFLOP/s | cuBLAS "
            f"{res.cublas_tflops:7.1f} TFLOP/s | {pct_with_control(res.as_dict())} "
            f"({res.samples} samples each, {res.input_sets} input sets, {res.method}"
            f"{'; ' + describe_clock(res.sm_clock) if res.sm_clock else ''}) | {verdict}"
        )
    data = {
        "kernel": args.kernel,
        "dtype": args.dtype,
        "config": overrides,
        "checks": checks,
        "results": rows,
    }
    if args.record:
        results.record("gemm", data)
    return data


def _parse_shape(text: str) -> tuple[int, int, int]:
    """'4096x7168x16384' -> (M, N, K)."""
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        sys.exit(f"--shapes takes MxNxK, e.g. 4096x7168x16384 (got {text!r})")
    return m, n, k


def cmd_stages(args) -> dict:
    from course.bench import stage_sweep

    _need_ladder_gpu(args.kernel, "sweeping stage counts")
    overrides = dict(_parse_override(o) for o in args.config)
    data = stage_sweep.sweep(
        args.kernel,
        args.size,
        tuple(args.stages),
        DTYPES[args.dtype],
        rounds=args.rounds,
        reps=args.reps,
        **overrides,
    )
    print(f"{machine().describe()}: {args.kernel} at {args.size}^3 {args.dtype}")
    stage_sweep.print_rows(data)
    if args.record:
        results.record("stage_sweep", data)
    return data


def cmd_clocks(args) -> dict:
    from course.bench import clock_rounds

    _need_ladder_gpu(args.kernel, "sampling the clock under load")
    configs = [dict(_parse_override(f) for f in c.split(",")) for c in args.configs]
    data = clock_rounds.measure(
        args.kernel, configs, args.size, args.rounds, args.reps, DTYPES[args.dtype]
    )
    print(machine().describe())
    clock_rounds.print_summary(data)
    if args.record:
        results.record("clocks", data)
    return data


def cmd_tma(args) -> dict:
    from course.bench import tma_multicast

    _need_gpu("measuring TMA multicast")
    if not machine().can("sm_90+"):
        sys.exit(f"TMA multicast needs sm_90+; {machine().describe()}")
    data = tma_multicast.measure(
        tiles=args.tiles, rounds=args.kernel_rounds, timing_rounds=args.rounds
    )
    print(machine().describe())
    tma_multicast.print_rows(data)
    if args.record:
        results.record("tma", data)
    return data


def _parse_override(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, int(value)
    except ValueError:
        return key, value


def cmd_copies(args) -> dict:
    from course.bench import copy_bandwidth

    _need_gpu("benchmarking the copies")
    data = copy_bandwidth.measure(
        nbytes=args.bytes, rounds=args.rounds, reps=args.reps, values=args.values
    )
    print(machine().describe())
    print(copy_bandwidth.table(data))
    print(f"best: {data['best']} at {data['best_pct_of_ceiling']:.1f}% of the copy ceiling")
    if args.record:
        results.record("copies", data)
    return data


def cmd_banks(args) -> int:
    from course.bench import bank_conflicts

    _need_gpu("measuring bank conflicts")
    names = args.cases.split(",") if args.cases else None
    data = bank_conflicts.run(names, with_ncu=not args.no_ncu, with_timing=not args.no_timing)
    print(machine().describe())
    print(bank_conflicts.table(data))
    if data["ncu_error"] and not args.no_ncu:
        args.recorded = False
        print(
            "\nnot recorded: the counters are the point of this benchmark "
            "(pass --no-ncu to record timing and predictions only)",
            file=sys.stderr,
        )
        return 2
    if args.record:
        results.record("bank_conflicts", data)
    disagree = [r["case"] for r in data["cases"] if r["agree"] is False]
    if disagree:
        print(f"\nprediction and measurement disagree for: {', '.join(disagree)}", file=sys.stderr)
        return 1
    return 0


def cmd_banks_probe(args) -> int:
    from course.bench import bank_conflicts

    bank_conflicts.probe(args.cases.split(","), args.manifest)
    return 0


def cmd_list(args) -> None:
    from course.bench.gemm_bench import LADDER

    for name, (_, needs, title) in LADDER.items():
        print(f"{name:24s} needs {needs:8s} {title}")


def cmd_table(args) -> None:
    print(f"wrote {report.write()}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ceilings", help="measure matmul peak and copy bandwidth")
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_ceilings)
    p = sub.add_parser("gemm", help="check and time a ladder GEMM against cuBLAS")
    p.add_argument("--kernel", required=True)
    p.add_argument("--sizes", type=int, nargs="*", default=[2048, 4096, 8192])
    p.add_argument("--shapes", nargs="*", default=[], metavar="MxNxK", help="non-square problems")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument(
        "--eager",
        action="store_true",
        help="time eager launches only (default: CUDA-graph replays for "
        "problems under 7e10 FLOP, eager launches above)",
    )
    p.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="FIELD=VALUE",
        help="override fields of the kernel's Config, e.g. stages=3 tile_n=256",
    )
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_gemm)
    p = sub.add_parser("copies", help="notebook 04: every copy variant vs the copy ceiling")
    p.add_argument("--bytes", type=int, default=2**30)
    p.add_argument(
        "--values", type=int, default=4, help="128-bit atoms per thread (tiled, cp_async)"
    )
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_copies)
    p = sub.add_parser("banks", help="notebook 05: predicted vs measured bank conflicts (ncu)")
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute")
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_banks)
    p = sub.add_parser("banks-probe", help=argparse.SUPPRESS)  # run under ncu by `banks`
    p.add_argument("--cases", required=True)
    p.add_argument("--manifest", required=True)
    p.set_defaults(fn=cmd_banks_probe)
    p = sub.add_parser("stages", help="check and time a ladder GEMM at several ring depths")
    p.add_argument("--kernel", default="tma")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3, 4])
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--config", nargs="*", default=[], metavar="FIELD=VALUE")
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_stages)
    p = sub.add_parser("tma", help="TMA multicast: clusters reading the same tiles, on vs off")
    p.add_argument("--tiles", type=int, default=8, help="64x64 bf16 tiles per CTA")
    p.add_argument("--kernel-rounds", type=int, default=40, help="loads of all tiles per launch")
    p.add_argument("--rounds", type=int, default=6, help="alternating timing rounds")
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_tma)
    p = sub.add_parser("clocks", help="paired rounds with the SM clock and power sampled (NVML)")
    p.add_argument("--kernel", required=True)
    p.add_argument(
        "--configs",
        nargs="+",
        required=True,
        metavar="FIELD=VALUE[,FIELD=VALUE]",
        help="one contender per item, e.g. preset=persistent",
    )
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--record", action="store_true")
    p.set_defaults(fn=cmd_clocks)
    sub.add_parser("list", help="the GEMMs of the ladder").set_defaults(fn=cmd_list)
    sub.add_parser("table", help="regenerate results/README.md").set_defaults(fn=cmd_table)
    args = parser.parse_args(argv)
    status = args.fn(args)
    if getattr(args, "record", False) and getattr(args, "recorded", True):
        print(f"recorded; wrote {report.write()}")
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
