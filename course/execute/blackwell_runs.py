"""The Blackwell kernels of notebooks 14-16 run on the CPU executor, one call each.

    from course.execute import blackwell_runs
    r = blackwell_runs.run_gemm("tcgen05_gemm", 129, 136, 72, tile_n=128)
    r.ok, r.relative_error, r.summary()

No Blackwell GPU computed these kernels' numbers before: here their own code (tcgen05.mma
into TMEM, the TMA ring as NVIDIA's PipelineTmaUmma, tcgen05.ld, the TMA store) runs on
numpy, against a float64 torch reference and the course's tolerance for the output type
(kernels.selftest.TOLERANCE), as course.execute.ladder_runs does for notebooks 00-11.
`CONFIGS` are the configurations notebooks 14 and 15 use (kernels.ladder's rungs and the
lessons' dtype x tile_n sweep). Notebook 16's block-scaled kernel: `run_blockscaled` (MXFP8,
NVFP4, MXFP4; exact against float64 with the operands of `blockscaled_operands`).
"""

from __future__ import annotations

import dataclasses

import torch

from course.execute.block_scale import decode_e2m1x2
from course.execute.ladder_runs import SEED, LadderRun, execute, run_gemm_object

CLASSES = {
    "tcgen05_gemm": "Tcgen05Gemm",
    "cta_pair_gemm": "CtaPairGemm",
    "cta_pair_clc_gemm": "CtaPairClcGemm",
}
KERNELS = tuple(CLASSES)
# (kernel, dtype, tile_n): every configuration notebooks 14-15 compile (the PTX protocol's)
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


# ---------------------------------------------------------------- notebook 16: block scaling

E2M1_CODES = (0xC, 0xB, 0xA, 0x9, 0x0, 0x1, 0x2, 0x3, 0x4)  # -2, -1.5, ..., 2 in steps of 0.5


def blockscaled_operands(kind: str, m: int, n: int, k: int, seed: int = 0) -> dict:
    """A (M, K) and B (N, K) in the format's element type and their plain SFs (rows,
    K // vec): values of a few bits and SFs powers of two in [1/4, 4], so that every product
    and every sum is exact in fp32 (the float64 reference is then the exact answer)."""
    from kernels import blockscaled_gemm

    fmt = blockscaled_gemm.KINDS[kind]
    g = torch.Generator().manual_seed(SEED + seed + m + 7 * n + 13 * k)
    small = torch.tensor([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0])

    def values(rows):
        v = small[torch.randint(0, len(small), (rows, k), generator=g)]
        if fmt.ab_bits == 8:
            return v.to(fmt.ab)
        codes = torch.tensor(E2M1_CODES)[((v + 2) * 2).long()]  # two e2m1 codes a byte
        return (codes[:, 0::2] | codes[:, 1::2] << 4).to(torch.uint8).view(fmt.ab)

    def sfs(rows):
        exps = torch.randint(-2, 3, (rows, k // fmt.vec), generator=g)
        return torch.pow(2.0, exps.float()).to(fmt.sf)

    return {"a": values(m), "b": values(n), "a_sf": sfs(m), "b_sf": sfs(n)}


def dequantized_product(x: dict, kind: str) -> torch.Tensor:
    """(A * SFA) . (B * SFB)^T in float64, each SF over its `vec` K-elements."""
    from kernels import blockscaled_gemm

    fmt = blockscaled_gemm.KINDS[kind]

    def values(t):
        if fmt.ab_bits == 8:
            return t.double()
        return torch.from_numpy(decode_e2m1x2(t.view(torch.uint8).numpy()))

    a = values(x["a"]) * x["a_sf"].double().repeat_interleave(fmt.vec, dim=1)
    b = values(x["b"]) * x["b_sf"].double().repeat_interleave(fmt.vec, dim=1)
    return a @ b.T


def run_blockscaled(kind: str = "mxfp8", m: int = 200, n: int = 136, k: int = 256,
                    tile_n: int = 128, stages: int = 4, out_dtype: torch.dtype = torch.float32,
                    seed: int = 0,
                    operands: dict | None = None, reference: dict | None = None,
                    cls=None) -> LadderRun:  # fmt: skip
    """Notebook 16's kernel (kernels.blockscaled_gemm) on the executor: its LadderRun against
    the float64 product of the dequantized operands (`reference`'s, by default the ones run:
    pass other SFs in `operands` to see the check fail). The SFs are rearranged by the
    kernel's own host function (to_blocked). The fp4 kinds' A and B are e2m1, two a byte
    (course.execute.numeric.Float4, memory.Nibbles: the lower K in the low nibble)."""
    import cutlass

    from course.execute.runner import pointer
    from kernels import blockscaled_gemm
    from kernels.gemm_host import GemmTypes
    from kernels.host import cutlass_dtype

    case = (
        f"blockscaled_gemm@{kind},m={m},n={n},k={k},tile_n={tile_n},stages={stages},"
        f"{str(out_dtype)[6:]}"
    )
    x = operands or blockscaled_operands(kind, m, n, k, seed)
    config = blockscaled_gemm.Config(kind, tile_n=tile_n, stages=stages)
    types = GemmTypes(cutlass_dtype(config.format.ab), cutlass.Float32, cutlass_dtype(out_dtype))
    gemm = (cls or blockscaled_gemm.BlockscaledGemm)(types, config)

    def launch(x, out, seed):
        sfs = (pointer(blockscaled_gemm.to_blocked(x[s]), s.upper()) for s in ("a_sf", "b_sf"))
        return run_gemm_object(gemm, x, out, {"m": m, "n": n, "k": k}, seed, extra=tuple(sfs))

    ref = dequantized_product(reference or x, kind)
    return execute(case, x, ref, launch, (m, n), out_dtype, out_dtype, seed)
