"""Block-scaled formats as a model (notebook 16): FP4 (e2m1), the UE8M0 scale factor, block
quantization into MXFP8, MXFP4 and NVFP4, the "blocked" layout the Blackwell kernels and
cuBLAS keep scale factors in, and what one block-scaled MMA reads.

Every element of a block-scaled operand stands for element x scale, one scale factor (SF) per
block of `vec` consecutive elements along K:

* MXFP8 (OCP Microscaling): e4m3 elements, one UE8M0 SF (a power of two, 8 exponent bits)
  per 32;
* MXFP4 (OCP Microscaling): e2m1 elements, one UE8M0 SF per 32;
* NVFP4 (NVIDIA): e2m1 elements, one e4m3 SF per 16, and one float32 scale for the whole
  tensor, chosen so that the e4m3 SFs use their range.

The MX scale follows the OCP Microscaling spec v1.0 (section 6.3): shared exponent
= floor(log2(amax of the block)) - emax of the element type (emax: the exponent of its largest
normal value: 8 for e4m3, 2 for e2m1), the SF = 2^shared exponent. The block's largest element
then lands in [2^emax, 2^(emax+1)), which can be above the element's largest value (448 < 512,
6 < 8): such elements are clamped (saturated) to +-max, as the spec's conversion does.

Values here are float64 torch tensors; codes where torch has the dtype (float8_e4m3fn,
float8_e8m0fnu). torch 2.13 has `float4_e2m1fn_x2` only as a storage type (no conversion), so
e2m1 elements are kept as their float values plus `e2m1_codes` / `pack_e2m1` for the bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from course.models import fp8

# --- e2m1 (FP4) ------------------------------------------------------------------------------

E2M1_BIAS = 1
E2M1_MAX = 6.0
E2M1_EMAX = 2  # 6 = 1.5 x 2^2
E4M3_EMAX = 8  # 448 = 1.75 x 2^8


def e2m1_decode(code: int) -> float:
    """The value of one 4-bit pattern: sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent
    0 is subnormal (0 or 0.5). No inf, no NaN: all 16 patterns are numbers."""
    if not 0 <= code < 16:
        raise ValueError(f"a 4-bit pattern is 0..15, not {code}")
    sign = -1.0 if code >> 3 else 1.0
    exp, frac = (code >> 1) & 0b11, code & 1
    if exp == 0:
        return sign * frac * 0.5  # 0.frac x 2^(1 - bias)
    return sign * (1 + frac / 2) * 2.0 ** (exp - E2M1_BIAS)


E2M1_VALUES = tuple(e2m1_decode(c) for c in range(16))  # code -> value


def e2m1_round(x) -> torch.Tensor:
    """`x` rounded to the nearest e2m1 value, ties to even (the code with mantissa bit 0),
    saturating to +-6 (inf included); NaN stays NaN. Float64."""
    x = torch.as_tensor(x, dtype=torch.float64)
    mag = x.abs()
    _, exp = torch.frexp(mag)
    e = torch.clamp(exp.to(torch.float64) - 1, min=1 - E2M1_BIAS)  # binade; subnormals flat
    step = torch.pow(2.0, e - 1)  # one mantissa bit
    q = torch.clamp(torch.round(mag / step) * step, max=E2M1_MAX)  # round: halves to even
    q = torch.where(torch.isinf(mag), torch.full_like(q, E2M1_MAX), q)
    q = torch.where(torch.isnan(x), torch.full_like(q, math.nan), q)
    return torch.copysign(q, x)


def e2m1_codes(values: torch.Tensor) -> torch.Tensor:
    """The 4-bit codes (uint8, 0..15) of values already on the e2m1 grid (-0 keeps its sign)."""
    v = torch.as_tensor(values, dtype=torch.float64)
    table = torch.tensor(E2M1_VALUES[:8], dtype=torch.float64)
    idx = (v.abs().unsqueeze(-1) == table).to(torch.uint8).argmax(-1).to(torch.uint8)
    if not torch.equal(table[idx.long()], v.abs()):
        raise ValueError("values not on the e2m1 grid: round them with e2m1_round first")
    return idx | (torch.signbit(v).to(torch.uint8) << 3)


def pack_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """Two codes a byte, the first (even index) in the low nibble, as the GPU and torch's
    `float4_e2m1fn_x2` store them; the result is viewed as that dtype (last dim halved)."""
    c = codes.to(torch.uint8)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).view(torch.float4_e2m1fn_x2)


# --- UE8M0: the MX scale factor --------------------------------------------------------------

UE8M0_BIAS = 127
UE8M0_NAN = 0xFF


def ue8m0_decode(code: int) -> float:
    """2^(code - 127): 8 exponent bits and nothing else -- no sign, no mantissa, no zero;
    0xFF is NaN. So an MX scale is always a power of two from 2^-127 to 2^127."""
    if not 0 <= code < 256:
        raise ValueError(f"an 8-bit pattern is 0..255, not {code}")
    return math.nan if code == UE8M0_NAN else 2.0 ** (code - UE8M0_BIAS)


def ue8m0_encode(exponent: torch.Tensor) -> torch.Tensor:
    """The float8_e8m0fnu codes of 2^exponent (integer exponents, clamped to -127..127)."""
    e = torch.clamp(torch.as_tensor(exponent, dtype=torch.int64), -UE8M0_BIAS, UE8M0_BIAS)
    return (e + UE8M0_BIAS).to(torch.uint8).view(torch.float8_e8m0fnu)


# --- block quantization ----------------------------------------------------------------------


@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled format: its elements, its SF type and how many elements share an SF."""

    name: str
    element: str  # "e4m3" | "e2m1"
    scale: str  # "ue8m0" | "e4m3"
    vec: int  # elements per SF
    bits: int  # bits per element

    @property
    def bits_per_element(self) -> float:
        """Storage per element, the SF's share included (NVFP4's one fp32 left out)."""
        return self.bits + 8 / self.vec


