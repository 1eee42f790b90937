"""The Blackwell kernels of notebooks 13-14 run on the CPU executor, one call each.

    from course.execute import blackwell_runs
    r = blackwell_runs.run_gemm("tcgen05_gemm", 129, 136, 72, tile_n=128)
    r.ok, r.relative_error, r.summary()

No Blackwell GPU computed these kernels' numbers before: here their own code (tcgen05.mma
into TMEM, the TMA ring as NVIDIA's PipelineTmaUmma, tcgen05.ld, the TMA store) runs on
numpy, against a float64 torch reference and the course's tolerance for the output type
(kernels.selftest.TOLERANCE), as course.execute.ladder_runs does for notebooks 00-11.
`CONFIGS` are the configurations notebooks 13 and 14 use (kernels.ladder's rungs and the
lessons' dtype x tile_n sweep).
"""

from __future__ import annotations

import dataclasses

import torch

from course.execute.ladder_runs import SEED, LadderRun, execute, run_gemm_object

CLASSES = {
    "tcgen05_gemm": "Tcgen05Gemm",
    "cta_pair_gemm": "CtaPairGemm",
    "cta_pair_clc_gemm": "CtaPairClcGemm",
}
KERNELS = tuple(CLASSES)
# (kernel, dtype, tile_n): every configuration notebooks 13-14 compile (the PTX protocol's)
CONFIGS = tuple(
    (name, dtype, tile_n)
    for name in KERNELS
    for dtype in (torch.bfloat16, torch.float16)
    for tile_n in (128, 256)
)


def kernel_object(name: str, dtype: torch.dtype, tile_n: int, stages: int = 4, cls=None):
    """The step's kernel class (or `cls`, a planted variant of it) for one configuration."""
    import importlib

    import cutlass

    from kernels.gemm_host import GemmTypes

    module = importlib.import_module(f"kernels.{name}")
    ab = {torch.bfloat16: cutlass.BFloat16, torch.float16: cutlass.Float16}[dtype]
    types = GemmTypes(ab, cutlass.Float32, ab)
    kernel_class = cls or getattr(module, CLASSES[name])
    return kernel_class(types, module.Config(tile_n=tile_n, stages=stages))


def run_gemm(
    name: str,
    m: int,
    n: int,
    k: int,
    dtype: torch.dtype = torch.bfloat16,
    tile_n: int = 128,
    seed: int = 0,
    cls=None,
    operands: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> "BlackwellRun":
    """C = A . B^T by the step `name` on the executor; its LadderRun (a hazard is an
    answer too: returned with `hazard` set). A and B come from a fixed seed, or are
    `operands` (M x K and N x K, `dtype`)."""

    case = f"{name}@m={m},n={n},k={k},{str(dtype)[6:]},tile_n={tile_n}"
    if operands is None:
        g = torch.Generator().manual_seed(SEED + sum(map(ord, case)))
        operands = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
    a, b = (x.to(dtype).contiguous() for x in operands)
    gemm = kernel_object(name, dtype, tile_n, cls=cls)

    results = []

    def launch(x, out, seed):
        results.append(run_gemm_object(gemm, x, out, {"m": m, "n": n, "k": k}, seed))
        return results[-1]

    run = execute(
        case, {"a": a, "b": b}, a.double() @ b.double().T, launch, (m, n), dtype, dtype, seed,
        notes=lambda: _clc_note(results[-1]),
    )  # fmt: skip
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    return BlackwellRun(**fields, cancelled=cancelled_clusters(results[-1]) if results else [])


@dataclasses.dataclass
class BlackwellRun(LadderRun):
    """A LadderRun, and the clusters Cluster Launch Control cancelled in it (in order)."""

    cancelled: list = dataclasses.field(default_factory=list)


def cancelled_clusters(result) -> list:
    """The clusters Cluster Launch Control cancelled in a run (runner.Result), in order."""
    return [c for launched in result.launches for c in launched.cancelled]


def _clc_note(result) -> list[str]:
    """Which clusters Cluster Launch Control cancelled in the run (their tiles taken over)."""
    cancelled = cancelled_clusters(result)
    if not cancelled:
        return []
    return [
        f"Cluster Launch Control: {len(cancelled)} cluster(s) cancelled and their "
        f"tiles taken over ({', '.join(map(str, cancelled))})"
    ]
