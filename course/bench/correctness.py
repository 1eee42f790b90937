"""Is the kernel right? Relative Frobenius error against a float64 torch reference.

The rules every kernel check in the course follows:
  * fresh random inputs on every check (never zeros: they hide wrong indexing);
  * the output is poisoned (NaN, or a sentinel for integers) before the run, so an
    element the kernel forgot to write fails the check instead of passing by luck;
  * the error is ||out - ref||_F / ||ref||_F computed in float64, with a tolerance
    chosen by the output dtype (the rounding of the stored result dominates);
  * any NaN or Inf in the output fails, whatever the error norm says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernels import selftest

# Relative Frobenius tolerance by output dtype: the kernels' one table (why these values:
# kernels/selftest.py), so a step's own `python -m kernels.<step>` and the course agree.
TOLERANCE: dict[torch.dtype, float] = selftest.TOLERANCE

# Integers must match exactly; this sentinel marks "never written".
INT_POISON = -0x5A5A5A5A


def tolerance(dtype: torch.dtype) -> float:
    """The relative error a correct kernel producing `dtype` stays under."""
    if dtype in TOLERANCE:
        return TOLERANCE[dtype]
    if not dtype.is_floating_point:
        return 0.0
    raise KeyError(f"no tolerance defined for {dtype}")


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill `t` in place with a value no correct kernel writes, and return it."""
    if t.dtype.is_floating_point:
        return t.fill_(float("nan"))
    if t.dtype == torch.bool:
        raise TypeError("cannot poison a bool tensor")
    return t.fill_(max(INT_POISON, torch.iinfo(t.dtype).min))


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref||_F / ||ref||_F in float64 (inf if out has NaN/Inf)."""
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch: out {tuple(out.shape)} vs ref {tuple(ref.shape)}")
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    if not torch.isfinite(o).all():
        return math.inf
    denom = torch.linalg.vector_norm(r).item()
    num = torch.linalg.vector_norm(o - r).item()
    if denom == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / denom


@dataclass(frozen=True)
class Check:
    """The verdict of one correctness check."""

    what: str
    rel_error: float
    tol: float
    unwritten: int  # elements still holding the poison value
    nonfinite: int

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and self.nonfinite == 0 and self.rel_error <= self.tol

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        detail = f"rel. error {self.rel_error:.2e} (tolerance {self.tol:.0e})"
        if self.unwritten:
            detail += f", {self.unwritten} elements never written"
        elif self.nonfinite:
            detail += f", {self.nonfinite} NaN/Inf elements"
        return f"{verdict} {self.what}: {detail}"


def compare(
    out: torch.Tensor, ref: torch.Tensor, what: str = "", tol: float | None = None
) -> Check:
    """Judge `out` against the float64 reference `ref`."""
    o = out.detach().cpu()
    if o.dtype.is_floating_point:
        unwritten = int(torch.isnan(o).sum())
        nonfinite = int((~torch.isfinite(o)).sum())
    else:
        unwritten = int((o == max(INT_POISON, torch.iinfo(o.dtype).min)).sum())
        nonfinite = 0
    err = relative_error(out, ref)
    return Check(
        what or f"{tuple(out.shape)} {out.dtype}",
        err,
        tolerance(out.dtype) if tol is None else tol,
        unwritten,
        nonfinite,
    )


def assert_close(
    out: torch.Tensor, ref: torch.Tensor, what: str = "", tol: float | None = None
) -> Check:
    """compare(), raising AssertionError with the verdict when it fails."""
    verdict = compare(out, ref, what, tol)
    if not verdict.ok:
        raise AssertionError(str(verdict))
    return verdict


def random_like_inputs(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: str | torch.device,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Fresh standard-normal data (uniform small integers for integer dtypes)."""
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=torch.float32, device=device, generator=generator).to(dtype)
    return torch.randint(-8, 8, shape, dtype=dtype, device=device, generator=generator)