MXFP8 = BlockFormat("MXFP8", "e4m3", "ue8m0", 32, 8)
MXFP4 = BlockFormat("MXFP4", "e2m1", "ue8m0", 32, 4)
NVFP4 = BlockFormat("NVFP4", "e2m1", "e4m3", 16, 4)
BLOCK_FORMATS = (MXFP8, MXFP4, NVFP4)


@dataclass(frozen=True)
class BlockQuantized:
    """An operand (rows, K) in a block-scaled format: value = element x SF (x global_scale),
    each SF broadcast over its `vec` elements along K. `elements` are float8_e4m3fn for MXFP8,
    float64 values on the e2m1 grid for FP4 (`codes()` gives their bits); `scales` (rows,
    ceil(K / vec)) are float8_e8m0fnu (MX) or float8_e4m3fn (NVFP4)."""

    fmt: BlockFormat
    elements: torch.Tensor
    scales: torch.Tensor
    global_scale: torch.Tensor  # float32 scalar: 1 for MX formats

    def codes(self) -> torch.Tensor:
        """The elements' bits: uint8 codes (e2m1: 0..15; e4m3: the byte)."""
        if self.fmt.element == "e2m1":
            return e2m1_codes(self.elements)
        return self.elements.view(torch.uint8)

    def expanded_scale(self) -> torch.Tensor:
        """The scale of every element (float64, shape of `elements`)."""
        s = self.scales.to(torch.float64).repeat_interleave(self.fmt.vec, dim=1)
        return s[:, : self.elements.shape[1]] * self.global_scale.to(torch.float64)

    def dequantize(self) -> torch.Tensor:
        return dequantize(self)


def dequantize(q: BlockQuantized) -> torch.Tensor:
    """The values a block-scaled operand stands for, float64."""
    return q.elements.to(torch.float64) * q.expanded_scale()


def block_amax(x: torch.Tensor, vec: int) -> torch.Tensor:
    """The largest |x| of each block of `vec` along K, (rows, ceil(K / vec)); a ragged last
    block is the part of it that exists (padded with zeros)."""
    a = torch.as_tensor(x, dtype=torch.float64).abs()
    a = torch.nn.functional.pad(a, (0, (-a.shape[1]) % vec))
    return a.reshape(a.shape[0], -1, vec).amax(dim=2)


