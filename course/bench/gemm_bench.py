"""GEMM problems, their correctness check, and the paired benchmark against cuBLAS.

The course's GEMM is C[M,N] = A[M,K] . B[N,K]^T: both operands K-major by default
(the layout tensor cores like best, and the one cuBLAS computes for
`torch.matmul(a, b.T)`). A kernel may declare other majors; the operands are then
built with those strides and cuBLAS gets the very same tensors.

A *prepared* GEMM is a callable `gemm(a, b, c)` that writes c; each ladder kernel
provides `prepare(problem)` returning one (compiling once). The ladder's entries
are listed in LADDER (from kernels/ladder.py, plain data), imported lazily so this module
loads without CuTe DSL.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from course.bench.clocks import sampled_clock
from course.bench.correctness import Check, compare, poison_
from course.bench.report import standing
from course.bench.timing import alternating, graphed, rotation_count, round_ratios
from kernels import ladder
from kernels.gemm_host import FLOAT8_TYPES

Gemm = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], object]


@dataclass(frozen=True)
class GemmProblem:
    m: int
    n: int
    k: int
    dtype: torch.dtype = torch.bfloat16
    out_dtype: torch.dtype | None = None  # default: the inputs' (bf16 for float8 inputs)
    a_major: str = "k"  # "k": A stored (M,K) row-major; "m": stored M-contiguous
    b_major: str = "k"  # "k": B stored (N,K) row-major; "n": stored N-contiguous

    def __post_init__(self):
        if min(self.m, self.n, self.k) <= 0:
            raise ValueError(f"GEMM sizes must be positive, got {self.m}x{self.n}x{self.k}")
        if self.a_major not in ("k", "m") or self.b_major not in ("k", "n"):
            raise ValueError("a_major must be 'k' or 'm' and b_major 'k' or 'n'")

    @property
    def c_dtype(self) -> torch.dtype:
        if self.out_dtype is not None:
            return self.out_dtype
        return torch.bfloat16 if self.dtype in FLOAT8_TYPES else self.dtype

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def operand_bytes(self) -> int:
        return (self.m + self.n) * self.k * self.dtype.itemsize

    def __str__(self) -> str:
        name = str(self.dtype).replace("torch.", "")
        return f"{self.m}x{self.n}x{self.k} {name}"

    def operands(self, device="cuda", generator=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh random A (M,K) and B (N,K) as logical views with the declared majors."""

        def make(rows, cols, major_is_rows):
            if major_is_rows:  # contiguous along the first logical mode
                t = torch.randn(cols, rows, device=device, generator=generator).to(self.dtype)
                return t.t()
            return torch.randn(rows, cols, device=device, generator=generator).to(self.dtype)

        return make(self.m, self.k, self.a_major == "m"), make(self.n, self.k, self.b_major == "n")

    def output(self, device="cuda") -> torch.Tensor:
        """A poisoned, row-major C."""
        return poison_(torch.empty(self.m, self.n, dtype=self.c_dtype, device=device))

    @staticmethod
    def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """A . B^T in float64 (on the inputs' device when it supports float64)."""
        return a.double() @ b.double().t()


