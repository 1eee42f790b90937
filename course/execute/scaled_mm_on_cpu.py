"""torch._scaled_mm's block-scaled cases on the CPU (course.execute.cuda_on_cpu binds it).

Host code written for a GPU checks a block-scaled GEMM against `torch._scaled_mm(a, b,
scale_a, scale_b, out_dtype=...)`: NVFP4 -- `a` (M, K/2) and `b` (K/2, N) of
float4_e2m1fn_x2 (two e2m1 values a byte, the first in the low nibble) with float8_e4m3fn
scales, one per 16 values along K -- or MX -- float8_e4m3fn (or e2m1) operands with
float8_e8m0fnu scales, one per 32. The scales are in cuBLAS's blocked layout
for 1D block scaling (course.models.block_formats.blocked_offset: tiles of 128 rows x 4
scale columns). torch's CPU build has only the float8 tensor-wise and row-wise cases;
these are computed as the product of the scaled operands (exact for the integer-valued
tests NVIDIA writes) rounded once to fp32 and then to `out_dtype`. Any other case is
torch's own, unchanged.
"""

from __future__ import annotations

import numpy as np

# the scale type -> (CuTe DSL's name for its decoding, values a scale covers)
SCALES = {"float8_e4m3fn": ("Float8E4M3FN", 16), "float8_e8m0fnu": ("Float8E8M0FNU", 32)}
OPERANDS = ("float4_e2m1fn_x2", "float8_e4m3fn")


def unblocked_scales(scale, rows: int, columns: int) -> np.ndarray:
    """The (rows, columns) scale values of a scale vector in cuBLAS's blocked layout."""
    import torch

    from course.execute.numeric import by_name
    from course.models.block_formats import blocked_offset

    codes = scale.contiguous().view(-1).cpu().view(torch.uint8).numpy()
    r, c = np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij")
    offset = blocked_offset(r, c, rows, columns)
    if offset.max() >= codes.size:
        raise ValueError(
            f"a blocked scale vector of {codes.size} values for {rows} x {columns} scales"
        )
    name = SCALES[str(scale.dtype).replace("torch.", "")][0]
    with np.errstate(invalid="ignore"):
        return by_name(name).decode(codes[offset]).astype(np.float64)


def _values(t, k_dim: int) -> np.ndarray:
    """The values of an operand; float4_e2m1fn_x2 unpacked along dimension k_dim."""
    import torch

    from course.execute.block_scale import decode_e2m1x2

    if t.dtype != getattr(torch, "float4_e2m1fn_x2", None):
        return t.cpu().to(torch.float64).numpy()
    raw = t.view(torch.uint8).cpu().numpy()
    if k_dim == 0:
        return decode_e2m1x2(raw.T).T
    return decode_e2m1x2(raw)


def is_block_scaled(a, b, scale_a, scale_b) -> bool:
    def name(t):
        return str(t.dtype).replace("torch.", "")

    return (
        name(a) == name(b)
        and name(a) in OPERANDS
        and name(scale_a) == name(scale_b)
        and name(scale_a) in SCALES
        and (name(a), name(scale_a)) != ("float8_e4m3fn", "float8_e4m3fn")
    )


def scaled_mm(real):
    """torch._scaled_mm with the block-scaled cases computed here; the rest `real`."""

    def call(a, b, scale_a, scale_b, bias=None, out_dtype=None, **kwargs):
        if not is_block_scaled(a, b, scale_a, scale_b) or kwargs:
            return real(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype, **kwargs)
        import torch

        block = SCALES[str(scale_a.dtype).replace("torch.", "")][1]
        av = _values(a, 1)  # (M, K)
        bv = _values(b, 0)  # (K, N)
        m, k = av.shape
        n = bv.shape[1]
        sa = unblocked_scales(scale_a, m, -(-k // block))
        sb = unblocked_scales(scale_b, n, -(-k // block))
        left = av * np.repeat(sa, block, axis=1)[:, :k]
        right = bv * np.repeat(sb, block, axis=1)[:, :k].T
        out = torch.from_numpy((left @ right).astype(np.float32))
        if bias is not None:
            out = out + bias.float().cpu()
        return out.to(out_dtype or torch.float32)

    return call
