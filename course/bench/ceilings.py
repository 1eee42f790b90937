"""The machine's two ceilings: how fast it can multiply, and how fast it can move bytes.

Both are measured, not read off a datasheet (course.models.datasheet holds the published
numbers, drawn beside these):
  * matmul ceiling: the rate cuBLAS (torch.mm) reaches on large random square matrices,
    TFLOP/s (`matmul_peak`: the best the course measures, below the datasheet's peak);
  * copy bandwidth: a large device-to-device copy, counting bytes read plus bytes
    written, GB/s (10^9 bytes per second).
Together they draw the roofline every later notebook places its kernels on.
"""

from __future__ import annotations

import torch

from course.bench.timing import Timing, alternating


def matmul_peak(
    n: int = 8192, dtype: torch.dtype = torch.bfloat16, rounds: int = 6, reps: int = 10
) -> dict:
    """Median TFLOP/s of cuBLAS on n x n x n random matrices."""
    a, b = (torch.randn(n, n, device="cuda").to(dtype) for _ in range(2))
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    t: Timing = alternating({"mm": [lambda: torch.mm(a, b, out=c)]}, rounds, reps)["mm"]
    return {
        "n": n,
        "dtype": str(dtype).replace("torch.", ""),
        "median_ms": t.median_ms,
        "tflops": 2 * n**3 / t.median_ms / 1e9,
        "spread": round(t.spread, 4),
        "samples": len(t.samples_ms),
    }


def copy_bandwidth(nbytes: int = 2**30, rounds: int = 6, reps: int = 10) -> dict:
    """Median GB/s of a device-to-device copy of `nbytes` (read + write counted)."""
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    t: Timing = alternating({"copy": [lambda: dst.copy_(src)]}, rounds, reps)["copy"]
    return {
        "bytes": nbytes,
        "median_ms": t.median_ms,
        "gbps": 2 * nbytes / t.median_ms / 1e6,
        "spread": round(t.spread, 4),
        "samples": len(t.samples_ms),
    }


def measure() -> dict:
    """Both ceilings, plus the ridge point where a kernel stops being memory-bound."""
    peak = matmul_peak()
    copy = copy_bandwidth()
    ridge = peak["tflops"] * 1e12 / (copy["gbps"] * 1e9)
    return {"matmul": peak, "copy": copy, "ridge_flop_per_byte": ridge}
