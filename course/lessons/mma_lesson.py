"""Notebook 06's mma.sync atom: fragment sizes, who owns which C element (from CuTe, and as
the GPU writes it), the micro-GEMM checked against torch, and the PTX it compiles to.

  fragment_sizes   values of A, B and C per thread of one m16n8k16 instruction
  print_row_owners the owner thread of each element of a few rows of C
  stamp_on_gpu     the GPU's own ownership map of C against CuTe's (live)
  check_micro_gemm one tiled-MMA tile of C = A.B^T against torch (live)
  mma_sync_lines   the mma.sync instructions of the compiled micro-GEMM (fallback)
  warp_map         which warp of a TiledMMA owns each C element
  stamped_owners   section 3's cell: the stamp on the GPU, else on the CPU executor (a live cell)
  micro_gemm_check section 5's cell: one warp's tile against torch (a live cell)
  tiled_micro_gemm_check  section 6's cell: a TiledMMA's tile against torch (a live cell)
"""

from __future__ import annotations

import torch

from course.models.ownership import Ownership
from course.runtime.live import Outcome, compile_only, live_or, live_or_executed


def _kernel():
    from kernels import mma_atom

    return mma_atom


def _pairs(operand: str, config=None):
    from course.cute import kernel_traces

    return kernel_traces.mma_atom_pairs(operand, config or _kernel().Config())


def fragment_sizes(threads: int = 32) -> dict[str, int]:
    """Per operand of one mma.sync m16n8k16: its shape, its values and the values each of
    the warp's threads holds (from CuTe's partitioning)."""
    m, n, k = _kernel().Config().shape_mnk
    per_thread = {}
    for operand, (rows, cols) in (("A", (m, k)), ("B", (n, k)), ("C", (m, n))):
        per_thread[operand] = len(_pairs(operand)) // threads
        kind = "fp32" if operand == "C" else "bf16"
        print(
            f"{operand}: {rows}x{cols} = {rows * cols:3d} values -> {per_thread[operand]} {kind} "
            f"values per thread"
        )
    return per_thread


def print_row_owners(c_map: Ownership, rows=(0, 1, 4, 8)) -> None:
    """The owner of every element of the given rows of C, and the cells thread 0 holds."""
    for row in rows:
        print(
            f"row {row:2d}: "
            + " ".join(f"T{c_map.thread[row, n]:02d}" for n in range(c_map.shape[1]))
        )
    print("thread 0 holds", sorted((r, c) for r, c, v in c_map.cells_of(0)))


def stamp_on_gpu() -> bool:
    """Run the stamping kernel (every thread writes its id and value index into the C
    elements it owns) and compare with CuTe's map (needs sm_80+)."""
    return _compare_stamp(*_kernel().stamp(), "the GPU")


def stamp_on_the_executor() -> str:
    """The same stamping kernel's own code on the CPU executor, compared with CuTe's map."""
    from course.execute.ladder_runs import run_mma_stamp

    agree = _compare_stamp(*run_mma_stamp(), "the CPU executor")
    verdict = "equals" if agree else "differs from"
    return f"(the stamp kernel ran on the CPU executor: its map {verdict} CuTe's)"


def _compare_stamp(owner, value, who: str) -> bool:
    agree = all(owner[r, c] == t and value[r, c] == v for (t, v), (r, c) in _pairs("C"))
    print(f"{who}'s map equals CuTe's:", agree)
    print(f"row 0 as {who} wrote it:", " ".join(f"T{int(t):02d}" for t in owner[0]))
    return agree


def check_micro_gemm(config=None, dtype: torch.dtype = torch.bfloat16):
    """One tile of C = A.B^T by the micro-GEMM (one mma.sync per warp) against torch in
    float64, on fresh random inputs (needs sm_80+)."""
    from course.bench import compare

    mma_atom = _kernel()
    config = config or mma_atom.Config()
    m, n, k = config.shape_mnk
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    c = mma_atom.micro_gemm(a, b, config)
    torch.cuda.synchronize()
    warps = config.warps_m * config.warps_n
    verdict = compare(
        c,
        a.double() @ b.double().t(),
        tol=1e-5,
        what=f"C = A.B^T, {m}x{n}x{k} {str(dtype).replace('torch.', '')}, {warps} warp(s)",
    )
    print(verdict)
    return verdict


def mma_sync_lines(arch: str, config=None, dtype: torch.dtype = torch.bfloat16) -> list[str]:
    """The micro-GEMM compiled for `arch` with `dtype` operands (the dtype the live cell would
    run): how many mma.sync each thread issues, and the first of them."""
    mma_atom = _kernel()
    lines = mma_atom.artifacts(arch, dtype, config or mma_atom.Config()).ptx_lines(r"mma\.sync")
    print(f"{len(lines)} mma.sync per thread, e.g. {lines[0].strip() if lines else '-'}")
    return lines


def warp_map(config) -> Ownership:
    """Which warp of the TiledMMA owns each element of its C tile."""
    m, n, _ = config.shape_mnk
    pairs = _pairs("C", config)
    return Ownership.from_pairs(
        (m, n),
        [((t // 32, v), rc) for (t, v), rc in pairs],
        title=f"TiledMMA of {config.warps_m}x{config.warps_n} warps: which "
        "warp owns each C element",
        thread_label="W",
    )


def stamped_owners() -> Outcome:
    """Section 3's cell. On an sm_80+ GPU: the stamp kernel writes every thread's id into
    the C elements it owns and the map is compared with CuTe's (`stamp_on_gpu`). Elsewhere:
    the same kernel's own code on the CPU executor, then the micro-GEMM's mma.sync compiled
    for sm_80 (compile-only), then the recorded GPU output (label 06.stamp)."""
    return live_or_executed(
        "sm_80+",
        stamp_on_gpu,
        stamp_on_the_executor,
        "the stamp kernel of kernels/mma_atom.py",
        compiled=mma_sync_lines,
        label="06.stamp",
    )


def micro_gemm_check() -> Outcome:
    """Section 5's cell. On an sm_80+ GPU: one warp's 16x8x16 tile against torch
    (`check_micro_gemm`). Elsewhere: the micro-GEMM's own code on the CPU executor, then its
    mma.sync compiled for sm_80 (compile-only), then the recorded GPU output (06.micro_gemm)."""
    from course.execute import ladder_runs

    return live_or_executed(
        "sm_80+",
        check_micro_gemm,
        ladder_runs.run_mma_atom,
        "the micro-GEMM of kernels/mma_atom.py",
        compiled=mma_sync_lines,
        label="06.micro_gemm",
    )


def tiled_micro_gemm_check(config, dtype: torch.dtype = torch.float16) -> Outcome:
    """Section 6's cell. On an sm_80+ GPU: the TiledMMA of `config` (fp16 operands) against
    torch. Elsewhere compile-only: its mma.sync compiled for sm_80, then the recorded GPU
    output (label 06.tiled_micro_gemm)."""
    return live_or(
        "sm_80+",
        lambda: check_micro_gemm(config, dtype),
        compile_only(lambda arch: mma_sync_lines(arch, config, dtype)),
        label="06.tiled_micro_gemm",
    )
