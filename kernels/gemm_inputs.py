"""Validation shared by the TMA-fed GEMM kernels: C[M,N] = A[M,K] . B[N,K]^T.

Everything a TMA descriptor or the kernel's layout assumes is checked here, in Python,
before a launch: a wrong input gets a one-line KernelInputError naming the problem
instead of a hang, an illegal-address fault or silently wrong numbers.

    dtypes      A and B the same 16-bit float type; C bf16 or fp16
    majors      A and B K-major (row-major (M,K) and (N,K)), C row-major, all compact
    alignment   base addresses 16-byte aligned; row strides (K for A/B, N for C) multiples
                of 8 elements (16 bytes): TMA descriptors require both
    device      all on the same CUDA device
    sizes       below 2^31 (TMA coordinates and the kernel's sizes are 32-bit)
"""
from __future__ import annotations

import torch

from .common import KernelInputError, check_tensor

EXPECTED_DEVICE = "cuda"  # tests set "cpu" to exercise the host path without a GPU
TMA_STRIDE_ELEMENTS = 8  # 16 bytes of a 16-bit type
OUT_DTYPES = (torch.bfloat16, torch.float16)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _require_k_major(t: torch.Tensor, name: str, rows: str) -> None:
    """Compact row-major: the last dim is contiguous and rows are packed."""
    if t.numel() == 0:
        return
    if t.stride(1) != 1:
        raise KernelInputError(
            f"{name} must be K-major (stored row-major as ({rows}, K)); it has strides "
            f"{tuple(t.stride())} (a transposed view?). This kernel takes K-major operands "
            f"only: pass {name}.contiguous()")
    if t.shape[0] > 1 and t.stride(0) != t.shape[1]:
        raise KernelInputError(
            f"{name}'s rows are not packed (row stride {t.stride(0)} for {t.shape[1]} columns: "
            f"a column slice?); pass {name}.contiguous()")


def validate_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None, *,
                  kernel: str, dtypes: tuple[torch.dtype, ...],
                  out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """Check A (M,K), B (N,K) and C (M,N); return C (allocated if `out` is None)."""
    check_tensor(a, "a", dtypes=dtypes, ndim=2, contiguous_dim=None,
                 device_type=EXPECTED_DEVICE)
    check_tensor(b, "b", dtypes=(a.dtype,), ndim=2, contiguous_dim=None,
                 device_type=EXPECTED_DEVICE)
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb:
        raise KernelInputError(f"a is {m}x{k} and b is {n}x{kb}: C = A.B^T needs the same K")
    if a.device != b.device:
        raise KernelInputError(f"a is on {a.device} and b on {b.device}: use one device")
    _require_k_major(a, "a", "M")
    _require_k_major(b, "b", "N")
    if k % TMA_STRIDE_ELEMENTS:
        raise KernelInputError(
            f"K = {k} is not a multiple of {TMA_STRIDE_ELEMENTS}: TMA needs 16-byte row "
            f"strides. Pad K with zeros to a multiple of {TMA_STRIDE_ELEMENTS}")
    if n % TMA_STRIDE_ELEMENTS:
        raise KernelInputError(
            f"N = {n} is not a multiple of {TMA_STRIDE_ELEMENTS}: C's rows are stored by TMA, "
            f"which needs 16-byte row strides. Pad N to a multiple of {TMA_STRIDE_ELEMENTS}")
    if max(m, n, k) >= 2**31:
        raise KernelInputError(f"{kernel} uses 32-bit sizes: M, N and K must be below 2^31")
    if out is None:
        out = torch.empty(m, n, dtype=out_dtype or a.dtype, device=a.device)
    check_tensor(out, "out", dtypes=OUT_DTYPES, ndim=2, contiguous_dim=None,
                 device_type=EXPECTED_DEVICE)
    if tuple(out.shape) != (m, n):
        raise KernelInputError(f"out must be {m}x{n} (M x N), got {tuple(out.shape)}")
    if out.device != a.device:
        raise KernelInputError(f"out is on {out.device}, a on {a.device}: use one device")
    if out.numel() and (out.stride(1) != 1 or (m > 1 and out.stride(0) != n)):
        raise KernelInputError(f"out must be a compact row-major {m}x{n} tensor "
                               f"(strides {tuple(out.stride())}); pass a fresh tensor")
    return out


def gemm_launch_arguments(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> tuple:
    """(a_ptr, b_ptr, c_ptr, M, N, K) as the kernels' @cute.jit host functions take them."""
    import cutlass

    from .common import gmem_pointer

    m, k = a.shape
    n = b.shape[0]
    return (gmem_pointer(a, a.dtype), gmem_pointer(b, b.dtype), gmem_pointer(out, out.dtype),
            cutlass.Int32(m), cutlass.Int32(n), cutlass.Int32(k))
