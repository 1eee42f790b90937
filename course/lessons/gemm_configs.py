"""A learner's own configuration of a GEMM: measured on a GPU, or compiled and compared
with what was recorded on the H100 elsewhere.

  try_config        one configuration: live against cuBLAS, or its compile and record
  recorded_configs  the configurations recorded on the H100, at one size
"""

from __future__ import annotations

from dataclasses import fields
from types import ModuleType

import torch

from course.bench.gemm_bench import LADDER
from course.lessons.gemm_lesson import bench_live, print_rows, recorded_rows
from course.runtime.live import Banner, Mode, Outcome, compile_only, live_or, show
from course.bench.report import pct_with_control


def overrides(module: ModuleType, config: dict) -> dict:
    """The entries of `config` that differ from the kernel's default Config (the way
    results/gemm.json names a configuration)."""
    default = module.Config()
    names = {f.name for f in fields(default)}
    unknown = set(config) - names
    if unknown:
        raise KeyError(f"{module.__name__}.Config has no field {sorted(unknown)}")
    return {k: v for k, v in config.items() if v != getattr(default, k)}


def try_config(
    module: ModuleType,
    kernel: str,
    config: dict,
    size: int = 4096,
    arch: str = "sm_90a",
    label: str | None = None,
) -> Outcome:
    """Print the configuration's shared memory and threads; then, on a GPU the kernel
    runs on, time it against cuBLAS at size^3; elsewhere compile it for `arch`, print its
    registers and stack, and the H100's recorded rows for it if there are any. `label`
    names the cell for live_or (its live output is recorded and shown elsewhere). A
    recorded row is printed under its own RECORDED banner, never as the compile's output."""
    cfg = module.Config(**config)
    print(f"{cfg}: {cfg.smem_bytes(2):,} bytes of shared memory, {cfg.threads} threads")

    def offline(arch: str):
        (res,) = module.artifacts(arch, torch.bfloat16, cfg).resource_usage().values()
        print(f"{res['registers']} registers per thread, {res['stack_frame_bytes']} bytes of stack")
        rows, rec = recorded_rows(kernel, config=overrides(module, config))
        rows = [r for r in rows if r["problem"].startswith(f"{size}x")]
        if not rows:
            print(f"no H100 measurement at {size}^3 recorded for this configuration")
            return res
        # a measurement is not what this cell did: it gets its own banner and provenance
        show(
            Banner(
                Mode.RECORDED,
                f"This configuration at {size}^3 in a benchmark run of its "
                f"own, {rec.citation()}; the second line is the SM clock that "
                "run went at:",
            )
        )
        print_rows(rows)
        return res

    return live_or(
        LADDER[kernel][1],
        lambda: bench_live(kernel, sizes=(size,), **config),
        compile_only(offline, arch=arch),
        label=label,
    )


def recorded_configs(kernel: str, configs: list[dict], size: int = 4096) -> list[dict]:
    """One line per recorded configuration (overrides of the default Config) at size^3:
    TFLOP/s and % of cuBLAS; then, under them, where each was measured (GPU, date, command).
    Returns the rows shown."""
    shown, cited = [], []
    for config in configs:
        rows, rec = recorded_rows(kernel, config=config)
        for r in rows:
            if r["problem"].startswith(f"{size}x"):
                print(
                    f"{str(config or 'default'):48s} {r['kernel_tflops']:6.1f} TFLOP/s  "
                    f"{pct_with_control(r)}"
                )
                shown.append(r)
                cited.append(f"  {str(config or 'default')}: {rec.citation()}")
    if cited:
        print("where each row was measured:")
        print("\n".join(cited))
    return shown
