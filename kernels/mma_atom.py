"""Notebook 06: one tensor-core instruction, mma.sync.m16n8k16, and who holds what.

A warp of 32 threads computes C(16x8, fp32) += A(16x16) . B(8x16)^T together; each
thread holds a fixed piece of each operand in its registers: 8 A halves, 4 B halves
and 4 C floats. CuTe describes those pieces as thread-value (TV) layouts, and
`partition_A/B/C` hands each thread exactly its piece.

Three kernels, each one small step:
  * `stamp`: every thread writes its own lane id (and value index) into the C cells
    its accumulator registers map to -- the hardware's answer to "who owns C[m,n]",
    checked against CuTe's TV layout;
  * `micro_gemm`: one warp, one atom: load A and B fragments straight from global
    memory with partition_A/B, one `cute.gemm`, store C;
  * the same micro-GEMM with a TiledMMA of warps_m x warps_n warps covering a
    (16*warps_m) x (8*warps_n) tile of C.
On a CPU the TV layouts are evaluated by CuTe itself (a jit function, no launch).
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch

from .host import Compiler, KernelInputError, check_tensor, current_stream, cutlass_dtype
from .host import fake_stream, gmem_pointer, require

NEEDS = "sm_80+"
DTYPES = (torch.float16, torch.bfloat16)
ATOM = (16, 8, 16)  # M, N, K of one mma.sync


@dataclass(frozen=True)
class Config:
    warps_m: int = 1
    warps_n: int = 1

    def __post_init__(self):
        if self.warps_m < 1 or self.warps_n < 1 or self.warps_m * self.warps_n > 32:
            raise ValueError("warps_m, warps_n >= 1 and at most 32 warps")

    @property
    def shape_mnk(self) -> tuple[int, int, int]:
        return (ATOM[0] * self.warps_m, ATOM[1] * self.warps_n, ATOM[2])

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n


def tiled_mma(
    dtype, warps_m: int, warps_n: int, atoms_n_per_warp: int = 1, acc_dtype=cutlass.Float32
):
    """The atom repeated over a warps_m x warps_n grid of warps (fp32 accumulators unless
    `acc_dtype` says otherwise).

    With atoms_n_per_warp = 2 each warp covers 16 columns with two n8 atoms (a permutation
    of N), so that one ldmatrix.x4 of B feeds both: the tiled GEMMs of notebooks 07 and 09.
    """
    op = cute.nvgpu.warp.MmaF16BF16Op(dtype, acc_dtype, ATOM)
    warps = cute.make_layout((warps_m, warps_n, 1))
    if atoms_n_per_warp == 1:
        return cute.make_tiled_mma(op, warps)
    return cute.make_tiled_mma(
        op,
        warps,
        permutation_mnk=(warps_m * ATOM[0], warps_n * ATOM[1] * atoms_n_per_warp, ATOM[2]),
    )


def make_tiled_mma(dtype, config: Config):
    """The atom, repeated over the config's grid of warps."""
    return tiled_mma(dtype, config.warps_m, config.warps_n)


# --------------------------------------------------------------- kernels


