"""Notebook 12: FP8 on Hopper -- notebook 11's kernel with float8 operands and their scales.

A and B in float8 (e4m3: 3 mantissa bits, to +-448; e5m2: 2 bits, to +-57344) hold a
tensor's values only after dividing them by a scale; the GEMM multiplies the scales back
in. Everything else is hopper_gemm's kernel (warp specialization, persistence, clusters,
the TMA ring and the TMA-store epilogue): a k-tile is still one 128-byte swizzle row, now
128 float8 wide, and one wgmma takes K = 32 (`gemm_host.tile_k`, `mma_k`). This step adds
the scales (`Config.scales`):

  "tensor": one float32 scale per operand, shapes (1,): C = (A . B^T) * a_scale * b_scale,
      multiplied into the accumulator before the epilogue converts it.
  "row": a_scale (M,) and b_scale (N,): C[m, n] = acc[m, n] * a_scale[m] * b_scale[n],
      in the same place.
  "block" (DeepSeek-V3's recipe): a_scale (M, ceil(K/128)) for 1 x 128 blocks of A,
      b_scale (ceil(N/128), ceil(K/128)) for 128 x 128 blocks of B. A scale changes every
      k-tile, so it cannot wait for the epilogue: each k-tile's wgmmas accumulate into a
      temporary fp32 accumulator, which is *promoted* once they retired --
      acc += tmp * a_scale[m, kt] * b_scale[n // 128, kt] -- and cleared. A CTA tile 256
      wide spans two blocks of B: each accumulator element reads its own column's block.
  promote_every ("tensor"/"row"): the same temporary accumulator, added into the main one
      (unscaled) every `promote_every` k-tiles: the tensor cores add fp8 products into
      their accumulator with fewer bits than fp32 (NVIDIA's 2xacc example), so a long K
      loses precision; promoting bounds how many k-tiles share that accumulator. None: no
      promotion.

PRESETS names one configuration per mode. A second accumulator needs registers: a
128 x 256 tile's two (256 fp32 values a thread) do not fit, so the promoting presets use
128 x 128 tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch

from . import hopper_gemm, selftest
from .gemm_host import FLOAT8_TYPES, GemmHost, LaunchExtra, Operands, gemm_tensors, host_int32
from .gemm_host import tile_k, validate_gemm
from .host import KernelInputError, check_tensor, gmem_pointer
from .hopper_gemm import HopperGemm, TileAt

NEEDS = hopper_gemm.NEEDS
DTYPES = FLOAT8_TYPES
C_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
SCALE_BLOCK = 128  # DeepSeek-V3's blocks: 1 x 128 of A, 128 x 128 of B (one k-tile of K)
SCALE_MODES = ("tensor", "row", "block")


@dataclass(frozen=True)
class Config(hopper_gemm.Config):
    scales: str = "tensor"  # "tensor" | "row" | "block"
    promote_every: int | None = None  # tensor/row: k-tiles per promotion (None: never)

    def __post_init__(self):
        super().__post_init__()
        if self.scales not in SCALE_MODES:
            raise ValueError(f"scales must be one of {SCALE_MODES}, got {self.scales!r}")
        if self.promote_every is not None:
            if self.scales == "block":
                raise ValueError("block scales promote every k-tile: leave promote_every None")
            if self.promote_every < 1:
                raise ValueError("promote_every: None or at least 1 k-tile")

    @property
    def every(self) -> int | None:
        """k-tiles per promotion: 1 for block scales, promote_every otherwise (None: none)."""
        return 1 if self.scales == "block" else self.promote_every


PRESETS: dict[str, Config] = {
    "tensor": Config(),
    "row": Config(scales="row"),
    "block": Config(scales="block", tile_n=128),
    "tensor_promoted": Config(promote_every=4, tile_n=128),
}


class Fp8Gemm(HopperGemm):
    """hopper_gemm's kernel with float8 A and B and their scales (`Config.scales`)."""

    def __init__(self, types, config: Config, arch: str = "sm_90a"):
        super().__init__(types, config, arch)
        assert self.tile_k == SCALE_BLOCK == tile_k(8)  # one k-tile: one block of scales

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer,
                 m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32, max_clusters: cutlass.Int32,
                 a_scale_ptr: cute.Pointer, b_scale_ptr: cute.Pointer,
                 stream: cuda.CUstream):  # fmt: skip
        mA, mB, mC = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        # mSA, mSB: (1,) and (1,) | (M,) and (N,) | (M, KB) and (NB, KB), KB = ceil(K/128)
        mSA = cute.make_tensor(a_scale_ptr, cute.make_layout(1))
        mSB = cute.make_tensor(b_scale_ptr, cute.make_layout(1))
        if cutlass.const_expr(self.cfg.scales == "row"):
            mSA = cute.make_tensor(a_scale_ptr, cute.make_layout(m))
            mSB = cute.make_tensor(b_scale_ptr, cute.make_layout(n))
        if cutlass.const_expr(self.cfg.scales == "block"):
            kb = (k + SCALE_BLOCK - 1) // SCALE_BLOCK
            nb = (n + SCALE_BLOCK - 1) // SCALE_BLOCK
            mSA = cute.make_tensor(a_scale_ptr, cute.make_layout((m, kb), stride=(kb, 1)))
            mSB = cute.make_tensor(b_scale_ptr, cute.make_layout((nb, kb), stride=(kb, 1)))
        self.launch_tiles(mA, mB, mC, max_clusters, stream, (mSA, mSB))

    @cute.jit
    def k_tile_accumulator(self, acc: cute.Tensor) -> cute.Tensor:
        """Promoting: a temporary accumulator beside `acc`, (MMA, MMA_M, MMA_N), cleared;
        otherwise the wgmmas add into `acc` itself (hopper_gemm's mainloop)."""
        if cutlass.const_expr(self.cfg.every is None):
            return acc
        tmp = cute.make_rmem_tensor(acc.shape, self.acc_dtype)
        tmp.fill(0.0)
        return tmp

    @cute.jit
    def after_k_tile(
        self,
        acc: cute.Tensor,
        tmp: cute.Tensor,
        kt: cutlass.Int32,
        k_tiles: cutlass.Int32,
        at: TileAt,
    ):
        """Promoting: after every `every`-th k-tile and after the last, wait for the
        wgmmas in flight and promote `tmp` into `acc`. Block scales are read *before* the
        wait, while this k-tile's wgmmas still run: read after it, their latency would stall
        the tensor cores every k-tile."""
        # region promotion
        if cutlass.const_expr(self.cfg.every is not None):
            # due after every `every`-th k-tile and after the last one (0 when either)
            if cutlass.min((kt + 1) % self.cfg.every, k_tiles - 1 - kt) == 0:
                scales = self.k_tile_scales(kt, at)  # block scales: loads in flight
                cute.nvgpu.warpgroup.wait_group(0)  # tmp holds the k-tiles' sums now
                self.promote(acc, tmp, scales)
        # endregion promotion

    @cute.jit
    def k_tile_scales(self, kt: cutlass.Int32, at: TileAt) -> list:
        """Block scales: a_scale[m, kt] * b_scale[n // 128, kt] for each accumulator element
        of this thread (tensor/row scales: none, []). A thread's elements lie on two rows per
        64-row atom, so the compiler keeps a few loads of A's scales; B's scale is one per
        128 columns of the tile."""
        # region k-tile-scales
        scales = []
        if cutlass.const_expr(self.cfg.scales == "block"):
            mSA, mSB = at.extra
            rows, blocks = mSA.shape[0], mSB.shape[0]
            tCcC = self.coordinates(at)  # (MMA, MMA_M, MMA_N) of (m, n)
            tile_n = self.tile[1]
            # B's scales of the blocks this tile spans (past N's edge: the last block, whose
            # columns hold zeros there and are never stored)
            first = at.tile_col * tile_n // SCALE_BLOCK
            sb = [
                mSB[cutlass.min(first + j, blocks - 1), kt]
                for j in range(-(-tile_n // SCALE_BLOCK) + (1 if tile_n % SCALE_BLOCK else 0))
            ]
            for i in cutlass.range_constexpr(cute.size(tCcC)):
                row, col = tCcC[i]
                # rows past C's edge hold zeros (TMA filled A with them): read an existing scale
                sa = mSA[cutlass.min(row, rows - 1), kt]
                scales.append(sa * self.pick(sb, col // SCALE_BLOCK - first))
        # endregion k-tile-scales
        return scales

    @cute.jit
    def pick(self, values: list, j: cutlass.Int32):
        """values[j] for a j known only on the GPU (the same in every lane of a warp)."""
        picked = values[0]
        for jj in cutlass.range_constexpr(1, len(values)):
            if j == jj:
                picked = values[jj]
        return picked

    @cute.jit
    def promote(self, acc: cute.Tensor, tmp: cute.Tensor, scales: list):
        """acc += tmp (block scales: tmp * scales[i], a_scale * b_scale of element i);
        tmp = 0. The next k-tile's warpgroup.fence orders these register writes before its
        wgmmas."""
        # region promote
        if cutlass.const_expr(self.cfg.scales == "block"):
            for i in cutlass.range_constexpr(cute.size(acc)):
                acc[i] = acc[i] + tmp[i] * scales[i]
        else:  # tensor and row scales: multiplied in once, before the epilogue
            acc.store(acc.load() + tmp.load())
        tmp.fill(0.0)
        # endregion promote

    @cute.jit
    def coordinates(self, at: TileAt) -> cute.Tensor:
        """The (m, n) of C each accumulator element of this thread holds."""
        return at.thr_mma.partition_C(
            cute.local_tile(
                cute.make_identity_tensor(at.shape), self.tile, (at.tile_row, at.tile_col)
            )
        )

    @cute.jit
    def finish_accumulator(self, acc: cute.Tensor, at: TileAt):
        """Tensor and row scales, multiplied into the accumulator before the epilogue
        converts it (block scales were applied by every promotion)."""
        # region scaled-epilogue
        if cutlass.const_expr(self.cfg.scales == "tensor"):
            mSA, mSB = at.extra
            acc.store(acc.load() * (mSA[0] * mSB[0]))
        if cutlass.const_expr(self.cfg.scales == "row"):
            mSA, mSB = at.extra
            m, n = at.shape
            tCcC = self.coordinates(at)  # (MMA, MMA_M, MMA_N) of (m, n)
            for i in cutlass.range_constexpr(cute.size(acc)):
                row, col = tCcC[i]
                # past C's edge: zeros, never stored; read an existing scale
                sa = mSA[cutlass.min(row, m - 1)]
                sb = mSB[cutlass.min(col, n - 1)]
                acc[i] = acc[i] * (sa * sb)
        # endregion scaled-epilogue


# ------------------------------------------------------------------ the surface

OPERANDS = Operands(ab_dtypes=FLOAT8_TYPES, c_dtypes=C_DTYPES)


def _placeholders(config: Config) -> tuple:
    return (
        host_int32(1),
        gmem_pointer(None, torch.float32, 4),
        gmem_pointer(None, torch.float32, 4),
    )


GEMM = GemmHost(
    "fp8_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: Fp8Gemm(types, config, arch),
    Config,
    operands=OPERANDS,
    extra=LaunchExtra(_placeholders, hopper_gemm._persistent_grid),
    default_dtype=torch.float8_e4m3fn,
)

compile, artifacts = GEMM.compile, GEMM.artifacts


def scale_shapes(m: int, n: int, k: int, scales: str) -> tuple[tuple, tuple]:
    """The shapes a_scale and b_scale must have for an M x N x K GEMM with `scales`."""
    if scales == "tensor":
        return (1,), (1,)
    if scales == "row":
        return (m,), (n,)
    kb = -(-k // SCALE_BLOCK)
    return (m, kb), (-(-n // SCALE_BLOCK), kb)


def check_scales(a: torch.Tensor, b: torch.Tensor, a_scale, b_scale, config: Config) -> None:
    """Refuse scales of the wrong type, shape, device or layout for `config.scales`."""
    (m, k), n = a.shape, b.shape[0]
    for t, name, shape in zip(
        (a_scale, b_scale), ("a_scale", "b_scale"), scale_shapes(m, n, k, config.scales)
    ):
        check_tensor(t, name, dtypes=(torch.float32,), ndim=len(shape), align_bytes=4)
        if tuple(t.shape) != shape:
            raise KernelInputError(
                f"{name} must have shape {shape} for {config.scales!r} scales of an "
                f"{m}x{n}x{k} GEMM, got {tuple(t.shape)}"
            )
        if t.device != a.device:
            raise KernelInputError(f"{name} is on {t.device}, a on {a.device}: use one device")
        if not t.is_contiguous():
            raise KernelInputError(
                f"{name} must be contiguous (strides {tuple(t.stride())}); pass .contiguous()"
            )


def run(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    out: torch.Tensor | None = None,
    config: Config | None = None,
    *,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """C = (A . B^T) with A's and B's scales (config.scales), C in bf16 by default; every
    input is validated before anything launches."""
    config = GEMM.default_config if config is None else config
    out, _, _ = validate_gemm(a, b, out, kernel=GEMM.name, operands=OPERANDS, out_dtype=out_dtype)
    check_scales(a, b, a_scale, b_scale, config)
    return GEMM.run(a, b, out, config, tensors=(a_scale, b_scale))


def prepare(problem, config: Config = Config(), preset: str | None = None):
    """For a benchmark: compile once for `problem`; gemm(a, b, c) with unit tensor scales."""
    config = PRESETS[preset] if preset is not None else config
    GEMM.prepare(problem, config)
    ones = {}

    def gemm(a, b, c):
        key = (a.device, a.shape[0], b.shape[0], a.shape[1])
        if key not in ones:
            sa, sb = scale_shapes(*key[1:], config.scales)
            ones[key] = (torch.ones(sa, device=a.device), torch.ones(sb, device=a.device))
        return run(a, b, *ones[key], c, config)

    return gemm


def quantize(x: torch.Tensor, scales: str, dtype=torch.float8_e4m3fn, rows_of: str = "a"):
    """x (rows, K) in float8 and its float32 scales (`scales`; for "block", 1 x 128 blocks
    when rows_of == "a", 128 x 128 when "b"), each block's largest |x| mapped to the
    type's largest value: x ~= x8 * scale."""
    top = torch.finfo(dtype).max
    rows, k = x.shape
    kb = -(-k // SCALE_BLOCK)
    xf = x.float()
    if scales == "tensor":
        amax = xf.abs().amax().reshape(1)
        expand = amax
    elif scales == "row":
        amax = xf.abs().amax(dim=1)
        expand = amax[:, None]
    else:
        pad = torch.nn.functional.pad(xf.abs(), (0, kb * SCALE_BLOCK - k))
        if rows_of == "a":
            amax = pad.view(rows, kb, SCALE_BLOCK).amax(dim=2)
            expand = amax.repeat_interleave(SCALE_BLOCK, dim=1)[:, :k]
        else:
            nb = -(-rows // SCALE_BLOCK)
            pad = torch.nn.functional.pad(pad, (0, 0, 0, nb * SCALE_BLOCK - rows))
            amax = pad.view(nb, SCALE_BLOCK, kb, SCALE_BLOCK).amax(dim=(1, 3))
            expand = amax.repeat_interleave(SCALE_BLOCK, dim=0)[:rows]
            expand = expand.repeat_interleave(SCALE_BLOCK, dim=1)[:, :k]
    scale = (amax.clamp_min(1e-12) / top).float().contiguous()
    x8 = (xf / (expand.clamp_min(1e-12) / top)).clamp(-top, top).to(dtype)
    return x8, scale


def time_against_scaled_mm(size: int, config: Config, rounds: int = 15, reps: int = 20) -> None:
    """Print this kernel's rate as a share of torch._scaled_mm's (cuBLASLt) for one
    size^3 problem (tensor or row scales), cuBLASLt timed again as the control."""
    sets = []
    for _ in range(3):
        a, sa = quantize(torch.randn(size, size, device="cuda"), config.scales)
        b, sb = quantize(torch.randn(size, size, device="cuda"), config.scales, rows_of="b")
        sets.append((a, b, sa, sb))
    outs = [torch.empty(size, size, dtype=torch.bfloat16, device="cuda") for _ in sets]

    def cublas(i):
        a, b, sa, sb = sets[i % 3]
        if config.scales == "row":
            sa, sb = sa[:, None], sb[None, :]
        return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    def kernel(i):
        a, b, sa, sb = sets[i % 3]
        return run(a, b, sa, sb, outs[i % 3], config)

    promoted = f", promoted every {config.promote_every} k-tiles" if config.promote_every else ""
    label = f"e4m3 {config.scales} scales{promoted} {size}^3"
    selftest.print_against(label, "torch._scaled_mm", cublas, kernel, 2 * size**3, rounds, reps)


if __name__ == "__main__":
    if not selftest.runnable_here(NEEDS, "fp8_gemm"):
        for name, preset in PRESETS.items():
            print(f"preset {name!r}:")
            selftest.show_artifacts(artifacts(None, torch.float8_e4m3fn, preset))
        raise SystemExit(0)
    print("speed against torch._scaled_mm (median of per-round ratios, one process):")
    for name in ("tensor", "row", "tensor_promoted"):
        for size in (4096, 8192):
            time_against_scaled_mm(size, PRESETS[name])
