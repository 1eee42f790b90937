"""This machine's two ceilings (notebooks 00 and 04): measured now on a GPU or recorded on
one, printed with where they came from, and the GEMM's kernels placed under the roofline.

  machine_ceilings   matmul rate, copy bandwidth and ridge point (live or recorded), each
                     also as a fraction of the GPU's datasheet where the course knows it
  copy_ceiling       the copy bandwidth alone (live or recorded)
  gemm_roofline      the measured roofline (and the datasheet's), the tiling model's
                     predictions, cuBLAS and notebook 03's recorded naive GEMM on it
  naive_recorded     notebook 03's naive GEMM as recorded for one problem on one GPU
  tiling_table       DRAM traffic and intensity of a GEMM for a few square tile sizes
  cublas_in_recorded_runs  cuBLAS's rate per size over the recorded GEMM benchmarks, with
                     the GPU, dates and commands, and how often it read above the roof
"""

from __future__ import annotations

from dataclasses import dataclass

from course.bench import ceilings
from course.models.datasheet import Datasheet, datasheet
from course.models.gemm_model import Gemm
from course.runtime.hardware import machine
from course.runtime.live import Outcome, live_or, recorded
from course.viz.roofline import Point, roofline


@dataclass(frozen=True)
class Ceilings:
    """The two measured ceilings and where they were measured. They are what cuBLAS and a
    copy reach, not the hardware's published peak: see `datasheet`."""

    matmul_tflops: float  # bf16 matmul, cuBLAS at 8192^3 (measured)
    bandwidth_gbps: float  # device-to-device copy, read + write (measured)
    ridge: float  # FLOP per byte where the measured roofs meet
    gpu: str  # the GPU they belong to
    source: str  # 'measured now on ...' or the record's citation

    @property
    def datasheet(self) -> Datasheet | None:
        """The GPU's published ceilings, None when the course does not list this GPU."""
        return datasheet(self.gpu)


def datasheet_fractions(ceil: Ceilings) -> str:
    """What fraction of the datasheet each measured ceiling reaches, with the source; or
    that this GPU has no datasheet entry (then only the measured roofs are drawn)."""
    ds = ceil.datasheet
    if ds is None:
        return (
            f"no datasheet entry for {ceil.gpu}: only the measured ceilings are shown "
            "(course.models.datasheet lists the GPUs it knows)"
        )
    return (
        f"datasheet: {ds.tflops:.1f} TFLOP/s and {ds.gbps:,.0f} GB/s, so the measured "
        f"ceilings are {100 * ceil.matmul_tflops / ds.tflops:.0f}% (matmul) and "
        f"{100 * ceil.bandwidth_gbps / ds.gbps:.0f}% (copy) of it\n  ({ds.source})"
    )


def machine_ceilings() -> Ceilings:
    """Measure both ceilings on a GPU, or show the recorded ones; prints the three numbers and
    how they compare with the datasheet."""
    out = live_or("gpu", ceilings.measure, recorded("ceilings"))
    ceil = Ceilings(
        out.value["matmul"]["tflops"],
        out.value["copy"]["gbps"],
        out.value["ridge_flop_per_byte"],
        out.record.gpu if out.record is not None else machine().gpu_name,
        out.caption(),
    )
    print(f"bf16 matmul, cuBLAS at 8192^3 (measured): {ceil.matmul_tflops:7.1f} TFLOP/s")
    print(f"device-to-device copy (measured):         {ceil.bandwidth_gbps:7.0f} GB/s")
    print(f"ridge point (measured):                   {ceil.ridge:7.0f} FLOP/byte")
    print(datasheet_fractions(ceil))
    return ceil


def copy_ceiling(rounds: int = 4) -> Outcome:
    """The copy ceiling (GB/s, read + write) measured now, or recorded; prints it with its
    source. The Outcome's value has the ceilings record's shape: {"copy": {"gbps": ...}}."""
    out = live_or(
        "gpu", lambda: {"copy": ceilings.copy_bandwidth(rounds=rounds)}, recorded("ceilings")
    )
    print(
        f"copy ceiling: {out.value['copy']['gbps']:,.0f} GB/s (read + write), "
        f"{'measured now' if out.live else out.record.citation()}"
    )
    return out


NAIVE_TILE = 128  # notebook 03's naive GEMM: one CTA per 128x128 tile of C (naive_gemm.Config)


def naive_recorded(g: Gemm, gpu: str, dtype: str = "bfloat16"):
    """Notebook 03's naive GEMM on problem `g` as last recorded on `gpu`: (TFLOP/s, the
    record's citation), or None when no such row was recorded."""
    from course.runtime import results

    problem = f"{g.m}x{g.n}x{g.k} {dtype}"
    found = None
    for rec in results.load("gemm"):
        if gpu.lower() not in rec.gpu.lower() and rec.gpu.lower() not in gpu.lower():
            continue
        for row in rec.data["results"]:
            if row.get("kernel") == "naive" and row["problem"] == problem:
                found = (row["kernel_tflops"], rec.citation())
    return found


