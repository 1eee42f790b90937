"""Notebook 13's kernel exercise `13.residual_epilogue`: a residual block's epilogue, fused.

The notebook fuses bias + GELU into the SOL kernel (kernels.fused_gemm). Here the learner
fuses the other operator a transformer layer applies after a GEMM, the residual add:
C[m, n] = A . B^T + bias[n] + residual[m, n], residual an (M, N) matrix in C's type. The
learner writes the `finish_accumulator` method of a FusedGemm whose host function passes
`place.inputs = (bias, residual)`: each accumulator element reads its own column's bias and
its own (row, column) of the residual, in fp32, before the epilogue converts the
accumulator. Rows and columns of a ragged tile past C's edge must not be read from the
residual (it ends there).

No GPU is needed to check it: the kernel compiles for sm_90a here, and the CPU executor runs
it on a small ragged problem (an out-of-bounds read of the residual is a hazard it names);
on a Hopper GPU it runs against torch on larger ragged shapes, under compute-sanitizer on
request.
"""

# no `from __future__ import annotations`: the exercise's kernel class is traced by CuTe DSL
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from course.exercises.kernel_check import kernel_exercise, subclass_with, variant_name
from kernels import fused_gemm
from kernels.gemm_host import gemm_tensors

ID = "13.residual_epilogue"
PRESET = "bias"  # kernels.fused_gemm.PRESETS: the SOL kernel, 128 x 256 tiles, 2 x 1 cluster
# (M, N, K): ragged in M and N (partial tiles), K not a multiple of the 64-wide k-tile
QUICK_SHAPES = ((129, 264, 320),)  # 5 k-tiles over 4 stages: the ring wraps once
SHAPES = ((129, 264, 136), (1000, 1016, 520), (256, 512, 1024), (3000, 2056, 1000))


class BiasResidual(NamedTuple):
    """The residual kernel's own operands beside A, B and C (`place.inputs`)."""

    bias: cute.Tensor  # (N,) fp32
    residual: cute.Tensor  # (M, N) bf16


class ResidualGemm(fused_gemm.FusedGemm):
    """The fused kernel whose host function passes (bias (N,), residual (M, N)) to the
    consumers' `finish_accumulator` as place.inputs."""

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, max_clusters: cutlass.Int32,
                 bias_ptr: cute.Pointer, residual_ptr: cute.Pointer,
                 stream: cuda.CUstream):  # fmt: skip
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        mBias = cute.make_tensor(bias_ptr, cute.make_layout(n))  # (N,)
        mResidual = cute.make_tensor(residual_ptr, cute.make_layout((m, n), stride=(n, 1)))
        self.launch(mA, mB, mC, max_clusters, stream, inputs=BiasResidual(mBias, mResidual))


SKELETON_CELL = '''\
@cute.jit
def finish_accumulator(self, acc, place):
    """The consumers' accumulator once the mainloop's wgmmas retired, before the epilogue
    converts it: acc (MMA, MMA_M, MMA_N) in fp32, this thread's share of the tile.

      bias, residual = place.inputs    # (N,) fp32 and (M, N) bf16
      m, n = place.shape              # C's shape
      place.thr_mma, place.tile_row, place.tile_col, self.tile
                                   # this thread's slice of the MMA, the tile's place, its shape
    Every element acc[i] becomes acc[i] + bias[n] + residual[m, n], (m, n) its own row and
    column of C. Past C's edge (a ragged tile) the residual must not be read.
    """
    ...  # your code
'''
CHECK_CELL = f'check("{ID}", finish_accumulator)'


def exercise_config():
    return fused_gemm.PRESETS[PRESET]


def check_residual(a, b, tensors, config) -> None:
    """The fused kernel's bias check, and a residual that is a contiguous (M, N) bf16 matrix
    on A's GPU."""
    import torch

    from kernels.host import KernelInputError, check_tensor

    bias, residual = tensors
    fused_gemm.check_bias(a, b, bias)
    shape = (a.shape[0], b.shape[0])
    check_tensor(residual, "residual", dtypes=(torch.bfloat16,), ndim=2, align_bytes=2)
    if tuple(residual.shape) != shape or not residual.is_contiguous():
        raise KernelInputError(
            f"residual must be a contiguous {shape[0]}x{shape[1]} (M x N) tensor, got "
            f"{tuple(residual.shape)} with strides {tuple(residual.stride())}"
        )
    if residual.device != a.device:
        raise KernelInputError(f"residual is on {residual.device}, a on {a.device}: use one device")


def residual_operands():
    """The bias (N,) in fp32 and the residual (M, N) in bf16: the kernel's operands beside
    A, B and C."""
    import torch

    from kernels.gemm_host import ExtraOperands

    return ExtraOperands(
        ("bias", "residual"),
        dtypes=lambda config: (torch.float32, torch.bfloat16),
        check=check_residual,
    )


