"""Notebook 13: the last five percent -- notebook 11's kernel with an operator fused into
its epilogue.

A layer of a network rarely stops at C = A . B^T: it adds a bias per output column and
applies an activation, y = GELU(A . B^T + bias). Done by separate kernels, the GEMM writes
C to global memory and the next kernel reads it back and writes y: two more trips of an
M x N matrix through HBM, and one more launch. Here the consumers apply the operator to
the fp32 accumulator while it is still in registers, before the epilogue converts and
stores it (`Config.epilogue`):

  "bias":      C[m, n] = acc[m, n] + bias[n]
  "bias_gelu": C[m, n] = GELU(acc[m, n] + bias[n]), GELU's tanh form,
               0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as cuBLASLt's GELU epilogue
               and torch's gelu(approximate="tanh") compute it, with the hardware's
               tanh.approx.f32.

`bias` is a float32 vector of N values. Everything else is hopper_gemm's final kernel
(warp specialization, persistence, a 2 x 1 cluster with multicast, the TMA-store
epilogue): the operator costs a few instructions per accumulator element, once per tile,
while this CTA's producer warp already loads the next tile's k-tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch

from . import hopper_gemm, selftest
from .gemm_host import GemmHost, LaunchExtra, gemm_tensors, host_int32, validate_gemm
from .host import KernelInputError, check_tensor, gmem_pointer
from .hopper_gemm import HopperGemm, TileAt

NEEDS = hopper_gemm.NEEDS
DTYPES = hopper_gemm.DTYPES
EPILOGUES = ("bias", "bias_gelu")
GELU_K = math.sqrt(2 / math.pi)  # GELU's tanh form: tanh(GELU_K * (x + GELU_C * x^3))
GELU_C = 0.044715


@dataclass(frozen=True)
class Config(hopper_gemm.Config):
    epilogue: str = "bias_gelu"  # "bias" | "bias_gelu"

    def __post_init__(self):
        super().__post_init__()
        if self.epilogue not in EPILOGUES:
            raise ValueError(f"epilogue must be one of {EPILOGUES}, got {self.epilogue!r}")


PRESETS: dict[str, Config] = {
    **{name: Config(epilogue=name) for name in EPILOGUES},
    # ping-pong consumers (128 x 128 tiles): one warpgroup's epilogue, and so its operator,
    # overlaps the other's main loop
    "bias_gelu_pingpong": Config(tile_n=128, pingpong=True, epi_stages=2),
}


class FusedGemm(HopperGemm):
    """hopper_gemm's kernel with bias (+ GELU) applied to the accumulator in registers."""

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, max_clusters: cutlass.Int32,
                 bias_ptr: cute.Pointer, stream: cuda.CUstream):  # fmt: skip
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        mBias = cute.make_tensor(bias_ptr, cute.make_layout(n))  # (N,)
        self.launch_tiles(mA, mB, mC, max_clusters, stream, (mBias,))

    @cute.jit
    def finish_accumulator(self, acc: cute.Tensor, at: TileAt):
        """The fused operator, on this thread's fp32 accumulator elements (MMA, MMA_M, MMA_N)
        once the mainloop's wgmmas retired, before the epilogue converts them."""
        # region fused-epilogue
        (mBias,) = at.extra
        n = at.shape[1]
        # the (m, n) of C each accumulator element holds: the tile's identity tensor,
        # partitioned like the accumulator
        tCcC = at.thr_mma.partition_C(
            cute.local_tile(
                cute.make_identity_tensor(at.shape), self.tile, (at.tile_row, at.tile_col)
            )
        )
        bias = cute.make_rmem_tensor(acc.shape, self.acc_dtype)
        for i in cutlass.range_constexpr(cute.size(acc)):
            col = tCcC[i][1]
            bias[i] = mBias[cutlass.min(col, n - 1)]  # past N: never stored, read an existing one
        x = acc.load() + bias.load()
        if cutlass.const_expr(self.cfg.epilogue == "bias_gelu"):
            inner = x * (GELU_K + (GELU_K * GELU_C) * x * x)
            x = 0.5 * x * (1.0 + cute.math.tanh(inner, fastmath=True))
        acc.store(x)
        # endregion fused-epilogue