def cublas(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """The baseline every kernel is measured against: cuBLAS through torch. For float8
    operands that is cuBLASLt's scaled GEMM (`torch._scaled_mm`) with unit tensorwise scales
    and fast accumulation (no promotion into a second fp32 accumulator): the same sums as the
    course's FP8 kernel with tensor scales and no promotion."""
    if a.dtype in FLOAT8_TYPES:
        one = _unit_scale(a.device)
        torch._scaled_mm(a, b.t(), one, one, out_dtype=c.dtype, use_fast_accum=True, out=c)
        return
    torch.mm(a, b.t(), out=c)


_UNIT_SCALES: dict = {}


def _unit_scale(device: torch.device) -> torch.Tensor:
    """A float32 scale of 1.0 on `device`, made once (a timed call allocates nothing)."""
    if device not in _UNIT_SCALES:
        _UNIT_SCALES[device] = torch.ones((), dtype=torch.float32, device=device)
    return _UNIT_SCALES[device]


def check_gemm(gemm: Gemm, problem: GemmProblem, device="cuda", seed: int | None = None) -> Check:
    """Fresh inputs, poisoned output, one run, judged against the float64 reference."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed if seed is not None else torch.seed())
    a, b = problem.operands(device, gen)
    c = problem.output(device)
    gemm(a, b, c)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return compare(c, problem.reference(a, b), what=str(problem))


@dataclass(frozen=True)
class PairedResult:
    """One kernel vs cuBLAS on one problem, timed in alternating rounds."""

    problem: str
    kernel: str
    kernel_ms: float
    cublas_ms: float
    kernel_tflops: float
    cublas_tflops: float
    kernel_spread: float
    cublas_spread: float
    input_sets: int
    samples: int
    method: str = "eager"
    # per-round 100 x cuBLAS / kernel time as (median, lowest, highest), and the same for a
    # second cuBLAS timed in the same rounds (the control: what "equal" looks like)
    rounds_pct: tuple = ()
    control_pct: tuple = ()
    # the SM clock over the run (course.bench.clocks), where NVML could be read
    sm_clock: dict = field(default_factory=dict)

    @property
    def pct_of_cublas(self) -> float:
        """cuBLAS's median time over the kernel's: the ratio of the two TFLOP/s printed beside
        it (the per-round ratios are `rounds_pct`)."""
        return 100.0 * self.cublas_ms / self.kernel_ms

    @property
    def standing(self) -> str:
        return standing(self.pct_of_cublas, self.rounds_pct, self.control_pct)

    def as_dict(self) -> dict:
        return {
            **self.__dict__,
            "pct_of_cublas": round(self.pct_of_cublas, 1),
            "standing": self.standing,
        }


class RotatingInputs:
    """Input sets for `problem`, together over 3x the L2 (so a launch does not find its
    operands left in L2 by the one before); `calls(fn)` is one call of fn per set, in turn."""

    def __init__(self, problem: GemmProblem):
        free, _ = torch.cuda.mem_get_info()
        bytes_per_set = problem.operand_bytes + problem.m * problem.n * problem.c_dtype.itemsize
        self.sets = rotation_count(bytes_per_set, free_bytes=free)
        self.inputs = [problem.operands() for _ in range(self.sets)]
        self.outs = [problem.output() for _ in range(self.sets)]

    def calls(self, fn: Gemm) -> list[Callable[[], object]]:
        return [(lambda a=a, b=b, c=c: fn(a, b, c)) for (a, b), c in zip(self.inputs, self.outs)]


# Below this many FLOP a call is short enough (~0.1 ms on an H100) that launching it
# from Python would leave the GPU idle between calls, so `graph="auto"` times graphs.
GRAPH_BELOW_FLOPS = 7e10


def graph_below_flops(dtype: torch.dtype) -> float:
    """GRAPH_BELOW_FLOPS for 16-bit operands; the tensor cores run float8 twice as fast, so
    a float8 call of twice the FLOP is as short. Measured on the H100 (2026-11-28): the FP8
    kernel at 4096^3 (0.1 ms) timed eagerly read 53-89% of cuBLAS from round to round, its
    Python launch as long as the GEMM."""
    return GRAPH_BELOW_FLOPS * (2 if dtype in FLOAT8_TYPES else 1)


def benchmark_gemm(
    gemm: Gemm,
    problem: GemmProblem,
    name: str = "kernel",
    rounds: int = 10,
    reps: int = 10,
    warmup: int = 5,
    graph: bool | str = "auto",
    hold: bool = True,
) -> PairedResult:
    """Time `gemm` and cuBLAS on the same rotating inputs, in alternating rounds.
    `hold=False` (eager only) lets the host's launch time into the samples, on purpose:
    what a Python loop of launches costs (timing.time_calls).

    With `graph`, each sample is one replay of a CUDA graph holding one launch per
    input set (at least 8), divided by the launches: device time without Python's
    launch overhead, which otherwise dominates small problems for the course's
    Python-launched kernels. For long kernels eager launches are better: measured on
    the H100 (2026-11-22), cuBLAS timed against itself read 100.1% eager in every
    trial, while back-to-back graph replays drift with the clock by up to +-5%.
    `graph="auto"` (the default) uses graphs only below GRAPH_BELOW_FLOPS.
    """
    if graph == "auto":
        graph = problem.flops < graph_below_flops(problem.dtype)
    rotation = RotatingInputs(problem)
    calls, sets = rotation.calls, rotation.sets
    launches = max(sets, 8) if graph else 1
    # cuBLAS twice: the second is the control, what "as fast as cuBLAS" reads in these rounds
    contenders = {"kernel": calls(gemm), "cublas": calls(cublas), "control": calls(cublas)}
    if graph:
        contenders = {k: [graphed(v, launches)] for k, v in contenders.items()}
    with sampled_clock() as sampler:
        t = alternating(contenders, rounds, reps, warmup, hold=hold)
    for timing in t.values():
        timing.samples_ms = [ms / launches for ms in timing.samples_ms]
    k, c = t["kernel"], t["cublas"]
    method = f"cuda-graph ({launches} launches per replay)" if graph else "eager"
    return PairedResult(
        str(problem),
        name,
        k.median_ms,
        c.median_ms,
        problem.flops / k.median_ms / 1e9,
        problem.flops / c.median_ms / 1e9,
        round(k.spread, 4),
        round(c.spread, 4),
        sets,
        len(k.samples_ms),
        method,
        round_ratios(c, k, reps),
        round_ratios(c, t["control"], reps),
        sampler.summary() if sampler else {},
    )


# name -> (import path of prepare(problem) -> Gemm, what it needs, one-line title): cuBLAS
# against itself, then every GEMM of the one ladder registry (kernels/ladder.py)
LADDER: dict[str, tuple[str, str, str]] = {
    "cublas": (
        "course.bench.gemm_bench:prepare_cublas",
        "gpu",
        "cuBLAS against itself: the harness's self-check (should read ~100%)",
    ),
    **{
        g.name: (f"kernels.{g.module}:prepare", g.needs, f"notebook {g.notebook:02d}: {g.title}")
        for g in ladder.GEMMS
    },
}

# The operand majors a ladder kernel is benchmarked with (default: both K-major).
# The naive GEMM of notebook 03 is traced with A M-major and B N-major: so it is measured.
MAJORS: dict[str, tuple[str, str]] = {
    "naive": ("m", "n"),
}


def problem_for(
    name: str,
    m: int,
    n: int,
    k: int,
    dtype: torch.dtype = torch.bfloat16,
    out_dtype: torch.dtype | None = None,
) -> GemmProblem:
    """The GemmProblem ladder kernel `name` is measured on (its operand majors)."""
    a_major, b_major = MAJORS.get(name, ("k", "k"))
    return GemmProblem(m, n, k, dtype, out_dtype, a_major=a_major, b_major=b_major)


def prepare_cublas(problem: GemmProblem) -> Gemm:
    return cublas


def prepare(name: str, problem: GemmProblem, **config) -> Gemm:
    """Import ladder kernel `name` and prepare (compile) it for `problem`.

    Keyword arguments override fields of the kernel module's `Config`.
    """
    if name not in LADDER:
        raise KeyError(f"unknown GEMM {name!r}; the ladder has {sorted(LADDER)}")
    module_name, attr = LADDER[name][0].split(":")
    module = importlib.import_module(module_name)
    presets = getattr(module, "PRESETS", {})
    if "preset" in config:  # a named step of the kernel's ladder, then overrides
        base = presets[config.pop("preset")]
        return getattr(module, attr)(problem, config=replace(base, **config))
    if config:
        return getattr(module, attr)(problem, config=module.Config(**config))
    return getattr(module, attr)(problem)
