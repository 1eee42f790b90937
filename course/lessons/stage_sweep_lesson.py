"""Notebook 09's stage sweep: the TMA GEMM with 1-4 stages timed against cuBLAS (live or
recorded), or the simulator's prediction before anything is recorded; then the ring model
fitted to the measurement and drawn beside it.

  stage_sweep        the live cell: measured now, recorded, or predicted (labelled)
  calibrated_figure  the model's two latencies fitted to the measured times, and the curves
"""
from __future__ import annotations

from course.bench import stage_sweep as stage_bench
from course.runtime.live import Mode, Outcome, live_or, recorded_or, simulated
from course.sim import pipeline_sim
from course.viz import pipeline_pictures

RECORD_COMMAND = "python -m course.bench stages --record"


def sweep_now(size: int = 4096, stages=(1, 2, 3, 4)) -> dict:
    """Check and time the TMA GEMM at each stage count against cuBLAS (needs Hopper)."""
    data = stage_bench.sweep("tma", size, stages=stages)
    stage_bench.print_rows(data)
    return data


def predicted(k_tiles: int = 64, load_latency: float = 600, mma_latency: float = 200,
              stages=range(1, 5)) -> None:
    """Print the simulator's run time at each stage count (nothing measured to return)."""
    print(f"The simulator's prediction for {k_tiles} k-tiles, load = "
          f"{load_latency / mma_latency:g} x MMA:")
    for sim in pipeline_sim.sweep(stages=stages, k_tiles=k_tiles, load_latency=load_latency,
                                  mma_latency=mma_latency):
        print("   ", sim.summary())
    return None


def stage_sweep() -> Outcome:
    """Measured now on Hopper; elsewhere the recorded sweep, printed like a live one; before
    one is recorded, the simulator's prediction alone."""
    out = live_or("sm_90+", sweep_now,
                  recorded_or("stage_sweep", simulated(predicted, "the pipeline simulator alone"),
                              RECORD_COMMAND))
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
    from kernels.tma_gemm import TILE_K

    measured = {r["stages"]: r["kernel_ms"] for r in sweep.value["results"]}
    k_tiles = sweep.value["size"] // TILE_K
    cal = pipeline_sim.calibrate(measured, k_tiles)
    print(cal)
    sims = pipeline_sim.sweep(stages=range(1, 9), k_tiles=k_tiles,
                              load_latency=cal.load_latency, mma_latency=cal.mma_latency)
    gpu = sweep.record.gpu if sweep.record is not None else "this GPU"
    return pipeline_pictures.sweep(sims, measured=measured, measured_label=f"measured ({gpu})")
