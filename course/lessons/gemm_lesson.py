"""What the GEMM notebooks (07-15) do with a kernel, in one place.

check_sweep        fresh inputs, poisoned outputs, ragged shapes, both dtypes (live)
bench_live         the paired benchmark against cuBLAS at a few sizes (live)
recorded_rows      the same numbers from results/gemm.json (fallback)
bench_or_recorded  bench_live on a GPU that can, the recorded rows elsewhere (a live cell)
executor_line      one run of a kernel's own code on the CPU executor, in a line (fallback)
compile_report     what the compiler produced: resources, instruction counts, lines
sweep_or_executed  a step's correctness cell: check_sweep live, else its executor run (a live cell)
sm80_sweep         notebook 07's correctness cell (a live cell)
"""

from __future__ import annotations

import importlib
from typing import Callable, Iterable

import torch

from course.runtime import results
from course.runtime.live import Fallback, Outcome, live_or, live_or_executed, recorded
from course.bench.gemm_bench import GemmProblem, benchmark_gemm, check_gemm, prepare, problem_for
from course.bench.clocks import describe_clock
from course.bench.report import pct_with_control

RAGGED = [
    (128, 256, 64),
    (1000, 1016, 520),
    (129, 264, 72),
    (3000, 2056, 1000),
    (1, 8, 8),
    (4096, 4096, 4096),
]


def check_sweep(
    run: Callable,
    shapes: Iterable = RAGGED,
    dtypes=(torch.bfloat16, torch.float16),
    device: str = "cuda",
    a_major: str = "k",
    b_major: str = "k",
) -> list:
    """Verdicts of `run(a, b, c)` on every shape and dtype (prints one line each), with
    operands stored `a_major` / `b_major` (see GemmProblem)."""
    verdicts = []
    for dtype in dtypes:
        for shape in shapes:
            problem = GemmProblem(*shape, dtype, a_major=a_major, b_major=b_major)
            verdict = check_gemm(run, problem, device=device)
            print(verdict)
            verdicts.append(verdict)
    print(f"{sum(v.ok for v in verdicts)}/{len(verdicts)} passed")
    return verdicts


def bench_live(
    kernel: str, sizes=(4096,), dtype=torch.bfloat16, rounds: int = 5, reps: int = 10, **config
) -> list[dict]:
    """Time ladder kernel `kernel` against cuBLAS now, on this GPU (on the operand
    majors it is measured on)."""
    rows = []
    for size in sizes:
        problem = problem_for(kernel, size, size, size, dtype)
        gemm = prepare(kernel, problem, **config)
        rows.append(benchmark_gemm(gemm, problem, kernel, rounds=rounds, reps=reps).as_dict())
        print_rows(rows[-1:])
    return rows


def matches_run(kernel: str, preset: str, dtype: str, config: dict | None):
    """A record predicate: a gemm run of `kernel` (preset, Config overrides) in `dtype`."""
    want = dict(config or {})
    if preset:
        want["preset"] = preset

    def match(rec: results.Record) -> bool:
        d = rec.data
        return d.get("kernel") == kernel and d.get("dtype") == dtype and d.get("config", {}) == want

    return match


def recorded_rows(
    kernel: str,
    preset: str = "",
    dtype: str = "bf16",
    gpu: str = "H100",
    config: dict | None = None,
) -> tuple[list[dict], results.Record | None]:
    """The newest recorded rows for a kernel (and preset / config) on `gpu`."""
    rec = results.latest("gemm", gpu=gpu, match=matches_run(kernel, preset, dtype, config))
    return (rec.data["results"], rec) if rec else ([], None)


def recorded_gemm(
    kernel: str,
    preset: str = "",
    dtype: str = "bf16",
    gpu: str = "H100",
    config: dict | None = None,
) -> Fallback:
    """The live-cell fallback: that kernel's newest recorded rows, cited in the banner."""
    return recorded(
        "gemm",
        gpu=gpu,
        match=matches_run(kernel, preset, dtype, config),
        select=lambda rec: rec.data["results"],
    )


def print_rows(rows: list[dict]) -> None:
    """One line per recorded (or measured) row: TFLOP/s against cuBLAS, and the SM clock the
    run went at where it was sampled (a ratio can depend on it: notebook 11)."""
    for r in rows:
        clock = describe_clock(r.get("sm_clock") or {})
        print(
            f"{r['problem']}: {r['kernel_tflops']:6.1f} TFLOP/s vs cuBLAS "
            f"{r['cublas_tflops']:6.1f} -> {pct_with_control(r)}"
            + (f"\n    {clock}" if clock else "")
        )


