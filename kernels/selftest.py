"""`python -m kernels.<step>`: a step checks itself against torch and times itself against cuBLAS.

As beside each step of Triton's Gluon tutorials, every kernel module carries its own test
and benchmark, so a learner who changes a kernel can check it without the course around
it (only torch and CuTe DSL are needed):

  * correctness: fresh random inputs, the output poisoned with NaN first, a float64 torch
    reference, ragged shapes; the relative error must stay under the dtype's tolerance;
  * speed: CUDA events around repeated launches, a warm-up, inputs rotated between sets
    so no round is served from L2, and many alternating rounds in one process. The result
    is the median of the per-round ratios to cuBLAS, with its spread, beside a control:
    cuBLAS timed against itself the same way. A difference inside the control's spread
    is noise.

On a machine whose GPU cannot run the step, it compiles the step for its target instead
and prints what the compiler produced (nothing is launched).
"""

from __future__ import annotations

import statistics
from typing import Callable, Iterable, Sequence

import torch

from . import host

# The one table of tolerances (course.bench.correctness and the exercise checks read it):
# relative Frobenius error by C's dtype. Storing a result rounds each element by at most half
# an ulp, a relative 2^-8 = 3.9e-3 for bf16 (8 significant bits) and 2^-11 = 4.9e-4 for fp16,
# so a correct kernel's error is at most that however few elements C has, and about 2.3e-3
# and 2.8e-4 on large random problems (H100: 1.66e-3 for bf16 at 2048-8192^3). The
# tolerances leave twice that for the order of fp32 accumulation and stay far below what a
# wrong index, a dropped k-tile or a stale stage produces (1e-1 and more).
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}
RAGGED_GEMMS = ((128, 256, 64), (1000, 1016, 520), (129, 264, 72), (1, 8, 8), (3000, 2056, 1000))


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 (NaN anywhere in `out` gives NaN)."""
    out, ref = out.double(), ref.double()
    return float(
        torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref).clamp_min(1e-30)
    )


def verdict(what: str, out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> bool:
    """Print one line for one check and return whether it passed."""
    err = relative_error(out, ref)
    ok = err <= TOLERANCE[dtype]  # False for NaN: an unwritten output fails
    print(
        f"  {'ok  ' if ok else 'FAIL'} {what}: relative error {err:.2e} "
        f"(tolerance {TOLERANCE[dtype]:.0e})"
    )
    return ok


def events_ms(fn: Callable[[], object], reps: int) -> float:
    """Milliseconds per call of `fn`, timed with CUDA events around `reps` calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def paired_rounds(
    candidates: dict[str, Callable[[int], object]],
    rounds: int = 16,
    reps: int = 20,
    warmup: int = 5,
) -> dict[str, list[float]]:
    """Time each candidate `fn(i)` (i picks one of the rotated input sets) in alternating
    rounds; return each one's milliseconds per round. The order of the candidates rotates
    from round to round and reverses every other round, so each candidate starts rounds
    and follows every other one equally often: none always runs on a GPU (clocks, caches)
    left in the same state by the same predecessor."""
    counter = [0]

    def rotating(fn):
        def call():
            counter[0] += 1
            return fn(counter[0])

        return call

    calls = {name: rotating(fn) for name, fn in candidates.items()}
    for call in calls.values():
        events_ms(call, warmup)
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order if r % 2 == 0 else order[::-1]:
            times[name].append(events_ms(calls[name], reps))
    return times


def ratio_summary(reference: Sequence[float], candidate: Sequence[float]) -> str:
    """'97.3% (spread 95.1-99.0%)': the median and range of reference/candidate per round."""
    ratios = [100 * r / c for r, c in zip(reference, candidate)]
    return f"{statistics.median(ratios):5.1f}% (spread {min(ratios):.1f}-{max(ratios):.1f}%)"


def gemm_inputs(m: int, n: int, k: int, dtype: torch.dtype, sets: int = 1) -> list[tuple]:
    """`sets` independent (A, B) pairs of random operands on the GPU, K-major."""
    return [
        (torch.randn(m, k, device="cuda").to(dtype), torch.randn(n, k, device="cuda").to(dtype))
        for _ in range(sets)
    ]


def check_gemm(
    run: Callable, shapes: Iterable[tuple[int, int, int]], dtypes: Iterable[torch.dtype]
) -> bool:
    """run(a, b, out) against float64 torch on every shape and dtype, output poisoned first."""
    ok = True
    for dtype in dtypes:
        for m, n, k in shapes:
            ((a, b),) = gemm_inputs(m, n, k, dtype)
            out = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
            run(a, b, out)
            torch.cuda.synchronize()
            ok &= verdict(f"{str(dtype)[6:]} {m}x{n}x{k}", out, a.double() @ b.double().T, dtype)
    return ok


