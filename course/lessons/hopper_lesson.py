"""Notebook 11's Hopper GEMM: its ladder of presets, the register split of warp
specialization, what multicast saves, each step measured against cuBLAS, and the verdict
on the course's goal from the recorded numbers.

  print_presets        one line per preset: tile, cluster, stages, features
  register_budget      producer and consumer registers against the register file
  multicast_savings    the model's L2 -> SM bytes of a CTA tile with and without B multicast
  hopper_instructions  setmaxnreg, multicast loads, stmatrix and TMA stores in PTX (fallback)
  check_executed       presets' own code on the CPU executor, a small ragged shape (fallback)
  bench_presets        every preset against cuBLAS (live), or as recorded on the H100
  goal_verdict         the recorded rows of the final kernel against the % of cuBLAS goal
  hopper_sweep         section 6's correctness cell (a live cell)
"""

from __future__ import annotations

from course.lessons.gemm_lesson import (
    bench_live,
    compile_report,
    executor_line,
    matches_run,
    print_rows,
    recorded_rows,
    sweep_or_executed,
)
from course.runtime.live import Outcome, live_or, recorded
from course.bench.report import pct_of_cublas, pct_with_control

# on the CPU executor (numpy plays every thread): the final kernel and its ping-pong variant
EXECUTOR_PRESETS = ("tma_store", "pingpong")
EXECUTOR_SHAPE = (129, 264, 200)
GOAL_PCT = 105  # the course's goal, % of cuBLAS
GOAL_SIZES = (4096, 8192)
REGISTER_FILE = 65_536  # 32-bit registers per SM


def print_presets(presets: dict) -> None:
    """name, CTA tile, cluster, ring stages (bf16) and the features each preset switches on."""
    for name, cfg in presets.items():
        flags = [f for f in ("persistent", "tma_store", "pingpong") if getattr(cfg, f)]
        cluster = f"{cfg.cluster_m}x{cfg.cluster_n}"
        print(
            f"{name:12s} tile {cfg.tile_m}x{cfg.tile_n}  cluster {cluster}  "
            f"stages {cfg.ring_stages(2)}  {' '.join(flags)}"
        )


def register_budget(
    producer_regs: int, consumer_regs: int, producer_threads: int = 128, consumer_threads: int = 256
) -> int:
    """Registers the producer and consumer warpgroups take (setmaxnreg), against the file."""
    total = producer_regs * producer_threads + consumer_regs * consumer_threads
    print(
        f"{producer_regs} x {producer_threads} + {consumer_regs} x {consumer_threads} = "
        f"{total:,} registers of {REGISTER_FILE:,}"
    )
    return total


def multicast_savings(
    tile_m: int = 128, tile_n: int = 256, k: int = 4096, elem_bytes: int = 2, cluster: int = 2
) -> float:
    """The model's count (each byte of B read from L2 once per cluster): B's bytes per CTA tile
    without and with a cluster sharing it, and A + B together; returns the fraction of
    L2 -> SM bytes the model says is saved. A prediction: notebook 08's counters test it."""
    b_tile = tile_n * k * elem_bytes
    a_tile = tile_m * k * elem_bytes
    before, after = a_tile + b_tile, a_tile + b_tile / cluster
    print(
        f"model: B bytes per CTA tile: {b_tile / 2**20:.0f} MiB without multicast, "
        f"{b_tile / cluster / 2**20:.0f} MiB with a {cluster}-CTA cluster"
    )
    saved = 1 - after / before
    print(
        f"model: A + B from L2 per CTA tile: {before / 2**20:.2f} MiB -> {after / 2**20:.2f} MiB "
        f"({100 * saved:.0f}% less)"
    )
    return saved


def hopper_instructions(arch: str):
    """The final kernel's setmaxnreg, multicast TMA loads, stmatrix and TMA stores in PTX."""
    import torch

    from kernels import hopper_gemm

    art = hopper_gemm.artifacts(arch, torch.bfloat16)
    compile_report(
        art,
        {
            "setmaxnreg": r"setmaxnreg",
            "multicast TMA loads": r"multicast::cluster",
            "stmatrix": r"stmatrix",
            "TMA stores": r"cp\.async\.bulk\.tensor\.2d\.global\.shared",
        },
        show=1,
    )
    return art


