"""FP8 as a model: the two 8-bit formats, rounding into them, scales of four granularities,
and the limited accumulation of Hopper's FP8 tensor cores (notebook 12).

The formats (`E4M3`, `E5M2`) are decoded from their 256 bit patterns, so every finite value,
the largest, the smallest normal and subnormal, and the spacing in each binade (a binade is
the range [2^e, 2^(e+1)) between two powers of two) follow from the bits, not from a table.
`round_to` rounds a float to nearest, ties to even, and overflows as the hardware's
saturating conversion does (torch 2.11 on the H100 converts float32 so; torch 2.13 on a CPU
gives NaN for e4m3 values beyond the largest):

* `torch.float8_e4m3fn` has no infinities: every finite value beyond the largest, and
  +-inf itself, *saturates* to +-448; NaN stays NaN;
* `torch.float8_e5m2` has infinities: a value that rounds past +-57344 *overflows* to +-inf.

Scales (`quantize`/`dequantize`): one float32 scale per group of elements, scale = amax / max
of the format, optionally rounded up to a power of two (as UE8M0 scale factors are). The
groups: `tensorwise` (one), `rowwise` (one per row: per token of A (M, K), per output channel
of B stored (N, K)), `1x128` (one per row and 128 columns of K; DeepSeek-V3's activations)
and `128x128` (one per 128 x 128 block; DeepSeek-V3's weights).

`accumulate` is a model, not a measurement: a dot product added 32 products at a time (one
WGMMA's K) into an accumulator that keeps `keep_bits` fraction bits, optionally promoted into a
float32 sum every `promote_every` chunks and restarted. Where the bits are cut is a choice
(`CUTS`): "addends" lines the 32 products and the running sum up on the exponent of the largest
of them and drops every bit more than `keep_bits` below it before adding (toward zero, so each
addend loses a little in the direction of its own sign); "sum" adds exactly and cuts the running
sum after each addition (toward zero, so every cut shrinks the sum). DeepSeek-V3's technical
report measured about 14 bits kept by the H800's FP8 WGMMA and promotes every 128 K (4 WGMMAs);
the H100's own numbers are recorded by `python -m course.tools.record_fp8_accuracy`, and the
"addends" cut follows them more closely (notebook 12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Fp8Format:
    """An 8-bit float: 1 sign bit, `exponent_bits`, `mantissa_bits` (fraction bits)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    has_inf: bool  # e5m2: exponent all ones is inf/NaN; e4m3fn: only S.1111.111 is NaN
    dtype: torch.dtype

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest normal value (and of the subnormals' spacing)."""
        return 1 - self.bias

    def decode(self, bits: int) -> float:
        """The value of one 8-bit pattern (0..255): a float, +-inf or NaN."""
        if not 0 <= bits < 256:
            raise ValueError(f"an 8-bit pattern is 0..255, not {bits}")
        sign = -1.0 if bits >> 7 else 1.0
        exp = (bits >> self.mantissa_bits) & (2**self.exponent_bits - 1)
        frac = bits & (2**self.mantissa_bits - 1)
        top = 2**self.exponent_bits - 1
        if self.has_inf and exp == top:
            return sign * math.inf if frac == 0 else math.nan
        if not self.has_inf and exp == top and frac == 2**self.mantissa_bits - 1:
            return math.nan
        if exp == 0:  # subnormal: 0.frac x 2^(1 - bias)
            return sign * frac * 2.0 ** (self.min_exponent - self.mantissa_bits)
        return sign * (1 + frac / 2**self.mantissa_bits) * 2.0 ** (exp - self.bias)

    def patterns(self) -> list[float]:
        """The value of every bit pattern, 0..255 in order."""
        return [self.decode(b) for b in range(256)]

    def finite_values(self) -> list[float]:
        """Every distinct finite value (+0 and -0 counted once), ascending."""
        return sorted({v for v in self.patterns() if math.isfinite(v)})

    @property
    def max(self) -> float:
        return max(self.finite_values())

    @property
    def smallest_normal(self) -> float:
        return 2.0**self.min_exponent

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (self.min_exponent - self.mantissa_bits)

    @property
    def relative_precision(self) -> float:
        """The gap after 1.0 in units of 1.0: 2^-mantissa_bits (12.5% for e4m3, 25% for e5m2)."""
        return 2.0**-self.mantissa_bits

    def binades(self) -> list[Binade]:
        """The positive finite values binade by binade, subnormals first."""
        values = [v for v in self.finite_values() if v > 0]
        out = []
        for e in range(self.min_exponent - self.mantissa_bits, math.frexp(self.max)[1]):
            inside = [v for v in values if 2.0**e <= v < 2.0 ** (e + 1)]
            if inside:
                step = 2.0 ** max(e - self.mantissa_bits, self.min_exponent - self.mantissa_bits)
                out.append(Binade(e, len(inside), step, e < self.min_exponent))
        return out


@dataclass(frozen=True)
class Binade:
    """The values in [2^exponent, 2^(exponent+1)): how many, and the gap between them."""

    exponent: int
    count: int
    step: float
    subnormal: bool

    @property
    def relative_step(self) -> float:
        """The gap relative to the binade's smallest value: the worst relative spacing."""
        return self.step / 2.0**self.exponent


E4M3 = Fp8Format("e4m3", 4, 3, has_inf=False, dtype=torch.float8_e4m3fn)
E5M2 = Fp8Format("e5m2", 5, 2, has_inf=True, dtype=torch.float8_e5m2)
FORMATS = (E4M3, E5M2)


def properties(fmt: Fp8Format) -> dict:
    """One row of the formats' table."""
    patterns = fmt.patterns()
    return {
        "format": fmt.name,
        "torch dtype": str(fmt.dtype).replace("torch.", ""),
        "bits (sign, exponent, mantissa)": f"1, {fmt.exponent_bits}, {fmt.mantissa_bits}",
        "exponent bias": fmt.bias,
        "distinct finite values": len(fmt.finite_values()),
        "largest": fmt.max,
        "smallest normal": fmt.smallest_normal,
        "smallest subnormal": fmt.smallest_subnormal,
        "gap after 1.0": fmt.relative_precision,
        "infinities": sum(math.isinf(v) for v in patterns),
        "NaN patterns": sum(math.isnan(v) for v in patterns),
        "beyond the largest (model)": "saturates" if not fmt.has_inf else "inf",
    }


def _round_half_even(x: torch.Tensor) -> torch.Tensor:
    return torch.round(x)  # torch.round rounds halves to even


def round_to(fmt: Fp8Format, x, saturate: bool | None = None) -> torch.Tensor:
    """`x` rounded to the nearest value of `fmt` (ties to even), as float64. Beyond the largest
    value: `saturate=None` does what torch's conversion does (e4m3: saturate to +-448, +-inf
    included; e5m2: +-inf); True clamps to +-max (as the GPU's `satfinite` conversions do);
    False overflows to +-inf (e5m2) or NaN (e4m3, which has no inf)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    saturate = (not fmt.has_inf) if saturate is None else saturate
    mag = x.abs()
    _, exp = torch.frexp(mag)  # mag = f x 2^exp, f in [0.5, 1)
    e = torch.clamp(exp.to(torch.float64) - 1, min=fmt.min_exponent)  # binade, subnormals flat
    step = torch.pow(2.0, e - fmt.mantissa_bits)
    q = _round_half_even(mag / step) * step
    over = q > fmt.max
    big = torch.full_like(q, fmt.max if saturate else (math.inf if fmt.has_inf else math.nan))
    q = torch.where(over | torch.isinf(mag), big, q)
    q = torch.where(torch.isnan(x), torch.full_like(q, math.nan), q)
    return torch.copysign(q, x)


# --- scales -------------------------------------------------------------------------------

GRANULARITIES = ("tensorwise", "rowwise", "1x128", "128x128")
BLOCK = 128


@dataclass(frozen=True)
class Quantized:
    """An operand in FP8 and its scales: value = data x scale, the scale broadcast over its
    group (`scale` has one entry per group: (1, 1), (rows, 1), (rows, K/128) or
    (rows/128, K/128))."""

    data: torch.Tensor  # the fp8 tensor (torch's dtype)
    scale: torch.Tensor  # float32, one per group
    granularity: str

    def expanded_scale(self) -> torch.Tensor:
        """The scale of every element, shape of `data`."""
        s = self.scale
        if self.granularity == "1x128":
            s = s.repeat_interleave(BLOCK, dim=1)
        elif self.granularity == "128x128":
            s = s.repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)
        return s[: self.data.shape[0], : self.data.shape[1]].expand_as(self.data)


def group_amax(x: torch.Tensor, granularity: str) -> torch.Tensor:
    """The largest |x| of each group (shape as Quantized.scale). Blocks need no padding:
    a ragged last block is the part of it that exists."""
    a = x.abs().to(torch.float32)
    rows, cols = a.shape
    if granularity == "tensorwise":
        return a.amax().reshape(1, 1)
    if granularity == "rowwise":
        return a.amax(dim=1, keepdim=True)
    if granularity in ("1x128", "128x128"):
        br = 1 if granularity == "1x128" else BLOCK
        pad_r, pad_c = (-rows) % br, (-cols) % BLOCK
        a = torch.nn.functional.pad(a, (0, pad_c, 0, pad_r))
        blocks = a.reshape(a.shape[0] // br, br, a.shape[1] // BLOCK, BLOCK)
        return blocks.amax(dim=(1, 3))
    raise ValueError(f"granularity {granularity!r}: one of {GRANULARITIES}")


def scales(amax: torch.Tensor, fmt: Fp8Format = E4M3, power_of_two: bool = False):
    """scale = amax / fmt.max (1 where a group is all zeros); with `power_of_two`, rounded up
    to a power of two (so the largest element still fits: at worst one binade of range is
    left unused, and multiplying by the scale is exact)."""
    s = torch.where(amax > 0, amax / fmt.max, torch.ones_like(amax)).to(torch.float32)
    if power_of_two:
        s = torch.pow(2.0, torch.ceil(torch.log2(s)))
    return s


def quantize(
    x: torch.Tensor, granularity: str, fmt: Fp8Format = E4M3, power_of_two: bool = False
) -> Quantized:
    """`x` (2-D) in `fmt`, with one scale per group of `granularity`."""
    s = scales(group_amax(x, granularity), fmt, power_of_two)
    every = Quantized(x, s, granularity).expanded_scale()  # the scale of each element
    return Quantized((x.to(torch.float32) / every).to(fmt.dtype), s, granularity)


def dequantize(q: Quantized) -> torch.Tensor:
    """The values the FP8 operand stands for, float64."""
    return q.data.to(torch.float64) * q.expanded_scale().to(torch.float64)


def relative_error(c: torch.Tensor, ref: torch.Tensor) -> float:
    """||c - ref|| / ||ref|| (Frobenius), in float64."""
    ref = ref.to(torch.float64)
    return float((c.to(torch.float64) - ref).norm() / ref.norm())


# --- data with outliers, and the GEMM error of each granularity -----------------------------


def activations_and_weights(
    m: int = 256,
    n: int = 256,
    k: int = 2048,
    outlier_channels: int = 4,
    outlier_scale: float = 100.0,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A (m, k) like activations: normal values, each token (row) at its own magnitude, and
    `outlier_channels` channels (columns of K) `outlier_scale` times larger for every token;
    B (n, k) like weights: normal values, each output channel (row) at its own magnitude.
    Float64, deterministic for a seed; returns A, B and the outlier channels' indices."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g, dtype=torch.float64)
    a *= torch.exp(0.5 * torch.randn(m, 1, generator=g, dtype=torch.float64))
    channels = torch.randperm(k, generator=g)[:outlier_channels].sort().values
    a[:, channels] *= outlier_scale
    b = torch.randn(n, k, generator=g, dtype=torch.float64) * 0.02
    b *= torch.exp(0.5 * torch.randn(n, 1, generator=g, dtype=torch.float64))
    return a, b, channels


# (name, A's granularity, B's granularity): the schemes the notebook compares
SCHEMES = (
    ("tensorwise", "tensorwise", "tensorwise"),
    ("rowwise", "rowwise", "rowwise"),
    ("blockwise", "1x128", "128x128"),
)


@dataclass(frozen=True)
class SchemeError:
    scheme: str
    a: str  # A's granularity
    b: str  # B's granularity
    power_of_two: bool
    gemm_error: float  # of A.B^T from the dequantized operands, against float64
    ordinary_error: float  # of the ordinary channels' part of A.B^T alone
    below_normal: float  # share of A's ordinary values scaled below the smallest normal


def granularity_errors(
    a: torch.Tensor,
    b: torch.Tensor,
    outliers: torch.Tensor,
    fmt: Fp8Format = E4M3,
    power_of_two=(False, True),
) -> list[SchemeError]:
    """Each scheme, with exact and/or power-of-two scales: the relative error, against float64,
    of A.B^T computed exactly from the dequantized FP8 operands; of the part of A.B^T that
    the ordinary (not `outliers`) channels contribute; and the share of A's ordinary values
    that their scale put below `fmt`'s smallest normal (fewer bits, or zero)."""
    ordinary = torch.ones(a.shape[1], dtype=torch.bool)
    ordinary[outliers] = False
    ref = a @ b.T
    ref_ordinary = a[:, ordinary] @ b[:, ordinary].T
    rows = []
    for name, ga, gb in SCHEMES:
        for pow2 in power_of_two:
            qa = quantize(a, ga, fmt, pow2)
            da, db = dequantize(qa), dequantize(quantize(b, gb, fmt, pow2))
            small = qa.data[:, ordinary].to(torch.float32).abs() < fmt.smallest_normal
            rows.append(
                SchemeError(
                    name,
                    ga,
                    gb,
                    pow2,
                    relative_error(da @ db.T, ref),
                    relative_error(da[:, ordinary] @ db[:, ordinary].T, ref_ordinary),
                    float(small.to(torch.float64).mean()),
                )
            )
    return rows


def outlier_sweep(
    magnitudes=(1.0, 1e1, 1e2, 1e3, 1e4, 1e5), fmt: Fp8Format = E4M3, **data
) -> dict[str, list[float]]:
    """For outlier channels each of `magnitudes` times larger, each scheme's error (exact
    scales) on the ordinary channels' part of A.B^T: {"outlier scale": [...], scheme: [...]}."""
    out: dict[str, list[float]] = {"outlier scale": list(magnitudes)}
    for s in magnitudes:
        a, b, ch = activations_and_weights(outlier_scale=s, **data)
        for r in granularity_errors(a, b, ch, fmt, power_of_two=(False,)):
            out.setdefault(r.scheme, []).append(r.ordinary_error)
    return out


# --- accumulation: the tensor core's limited sum, and promotion ------------------------------

MMA_K = 32  # K of one FP8 WGMMA
KEEP_BITS = 14  # fraction bits the H800's FP8 WGMMA keeps (about; DeepSeek-V3's report)
CUTS = ("addends", "sum")  # where the model cuts the bits: see the module's docstring
PROMOTE_EVERY = 4  # chunks of 32 between promotions: 128 K, DeepSeek-V3's interval


def truncate(x: torch.Tensor, keep_bits: int) -> torch.Tensor:
    """`x` with only `keep_bits` fraction bits after its leading one, the rest cut off
    (rounded toward zero)."""
    mag = x.abs()
    _, exp = torch.frexp(mag)
    ulp = torch.pow(2.0, exp.to(torch.float64) - 1 - keep_bits)
    return torch.copysign(torch.floor(mag / ulp) * ulp, x)


def align(terms: torch.Tensor, keep_bits: int) -> torch.Tensor:
    """`terms` (rows, n) lined up on the exponent of each row's largest: every bit more than
    `keep_bits` below that largest term's leading one is dropped (rounded toward zero)."""
    _, exp = torch.frexp(terms.abs())
    top = torch.where(terms != 0, exp.to(torch.float64), -math.inf).amax(dim=1, keepdim=True)
    ulp = torch.pow(2.0, top.clamp_min(-1000.0) - 1 - keep_bits)
    return torch.trunc(terms / ulp) * ulp


def accumulate(
    products: torch.Tensor,
    keep_bits: int = KEEP_BITS,
    chunk: int = MMA_K,
    promote_every: int | None = None,
    cut: str = "addends",
) -> torch.Tensor:
    """MODEL of an FP8 GEMM's sums. `products` (rows, K): the products a_k x b_k of each dot
    product (exact: two FP8 values multiply exactly). Every `chunk` products are added to an
    accumulator that keeps `keep_bits` fraction bits, cut where `cut` says ("addends": the
    chunk's products and the accumulator aligned on the largest of them and cut before an
    exact addition; "sum": the chunk summed exactly, added, and the new sum cut). Without
    promotion that accumulator runs over all of K; with `promote_every`, it is added into a
    float32 sum every `promote_every` chunks and restarted from zero. Returns the sums."""
    if cut not in CUTS:
        raise ValueError(f"cut must be one of {CUTS}, got {cut!r}")
    rows, k = products.shape
    parts = products.to(torch.float64).reshape(rows, -1, chunk)
    acc = torch.zeros(rows, dtype=torch.float64)
    total = torch.zeros(rows, dtype=torch.float32)
    for i in range(parts.shape[1]):
        if cut == "addends":
            acc = align(torch.cat([acc[:, None], parts[:, i]], dim=1), keep_bits).sum(dim=1)
        else:
            acc = truncate(acc + parts[:, i].sum(dim=1), keep_bits)
        if promote_every and (i + 1) % promote_every == 0:
            total = total + acc.to(torch.float32)
            acc = torch.zeros_like(acc)
    if promote_every:
        return (total + acc.to(torch.float32)).to(torch.float64)
    return acc


def fp8_dot_operands(rows: int, k: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """`rows` pairs of length-`k` vectors of normal random values, in e4m3 with one
    (tensorwise) scale each, dequantized: what the tensor cores multiply (float64)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(rows, k, generator=g, dtype=torch.float64)
    b = torch.randn(rows, k, generator=g, dtype=torch.float64)
    return (
        dequantize(quantize(a, "tensorwise")),
        dequantize(quantize(b, "tensorwise")),
    )


def accumulation_errors(
    ks=tuple(2**i for i in range(8, 16)),
    keep_bits: int = KEEP_BITS,
    promote_every: int = PROMOTE_EVERY,
    rows: int = 128,
    seed: int = 0,
    cut: str = "addends",
) -> dict:
    """MODEL: the relative error of `rows` K-long dot products of FP8 operands against the
    exact sum, for each K, kept in `keep_bits` (cut where `cut` says) throughout ("no
    promotion") and promoted into float32 every `promote_every` chunks of 32 ("promotion")."""
    out = {"k": list(ks), "no promotion": [], "promotion": [], "keep_bits": keep_bits}
    out["promote_every_k"] = promote_every * MMA_K
    out["cut"] = cut
    for k in ks:
        a, b = fp8_dot_operands(rows, k, seed)
        p = a * b
        exact = p.sum(dim=1)
        out["no promotion"].append(relative_error(accumulate(p, keep_bits, cut=cut), exact))
        out["promotion"].append(
            relative_error(accumulate(p, keep_bits, promote_every=promote_every, cut=cut), exact)
        )
    return out