class _Kernels:
    """Host wrappers and kernels for one dtype and warp grid."""

    def __init__(self, dtype, config: Config):
        self.dtype = dtype
        self.cfg = config

    @cute.jit
    def stamp(self, owner_ptr: cute.Pointer, value_ptr: cute.Pointer, stream: cuda.CUstream):
        m, n, _ = self.cfg.shape_mnk
        layout = cute.make_layout((m, n), stride=(n, 1))  # row-major int32 maps
        self.stamp_kernel(
            cute.make_tensor(owner_ptr, layout), cute.make_tensor(value_ptr, layout)
        ).launch(grid=[1, 1, 1], block=[self.cfg.threads, 1, 1], stream=stream)

    @cute.kernel
    def stamp_kernel(self, owner: cute.Tensor, value: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        thr = make_tiled_mma(self.dtype, self.cfg).get_slice(tidx)
        my_owner, my_value = thr.partition_C(owner), thr.partition_C(value)
        for v in cutlass.range_constexpr(cute.size(my_owner)):
            my_owner[v] = tidx
            my_value[v] = v

    @cute.jit
    def gemm(
        self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer, stream: cuda.CUstream
    ):
        m, n, k = self.cfg.shape_mnk
        mA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
        mB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
        mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
        self.gemm_kernel(mA, mB, mC).launch(
            grid=[1, 1, 1], block=[self.cfg.threads, 1, 1], stream=stream
        )

    @cute.kernel
    def gemm_kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        # region micro-gemm
        tidx, _, _ = cute.arch.thread_idx()
        tiled = make_tiled_mma(self.dtype, self.cfg)
        thr = tiled.get_slice(tidx)
        tCgA, tCgB, tCgC = thr.partition_A(mA), thr.partition_B(mB), thr.partition_C(mC)
        tCrA = tiled.make_fragment_A(tCgA)  # this thread's 8 A values per atom
        tCrB = tiled.make_fragment_B(tCgB)  # ... 4 B values
        tCrC = tiled.make_fragment_C(tCgC)  # ... 4 fp32 accumulators
        cute.autovec_copy(tCgA, tCrA)
        cute.autovec_copy(tCgB, tCrB)
        tCrC.fill(0.0)
        cute.gemm(tiled, tCrC, tCrA, tCrB, tCrC)  # one mma.sync per atom
        cute.autovec_copy(tCrC, tCgC)
        # endregion micro-gemm


def _stamp_signature(arch: str, dtype, config):
    p = gmem_pointer(None, torch.int32, 4)
    return (_Kernels(cutlass_dtype(dtype), config).stamp, p, p, fake_stream())


def _gemm_signature(arch: str, dtype, config):
    p, c = gmem_pointer(None, dtype, 16), gmem_pointer(None, torch.float32, 16)
    return (_Kernels(cutlass_dtype(dtype), config).gemm, p, p, c, fake_stream())


STAMP = Compiler("mma_atom.stamp", NEEDS, _stamp_signature)
MICRO_GEMM = Compiler("mma_atom.micro_gemm", NEEDS, _gemm_signature)


def artifacts(arch: str = "sm_80", dtype: torch.dtype = torch.bfloat16, config: Config = Config()):
    """The micro-GEMM compiled for `arch` without a GPU."""
    return MICRO_GEMM.artifacts(arch, dtype, config)


def stamp(config: Config = Config(), dtype: torch.dtype = torch.bfloat16):
    """Run the stamping kernel: (owner, value) int32 maps of C, as the GPU fills them."""
    kernel = STAMP.compile(dtype, config)
    m, n, _ = config.shape_mnk
    owner = torch.full((m, n), -1, dtype=torch.int32, device="cuda")
    value = torch.full((m, n), -1, dtype=torch.int32, device="cuda")
    kernel(
        gmem_pointer(owner, torch.int32, 4), gmem_pointer(value, torch.int32, 4), current_stream()
    )
    torch.cuda.synchronize()
    return owner.cpu(), value.cpu()


def micro_gemm(a: torch.Tensor, b: torch.Tensor, config: Config = Config()) -> torch.Tensor:
    """C (fp32) = A . B^T for exactly one tiled-MMA tile: A (16*wm x 16), B (8*wn x 16)."""
    require(
        NEEDS,
        "mma_atom.micro_gemm",
        a.device if isinstance(a, torch.Tensor) and a.is_cuda else None,
    )
    m, n, k = config.shape_mnk
    check_tensor(a, "a", dtypes=DTYPES, ndim=2)
    check_tensor(b, "b", dtypes=(a.dtype,), ndim=2)
    if a.shape != (m, k) or b.shape != (n, k) or not (a.is_contiguous() and b.is_contiguous()):
        raise KernelInputError(
            f"this warp grid takes contiguous A {m}x{k} and B {n}x{k}, got "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    c = torch.empty(m, n, dtype=torch.float32, device=a.device)
    kernel = MICRO_GEMM.compile(a.dtype, config, device=a.device)
    kernel(
        gmem_pointer(a, a.dtype),
        gmem_pointer(b, a.dtype),
        gmem_pointer(c, torch.float32),
        current_stream(),
    )
    return c


def _self_test() -> int:
    """The micro-GEMM matches torch; the stamped owners of one atom's C follow the PTX ISA's
    m16n8k16 fragment (thread t holds rows t//4 and t//4 + 8, columns 2(t%4) and 2(t%4)+1)."""
    from . import selftest

    if not selftest.runnable_here(NEEDS, "mma_atom"):
        selftest.show_artifacts(artifacts())
        return 0
    ok = True
    for config in (Config(), Config(2, 2)):
        for dtype in DTYPES:
            m, n, k = config.shape_mnk
            a, b = (
                torch.randn(m, k, device="cuda").to(dtype),
                torch.randn(n, k, device="cuda").to(dtype),
            )
            c = micro_gemm(a, b, config)
            torch.cuda.synchronize()
            ok &= selftest.verdict(
                f"{str(dtype)[6:]} {m}x{n}x{k} on {config.threads // 32} warp(s)",
                c,
                a.double() @ b.double().T,
                torch.float32,
            )
    owner, _ = stamp(Config())
    rows, cols = torch.meshgrid(torch.arange(16), torch.arange(8), indexing="ij")
    as_ptx_says = bool((owner == 4 * (rows % 8) + cols // 2).all())
    print(f"  {'ok  ' if as_ptx_says else 'FAIL'} stamp: C's owners are the PTX ISA's fragment")
    return 0 if ok and as_ptx_says else 1


if __name__ == "__main__":
    raise SystemExit(_self_test())
