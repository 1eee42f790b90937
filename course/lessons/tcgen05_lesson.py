"""Notebook 14's tcgen05 GEMM: where the accumulator lives, the TMEM allocator, the
instruction descriptor, what the compiler produced for sm_100a, who reads which TMEM lane,
and the kernel checked (on Blackwell, or its own code on the CPU executor) and timed. What the
compiler produced for sm_100a is in course.lessons.tcgen05_instructions.

  accumulator_footprint  an fp32 tile in registers against in tensor memory
  allocate               a sequence of tcgen05.alloc requests on one SM's TMEM
  descriptor_fields      the instruction descriptor's bit fields and its value
  epilogue_agreement     CuTe DSL's epilogue TMEM reads against the course's model
  check_executed         the kernel's own code on the CPU executor, ragged shapes (fallback)
  occupancy              what one CTA occupies on an SM (fallback for the benchmark)
  ragged_report          how the emulator covers a ragged problem: tiles, K-blocks, stores
  tcgen05_sweep          section 7's check: live on Blackwell, else executed (a live cell)
  tcgen05_bench          section 7's timing: live on Blackwell, else the occupancy (a live cell)
"""

from __future__ import annotations

from course.emulate import emulate_tcgen05_gemm, random_operands
from course.emulate.blackwell_memory import (
    TMEM_COLUMNS,
    TMEM_LANES,
    Tmem,
    TmemError,
    tmem_alloc_columns,
)
from course.models.tmem_ownership import epilogue_tmem_pairs, warp_of_lane
from course.runtime.live import Outcome, compile_only, live_or

SHAPES = [(128, 128, 64), (129, 136, 72), (300, 264, 200), (1000, 520, 1032)]
EXECUTOR_SHAPES = SHAPES[:3]  # numpy runs every thread: the small ones
LIVE_SHAPES = SHAPES + [(4096, 4096, 4096)]  # on the GPU, a full-size problem as well


def accumulator_footprint(tile_m: int = 128, tile_n: int = 256, threads: int = 128) -> dict:
    """An fp32 tile_m x tile_n accumulator: its size, the registers per thread it would take
    in a warpgroup, and the share of one SM's tensor memory it takes instead."""
    kib = tile_m * tile_n * 4 // 1024
    regs = tile_m * tile_n // threads
    print(f"fp32 accumulator {tile_m}x{tile_n}: {kib} KiB")
    print(
        f"  in registers of a {threads}-thread warpgroup: {regs} registers per thread (limit 255)"
    )
    print(
        f"tensor memory per SM: {TMEM_LANES} lanes x {TMEM_COLUMNS} columns x 4 B = "
        f"{TMEM_LANES * TMEM_COLUMNS * 4 // 1024} KiB"
    )
    print(f"  the same accumulator uses {tile_n} of its {TMEM_COLUMNS} columns, and no registers")
    return {"kib": kib, "registers_per_thread": regs, "tmem_columns": tile_n}


def allocate(steps, tmem: Tmem | None = None) -> list[tuple[str, int, int]]:
    """Run the steps of CTAs sharing one SM's TMEM, in order, and print each outcome.

    A step is (cta, what, columns): with `columns` the CTA needs that many columns for `what`
    and asks tcgen05.alloc for the next power of two >= 32 (the only requests the allocator
    takes: the CTA rounds up itself); with None the CTA exits and frees what it holds.
    Returns (label, first column, columns) of the allocations still held at the end."""
    tmem = tmem or Tmem("one SM")
    held: dict[str, tuple[str, int, int]] = {}
    for cta, what, needed in steps:
        if needed is None:
            label, start, cols = held.pop(cta)
            tmem.dealloc(start, cols)
            print(f"{f'{cta} {what}':61s} -> frees columns {start}..{start + cols - 1}")
            continue
        cols = tmem_alloc_columns(needed)
        head = f"{cta}: {what:22s} needs {needed:3d} columns, asks for {cols:3d}"
        try:
            start = tmem.alloc(cols)
        except TmemError:
            free = TMEM_COLUMNS - sum(tmem.allocations.values())
            print(
                f"{head} -> does not fit ({free} columns free, no {cols} contiguous): "
                f"waits until columns are freed"
            )
            continue
        held[cta] = (f"{cta}: {what}", start, cols)
        print(f"{head} -> columns {start}..{start + cols - 1}")
    return list(held.values())


def alloc_as_is(columns: int, tmem: Tmem | None = None) -> bool:
    """Ask the allocator for `columns` exactly as given; print whether it is a valid request."""
    try:
        (tmem or Tmem("one SM")).alloc(columns)
    except TmemError as err:
        print(f"tcgen05.alloc({columns}) as such: refused: {str(err).split(': ', 1)[-1]}")
        return False
    print(f"tcgen05.alloc({columns}) as such: a valid request")
    return True