def _round_element(values: torch.Tensor, element: str) -> torch.Tensor:
    """Elements rounded to nearest-even and saturated to +-max."""
    if element == "e2m1":
        return e2m1_round(values)
    return fp8.round_to(fp8.E4M3, values, saturate=True)


MX_RULES = ("ocp", "rceil")


def mx_scale_exponent(amax: torch.Tensor, fmt: BlockFormat, rule: str = "ocp") -> torch.Tensor:
    """The MX shared exponent, within the UE8M0 range; an all-zero block gets 0 (SF 1: any SF
    would do). "ocp": the spec's floor(log2(amax)) - emax of the element type (the largest
    element may land above max and be clamped); "rceil": ceil(log2(amax / max)), the
    smallest power of two that fits amax (nothing clamped, up to one binade unused), as
    torchao and torch's own test helper `to_mxfp` choose."""
    if rule not in MX_RULES:
        raise ValueError(f"rule {rule!r}: one of {MX_RULES}")
    emax, top = (E2M1_EMAX, E2M1_MAX) if fmt.element == "e2m1" else (E4M3_EMAX, fp8.E4M3.max)
    if rule == "ocp":
        _, e = torch.frexp(amax)  # amax = f x 2^e, f in [0.5, 1): floor(log2) = e - 1
        shared = e.to(torch.int64) - 1 - emax
    else:
        shared = torch.ceil(torch.log2(amax / top)).nan_to_num(0, 0, 0).to(torch.int64)
    shared = torch.where(amax > 0, shared, torch.zeros_like(shared))
    return torch.clamp(shared, -UE8M0_BIAS, UE8M0_BIAS)


def quantize_mx(x: torch.Tensor, fmt: BlockFormat = MXFP8, rule: str = "ocp") -> BlockQuantized:
    """`x` (rows, K) in an MX format: a power-of-two SF per 32 along K (`rule`: OCP's choice
    by default, see the module docstring), elements x / SF rounded to nearest-even and
    clamped to +-max."""
    if fmt.scale != "ue8m0":
        raise ValueError(f"{fmt.name} is not an MX format")
    x = torch.as_tensor(x, dtype=torch.float64)
    exponent = mx_scale_exponent(block_amax(x, fmt.vec), fmt, rule)
    sf = torch.pow(2.0, exponent.to(torch.float64)).repeat_interleave(fmt.vec, dim=1)
    q = _round_element(x / sf[:, : x.shape[1]], fmt.element)
    elements = q.to(torch.float8_e4m3fn) if fmt.element == "e4m3" else q
    return BlockQuantized(fmt, elements, ue8m0_encode(exponent), torch.tensor(1.0))


def nvfp4_global_scale(x: torch.Tensor) -> torch.Tensor:
    """NVFP4's per-tensor float32 scale, amax / (448 x 6): the largest block's SF becomes 448,
    the top of e4m3, so the SFs of smaller blocks spread down e4m3's range."""
    amax = torch.as_tensor(x, dtype=torch.float64).abs().amax()
    return torch.where(amax > 0, amax / (fp8.E4M3.max * E2M1_MAX), 1.0).to(torch.float32)


def quantize_nvfp4(x: torch.Tensor, global_scale: torch.Tensor | None = None) -> BlockQuantized:
    """`x` (rows, K) in NVFP4: SF = e4m3(block amax / 6 / global scale) per 16 along K, elements
    x / (SF x global) rounded to e2m1 (saturating: an SF rounded down pushes the block's
    largest element a little past 6). A block whose SF underflows to 0 is stored as zeros.
    `global_scale=torch.tensor(1.0)` shows what the SFs do without the per-tensor scale."""
    x = torch.as_tensor(x, dtype=torch.float64)
    g = (
        nvfp4_global_scale(x)
        if global_scale is None
        else torch.as_tensor(global_scale, dtype=torch.float32)
    )
    gd = g.to(torch.float64)
    sf = (block_amax(x, NVFP4.vec) / E2M1_MAX / gd).to(torch.float8_e4m3fn)  # rne, saturates
    every = sf.to(torch.float64).repeat_interleave(NVFP4.vec, dim=1)[:, : x.shape[1]] * gd
    safe = torch.where(every > 0, every, torch.ones_like(every))
    q = torch.where(every > 0, e2m1_round(x / safe), torch.zeros_like(x))
    return BlockQuantized(NVFP4, q, sf, g)


