"""The host side of FP8 scales (notebook 12): which shapes a GEMM's scales have, the check
that refuses wrong ones before a launch, and quantizing a tensor into float8 with them.

A float8 tensor stands for q * scale: one float32 scale per group of elements.

  "tensor": one scale per operand, shapes (1,) and (1,);
  "row": one per row, a_scale (M,) and b_scale (N,);
  "block" (DeepSeek-V3's recipe): a_scale (M, ceil(K/128)) for 1 x 128 blocks of A,
      b_scale (ceil(N/128), ceil(K/128)) for 128 x 128 blocks of B.
"""

from __future__ import annotations

import torch

from .host import KernelInputError, check_tensor

SCALE_BLOCK = 128  # DeepSeek-V3's blocks: 1 x 128 of A, 128 x 128 of B (one k-tile of K)
SCALE_MODES = ("tensor", "row", "block")


def scale_shapes(m: int, n: int, k: int, scales: str) -> tuple[tuple, tuple]:
    """The shapes a_scale and b_scale must have for an M x N x K GEMM with `scales`."""
    if scales == "tensor":
        return (1,), (1,)
    if scales == "row":
        return (m,), (n,)
    kb = -(-k // SCALE_BLOCK)
    return (m, kb), (-(-n // SCALE_BLOCK), kb)


def check_scales(a: torch.Tensor, b: torch.Tensor, a_scale, b_scale, scales: str) -> None:
    """Refuse scales of the wrong type, shape, device or layout for `scales` (A and B
    already checked)."""
    (m, k), n = a.shape, b.shape[0]
    for t, name, shape in zip(
        (a_scale, b_scale), ("a_scale", "b_scale"), scale_shapes(m, n, k, scales)
    ):
        check_tensor(t, name, dtypes=(torch.float32,), ndim=len(shape), align_bytes=4)
        if tuple(t.shape) != shape:
            raise KernelInputError(
                f"{name} must have shape {shape} for {scales!r} scales of an "
                f"{m}x{n}x{k} GEMM, got {tuple(t.shape)}"
            )
        if t.device != a.device:
            raise KernelInputError(f"{name} is on {t.device}, a on {a.device}: use one device")
        if not t.is_contiguous():
            raise KernelInputError(
                f"{name} must be contiguous (strides {tuple(t.stride())}); pass .contiguous()"
            )


def per_element(scale: torch.Tensor, rows: int, k: int, scales: str, rows_of: str = "a"):
    """A's (rows_of "a") or B's scales `scale` spread to one value per element of the
    (rows, K) operand they scale."""
    if scales == "tensor":
        return scale.reshape(1, 1).expand(rows, k)
    if scales == "row":
        return scale[:, None].expand(rows, k)
    wide = scale.repeat_interleave(SCALE_BLOCK, dim=1)[:, :k]
    return wide if rows_of == "a" else wide.repeat_interleave(SCALE_BLOCK, dim=0)[:rows]


def quantize(x: torch.Tensor, scales: str, dtype=torch.float8_e4m3fn, rows_of: str = "a"):
    """x (rows, K) in float8 and its float32 scales (`scales`; for "block", 1 x 128 blocks
    when rows_of == "a", 128 x 128 when "b"), each block's largest |x| mapped to the
    type's largest value: x ~= x8 * scale."""
    top = torch.finfo(dtype).max
    rows, k = x.shape
    kb = -(-k // SCALE_BLOCK)
    xf = x.float()
    if scales == "tensor":
        amax = xf.abs().amax().reshape(1)
    elif scales == "row":
        amax = xf.abs().amax(dim=1)
    else:
        pad = torch.nn.functional.pad(xf.abs(), (0, kb * SCALE_BLOCK - k))
        if rows_of == "a":
            amax = pad.view(rows, kb, SCALE_BLOCK).amax(dim=2)
        else:
            nb = -(-rows // SCALE_BLOCK)
            pad = torch.nn.functional.pad(pad, (0, 0, 0, nb * SCALE_BLOCK - rows))
            amax = pad.view(nb, SCALE_BLOCK, kb, SCALE_BLOCK).amax(dim=(1, 3))
    scale = (amax.clamp_min(1e-12) / top).float().contiguous()
    x8 = (xf / per_element(scale, rows, k, scales, rows_of)).clamp(-top, top).to(dtype)
    return x8, scale


def dequantize(x8: torch.Tensor, scale: torch.Tensor, scales: str, rows_of: str = "a"):
    """What a float8 operand and its scales stand for, in float64: x8 * scale."""
    rows, k = x8.shape
    return x8.double() * per_element(scale.double(), rows, k, scales, rows_of)
