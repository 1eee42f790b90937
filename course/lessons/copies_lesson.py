"""Notebook 04's copies: the instructions each variant compiles to, the TiledCopy's
ownership, and every copy measured against the ceiling (or recorded, or predicted by the
coalescing model before anything is recorded).

  compile_variants    every copy kernel compiled for an arch
  print_memory_ops    how many of each global load/store instruction each variant has
  describe_tiled_copy a TiledCopy: its TV layout, a few threads' cells, the owner grid
  measure_copies      the live cell: checked and timed, recorded, or the model's bound
  bandwidth_figure    the measured bars against the ceiling (nothing to draw before)
  show_cp_async       the cp.async kernel and its instructions in PTX and SASS
  tiled_vs_cp_async   the two vector copies side by side, once measured
  strided_cost        strided against scalar: the model's bytes and lines, the measured time
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter

from course import source
from course.bench import copy_bandwidth as bench_copies
from course.models import coalescing
from course.runtime.live import Mode, Outcome, executed, live_or, recorded_or, simulated
from course.viz.copy_pictures import bandwidth_bars

RECORD_COMMAND = "python -m course.bench copies --record"


def compile_variants(arch: str) -> dict:
    """variant -> Artifacts of every copy kernel, compiled for `arch`."""
    from kernels import copies

    return {v: copies.artifacts(arch, copies.Config(v)) for v in copies.VARIANTS}


def print_memory_ops(arts: dict) -> dict[str, Counter]:
    """Per variant, the count of each global load/store SASS instruction (LDG, STG and
    LDGSTS, with their widths)."""
    ops = {}
    for variant, art in arts.items():
        ops[variant] = Counter(
            re.search(r"(LDGSTS|LDG|STG)\S*", line).group(0)
            for line in art.sass_lines(r"(LDGSTS|LDG|STG)")
        )
        print(
            f"{variant:9s} ({art.arch}): "
            + ", ".join(f"{n} x {op}" for op, n in ops[variant].items())
        )
    return ops


def describe_tiled_copy(copy, threads=(0, 1, 4, 31)) -> None:
    """A TiledCopy (course.cute.tiled_copy.TiledCopyMap): how it was built, its tile and TV
    layout, the cells of a few threads, and the owner of every cell."""
    print(copy.description)
    print(
        f"tile {copy.shape[0]}x{copy.shape[1]}, TV layout (thread, value) -> element: "
        f"{copy.tv_layout}"
    )
    for t in threads:
        cells = copy.cells_of(t)
        print(f"T{t:02d} owns rows {cells[0][0]}-{cells[-1][0]} of column {cells[0][1]}")
    print(copy.grid())


def coalescing_prediction() -> dict[str, float]:
    """variant -> the useful fraction of the bytes each warp makes the memory system move."""
    return {v: coalescing.warp_of(v).efficiency for v in coalescing.VARIANTS}


def copies_on_the_executor() -> str:
    """Every copy variant's own code on the CPU executor (a ragged 4,100 floats): right or
    not, and any hazard; the speeds are the GPU's to measure."""
    from course.execute.ladder_runs import run_copy

    return "\n".join(run_copy(v).summary() for v in coalescing.VARIANTS)


def measure_copies() -> Outcome:
    """Check and time every copy against the ceiling on a GPU; elsewhere the recorded run,
    or, before one is recorded, the coalescing model's upper bound. Prints a table either way."""
    out = live_or(
        "gpu",
        bench_copies.measure,
        executed(
            copies_on_the_executor,
            "the five copy kernels of kernels/copies.py",
            then=recorded_or(
                "copies",
                simulated(
                    coalescing_prediction,
                    "the coalescing model's prediction (useful fraction of the "
                    "bytes each warp makes the memory system move)",
                ),
                RECORD_COMMAND,
            ),
        ),
    )
    if out.mode is Mode.SIMULATED:
        for v, eff in out.value.items():
            print(f"{v:9s} at most {100 * eff:5.1f}% of moved bytes are useful")
    else:
        print(bench_copies.table(out.value))
        print(
            f"\nbest: {out.value['best']} at {out.value['best_pct_of_ceiling']:.1f}% of the "
            f"copy ceiling (the target is at least 90%)"
        )
        note = bench_copies.above_ceiling(out.value)
        if note:
            print(textwrap.fill(note, 96))
    return out


def bandwidth_figure(bw: Outcome):
    """Bars of every measured copy against the ceiling; None (and says so) when only the
    model's prediction is available."""
    if bw.mode is Mode.SIMULATED:
        print("(no measurement to draw yet: see the banner above)")
        return None
    return bandwidth_bars(
        bw.value["variants"],
        bw.value["ceiling_gbps"],
        title="Five copies of 1 GiB against the copy ceiling",
        source=bw.caption("copies"),
    )


def show_cp_async(art) -> None:
    """The cp.async kernel's source, its cp.async PTX and its LDGSTS / DEPBAR SASS."""
    from kernels import copies

    source.show(copies.cp_async_kernel)
    print("PTX:  " + " | ".join(art.ptx_lines(r"cp\.async")[:2]) + " ...")
    print(
        "SASS: "
        + " | ".join(
            line.split(None, 1)[1].split(" desc")[0]
            for line in art.sass_lines(r"LDGSTS|DEPBAR")[:3]
        )
        + " ..."
    )


def tiled_vs_cp_async(bw: Outcome) -> None:
    """The measured GB/s of `tiled` and `cp_async`, or a note that none is recorded yet."""
    if bw.mode is Mode.SIMULATED:
        print("cp.async compiled above; its bandwidth appears here once an H100 run is recorded.")
        return
    rows = {r["variant"]: r for r in bw.value["variants"]}
    for v in ("tiled", "cp_async"):
        print(
            f"{v:9s} {rows[v]['gbps']:7,.0f} GB/s = {rows[v]['pct_of_ceiling']:5.1f}% of the "
            f"ceiling"
        )


def strided_cost(bw: Outcome) -> dict | None:
    """How much slower `strided` measured than `scalar` for the same bytes, beside what the
    coalescing model counts for one warp request of each: bytes moved and lines touched."""
    if bw.mode is Mode.SIMULATED:
        print("no measurement recorded yet: only the model's counts")
    model = {v: coalescing.warp_of(v) for v in ("scalar", "strided")}
    moved = model["strided"].moved_bytes / model["scalar"].moved_bytes
    lines = len(model["strided"].lines) / len(model["scalar"].lines)
    print(
        f"one warp request, strided against scalar: {moved:.0f}x the bytes moved, "
        f"{lines:.0f}x the 128-byte lines touched (the coalescing model)"
    )
    if bw.mode is Mode.SIMULATED:
        return {"bytes": moved, "lines": lines}
    rows = {r["variant"]: r for r in bw.value["variants"]}
    time = rows["scalar"]["gbps"] / rows["strided"]["gbps"]
    print(
        f"measured: {time:.1f}x the time ({rows['scalar']['gbps']:,.0f} against "
        f"{rows['strided']['gbps']:,.0f} GB/s)"
    )
    return {"bytes": moved, "lines": lines, "time": time}