def quantize(x: torch.Tensor, fmt: BlockFormat, rule: str = "ocp") -> BlockQuantized:
    """`x` in any of BLOCK_FORMATS (`rule`: the MX formats' scale rule, see MX_RULES)."""
    return quantize_nvfp4(x) if fmt is NVFP4 else quantize_mx(x, fmt, rule=rule)


# --- what fine-grained scales buy ------------------------------------------------------------


def _errors(x: torch.Tensor, back: torch.Tensor, ordinary: torch.Tensor) -> dict:
    return {
        "error (all)": fp8.relative_error(back, x),
        "error (ordinary channels)": fp8.relative_error(back[:, ordinary], x[:, ordinary]),
    }


def format_errors(
    rows: int = 256,
    k: int = 2048,
    outlier_scale: float = 100.0,
    seed: int = 0,
    mx_rules: tuple[str, ...] = ("ocp",),
) -> list[dict]:
    """One row per (data, format): the relative error of the dequantized tensor against the
    original, on all of it and on its ordinary (not outlier) channels, for the block-scaled
    formats and for FP8 e4m3 with one scale (tensorwise) or one per 1x128 (notebook 12).
    Data: (i) "gaussian": normal values; (ii) "outlier channels": notebook 12's activations,
    a few channels of K `outlier_scale` times larger. The MX formats once per rule of
    `mx_rules`, named "MXFP8" for the OCP rule and "MXFP8, SF rounded up" for "rceil"."""
    g = torch.Generator().manual_seed(seed)
    gaussian = torch.randn(rows, k, generator=g, dtype=torch.float64)
    outliers, _, channels = fp8.activations_and_weights(
        m=rows, k=k, outlier_scale=outlier_scale, seed=seed
    )
    table = []
    for data, x, ch in (("gaussian", gaussian, []), ("outlier channels", outliers, channels)):
        ordinary = torch.ones(k, dtype=torch.bool)
        ordinary[ch] = False
        for gran in ("tensorwise", "1x128"):
            back = fp8.dequantize(fp8.quantize(x, gran))
            bits = 8 + (32 / fp8.BLOCK if gran == "1x128" else 0)
            table.append(
                {
                    "data": data,
                    "format": f"FP8 {gran}",
                    "bits per element": bits,
                    **_errors(x, back, ordinary),
                }
            )
        for fmt, rule in [
            (f, r) for f in BLOCK_FORMATS for r in (("ocp",) if f is NVFP4 else mx_rules)
        ]:
            back = dequantize(quantize(x, fmt, rule))
            table.append(
                {
                    "data": data,
                    "format": fmt.name + (", SF rounded up" if rule == "rceil" else ""),
                    "bits per element": fmt.bits_per_element,
                    **_errors(x, back, ordinary),
                }
            )
    return table


# --- the blocked layout of scale factors ------------------------------------------------------

ATOM_ROWS = 128  # rows of one SF atom (32 x 4, interleaved)
ATOM_KBLOCKS = 4  # SFs of one row in an atom (4 bytes: one 32-bit word)
ATOM_BYTES = ATOM_ROWS * ATOM_KBLOCKS  # 512
ROW_GROUP = 32  # rows r and r + 32, r + 64, r + 96 share one 16-byte line


