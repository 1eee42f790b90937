"""Notebook 03's tiling and partitioning: which thread owns which cells under the outer and
inner partitions and a TiledCopy, the thread trace of the naive GEMM read out, the kernel
checked and timed (or compiled), and why it is slow, in numbers.

  partition_maps      local_partition against local_tile per thread, as ownership maps
  tiled_copy_map      a TiledCopy's ownership of its tile, from CuTe DSL
  print_thread_trace  one thread's tiles, partitions, C cells and loaded rows
  check_and_time      the naive GEMM against torch on ragged shapes, then cuBLAS (live)
  naive_instructions  its registers, FFMA/LDG/STG counts and the SASS of its K loop (fallback)
  naive_occupancy     the CTAs of it one H100 SM holds, from its compiled register count
  load_reuse          FMAs per load, and how often each element of A and B is fetched
  live_cell           notebook 03's live cell: check_and_time on a GPU; elsewhere the kernel
                      on the CPU executor, then naive_instructions (and the recorded run)
"""

from __future__ import annotations

import torch

from course.models.ownership import Ownership, text_map

SHAPES = [(256, 128, 32), (200, 100, 20), (129, 257, 9), (1000, 24, 1031), (1024, 1024, 1024)]


def partition_maps(matrix=(8, 8), tile=(4, 4), threads=(2, 2)) -> dict[str, Ownership]:
    """Tile (0, 0) of a column-major `matrix` divided among `threads` two ways: the outer
    partition (local_partition: interleaved) and the inner one (local_tile per thread:
    contiguous blocks); both computed by CuTe DSL and printed as text maps."""
    import cutlass
    import cutlass.cute as cute

    from course.cute.partition_ownership import ownership

    n = threads[0] * threads[1]
    block = (tile[0] // threads[0], tile[1] // threads[1])

    def first_tile():
        return cute.local_tile(cute.make_identity_tensor(matrix), tile, (0, 0))

    def outer():  # (thread, the cells local_partition gives it)
        return (
            (i, cute.local_partition(first_tile(), cute.make_layout(threads), cutlass.Int32(i)))
            for i in range(n)
        )

    def inner():  # (thread, its block from local_tile)
        return (
            (i, cute.local_tile(first_tile(), block, (i % threads[0], i // threads[0])))
            for i in range(n)
        )

    maps = {}
    for name, views in (
        ("local_partition (outer)", outer),
        ("local_tile per thread (inner)", inner),
    ):
        maps[name] = ownership(tile, views)
        print(f"\n{name}:\n{text_map(maps[name])}")
    return maps


def tiled_copy_map(thr_shape=(4, 8), val_shape=(4, 1), bits: int = 128) -> Ownership:
    """make_tiled_copy_tv of a `bits`-bit fp32 copy with column-major thread and value
    layouts, evaluated by CuTe DSL: its ownership of the tile it covers, printed."""
    import cutlass
    import cutlass.cute as cute

    from course.cute.trace import on_cpu

    def copy_tv():
        atom = cute.make_copy_atom(
            cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=bits
        )
        tiled = cute.make_tiled_copy_tv(
            atom, cute.make_layout(thr_shape), cute.make_layout(val_shape)
        )
        return tiled.layout_tv_tiled, tuple(int(cute.size(m)) for m in tiled.tiler_mn)

    tv, shape = on_cpu(copy_tv)
    own = Ownership.from_tv_layout(
        tv, shape, title=f"TiledCopy over a {shape[0]}x{shape[1]} tile, TV layout {tv}"
    )
    print(f"\nownership of the {shape[0]}x{shape[1]} tile (TV layout {tv}):")
    print(text_map(own))
    return own


def print_thread_trace(trace: dict) -> None:
    """A thread trace (course.cute.kernel_traces.thread_trace): the grid, every tile and
    partition CuTe printed, the C cells the thread owns and the A and B rows it loads."""
    print(f"grid {trace['grid']}, {trace['k_tiles']} K tiles")
    for name in ("gA", "gB", "gC", "gA_k0", "gB_k0", "tCgC", "tCrC", "tCgA", "tCgB"):
        print(f"{name:6s} {trace[name]}")
    rows = sorted({r for r, _ in trace["c_cells"]})
    cols = sorted({c for _, c in trace["c_cells"]})
    print(f"thread 0 owns C rows {rows} x cols {cols} = {len(trace['c_cells'])} elements")
    print(
        f"thread 0 loads A rows {trace['a_rows']} and B rows {trace['b_rows']}, all 8 columns "
        f"of each K slice"
    )
    print("registers v0..v7 hold C", trace["c_cells"][:8])


def check_and_time(shapes=SHAPES, size: int = 2048) -> tuple[list, list]:
    """The naive GEMM against torch on every shape in fp32 and bf16 (M- and N-major operands,
    as the kernel takes them), then size^3 timed against cuBLAS (needs a GPU)."""
    from course.lessons.gemm_lesson import bench_live, check_sweep
    from kernels import naive_gemm

    dtypes = (torch.float32, torch.bfloat16)
    verdicts = check_sweep(naive_gemm.run, shapes, dtypes=dtypes, a_major="m", b_major="n")
    rows = [
        row
        for dtype in dtypes
        for row in bench_live("naive", sizes=(size,), dtype=dtype, rounds=4, reps=5)
    ]
    return verdicts, rows


def naive_instructions(arch: str):
    """The naive GEMM compiled for `arch`: its resources, the FMA, load and store counts in
    PTX and SASS, and the SASS around the first FFMA (the K loop's loads feeding FMAs)."""
    from kernels import naive_gemm

    art = naive_gemm.artifacts(arch, torch.float32)
    usage = next(iter(art.resource_usage().values()))
    sass = art.sass()
    print(
        f"compiled for {art.arch} in {art.compile_seconds:.1f} s: {usage['registers']} "
        f"registers per thread, {usage['stack_frame_bytes']} bytes of stack (no spills), "
        f"{usage['shared_bytes']} bytes of shared memory"
    )
    print(
        f"PTX:  {art.count_ptx(r'fma[.]rn[.]f32')} fma.rn.f32, {art.count_ptx(r'ld[.]global')} "
        f"ld.global, {art.count_ptx(r'st[.]global')} st.global, e.g."
    )
    print("\n".join("   " + line for line in art.ptx_lines(r"fma[.]rn[.]f32")[:3]))
    print(
        f"SASS: {sass.count('FFMA')} FFMA, {sass.count('LDG.E')} LDG, {sass.count('STG.E')} STG "
        f"(the loads and stores appear twice: interior path and predicated edge path)"
    )
    lines = [line.split("*/")[1].strip() for line in sass.splitlines() if "*/" in line]
    first_ffma = next(i for i, line in enumerate(lines) if line.startswith("FFMA"))
    print("\nSASS around the first FFMA (loads of A and B feeding scalar fused multiply-adds):")
    print("\n".join("   " + line for line in lines[max(0, first_ffma - 4) : first_ffma + 8]))
    return art


def naive_occupancy(arch: str = "sm_90a", dtype=torch.float32):
    """How many CTAs of the naive GEMM one H100 SM holds: its compiled register count and
    256 threads through course.models.occupancy (notebook 01, section 7)."""
    from course.models.occupancy import SM_90, occupancy
    from kernels import naive_gemm

    art = naive_gemm.artifacts(arch, dtype)
    registers = next(iter(art.resource_usage().values()))["registers"]
    threads = naive_gemm.Config().threads
    occ = occupancy(threads, registers, 0, SM_90)
    print(
        f"{registers} registers per thread x {threads} threads ({arch}, "
        f"{str(dtype).replace('torch.', '')}): {occ.summary()}"
    )
    return occ


def load_reuse(
    trace: dict, threads_per_cta: int, a_map: Ownership, m: int, n: int, k: int
) -> float:
    """From a thread trace of an m x n x k problem: FMAs and loads per thread, element loads
    of the whole problem against its distinct elements, and how many threads of a CTA load
    each element of A (from the ownership map of A). Returns FMAs per load."""
    loads_per_thread = (len(trace["a_rows"]) + len(trace["b_rows"])) * k  # every K column
    fmas_per_thread = len(trace["c_cells"]) * k
    threads = threads_per_cta * trace["grid"][0] * trace["grid"][1]
    distinct = m * k + n * k
    print(
        f"per thread: {fmas_per_thread} FMAs, {loads_per_thread} loads -> "
        f"{fmas_per_thread / loads_per_thread:.0f} FMAs per load"
    )
    print(
        f"whole problem: {threads * loads_per_thread:,} element loads for {distinct:,} distinct "
        f"elements of A and B ({threads * loads_per_thread / distinct:.0f}x each)"
    )
    print(
        f"each element of A is loaded by {a_map.count.max()} threads of its CTA, in every CTA "
        f"along N"
    )
    return fmas_per_thread / loads_per_thread


def live_cell():
    """Notebook 03's live cell, the harness behind one call: on a GPU `check_and_time`;
    elsewhere the kernel's own code on the CPU executor at a small size, then
    `naive_instructions` for the target GPU, then what the cell printed when it last ran
    live (label 03.naive_check). Returns the Outcome."""
    from course.execute import ladder_runs
    from course.runtime.live import live_or_executed

    return live_or_executed(
        "gpu",
        check_and_time,
        ladder_runs.run_naive_gemm,
        "kernels/naive_gemm.py",
        compiled=naive_instructions,
        label="03.naive_check",
    )