def check_executed(presets=EXECUTOR_PRESETS, shape=EXECUTOR_SHAPE) -> list:
    """Without a Hopper GPU, the sweep's fallback: each preset of kernels/hopper_gemm.py (the
    final kernel, `tma_store`, first) run on the course's CPU executor (bf16), against torch
    in float64: one line each."""
    from course.execute import ladder_runs

    return [executor_line(ladder_runs.run_hopper_gemm(p, *shape)) for p in presets]


def bench_presets(
    presets, kernel: str = "hopper", size: int = 4096, needs: str = "sm_90a"
) -> Outcome:
    """Each preset against cuBLAS at size^3 on a GPU that can; elsewhere every preset's bf16
    rows as recorded, each preset's under the citation of its own record (the banner cites
    the newest of them). Value: {preset: rows}."""

    def measure():
        rows = {}
        for name in presets:
            print(f"--- {name}")
            rows[name] = bench_live(kernel, sizes=(size,), preset=name)
        return rows

    records = {}  # preset -> (rows, record), read once when the cell falls back

    def select(rec):
        records.update({name: recorded_rows(kernel, preset=name) for name in presets})
        return {name: rows for name, (rows, _) in records.items()}

    matchers = [matches_run(kernel, name, "bf16", None) for name in presets]
    out = live_or(
        needs,
        measure,
        recorded("gemm", select=select, match=lambda rec: any(m(rec) for m in matchers)),
    )
    if not out.live:
        for name, (rows, rec) in records.items():
            print(f"--- {name}")
            print_rows(rows)
            if rec is not None:
                print(f"    ({rec.citation()})")
    return out


def goal_verdict(
    kernel: str = "hopper", preset: str = "tma_store", dtypes=("bf16", "fp16")
) -> dict[str, bool]:
    """Each recorded row of the final kernel with its % of cuBLAS and, at the goal's sizes,
    whether it meets GOAL_PCT; the record is cited. Returns {problem: met} at those sizes."""
    met = {}
    for dtype in dtypes:
        rows, rec = recorded_rows(kernel, preset=preset, dtype=dtype)
        for r in rows:
            size = int(r["problem"].split("x")[0])
            verdict = ""
            if size in GOAL_SIZES:
                met[r["problem"]] = pct_of_cublas(r) >= GOAL_PCT
                verdict = "  goal met" if met[r["problem"]] else f"  below the {GOAL_PCT}% goal"
            print(
                f"{r['problem']:24s} {r['kernel_tflops']:6.1f} TFLOP/s vs cuBLAS "
                f"{r['cublas_tflops']:6.1f}: {pct_with_control(r)}{verdict}"
            )
        if rec:
            print(f"  ({rec.citation()})")
    return met


def print_profiles(presets, size: int = 4096) -> list[dict]:
    """The recorded Nsight Compute launches of `presets` and cuBLAS at size^3, with the clock
    held at base and running free (course.lessons.gemm_profiles)."""
    from course.lessons import gemm_profiles

    return gemm_profiles.show(presets, size)


def hopper_sweep() -> Outcome:
    """Section 6's correctness cell. On an sm_90a GPU: kernels/hopper_gemm.py (its default,
    the final kernel) over the ragged shapes against torch. Elsewhere: the presets tma_store
    and pingpong on the CPU executor, then the final kernel compiled for sm_90a (setmaxnreg,
    multicast loads, stmatrix, TMA stores: compile-only), then the recorded GPU output
    (label 11.hopper_sweep)."""
    return sweep_or_executed(
        "sm_90a",
        "hopper_gemm",
        check_executed,
        "kernels/hopper_gemm.py (presets tma_store and pingpong)",
        label="11.hopper_sweep",
        compiled=hopper_instructions,
    )
