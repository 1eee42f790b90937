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
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import torch

from . import hopper_gemm, selftest
from .gemm_host import ExtraOperands, GemmHost, gemm_tensors
from .host import KernelInputError, check_tensor
from . import sm90_parts as parts
from .hopper_gemm import BARRIERS, HopperGemm
from .sm90_parts import OutputC, SharedTiles, TilePlace

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


class Bias(NamedTuple):
    """The fused kernel's own operand beside A, B and C."""

    bias: cute.Tensor  # (N,) fp32


class FusedGemm(HopperGemm):
    """hopper_gemm's kernel with bias (+ GELU) applied to the accumulator in registers: its
    own consumer, one step longer than hopper_gemm's (finish_accumulator)."""

    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        max_clusters: cutlass.Int32,
        bias_ptr: cute.Pointer,
        stream: cuda.CUstream,
    ):
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        mBias = cute.make_tensor(bias_ptr, cute.make_layout(n))  # (N,)
        self.launch(mA, mB, mC, max_clusters, stream, inputs=Bias(mBias))

    @cute.jit
    def consumer_role(
        self,
        tiled_mma: cute.TiledMma,
        ring: pipeline.PipelineTmaAsync,
        shared: SharedTiles,
        out: OutputC,
        schedule: parts.TileSchedule,
        k_tiles: cutlass.Int32,
        warp: cutlass.Int32,
        wg: cutlass.Int32,
        ctid: cutlass.Int32,
        inputs: Bias,
    ):
        """hopper_gemm's consumer; between the mainloop and the epilogue, the fused
        operator on the accumulator (`finish_accumulator`)."""
        cfg = self.cfg
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        me = parts.consumer_pieces(self, tiled_mma, shared, out.mC, wg, warp, ctid, BARRIERS)
        item, read, release = parts.first_item(me.turn, schedule, read, release, k_tiles)
        done = cutlass.Int32(0)
        while item < schedule.work:
            work = parts.whole_k_work(schedule, item, k_tiles)
            parts.start_tile(tiled_mma, me.mma.acc, me.turn, done)
            read, release = parts.mainloop(tiled_mma, me.mma, ring, read, release, work.k_count)
            read, release = parts.end_mainloop(
                ring, read, release, me.turn, item, schedule, k_tiles
            )
            place = parts.tile_place(me, work, out.mC.shape, inputs, ctid)
            self.finish_accumulator(me.mma.acc, place)
            self.store_tile(out, shared, me, work, done)
            done += 1
            item += me.turn.step * schedule.clusters
        if cutlass.const_expr(cfg.tma_store):
            me.writer.stores.producer_tail()

    @cute.jit
    def finish_accumulator(self, acc: cute.Tensor, place: TilePlace):
        """The fused operator, on this thread's fp32 accumulator elements (MMA, MMA_M, MMA_N)
        once the mainloop's wgmmas retired, before the epilogue converts them. Notebook 13's
        exercise writes this method for a residual block."""
        # region fused-epilogue
        (mBias,) = place.inputs
        n = place.shape[1]
        # the (m, n) of C each accumulator element holds: the tile's identity tensor,
        # partitioned like the accumulator
        tCcC = place.thr_mma.partition_C(
            cute.local_tile(
                cute.make_identity_tensor(place.shape), self.tile, (place.tile_row, place.tile_col)
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


BIAS = ExtraOperands(
    ("bias",),
    dtypes=lambda config: (torch.float32,),
    check=lambda a, b, tensors, config: check_bias(a, b, *tensors),
)

GEMM = GemmHost(
    "fused_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: FusedGemm(types, config, arch),
    Config,
    extra=hopper_gemm.PERSISTENT_GRID,
    extra_operands=BIAS,
)
compile, artifacts = GEMM.compile, GEMM.artifacts


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
    return GEMM.run(a, b, out, config, out_dtype=out_dtype, tensors=(bias,))


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
