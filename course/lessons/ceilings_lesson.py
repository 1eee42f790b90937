"""This machine's two ceilings (notebooks 00 and 04): measured now on a GPU or recorded on
one, printed with where they came from, and the GEMM's kernels placed under the roofline.

  machine_ceilings   matmul peak, copy bandwidth and ridge point (live or recorded)
  copy_ceiling       the copy bandwidth alone (live or recorded)
  gemm_roofline      the roofline with the tiling model's predictions and cuBLAS on it
  tiling_table       DRAM traffic and intensity of a GEMM for a few square tile sizes
"""
from __future__ import annotations

from dataclasses import dataclass

from course.bench import ceilings
from course.models.gemm_model import Gemm
from course.runtime.hardware import machine
from course.runtime.live import Outcome, live_or, recorded
from course.viz.roofline import Point, roofline


@dataclass(frozen=True)
class Ceilings:
    """The two ceilings and where they were measured."""

    peak_tflops: float       # bf16 matmul, cuBLAS at 8192^3
    bandwidth_gbps: float    # device-to-device copy, read + write
    ridge: float             # FLOP per byte where the roofs meet
    gpu: str                 # the GPU they belong to
    source: str              # 'measured now on ...' or the record's citation


def machine_ceilings() -> Ceilings:
    """Measure both ceilings on a GPU, or show the recorded ones; prints the three numbers."""
    out = live_or("gpu", ceilings.measure, recorded("ceilings"))
    ceil = Ceilings(out.value["matmul"]["tflops"], out.value["copy"]["gbps"],
                    out.value["ridge_flop_per_byte"],
                    out.record.gpu if out.record is not None else machine().gpu_name,
                    out.caption())
    print(f"bf16 matmul peak (cuBLAS, 8192^3): {ceil.peak_tflops:7.1f} TFLOP/s")
    print(f"device-to-device copy:             {ceil.bandwidth_gbps:7.0f} GB/s")
    print(f"ridge point:                       {ceil.ridge:7.0f} FLOP/byte")
    return ceil


def copy_ceiling(rounds: int = 4) -> Outcome:
    """The copy ceiling (GB/s, read + write) measured now, or recorded; prints it with its
    source. The Outcome's value has the ceilings record's shape: {"copy": {"gbps": ...}}."""
    out = live_or("gpu", lambda: {"copy": ceilings.copy_bandwidth(rounds=rounds)},
                  recorded("ceilings"))
    print(f"copy ceiling: {out.value['copy']['gbps']:,.0f} GB/s (read + write), "
          f"{'measured now' if out.live else out.record.citation()}")
    return out


def gemm_roofline(ceil: Ceilings, g: Gemm, tile: int = 128, measured: int = 8192):
    """The roofline of `ceil` with the tiling model's predictions for `g` (1x1 tiles,
    tile x tile tiles without L2 reuse, each operand read once) and cuBLAS as measured at
    measured^3."""
    size = f"{g.m}^3" if g.m == g.n == g.k else f"{g.m}x{g.n}x{g.k}"
    points = [Point(f"naive GEMM {size} (1x1 tiles)", g.intensity(1, 1)),
              Point(f"{tile}x{tile} tiles, no L2 reuse", g.intensity(tile, tile)),
              Point(f"{size}, each operand read once", g.intensity()),
              Point(f"cuBLAS {measured}^3 (measured)", Gemm(measured, measured, measured).intensity(),
                    ceil.peak_tflops)]
    return roofline(ceil.peak_tflops, ceil.bandwidth_gbps, points, title="Roofline of " + ceil.gpu,
                    source="ceilings " + ceil.source)


def tiling_table(g: Gemm, tiles=(1, 16, 32, 64, 128, 256)) -> str:
    """One row per square tile size: CTAs, DRAM traffic and arithmetic intensity; then the
    ideal (each operand read once, C written once)."""
    lines = [f"{'tile':>10} {'CTAs':>10} {'DRAM traffic':>14} {'FLOP/byte':>10}"]
    for tile in tiles:
        lines.append(f"{tile:>4}x{tile:<5} {g.tiles(tile, tile):>10,} "
                     f"{g.tiled_bytes(tile, tile) / 1e9:>11.2f} GB {g.intensity(tile, tile):>10.1f}")
    lines.append(f"{'ideal':>10} {'':>10} {g.min_bytes() / 1e9:>11.2f} GB {g.intensity():>10.1f}")
    return "\n".join(lines)