def descriptor_fields(idesc) -> int:
    """The descriptor's bit fields, one line each, then its value."""
    print(f"{'bits':>6}  {'field':30s} value")
    for bits, meaning, value in idesc.fields():
        print(f"{bits:>6}  {meaning:30s} {value}")
    print(f"\ninstruction descriptor = {idesc.encode()} = {idesc.encode():#010x}")
    return idesc.encode()


def epilogue_agreement(sample=(0, 31, 32, 77, 127), tile_n: int = 128) -> bool:
    """For the sampled threads: CuTe DSL's epilogue (thread, value) -> (lane, column) pairs
    against course.models.tmem_ownership; then the lane and columns each thread reads."""
    from course.cute import kernel_traces

    pairs = epilogue_tmem_pairs(tile_n)
    from_cute = kernel_traces.epilogue_tmem_ownership(tile_n, threads=sample)
    mine = [p for p in pairs if p[0][0] in sample]
    agree = sorted(from_cute) == sorted(mine)
    print(
        f"threads {tuple(sample)}: CuTe DSL's layouts and course.models.tmem_ownership agree on "
        f"{len(from_cute)} (thread, value) -> (lane, column) pairs: {agree}"
    )
    for t in sample:
        cols = [c for (th, v), (lane, c) in pairs if th == t]
        print(
            f"thread {t:3d} (warp {t // 32}) reads lane {t:3d}, columns {cols[0]}..{cols[-1]} "
            f"(lane {t} is warp {warp_of_lane(t)}'s)"
        )
    return agree


def check_executed(shapes=EXECUTOR_SHAPES) -> list:
    """kernels/tcgen05_gemm.py's own code on the course's CPU executor, each shape against
    A.B^T in float64 (bf16, tile_n 128): one line each."""
    from course.execute import blackwell_runs
    from course.lessons.gemm_lesson import executor_line

    return [executor_line(blackwell_runs.run_gemm("tcgen05_gemm", *shape)) for shape in shapes]


def occupancy(arch: str) -> dict:
    """Compile for `arch` and print what one CTA occupies: threads x registers, shared memory
    (ring + staging) and TMEM columns; nothing is timed."""
    from kernels import tcgen05_gemm

    plan = tcgen05_gemm.footprint()
    (res,) = tcgen05_gemm.artifacts(arch).resource_usage().values()
    print(
        f"one CTA: {plan['threads']} threads x {res['registers']} registers, "
        f"{(plan['smem_ring_bytes'] + plan['smem_epilogue_bytes']) // 1024} KiB of shared memory "
        f"(ring + staging), {plan['tmem_columns']} of {TMEM_COLUMNS} TMEM columns"
    )
    print("no timing: nothing was launched, and the course has no Blackwell measurement to show.")
    return {**plan, "registers": res["registers"]}


def ragged_report(m: int = 300, n: int = 264, k: int = 200, seed: int = 1):
    """The emulator on a ragged m x n x k problem: the tile grid, the K-blocks (and how much of
    the last one is real), the stores per element of C, and the exactly-once verdict."""
    a, b = random_operands(m, n, k, seed=seed)
    run = emulate_tcgen05_gemm(a, b)
    tile_k = run.shape.tile_k
    blocks = -(-k // tile_k)
    real = k - tile_k * (blocks - 1)
    print(
        f"grid: {run.grid_tiles[0]} x {run.grid_tiles[1]} tiles of {run.shape.mma_m} x "
        f"{run.shape.tile_n}, {blocks} K-blocks each (the last one is {real} of {tile_k} "
        f"columns real, {tile_k - real} zero-filled)"
    )
    print(
        f"C is {run.m} x {run.n}: stores per element min {run.writes.min()}, max {run.writes.max()}"
    )
    print(run.check(a, b).exactly_once, "-- every element written exactly once")
    return run


def tcgen05_sweep() -> Outcome:
    """Section 7's check. On an sm_100a GPU: kernels/tcgen05_gemm.py over LIVE_SHAPES against
    torch. Elsewhere: its own code on the CPU executor at EXECUTOR_SHAPES (`check_executed`),
    then the recorded GPU output (label 14.tcgen05_sweep)."""
    from course.lessons.gemm_lesson import sweep_or_executed

    return sweep_or_executed(
        "sm_100a",
        "tcgen05_gemm",
        check_executed,
        "kernels/tcgen05_gemm.py",
        label="14.tcgen05_sweep",
        shapes=LIVE_SHAPES,
    )


def tcgen05_bench() -> Outcome:
    """Section 7's timing. On an sm_100a GPU: the kernel against cuBLAS at 4096^3 and 8192^3
    (`gemm_lesson.bench_live`). Elsewhere compile-only: what one CTA occupies, compiled for
    sm_100a (`occupancy`), then the recorded GPU output (label 14.tcgen05_bench)."""
    from course.lessons.gemm_lesson import bench_live

    return live_or(
        "sm_100a",
        lambda: bench_live("tcgen05_gemm", sizes=(4096, 8192)),
        compile_only(occupancy),
        label="14.tcgen05_bench",
    )