def time_gemm(
    run: Callable, size: int, dtype: torch.dtype, rounds: int = 15, reps: int = 20
) -> None:
    """Print the kernel's rate as a share of cuBLAS's, with cuBLAS-against-cuBLAS as control."""
    inputs = gemm_inputs(size, size, size, dtype, sets=3)
    outs = [torch.empty(size, size, dtype=dtype, device="cuda") for _ in inputs]

    def cublas(i):
        a, b = inputs[i % 3]
        return torch.matmul(a, b.T, out=outs[i % 3])

    def kernel(i):
        a, b = inputs[i % 3]
        return run(a, b, outs[i % 3])

    print_against(f"{str(dtype)[6:]} {size}^3", "cuBLAS", cublas, kernel, 2 * size**3, rounds, reps)


def print_against(
    label: str, baseline: str, base: Callable, kernel: Callable, flops: int, rounds: int, reps: int
) -> None:
    """Time `kernel(i)` against `base(i)` (named `baseline`) in alternating rounds, the
    baseline twice (the second is the control: what "level" reads), and print the rate."""
    t = paired_rounds({"base": base, "kernel": kernel, "again": base}, rounds=rounds, reps=reps)
    tflops = flops / statistics.median(t["kernel"]) / 1e9
    print(
        f"  {label}: {tflops:6.1f} TFLOP/s = {ratio_summary(t['base'], t['kernel'])} of "
        f"{baseline}; control: {baseline} timed again {ratio_summary(t['base'], t['again'])}"
    )


def runnable_here(needs: str, name: str) -> bool:
    """True if this machine's GPU can run the step; otherwise say so."""
    cc = host.device_capability()
    if host.satisfies(cc, needs):
        print(
            f"{name}: running on {torch.cuda.get_device_name()} "
            f"(compute capability {cc[0]}.{cc[1]})"
        )
        return True
    print(
        f"{name} needs {needs}; this machine has "
        f"{'no CUDA GPU' if cc is None else f'compute capability {cc[0]}.{cc[1]}'}: "
        f"compiling for {host.COMPILE_TARGET[needs]} instead (nothing is launched)."
    )
    return False


def show_artifacts(art) -> None:
    """Registers, spills and the PTX instructions that make the kernel what it is."""
    for kernel, res in art.resource_usage().items():
        print(
            f"  {kernel[:70]}...: {res['registers']} registers/thread, "
            f"{res['stack_frame_bytes']} B stack frame (spills), "
            f"{res['shared_bytes']} B static shared memory"
        )
    for label, pattern in (
        ("mma.sync", r"^\s*mma\.sync"),
        ("wgmma", r"wgmma\.mma_async"),
        ("tcgen05.mma", r"tcgen05\.mma"),
        ("TMA", r"cp\.async\.bulk\.tensor"),
        ("cp.async", r"cp\.async\.ca|cp\.async\.cg"),
        ("ldmatrix", r"ldmatrix"),
        ("mbarrier", r"mbarrier\."),
    ):
        count = art.count_ptx(pattern)
        if count:
            print(f"  {label}: {count} in the PTX")
    print(f"  compiled for {art.arch} in {art.compile_seconds:.1f} s")


def gemm_main(
    gemm,
    name: str,
    dtypes: Sequence[torch.dtype] = (torch.bfloat16, torch.float16),
    sizes: Sequence[int] = (4096,),
    config=None,
) -> int:
    """The `python -m kernels.<step>` of a GEMM step (`gemm` is its GemmHost)."""
    if not runnable_here(gemm.needs, name):
        show_artifacts(gemm.artifacts(None, dtypes[0], config))
        return 0
    print("correctness against float64 torch (ragged shapes, NaN-poisoned output):")
    ok = check_gemm(lambda a, b, out: gemm.run(a, b, out, config), RAGGED_GEMMS, dtypes)
    print("speed against cuBLAS (median of per-round ratios, one process):")
    for dtype in dtypes:
        for size in sizes:
            time_gemm(lambda a, b, out: gemm.run(a, b, out, config), size, dtype)
    return 0 if ok else 1


def presets_main(gemm, presets: dict, sizes: Sequence[int]) -> int:
    """`python -m kernels.<step>` for a step with PRESETS: gemm_main for each, stopping at the
    first that fails."""
    for name, preset in presets.items():
        status = gemm_main(gemm, f"{gemm.name}, preset {name!r}", sizes=sizes, config=preset)
        if status:
            return status
    return 0


def check_presets(presets: dict, shapes, launch, dtype=torch.bfloat16, seed: int = 0) -> list:
    """Each preset on each (m, n, k), for a GPU: fresh A and B from a generator seeded per
    shape, C poisoned first, then launch(config, a, b, out, generator) runs the kernel (drawing
    any further operand from the generator) and returns torch's reference. Rows of (preset,
    (m, n, k), relative error, within the tolerance)."""
    rows = []
    for name, config in presets.items():
        for i, (m, n, k) in enumerate(shapes):
            g = torch.Generator(device="cuda").manual_seed(seed + i)
            a = torch.randn(m, k, device="cuda", generator=g).to(dtype)
            b = torch.randn(n, k, device="cuda", generator=g).to(dtype)
            out = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
            want = launch(config, a, b, out, g)
            err = relative_error(out, want)
            rows.append((name, (m, n, k), err, err <= TOLERANCE[dtype]))
    return rows
