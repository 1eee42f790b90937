"""Notebook 09's check of the TMA GEMM in a child process, where a deadlock costs a
killed process instead of a frozen notebook (run it through course.runtime.watchdog.isolated).
"""

from __future__ import annotations

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def check_tma_gemm(
    m: int, n: int, k: int, dtype: str = "bf16", config=None, seed: int = 0
) -> tuple[bool, str]:
    """Compile, then check C = A . B^T on fresh inputs: (passed, verdict text). The
    watchdog's launch clock starts after compiling; a kernel in bounded-wait debug mode
    raises PipelineHang with where it stuck."""
    from course.bench.gemm_bench import GemmProblem, check_gemm
    from course.runtime.watchdog import launching
    from kernels import tma_gemm

    config = tma_gemm.Config() if config is None else config
    tma_gemm.compile(DTYPES[dtype], config)
    launching()
    verdict = check_gemm(
        lambda a, b, c: tma_gemm.run(a, b, c, config),
        GemmProblem(m, n, k, DTYPES[dtype]),
        seed=seed,
    )
    return verdict.ok, str(verdict)
