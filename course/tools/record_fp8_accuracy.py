"""Record, on a GPU with FP8 tensor cores, how accurate cuBLAS's FP8 GEMM is against K, with
and without fast accumulation, for notebook 12's figure beside the CPU model
(course.models.fp8.accumulation_errors).

    python -m course.tools.record_fp8_accuracy

For M = N = 1024 and K = 256, 512, ..., 32768: A (M, K) and B (N, K) of normal random values
(not integers, so no sum is exact by accident), each in e4m3 with one tensorwise scale
(amax / 448); C = torch._scaled_mm(A, B^T) in float32 with use_fast_accum=True (the sums stay
in the tensor cores: "fast accumulation") and False (cuBLAS promotes them into float32 as it
goes: "promotion"). Each C's relative error is taken against float64's product of the same
dequantized e4m3 operands, so it measures the sums alone, not the rounding into FP8 (that error
is recorded too, against float64's product of the unrounded values). The course's own kernel
(kernels.fp8_gemm, tensor scales, C in float32) runs on the same operands with each
`promote_every` of KERNEL_PROMOTE_EVERY (None: no promotion; 4: every 4 k-tiles, 512 K; 1: every
k-tile), each as "fp8_gemm, promote_every=<p>" (tiles of 128 x 128: a promoting kernel's two
accumulators need them, and one shape for all three keeps the sums alike). Appends a record to
results/fp8_accuracy.json (GPU, driver, CUDA, torch, date, this command). Refuses to run
without such a GPU: a CPU result is not a GPU measurement.
"""

from __future__ import annotations

import sys

import torch

from course.models import fp8
from course.runtime import results
from course.runtime.hardware import machine

M = N = 1024
KS = tuple(2**i for i in range(8, 16))  # 256 .. 32768
SEED = 0
FP8_CAPABILITY = (8, 9)  # FP8 tensor cores: Ada (sm_89) and Hopper (sm_90) on
KERNEL_PROMOTE_EVERY = (None, 4, 1)  # the course's kernel: k-tiles per promotion
KERNEL_NEEDS = "sm_90a"  # what kernels.fp8_gemm runs on (kernels.fp8_gemm.NEEDS)


def kernel_series(every: int | None) -> str:
    """The name of the course kernel's series in a record's rows."""
    return f"fp8_gemm, promote_every={every}"


def why_not_here() -> str | None:
    """Why this machine cannot measure it, or None when it can."""
    m = machine()
    if not m.has_gpu or not torch.cuda.is_available():
        return (
            f"no GPU here ({m.describe()}): the FP8 accuracy is measured on a GPU with FP8 "
            "tensor cores (compute capability 8.9 or newer; the course records it on an H100)"
        )
    if tuple(m.compute_capability or (0, 0)) < FP8_CAPABILITY:
        return f"{m.describe()} has no FP8 tensor cores (they need compute capability 8.9)"
    return None


def scaled_mm(qa, qb, sa, sb, fast: bool) -> torch.Tensor:
    """cuBLAS's FP8 GEMM A.B^T in float32: B (N, K) row-major is the column-major (K, N)
    operand it wants."""
    out = torch._scaled_mm(
        qa, qb.t(), scale_a=sa, scale_b=sb, out_dtype=torch.float32, use_fast_accum=fast
    )
    return out[0] if isinstance(out, tuple) else out  # older torch returned (out, amax)


def course_gemm(qa, qb, sa, sb, every: int | None) -> torch.Tensor:
    """The course's FP8 GEMM A.B^T (tensor scales) in float32, promoting every `every`
    k-tiles (None: never)."""
    from kernels import fp8_gemm

    config = fp8_gemm.Config(promote_every=every, tile_n=128)
    return fp8_gemm.run(
        qa, qb, sa.reshape(1), sb.reshape(1), config=config, out_dtype=torch.float32
    )


def measure(
    k: int,
    m: int = M,
    n: int = N,
    seed: int = SEED,
    device: str = "cuda",
    kernel_every=KERNEL_PROMOTE_EVERY,
) -> dict:
    """One K: the relative errors of both accumulations of cuBLAS and of the course's kernel
    (each of `kernel_every`), and of the FP8 rounding."""
    g = torch.Generator(device=device).manual_seed(seed + k)
    a = torch.randn(m, k, generator=g, device=device)
    b = torch.randn(n, k, generator=g, device=device)
    qa, qb = fp8.quantize(a, "tensorwise"), fp8.quantize(b, "tensorwise")
    sa, sb = qa.scale.reshape(()), qb.scale.reshape(())
    exact = fp8.dequantize(qa) @ fp8.dequantize(qb).T  # float64, what the tensor cores multiply
    row = {"k": k}
    for name, fast in (("fast accumulation", True), ("promotion", False)):
        c = scaled_mm(qa.data, qb.data, sa, sb, fast)
        if c.is_cuda:
            torch.cuda.synchronize()
        row[name] = fp8.relative_error(c, exact)
    for every in kernel_every:
        c = course_gemm(qa.data, qb.data, sa, sb, every)
        if c.is_cuda:
            torch.cuda.synchronize()
        row[kernel_series(every)] = fp8.relative_error(c, exact)
    row["rounding into e4m3"] = fp8.relative_error(exact, a.double() @ b.double().T)
    return row


def main() -> int:
    why = why_not_here()
    if why is not None:
        print(why, file=sys.stderr)
        return 2
    rows = []
    every = KERNEL_PROMOTE_EVERY if machine().can(KERNEL_NEEDS) else ()  # not on Ada
    for k in KS:
        row = measure(k, kernel_every=every)
        rows.append(row)
        kernel = "".join(f", {kernel_series(e)} {row[kernel_series(e)]:.2e}" for e in every)
        print(
            f"K={k:6d}: fast accumulation {row['fast accumulation']:.2e}, "
            f"promotion {row['promotion']:.2e}{kernel} (rounding into e4m3: "
            f"{row['rounding into e4m3']:.2e})"
        )
    data = {
        "m": M,
        "n": N,
        "seed": SEED,
        "operands": "normal random values, e4m3 with a tensorwise scale (amax / 448)",
        "gemm": "torch._scaled_mm, float32 output; 'fast accumulation': use_fast_accum=True, "
        "'promotion': use_fast_accum=False",
        "course kernel": "kernels.fp8_gemm, tensor scales, tile 128x128, float32 output; "
        "'fp8_gemm, promote_every=<p>': promoted every p k-tiles of 128 (None: never)",
        "reference": "float64 product of the dequantized e4m3 operands",
        "results": rows,
    }
    rec = results.record("fp8_accuracy", data)
    print(f"recorded: {rec.citation()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
