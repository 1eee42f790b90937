"""Recorded Nsight Compute launches of notebook 11's GEMM presets (and of notebook 12's FP8
presets, and cuBLAS), with the SM
clock held at its base value (ncu's default) and running free.

A kernel's time is cycles / clock. Held at base, the profiler compares kernels cycle for
cycle; running free, the SMs ask for data a sixth to a fifth faster while L2 does not keep pace,
so a kernel that reads a lot from L2 can stop scaling with the clock. Notebooks 08 and 11
read the rows from results/profile.json (`python -m course.bench.profile ... --record`).

  profile_rows   the newest recorded row per (preset, clock), cuBLAS included when recorded
  print_rows     one line per row: clock, time, cycles, L2 busy, SM busy, L2 sectors read
  show           both, for a notebook cell
"""

from __future__ import annotations

from course.runtime import results
from course.runtime.live import Banner, Mode, show as display

L2_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
COLUMNS = (
    ("SM Frequency", "SM clock"),
    ("Duration", "time"),
    ("Elapsed Cycles", "cycles"),
    ("L2 Cache Throughput", "L2 busy"),
    ("Compute (SM) Throughput", "SM busy"),
    (L2_SECTORS, "L2 sectors read"),
)


def profiler_banner(citation: str) -> Banner:
    """The banner above Nsight Compute counters: the notebook never runs the profiler (it
    takes the GPU to itself, with its own clock control), so on every machine, an H100
    included, the counters shown are recorded ones."""
    return Banner(
        Mode.RECORDED,
        "Nsight Compute is run outside the notebook (on every machine, "
        f"a GPU included, this cell shows a recording): {citation}.",
    )


def _value(headline: dict, metric: str) -> str:
    m = headline.get(metric)
    return m["value"] if m else "-"


def profile_rows(
    presets, size: int = 4096, kernel: str = "hopper", cublas_beside: str | None = "tma_store"
) -> list[dict]:
    """For each preset and clock mode, the newest recorded launch of `kernel` at size^3 as
    {"who", "clock" ("base"/"free"), metric: value..., "record"}; and cuBLAS's launch once
    per clock mode, from the records of preset `cublas_beside` (None: no cuBLAS rows), so
    that it comes from the same runs as the rungs it is read against."""
    newest: dict[tuple, dict] = {}
    for rec in results.load("profile"):
        d = rec.data
        preset = (d.get("config") or {}).get("preset")
        if d.get("kernel") != kernel or preset not in presets or d.get("size") != size:
            continue
        clock = "free" if d.get("clock_control") == "none" else "base"
        for who, name in (("ours", preset), ("cublas", "cuBLAS")):
            if who in d and (who == "ours" or preset == cublas_beside):
                row = {"who": name, "clock": clock, "record": rec}
                row.update({metric: _value(d[who]["headline"], metric) for metric, _ in COLUMNS})
                newest[(name, clock)] = row
    order = {name: i for i, name in enumerate((*presets, "cuBLAS"))}
    return sorted(newest.values(), key=lambda r: (r["clock"], order[r["who"]]))


def _mhz(hz: str) -> str:
    try:
        return f"{float(hz.replace(',', '')) / 1e6:.0f} MHz"
    except ValueError:
        return hz


def print_rows(rows: list[dict]) -> None:
    """A table of the rows, then the records they came from (`show` puts a RECORDED banner
    above them)."""
    w = max([13, *(len(r["who"]) + 1 for r in rows)])  # the name column
    print(
        f"{'':{w}s} {'clock':6s} {'SM clock':>9s} {'time (ns)':>10s} {'cycles':>9s} "
        f"{'L2 busy':>8s} {'SM busy':>8s} {'L2 sectors read':>16s}"
    )
    for r in rows:
        print(
            f"{r['who']:{w}s} {r['clock']:6s} {_mhz(r['SM Frequency']):>9s} "
            f"{r['Duration']:>10s} {r['Elapsed Cycles']:>9s} {r['L2 Cache Throughput']:>7s}% "
            f"{r['Compute (SM) Throughput']:>7s}% {r[L2_SECTORS]:>16s}"
        )
    commands = dict.fromkeys(r["record"].citation() for r in rows)
    if commands:
        print(
            "recorded: "
            + next(iter(commands))
            + (f" (and {len(commands) - 1} more launches like it)" if len(commands) > 1 else "")
        )


def show(
    presets, size: int = 4096, cublas_beside: str | None = "tma_store", kernel: str = "hopper"
) -> list[dict]:
    """Print the recorded rows of `kernel`'s `presets` (see profile_rows) and return them."""
    rows = profile_rows(presets, size, kernel=kernel, cublas_beside=cublas_beside)
    if rows:
        launches = len({r["record"].citation() for r in rows})
        display(
            profiler_banner(
                f"{len(rows)} launches at {size}^3 in {launches} records of "
                "`python -m course.bench.profile`, cited under the table"
            )
        )
    print_rows(rows)
    return rows