def bench_or_recorded(
    kernel: str, needs: str, sizes=(2048, 4096, 8192), preset: str = ""
) -> Outcome:
    """The benchmark cell: `kernel` (and `preset`) against cuBLAS at `sizes` on a GPU that
    satisfies `needs`; elsewhere the rows recorded on the H100, printed the same way."""
    config = {"preset": preset} if preset else {}
    out = live_or(
        needs, lambda: bench_live(kernel, sizes=sizes, **config), recorded_gemm(kernel, preset)
    )
    if not out.live:
        print_rows(out.value)
    return out


def executor_line(run):
    """One executor run (a ladder_runs or blackwell_runs result) in a line: the kernel and its
    problem, its verdict against torch, what the executor saw. A ladder case is named by its
    kernel and its whole problem ("tma_gemm.ragged" as "tma_gemm (m=129, ...)"), so the line
    reads the same whether or not the H100 recording holds that case."""
    from course.execute.ladder_runs import CASES

    name, _, problem = run.case.partition("@")
    if run.case in CASES:
        name, problem = name.split(".")[0], ",".join(f"{k}={v}" for k, v in CASES[run.case].items())
    head = f"{name} ({problem.replace(',', ', ')}), {run.seconds:.1f} s on the CPU executor:"
    if run.hazard is not None:
        print(f"{head} stopped by a hazard: {run.hazard}")
        return run
    verdict = "PASS" if run.ok else "FAIL"
    print(
        f"{head} {verdict}, relative error {run.relative_error:.1e} against torch "
        f"(tolerance {run.tolerance:.0e})"
    )
    for line in run.observed:
        print(f"  {line}")
    return run


def compile_report(
    art, patterns: dict[str, str], show: int = 2, sass: Iterable[str] = ()
) -> dict[str, int]:
    """Print resources and, per named PTX pattern, its count and first lines; then how
    often each SASS opcode in `sass` occurs."""
    for kernel, res in art.resource_usage().items():
        print(
            f"{kernel[:60]}...: {res['registers']} registers/thread, "
            f"{res['stack_frame_bytes']} B stack (spills), compiled in {art.compile_seconds:.1f} s"
        )
    counts = {}
    for name, pattern in patterns.items():
        lines = art.ptx_lines(pattern)
        counts[name] = len(lines)
        print(f"\n{name}: {len(lines)} in the PTX")
        for line in lines[:show]:
            print("   " + (line if len(line) < 150 else line[:147] + "..."))
    if sass:
        text = art.sass()
        print("\nSASS:", {op: text.count(op) for op in sass})
    return counts


def sweep_or_executed(
    needs: str,
    kernel: str,
    run_executed: Callable,
    what: str,
    label: str,
    compiled: Callable[[str], object] | None = None,
    shapes: Iterable = RAGGED,
) -> Outcome:
    """The correctness cell of a GEMM step, `kernels.<kernel>`: on a GPU that satisfies
    `needs`, `check_sweep` of its `run` over `shapes` (bf16 and fp16, fresh inputs, poisoned
    outputs); elsewhere `run_executed()`, the kernel's own code on the CPU executor (`what`
    names it in the banner), then `compiled(arch)` for the target arch (compile-only) when
    given, then what the cell printed when it last ran live (`label`)."""

    def sweep():
        return check_sweep(importlib.import_module(f"kernels.{kernel}").run, shapes)

    return live_or_executed(needs, sweep, run_executed, what, compiled=compiled, label=label)


def sm80_sweep() -> Outcome:
    """Notebook 07's correctness cell. On an sm_80+ GPU: kernels/sm80_gemm.py over RAGGED
    against torch. Elsewhere: its own code on the CPU executor at 129 x 264 x 72 (ragged in
    M, N and K), then its mma.sync compiled for sm_80 (compile-only, nothing launched), then
    the recorded GPU output (label 07.sm80_sweep)."""
    from course.execute import ladder_runs

    def mma_sync(arch: str):
        from kernels import sm80_gemm

        return compile_report(sm80_gemm.artifacts(arch), {"mma.sync": r"mma\.sync"}, show=1)

    return sweep_or_executed(
        "sm_80+",
        "sm80_gemm",
        lambda: ladder_runs.run_sm80_gemm(129, 264, 72),
        "kernels/sm80_gemm.py (129 x 264 x 72, ragged)",
        label="07.sm80_sweep",
        compiled=mma_sync,
    )
