"""Notebook 00's first kernel, vector add: checked against torch the way every kernel of
the course is, timed against torch's own add, or compiled when there is no GPU; and what
the compile cache saves.

  check           c = a + b on ragged sizes and two dtypes, outputs poisoned first
  check_and_time  check, then GB/s of the kernel and of torch against the copy ceiling (live)
  compiled        the PTX and SASS of the loads, the add and the store (fallback)
  compile_again   a second request of the same configuration, and the compile log
  ragged_cell     notebook 01's live cell: check on ragged sizes (GPU), else the executor
  live_cell       notebook 00's live cell: check_and_time on a GPU; elsewhere the kernel on
                  the CPU executor, then compiled (and the recorded live run shown)
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from course.bench import compare, poison_
from course.bench.timing import alternating
from course.runtime.live import compile_only, live_or, live_or_executed

SIZES = (1, 255, 257, 1_000_003)


def _kernel():
    from kernels import vector_add

    return vector_add


def check(
    add: Callable | None = None,
    sizes=SIZES,
    dtypes=(torch.float32, torch.bfloat16),
    device: str = "cuda",
) -> list:
    """Verdicts of `add(a, b, c)` (default: the CuTe kernel) against a + b in float64, on
    fresh random inputs of every size and dtype, c poisoned with NaN first; one line each."""
    add = add or _kernel().run
    verdicts = []
    for n in sizes:
        for dtype in dtypes:
            a, b = (torch.randn(n, device=device).to(dtype) for _ in range(2))
            c = poison_(torch.empty_like(a))
            add(a, b, c)
            verdicts.append(compare(c, a.double() + b.double(), what=f"n={n:,} {dtype}"))
            print(verdicts[-1])
    return verdicts


def check_and_time(ceiling_gbps: float, n: int = 2**27) -> dict[str, float]:
    """Check the kernel, then time it against torch's a + b on n fp32 elements (3 x 4 n bytes
    per add) in alternating rounds; prints GB/s as % of the copy ceiling (needs a GPU)."""
    vector_add = _kernel()
    check()
    a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
    t = alternating(
        {"cute": [lambda: vector_add.run(a, b, c)], "torch": [lambda: torch.add(a, b, out=c)]},
        rounds=6,
        reps=10,
    )
    gbps = {k: 3 * 4 * n / v.median_ms / 1e6 for k, v in t.items()}
    print(
        f"\nCuTe vector add: {gbps['cute']:6.0f} GB/s = {100 * gbps['cute'] / ceiling_gbps:3.0f}% "
        f"of the copy ceiling"
    )
    print(
        f"torch a + b:     {gbps['torch']:6.0f} GB/s = {100 * gbps['torch'] / ceiling_gbps:3.0f}% "
        f"of the copy ceiling"
    )
    return gbps


def compiled(arch: str):
    """Compile the kernel for `arch` and show the loads, the add and the store in PTX and in
    the SASS the GPU would execute."""
    art = _kernel().artifacts(arch, torch.float32)
    print(
        f"compiled for {art.arch} in {art.compile_seconds:.2f} s; per-kernel resources: "
        f"{list(art.resource_usage().values())[0]}"
    )
    print("\nPTX (virtual ISA) -- the loads, the add and the store:")
    print("\n".join("   " + line for line in art.ptx_lines(r"ld\.global|st\.global|add\.f32|setp")))
    print("\nSASS (what the H100 would execute):")
    print("\n".join("   " + line for line in art.sass_lines(r"LDG|STG|FADD|ISETP")))
    return art


def compile_again() -> float:
    """Ask for the fp32 kernel again (for this GPU, or for the H100 without one): the cache
    answers; prints how long that took and every compile of this process. Returns ms."""
    from kernels.compile_cache import COMPILE_LOG

    vector_add = _kernel()
    start = time.perf_counter()
    live_or(
        "gpu",
        lambda: vector_add.compile(torch.float32),
        compile_only(lambda arch: vector_add.artifacts(arch, torch.float32)),
        quiet=True,
    )
    ms = 1e3 * (time.perf_counter() - start)
    print(f"second request: {ms:.3f} ms (cached)")
    for event in COMPILE_LOG:
        print(f"compiled {event.key[:2]} for {event.arch} in {event.seconds:.2f} s")
    return ms


def live_cell(ceiling_gbps: float):
    """Notebook 00's live cell, the harness behind one call: on a GPU `check_and_time`;
    elsewhere the kernel's own code on the CPU executor at a small size, then `compiled`
    for the target GPU, then what the cell printed when it last ran live (label
    00.vector_add). Returns the Outcome."""
    from course.execute import ladder_runs

    return live_or_executed(
        "gpu",
        lambda: check_and_time(ceiling_gbps),
        ladder_runs.run_vector_add,
        "kernels/vector_add.py",
        compiled=compiled,
        label="00.vector_add",
    )


def ragged_cell(sizes=(1, 257, 1_000_003), executed_n: int = 257):
    """Notebook 01's live cell, the harness behind one call: on a GPU `check` on ragged
    `sizes`; elsewhere the kernel on the CPU executor at n = `executed_n`, then `compiled`
    (then what the cell printed when it last ran live, label 01.vector_add_check)."""
    from course.execute import ladder_runs

    return live_or_executed(
        "gpu",
        lambda: check(sizes=sizes),
        lambda: ladder_runs.run_vector_add(executed_n),
        "kernels/vector_add.py",
        compiled=compiled,
        label="01.vector_add_check",
    )