# ------------------------------------------------------------------ the surface


def _placeholders(config: Config) -> tuple:
    return (host_int32(1), gmem_pointer(None, torch.float32, 4))


GEMM = GemmHost(
    "fused_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: FusedGemm(types, config, arch),
    Config,
    extra=LaunchExtra(_placeholders, hopper_gemm._persistent_grid),
)
compile, artifacts = GEMM.compile, GEMM.artifacts


def check_bias(a: torch.Tensor, b: torch.Tensor, bias) -> None:
    """Refuse a bias that is not a contiguous float32 vector of N values on A's GPU."""
    n = b.shape[0]
    check_tensor(bias, "bias", dtypes=(torch.float32,), ndim=1, align_bytes=4)
    if tuple(bias.shape) != (n,):
        raise KernelInputError(f"bias must have shape ({n},), one value per column of C")
    if bias.device != a.device:
        raise KernelInputError(f"bias is on {bias.device}, a on {a.device}: use one device")
    if not bias.is_contiguous():
        raise KernelInputError("bias must be contiguous; pass bias.contiguous()")


def run(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor,
    out: torch.Tensor | None = None,
    config: Config | None = None,
    *,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """C = epilogue(A . B^T + bias) (config.epilogue); every input is validated before
    anything launches."""
    config = GEMM.default_config if config is None else config
    out, _, _ = validate_gemm(
        a, b, out, kernel=GEMM.name, operands=GEMM.operands, out_dtype=out_dtype
    )
    check_bias(a, b, bias)
    return GEMM.run(a, b, out, config, tensors=(bias,))


def reference(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, epilogue: str) -> torch.Tensor:
    """What the fused kernel computes, in float32 by torch (then rounded like C)."""
    x = a.float() @ b.float().t() + bias.float()
    if epilogue == "bias_gelu":
        x = torch.nn.functional.gelu(x, approximate="tanh")
    return x


def check(shapes, presets=None, seed: int = 0) -> list[tuple]:
    """Each preset (default: all) against `reference` on each (m, n, k), bf16, C poisoned
    first: (preset, (m, n, k), relative error, within bf16's tolerance), for a GPU."""

    def launch(config, a, b, out, g):
        bias = 4 * torch.randn(b.shape[0], device="cuda", generator=g)
        run(a, b, bias, out, config)
        return reference(a, b, bias, config.epilogue)

    return selftest.check_presets(presets or PRESETS, shapes, launch, seed=seed)


def check_and_time(size: int = 4096, rounds: int = 15, reps: int = 20) -> int:
    """Check every preset against torch over ragged shapes, then time bias + GELU at
    size^3 against cuBLASLt's fused GELU epilogue (torch._addmm_activation)."""
    rows = check(((129, 264, 400), (1000, 1016, 520), (size, size, size)))
    for name, (m, n, k), err, ok in rows:
        print(f"{name} {m}x{n}x{k}: relative error {err:.2e} {'ok' if ok else 'WRONG'}")
    if not all(ok for *_, ok in rows):
        return 1

    def operand():
        return torch.randn(size, size, device="cuda").bfloat16()

    sets = [(operand(), operand()) for _ in range(3)]
    bias = torch.randn(size, device="cuda")
    bias16, outs = (
        bias.bfloat16(),
        [torch.empty(size, size, device="cuda").bfloat16() for _ in sets],
    )
    selftest.print_against(
        f"bias + GELU, bf16 {size}^3",
        "cuBLASLt's fused GELU",
        lambda i: torch._addmm_activation(
            bias16, sets[i % 3][0], sets[i % 3][1].t(), use_gelu=True
        ),
        lambda i: run(*sets[i % 3], bias, outs[i % 3], PRESETS["bias_gelu"]),
        2 * size**3,
        rounds,
        reps,
    )
    return 0


if __name__ == "__main__":
    if not selftest.runnable_here(NEEDS, "fused_gemm"):
        for name, preset in PRESETS.items():
            print(f"preset {name!r}:")
            selftest.show_artifacts(artifacts(None, torch.bfloat16, preset))
        raise SystemExit(0)
    raise SystemExit(check_and_time())