def gemm_roofline(ceil: Ceilings, g: Gemm, tile: int = 128, measured: int = 8192):
    """The measured roofline of `ceil` (and the datasheet's, dashed, where known) with the
    tiling model's predictions for `g` (1x1 tiles, tile x tile tiles without L2 reuse, each
    operand read once), cuBLAS as measured at measured^3 and, where one was recorded on this
    GPU, notebook 03's naive GEMM on `g` (at its 128x128 CTA tiles' intensity). Prints each
    point: its intensity, the rate the measured roof allows there, and the rate measured."""
    size = f"{g.m}^3" if g.m == g.n == g.k else f"{g.m}x{g.n}x{g.k}"
    points = [
        Point("1x1 tiles: one thread per cell of C, no reuse", g.intensity(1, 1)),
        Point(f"{tile}x{tile} tiles, no L2 reuse", g.intensity(tile, tile)),
        Point(f"{size}, each operand read once", g.intensity()),
        Point(
            f"cuBLAS {measured}^3 (measured)",
            Gemm(measured, measured, measured).intensity(),
            ceil.matmul_tflops,
        ),
    ]
    naive = naive_recorded(g, ceil.gpu)
    if naive is not None:
        points.append(
            Point(
                f"notebook 03's naive GEMM {size} (recorded)",
                g.intensity(NAIVE_TILE, NAIVE_TILE),
                naive[0],
            )
        )
    for p in points:
        roof = min(ceil.matmul_tflops, p.intensity * ceil.bandwidth_gbps / 1e3)
        got = f"measured {p.tflops:6.1f}" if p.tflops is not None else "(a prediction)"
        print(f"{p.label:48s} {p.intensity:7.1f} FLOP/B  roof {roof:6.1f} TFLOP/s  {got}")
    if naive is not None:
        print(f"  (the naive GEMM {naive[1]})")
    return roofline(
        ceil.matmul_tflops,
        ceil.bandwidth_gbps,
        points,
        title="Roofline of " + ceil.gpu,
        source="ceilings " + ceil.source,
        datasheet=ceil.datasheet,
    )


def tiling_table(g: Gemm, tiles=(1, 16, 32, 64, 128, 256)) -> str:
    """One row per square tile size: CTAs, DRAM traffic and arithmetic intensity; then the
    ideal (each operand read once, C written once)."""
    lines = [f"{'tile':>10} {'CTAs':>10} {'DRAM traffic':>14} {'FLOP/byte':>10}"]
    for tile in tiles:
        lines.append(
            f"{tile:>4}x{tile:<5} {g.tiles(tile, tile):>10,} "
            f"{g.tiled_bytes(tile, tile) / 1e9:>11.2f} GB {g.intensity(tile, tile):>10.1f}"
        )
    lines.append(f"{'ideal':>10} {'':>10} {g.min_bytes() / 1e9:>11.2f} GB {g.intensity():>10.1f}")
    return "\n".join(lines)


def cublas_in_recorded_runs(
    gpu: str = "H100", dtype: str = "bfloat16", ceil: Ceilings | None = None
) -> dict[int, tuple]:
    """cuBLAS's rate in every recorded GEMM benchmark on `gpu` (taken with today's harness:
    those with a control), per problem size: the
    measured roof is one such measurement, and cuBLAS reads differently run to run and size to
    size (the clock depends on how long and how hard the GPU has been working). Prints one
    line per size (given the ceilings `ceil` of the same kind of GPU: in how many runs cuBLAS
    read above its measured roof, and by how much at most), then the GPU, the dates and the
    commands of those runs; returns {size: (lowest, highest, runs, runs above the roof)}."""
    from course.runtime import results

    same_gpu = ceil is not None and gpu.lower() in ceil.gpu.lower()
    roof = ceil.matmul_tflops if same_gpu else None

    rates: dict[int, list[float]] = {}
    gpus, dates, commands = set(), set(), set()
    for rec in results.load("gemm"):
        if gpu.lower() not in rec.gpu.lower():
            continue
        for row in rec.data["results"]:
            shape, name = row["problem"].split()
            if name == dtype and len(set(shape.split("x"))) == 1 and row.get("control_pct"):
                rates.setdefault(int(shape.split("x")[0]), []).append(row["cublas_tflops"])
                gpus.add(rec.gpu)
                dates.add(rec.date)
                commands.add(rec.command.split(" --")[0])
    out = {}
    for size in sorted(rates):
        got = rates[size]
        lo, hi, n = min(got), max(got), len(got)
        above = [r for r in got if roof is not None and r > roof]
        out[size] = (lo, hi, n, len(above))
        line = (
            f"cuBLAS {dtype} {size}^3: {lo:5.0f} to {hi:5.0f} TFLOP/s in {n} recorded "
            "benchmark runs"
        )
        if roof is not None:
            line += f"; above the {roof:.1f} roof in {len(above)} of them" + (
                f", by at most {100 * (hi / roof - 1):.1f}%" if above else ""
            )
        print(line)
    if rates:
        print(
            f"  (recorded on {', '.join(sorted(gpus))}, {min(dates)} to {max(dates)}, by "
            f"{' / '.join(f'`{c} ...`' for c in sorted(commands))}; results/gemm.json holds "
            "each run's full command)"
        )
    return out
