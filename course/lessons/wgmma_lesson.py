"""Notebook 10's WGMMA: who holds which accumulator value (checked against the formula the
notebook states), and what the compiler made of the kernel.

  accumulator_rows    each thread's values and rows, against the store-mapping formula
  wgmma_instructions  the kernel's wgmma, TMA loads and barrier waits in PTX and SASS
  check_executed      the kernel's own code on the CPU executor, small shapes (fallback)
  wgmma_sweep         section 5's cell: the kernel checked (a live cell)
"""

from __future__ import annotations

from course.lessons.gemm_lesson import compile_report, executor_line, sweep_or_executed
from course.runtime.live import Outcome

# on the CPU executor (numpy plays every thread): small and ragged, k = 328 wraps the ring
EXECUTOR_SHAPES = [(129, 264, 328), (1, 8, 8)]


def owner_formula(thread: int) -> list[tuple[int, int]]:
    """The (row, col) cells of a 64x64 fp32 WGMMA accumulator that `thread` holds: rows
    w*16 + lane//4 (+8), columns 16j + 2(lane%4) + {0, 1, 8, 9} for thread = 32w + lane."""
    w, lane = divmod(thread, 32)
    return sorted(
        (w * 16 + lane // 4 + dr, 16 * j + 2 * (lane % 4) + dc)
        for dr in (0, 8)
        for j in range(4)
        for dc in (0, 1, 8, 9)
    )


def accumulator_rows(pairs, threads=(0, 1, 37)) -> dict[int, bool]:
    """For each thread: how many values it holds, in which rows, and whether its cells in
    `pairs` ((thread, value), (row, col)) match owner_formula."""
    owned: dict[int, list] = {}
    for (t, _), rc in pairs:
        owned.setdefault(t, []).append(rc)
    matches = {}
    for t in threads:
        matches[t] = sorted(owned[t]) == owner_formula(t)
        print(
            f"thread {t:3d}: {len(owned[t])} values, rows {sorted({r for r, _ in owned[t]})}, "
            f"matches formula: {matches[t]}"
        )
    return matches


def wgmma_instructions(arch: str):
    """The WGMMA GEMM's wgmma, TMA loads and barrier waits in PTX, and its HGMMA, UTMALDG
    and SYNCS in SASS."""
    import torch

    from kernels import wgmma_gemm

    art = wgmma_gemm.artifacts(arch, torch.bfloat16)
    compile_report(
        art,
        {
            "wgmma": r"wgmma\.mma_async",
            "TMA loads": r"cp\.async\.bulk\.tensor",
            "mbarrier waits": r"mbarrier\.try_wait",
        },
        show=1,
        sass=("HGMMA.64x256x16", "UTMALDG", "SYNCS"),
    )
    return art


def check_executed(shapes=EXECUTOR_SHAPES) -> list:
    """Without a Hopper GPU, the sweep's fallback: kernels/wgmma_gemm.py's own code on the
    course's CPU executor (bf16), each shape against torch in float64: one line each."""
    from course.execute import ladder_runs

    return [executor_line(ladder_runs.run_wgmma_gemm(*shape)) for shape in shapes]


def wgmma_sweep() -> Outcome:
    """Section 5's cell. On an sm_90a GPU: kernels/wgmma_gemm.py over the ragged shapes
    against torch. Elsewhere: its own code on the CPU executor (EXECUTOR_SHAPES), then its
    wgmma, TMA loads and waits compiled for sm_90a (compile-only), then the recorded GPU
    output (label 10.wgmma_sweep)."""
    return sweep_or_executed(
        "sm_90a",
        "wgmma_gemm",
        check_executed,
        "kernels/wgmma_gemm.py",
        label="10.wgmma_sweep",
        compiled=wgmma_instructions,
    )