def gemm_with(finish_accumulator):
    """The residual kernel with the learner's `finish_accumulator`, as a GemmHost."""
    from kernels import hopper_gemm
    from kernels.gemm_host import GemmHost

    cls = subclass_with(ResidualGemm, "finish_accumulator", finish_accumulator)
    return GemmHost(
        variant_name(ID, finish_accumulator),
        fused_gemm.NEEDS,
        lambda types, config, arch, a_major, b_major: cls(types, config, arch),
        fused_gemm.Config,
        extra=hopper_gemm.PERSISTENT_GRID,
        extra_operands=residual_operands(),
    )


def _build(fn, arch):
    import torch

    return gemm_with(fn).build(arch, torch.bfloat16, torch.bfloat16, exercise_config(), "k", "k")


# ---------------------------------------------------------------- a run (GPU or CPU executor)


def inputs(m: int, n: int, k: int, seed: int = 0, device: str = "cuda") -> dict:
    """A and B normal, bf16; bias and residual large (std 4) beside the product's entries,
    so that a missing or misplaced one shows."""
    import torch

    g = torch.Generator().manual_seed(4321 + seed)
    return {
        "a": torch.as_tensor(torch.randn(m, k, generator=g).bfloat16(), device=device),
        "b": torch.as_tensor(torch.randn(n, k, generator=g).bfloat16(), device=device),
        "bias": torch.as_tensor(4 * torch.randn(n, generator=g), device=device),
        "residual": torch.as_tensor(4 * torch.randn(m, n, generator=g).bfloat16(), device=device),
    }


def _parts(x):
    """(A . B^T, bias as (1, N), residual) in float64 on the CPU."""
    a, b = x["a"].double().cpu(), x["b"].double().cpu()
    return a @ b.T, x["bias"].double().cpu()[None, :], x["residual"].double().cpu()


def reference(x):
    product, bias, residual = _parts(x)
    return product + bias + residual


HINTS = {
    "no operator": "C is A . B^T alone: the sums never reached the accumulator; write them "
    "back into acc (acc[i] = ... or acc.store(...))",
    "bias only": "the residual is missing: each element gets acc + bias[n] + residual[m, n]",
    "residual only": "the bias is missing: each element gets acc + bias[n] + residual[m, n]",
    "bias by row": "the bias was indexed by the row: bias holds one value per column of C, bias[n]",
    "GELU": "GELU was applied: a residual block adds, C = A . B^T + bias[n] + residual[m, n], "
    "with no activation",
}
VALUES_HINT = (
    "each element of acc gets acc[i] + bias[n] + residual[m, n], with (m, n) that element's "
    "own row and column of C (the MMA's partition of an identity tensor)"
)


def candidates(x):
    """(name, C, hint) of the known wrong epilogues, on the same inputs."""
    import torch

    product, bias, residual = _parts(x)
    m, n = product.shape
    rows = torch.arange(m).clamp(max=n - 1)
    formulas = {
        "no operator": product,
        "bias only": product + bias,
        "residual only": product + residual,
        "bias by row": product + bias[0, rows][:, None] + residual,
        "GELU": torch.nn.functional.gelu(product + bias + residual, approximate="tanh"),
    }
    said = {
        "no operator": "the product A . B^T alone",
        "bias only": "the product plus the bias, without the residual",
        "residual only": "the product plus the residual, without the bias",
        "bias by row": "the product plus the residual and the bias of each *row* (bias[m])",
        "GELU": "GELU of the right sum",
    }
    return tuple((said[name], c, HINTS[name]) for name, c in formulas.items())


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import operand_findings

    shapes = QUICK_SHAPES if quick else SHAPES
    return operand_findings(
        gemm_with(fn), exercise_config(), torch.bfloat16, shapes, inputs, ("bias", "residual"),
        reference, candidates, "bf16, bias + residual", VALUES_HINT, launching,
    )  # fmt: skip


kernel_exercise(
    id=ID,
    prompt="Write finish_accumulator for a residual block: once the mainloop's wgmmas "
    "retired, each fp32 accumulator element acc[i] of this thread becomes acc[i] + bias[n] + "
    "residual[m, n], (m, n) its own row and column of C, with place.inputs = (bias, residual): "
    "bias (N,) in fp32, residual (M, N) in bf16.",
    hint="each element needs its own row as well as its column: section 5's bias epilogue "
    "shows how a thread learns which (m, n) of C each of its elements holds. And where does "
    "the residual end?",
    arch="sm_90a",
    needs="sm_90a",
    build=_build,
    cpu_checks=(),
    gpu_checks=gpu_checks,
    timeout_s=120,
    sanitize=("memcheck",),
    run_shows="whether each element gets its own column's bias and its own residual (a run "
    "against torch on ragged shapes)",
    solution="course/exercises/solutions/nb13_solutions.py: finish_accumulator",
)
