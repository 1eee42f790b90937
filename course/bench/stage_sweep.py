"""The stage sweep: one ladder GEMM with 1, 2, 3, ... stages in its ring, against cuBLAS.

Notebook 09 puts the measured curve next to the pipeline simulator's prediction: with
one stage every k-tile's load waits for the previous k-tile's math (nothing overlaps);
with enough stages the loads hide behind the math and the kernel runs at the speed of
its tensor-core work. Each point is checked for correctness before it is timed.
"""

from __future__ import annotations

import torch

from course.bench.gemm_bench import benchmark_gemm, check_gemm, prepare, GemmProblem
from course.bench.report import pct_with_control


def sweep(
    kernel: str = "tma",
    size: int = 4096,
    stages=(1, 2, 3, 4),
    dtype: torch.dtype = torch.bfloat16,
    rounds: int = 6,
    reps: int = 10,
    **config,
) -> dict:
    """Check and time `kernel` at each stage count on an n x n x n problem."""
    problem = GemmProblem(size, size, size, dtype)
    rows = []
    for s in stages:
        gemm = prepare(kernel, problem, stages=s, **config)
        verdict = check_gemm(gemm, problem)
        if not verdict.ok:
            raise AssertionError(f"stages={s}: {verdict}; refusing to time a wrong kernel")
        res = benchmark_gemm(gemm, problem, f"{kernel} stages={s}", rounds=rounds, reps=reps)
        rows.append({"stages": s, "check": str(verdict), **res.as_dict()})
    return {
        "kernel": kernel,
        "size": size,
        "dtype": str(dtype).replace("torch.", ""),
        "config": config,
        "results": rows,
    }


def print_rows(data: dict) -> None:
    for r in data["results"]:
        print(
            f"stages={r['stages']}: {r['kernel_ms']:7.3f} ms  {r['kernel_tflops']:6.1f} TFLOP/s  "
            f"{pct_with_control(r)} (cuBLAS {r['cublas_tflops']:.0f} TFLOP/s)"
        )
