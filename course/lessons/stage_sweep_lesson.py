"""Notebook 09's stage sweep: the TMA GEMM with 1-4 stages timed against cuBLAS (live or
recorded), or the simulator's prediction before anything is recorded; then the ring model
fitted to the measurement and drawn beside it.

  stage_sweep        the live cell: measured now, recorded, or predicted (labelled)
  calibrated_figure  the model's two latencies fitted to the measured times, and the curves
  wgmma_sweeps       the same sweep of notebook 10's WGMMA kernel (recorded), where the math
                     per k-tile is short enough for the loads to show
"""

from __future__ import annotations

from course.bench import stage_sweep as stage_bench
from course.runtime.live import Mode, Outcome, live_or, recorded_or, simulated
from course.sim import pipeline_sim
from course.viz import pipeline_pictures

RECORD_COMMAND = "python -m course.bench stages --record"
WGMMA_COMMANDS = (
    "python -m course.bench stages --kernel wgmma --stages 2 3 4 --rounds 10 --record",
    "python -m course.bench stages --kernel wgmma --stages 2 3 4 5 6 --rounds 10 "
    "--config tile_n=128 --record",
)


def _is_sweep(kernel: str, config: dict | None = None):
    """A record predicate: a stage sweep of `kernel` with exactly these Config overrides."""
    return lambda rec: (
        rec.data["kernel"] == kernel and (rec.data.get("config") or {}) == (config or {})
    )


def sweep_now(size: int = 4096, stages=(1, 2, 3, 4)) -> dict:
    """Check and time the TMA GEMM at each stage count against cuBLAS (needs Hopper)."""
    data = stage_bench.sweep("tma", size, stages=stages)
    stage_bench.print_rows(data)
    return data


def predicted(
    k_tiles: int = 64, load_latency: float = 600, mma_latency: float = 200, stages=range(1, 5)
) -> None:
    """Print the simulator's run time at each stage count (nothing measured to return)."""
    print(
        f"The simulator's prediction for {k_tiles} k-tiles, load = "
        f"{load_latency / mma_latency:g} x MMA:"
    )
    for sim in pipeline_sim.sweep(
        stages=stages, k_tiles=k_tiles, load_latency=load_latency, mma_latency=mma_latency
    ):
        print("   ", sim.summary())
    return None


def stage_sweep() -> Outcome:
    """Measured now on Hopper; elsewhere the recorded sweep, printed like a live one; before
    one is recorded, the simulator's prediction alone."""
    out = live_or(
        "sm_90+",
        sweep_now,
        recorded_or(
            "stage_sweep",
            simulated(predicted, "the pipeline simulator alone"),
            RECORD_COMMAND,
            match=_is_sweep("tma"),
        ),
    )
    if out.mode is Mode.RECORDED:
        stage_bench.print_rows(out.value)
    return out


def calibrated_figure(sweep: Outcome):
    """Fit the ring model's load and MMA latencies to the measured times (printed), then
    draw the model's curve for 1-8 stages with the measured points. None when nothing was
    measured."""
    if sweep.value is None:
        print("(nothing measured to fit the model to: see the banner above)")
        return None
    from kernels.gemm_host import tile_k

    measured = {r["stages"]: r["kernel_ms"] for r in sweep.value["results"]}
    k_tiles = sweep.value["size"] // tile_k(16)  # the sweep's bf16: 64-wide k-tiles
    cal = pipeline_sim.calibrate(measured, k_tiles)
    # the times are the whole grid's k-loop in ms: per k-tile that is microseconds
    print(cal.describe(" µs", 1e3, "ms"))
    sims = pipeline_sim.sweep(
        stages=range(1, 9),
        k_tiles=k_tiles,
        load_latency=cal.load_latency,
        mma_latency=cal.mma_latency,
    )
    gpu = sweep.record.gpu if sweep.record is not None else "this GPU"
    # the fit is in the measurement's unit (ms of the whole grid per k-loop), not cycles
    title = (
        f"Stage sweep fitted to {gpu}: load {cal.load_latency * 1e3:.2f} µs, MMA "
        f"{cal.mma_latency * 1e3:.2f} µs per k-tile (whole grid), {k_tiles} k-tiles"
    )
    return pipeline_pictures.sweep(
        sims, measured=measured, measured_label=f"measured ({gpu})", title=title
    )


def wgmma_sweeps() -> list:
    """The recorded stage sweeps of the WGMMA kernel (default 128x256 tiles, and 128x128
    tiles, which fit up to 6 stages), each printed with its record's citation; [] before
    one is recorded."""
    from course.runtime import results

    shown = []
    for config, command in zip(({}, {"tile_n": 128}), WGMMA_COMMANDS):
        rec = results.latest("stage_sweep", match=_is_sweep("wgmma", config))
        if rec is None:
            print(f"wgmma {config or 'default'}: not recorded yet (`{command}` on a Hopper GPU)")
            continue
        print(f"wgmma {config or '(128x256 tiles)'} at {rec.data['size']}^3 {rec.data['dtype']}:")
        stage_bench.print_rows(rec.data)
        print(f"  ({rec.citation()})")
        shown.append(rec.data)
    return shown
