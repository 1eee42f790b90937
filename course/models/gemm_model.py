"""Back-of-the-envelope GEMM arithmetic: work, traffic, intensity, tiles.

Why C is tiled and why K is walked, in numbers. Traffic here is DRAM traffic under
the simplest model -- every CTA reads its A and B panels from memory, with no reuse
through L2 -- so it is an upper bound; notebook 11 measures how much L2 saves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    in_bytes: int = 2  # bf16 / fp16 operands
    out_bytes: int = 2

    @property
    def cells(self) -> int:
        """Elements of C."""
        return self.m * self.n

    @property
    def macs(self) -> int:
        """Multiply-adds: one per (i, j, k)."""
        return self.m * self.n * self.k

    @property
    def flops(self) -> int:
        """Two floating-point operations per multiply-add."""
        return 2 * self.macs

    def min_bytes(self) -> int:
        """Each operand read once, C written once: the floor on DRAM traffic."""
        return (self.m * self.k + self.n * self.k) * self.in_bytes + self.cells * self.out_bytes

    def tiled_bytes(self, tile_m: int, tile_n: int) -> int:
        """Traffic when each tile_m x tile_n CTA reads its own A and B panels from DRAM.

        A is read once per column of tiles, B once per row of tiles. A 1x1 tile is
        the naive kernel: every output element streams a row of A and a column of B.
        """
        cols = math.ceil(self.n / tile_n)
        rows = math.ceil(self.m / tile_m)
        a = self.m * self.k * self.in_bytes * cols
        b = self.n * self.k * self.in_bytes * rows
        return a + b + self.cells * self.out_bytes

    def intensity(self, tile_m: int | None = None, tile_n: int | None = None) -> float:
        """FLOP per DRAM byte (ideal when no tile is given)."""
        traffic = self.min_bytes() if tile_m is None else self.tiled_bytes(tile_m, tile_n or tile_m)
        return self.flops / traffic

    def tiles(self, tile_m: int, tile_n: int) -> int:
        """CTAs needed to cover C with tile_m x tile_n tiles."""
        return math.ceil(self.m / tile_m) * math.ceil(self.n / tile_n)

    def k_steps(self, tile_k: int) -> int:
        """Iterations of the K-loop with tile_k-wide chunks."""
        return math.ceil(self.k / tile_k)


def attainable_tflops(intensity: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    """The roofline: min(peak, intensity x bandwidth)."""
    return min(peak_tflops, intensity * bandwidth_gbps / 1e3)


def bound(intensity: float, peak_tflops: float, bandwidth_gbps: float) -> str:
    """'memory' or 'compute': which roof caps a kernel of this intensity."""
    ridge = peak_tflops * 1e3 / bandwidth_gbps
    return "memory" if intensity < ridge else "compute"