def blocked_shape(rows: int, kblocks: int) -> tuple[int, int]:
    """Atoms along M and along K: the SF matrix padded to multiples of 128 x 4."""
    return -(-rows // ATOM_ROWS), -(-kblocks // ATOM_KBLOCKS)


def blocked_offset(row, kblock, rows: int, kblocks: int):
    """Byte offset of the SF of (row, kblock) in the blocked layout of a (rows, kblocks) SF
    matrix (one byte an SF). An atom holds 128 rows x 4 k-blocks in 512 bytes, row r at
    (r % 32) x 16 + (r // 32) x 4 + kblock % 4: 16-byte line r % 32 holds rows r, r+32, r+64,
    r+96 -- what one tcgen05.cp .32x128b lane takes. Atoms go K-inner, M-outer: atom (m, k) at
    (m x atoms_k + k) x 512 (CuTe's tile_atom_to_shape_SF tiles mode K first; cuBLAS alike).
    Works on ints and numpy arrays."""
    row, kblock = np.asarray(row), np.asarray(kblock)
    if np.any((row < 0) | (row >= rows) | (kblock < 0) | (kblock >= kblocks)):
        raise IndexError(f"(row, kblock) outside a {rows} x {kblocks} SF matrix")
    _, atoms_k = blocked_shape(rows, kblocks)
    r = row % ATOM_ROWS
    atom = (row // ATOM_ROWS) * atoms_k + kblock // ATOM_KBLOCKS
    inside = (r % ROW_GROUP) * 16 + (r // ROW_GROUP) * 4 + kblock % ATOM_KBLOCKS
    out = atom * ATOM_BYTES + inside
    return int(out) if out.ndim == 0 else out


def _offsets(rows: int, kblocks: int) -> torch.Tensor:
    r, k = np.meshgrid(np.arange(rows), np.arange(kblocks), indexing="ij")
    return torch.from_numpy(blocked_offset(r, k, rows, kblocks))


def to_blocked(sf: torch.Tensor) -> torch.Tensor:
    """A (rows, kblocks) SF matrix in the blocked layout: 1-D, atoms x 512 bytes, padding 0,
    same dtype (any one-byte dtype)."""
    rows, kblocks = sf.shape
    ma, ka = blocked_shape(rows, kblocks)
    out = torch.zeros(ma * ka * ATOM_BYTES, dtype=torch.uint8)
    out[_offsets(rows, kblocks).reshape(-1)] = sf.contiguous().view(torch.uint8).reshape(-1)
    return out.view(sf.dtype)


def from_blocked(blocked: torch.Tensor, rows: int, kblocks: int) -> torch.Tensor:
    """The (rows, kblocks) SF matrix back out of its blocked layout (padding dropped)."""
    flat = blocked.contiguous().view(torch.uint8).reshape(-1)
    return flat[_offsets(rows, kblocks)].view(blocked.dtype)


def blocked_owner(rows: int = ATOM_ROWS, kblocks: int = ATOM_KBLOCKS) -> dict[str, np.ndarray]:
    """For each (row, kblock): its byte offset, its 16-byte line (chunk) and its 32-row group
    (r // 32 within the atom): the ownership map notebook 16 draws."""
    r, k = np.meshgrid(np.arange(rows), np.arange(kblocks), indexing="ij")
    off = blocked_offset(r, k, rows, kblocks)
    return {"offset": off, "chunk": off // 16, "row group": (r % ATOM_ROWS) // ROW_GROUP}


# --- what one block-scaled MMA consumes -------------------------------------------------------

MMA_K = {8: 32, 4: 64}  # K of one tcgen05.mma: kind::mxf8f6f4 (8-bit) 32, kind::mxf4* 64


def mma_bytes(m: int = 128, n: int = 256) -> dict[str, dict[str, int]]:
    """Bytes of A (m x K), B (n x K) and their SFs (SFA: m x K / vec, SFB: n x K / vec, one
    byte each) that one m x n x K block-scaled MMA reads, per format."""
    out = {}
    for fmt in BLOCK_FORMATS:
        k = MMA_K[fmt.bits]
        out[fmt.name] = {
            "K": k,
            "A": m * k * fmt.bits // 8,
            "B": n * k * fmt.bits // 8,
            "SFA": m * k // fmt.vec,
            "SFB": n * k // fmt.vec,
        }
    return out
