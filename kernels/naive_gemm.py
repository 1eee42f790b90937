"""Notebook 03's kernel: the naive CuTe GEMM, C = A . B^T with one FMA per thread per step.

Every thread of a 256-thread CTA owns 64 elements of a 128x128 tile of C (an 8x8
grid of them, in four 4x4 blocks, thanks to the M/N permutation of the TiledMMA).
For each 8-wide slice of K it loads the matching 8 rows of A and 8 rows of B from
global memory straight into registers and does 8 x 64 scalar FMAs. There is no
shared memory and no reuse between threads: every element of A is loaded by the 16
threads that share its rows. That is the bottleneck the rest of the course removes.

The partitioning is split into small functions -- `make_tiled_mma`,
`global_tensors`, `cta_tiles`, `thread_partitions` -- that the kernel calls and
that course.cute.kernel_traces calls again in a trace on a CPU, so the layouts
notebook 03 prints are the ones this kernel uses, computed by CuTe itself.

Operands: A is (M,K), B is (N,K),
C = A . B^T is (M,N) row-major. A may be M-major (stride (1,M), as in the traced example)
or K-major; B N-major or K-major. float32 operands accumulate and store in fp32;
bf16/fp16 operands accumulate in fp32 and store in their own dtype. Any M, N, K:
tiles that cross the edge of the problem take a predicated path.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch

from . import selftest
from .gemm_host import GemmHost, Operands

NEEDS = "gpu"
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class Config:
    """The CTA tile, the thread layout of the FMA atoms, and the M/N permutation.

    Defaults: a 128x128x8 CTA tile, 16x16 = 256 threads laid out
    (16,16,1):(16,1,0) (thread t sits at row-of-atoms t // 16, column t % 16), and the
    permutation (16,4):(4,1) on M and on N, which gives each thread runs of `group`
    consecutive rows and columns.
    """

    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 8
    atoms_m: int = 16
    atoms_n: int = 16
    group: int = 4

    def __post_init__(self):
        if min(self.tile_m, self.tile_n, self.tile_k, self.atoms_m, self.atoms_n, self.group) < 1:
            raise ValueError("every Config field must be positive")
        if self.tile_m % (self.atoms_m * self.group) or self.tile_n % (self.atoms_n * self.group):
            raise ValueError(
                f"tile {self.tile_m}x{self.tile_n} must be a multiple of "
                f"atoms x group ({self.atoms_m * self.group}x"
                f"{self.atoms_n * self.group})"
            )
        if not 32 <= self.threads <= 1024 or self.threads % 32:
            raise ValueError(f"{self.threads} threads: must be a multiple of 32 in [32, 1024]")
        if self.values_per_thread > 128:
            raise ValueError(
                f"{self.values_per_thread} accumulators per thread is too many "
                f"registers; use a smaller tile or more threads"
            )

    @property
    def threads(self) -> int:
        return self.atoms_m * self.atoms_n

    @property
    def values_per_thread(self) -> int:
        return self.tile_m * self.tile_n // self.threads

    @property
    def cta_tiler(self) -> tuple[int, int, int]:
        return (self.tile_m, self.tile_n, self.tile_k)


# ---------------------------------------------------------------- the partitioning
# Plain functions, called while CuTe DSL traces either the kernel (on a GPU) or
# `thread_trace` (on a CPU).


def make_tiled_mma(config: Config):
    """256 scalar-FMA atoms, (16,16,1):(16,1,0), permuted (16,4):(4,1) along M and N."""
    atoms = cute.make_layout((config.atoms_m, config.atoms_n, 1), stride=(config.atoms_n, 1, 0))
    perm_m = cute.make_layout((config.atoms_m, config.group), stride=(config.group, 1))
    perm_n = cute.make_layout((config.atoms_n, config.group), stride=(config.group, 1))
    return cute.make_tiled_mma(
        cute.nvgpu.MmaUniversalOp(cutlass.Float32), atoms, permutation_mnk=(perm_m, perm_n, None)
    )


def global_layouts(m, n, k, a_major: str = "m", b_major: str = "n"):
    """Layouts of A (M,K), B (N,K) and row-major C (M,N); m, n, k static or dynamic."""
    la = cute.make_layout((m, k), stride=(1, m) if a_major == "m" else (k, 1))
    lb = cute.make_layout((n, k), stride=(1, n) if b_major == "n" else (k, 1))
    lc = cute.make_layout((m, n), stride=(n, 1))
    return la, lb, lc


def global_tensors(a_ptr, b_ptr, c_ptr, m, n, k, a_major: str = "m", b_major: str = "n"):
    la, lb, lc = global_layouts(m, n, k, a_major, b_major)
    return cute.make_tensor(a_ptr, la), cute.make_tensor(b_ptr, lb), cute.make_tensor(c_ptr, lc)


def cta_tiles(mA, mB, mC, config: Config, bm, bn):
    """This CTA's slices: gA (BM,BK,k_tiles), gB (BN,BK,k_tiles), gC (BM,BN).

    local_tile = divide by the (BM,BN,BK) tiler, projected onto each tensor's modes
    (A has M and K, B has N and K, C has M and N), then keep tile (bm, bn) and all of K.
    """
    # region tile_a
    coord = (bm, bn, None)
    gA = cute.local_tile(mA, tiler=config.cta_tiler, coord=coord, proj=(1, None, 1))
    # endregion tile_a
    gB = cute.local_tile(mB, tiler=config.cta_tiler, coord=coord, proj=(None, 1, 1))
    gC = cute.local_tile(mC, tiler=config.cta_tiler, coord=coord, proj=(1, 1, None))
    return gA, gB, gC


def thread_partitions(tiled_mma, tid, gA, gB, gC):
    """Thread `tid`'s share: tCgA (1,(4,2),BK,k), tCgB (1,(4,2),BK,k), tCgC (1,(4,2),(4,2)).

    All three are cut by C's partition: a thread loads exactly the rows of A and of B
    that its 64 elements of C need.
    """
    thr = tiled_mma.get_slice(tid)
    return thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gC)


# ---------------------------------------------------------------- the kernel


@cute.kernel
def naive_gemm_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, config: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    bm, bn, _ = cute.arch.block_idx()
    tiled_mma = make_tiled_mma(config)

    # A. this CTA's tiles and B. this thread's slices of them
    gA, gB, gC = cta_tiles(mA, mB, mC, config, bm, bn)
    tCgA, tCgB, tCgC = thread_partitions(tiled_mma, tid, gA, gB, gC)
    # the same partitioning of coordinate tensors: which (row, col) each element is
    cA, cB, cC = cta_tiles(
        cute.make_identity_tensor(mA.shape),
        cute.make_identity_tensor(mB.shape),
        cute.make_identity_tensor(mC.shape),
        config,
        bm,
        bn,
    )
    tCcA, tCcB, tCcC = thread_partitions(tiled_mma, tid, cA, cB, cC)

    # registers: one K-slice of A and B (in the input type, then as fp32), 64 accumulators
    tCrA_in = cute.make_rmem_tensor(tCgA[None, None, None, 0].shape, mA.element_type)
    tCrB_in = cute.make_rmem_tensor(tCgB[None, None, None, 0].shape, mB.element_type)
    tCrA = cute.make_rmem_tensor(tCrA_in.shape, cutlass.Float32)
    tCrB = cute.make_rmem_tensor(tCrB_in.shape, cutlass.Float32)
    tCrC = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
    tCrC.fill(0.0)

    m, n, k = mC.shape[0], mC.shape[1], mA.shape[1]
    tile_inside = ((bm + 1) * config.tile_m <= m) & ((bn + 1) * config.tile_n <= n)
    full_k_tiles = k // config.tile_k
    k_tiles = (k + config.tile_k - 1) // config.tile_k  # the last one may be partial

    # C. the K loop: load a K-slice of A and B into registers, then BK rank-1 updates
    for kt in cutlass.range(k_tiles):
        tCgA_k, tCgB_k = tCgA[None, None, None, kt], tCgB[None, None, None, kt]
        if tile_inside & (kt < full_k_tiles):
            cute.autovec_copy(tCgA_k, tCrA_in)
            cute.autovec_copy(tCgB_k, tCrB_in)
        else:  # an edge tile: load what exists, zero the rest
            tCcA_k, tCcB_k = tCcA[None, None, None, kt], tCcB[None, None, None, kt]
            for i in cutlass.range(cute.size(tCrA_in), unroll_full=True):
                tCrA_in[i] = (
                    tCgA_k[i] if cute.elem_less(tCcA_k[i], mA.shape) else mA.element_type(0)
                )
            for i in cutlass.range(cute.size(tCrB_in), unroll_full=True):
                tCrB_in[i] = (
                    tCgB_k[i] if cute.elem_less(tCcB_k[i], mB.shape) else mB.element_type(0)
                )
        tCrA.store(tCrA_in.load().to(cutlass.Float32))
        tCrB.store(tCrB_in.load().to(cutlass.Float32))
        for kb in cutlass.range_constexpr(config.tile_k):
            cute.gemm(tiled_mma, tCrC, tCrA[None, None, kb], tCrB[None, None, kb], tCrC)

    # D. epilogue: round to C's type and store the 64 values
    tCrC_out = cute.make_rmem_tensor(tCrC.shape, mC.element_type)
    tCrC_out.store(tCrC.load().to(mC.element_type))
    if tile_inside:
        cute.autovec_copy(tCrC_out, tCgC)
    else:
        for i in cutlass.range(cute.size(tCrC_out), unroll_full=True):
            if cute.elem_less(tCcC[i], mC.shape):
                tCgC[i] = tCrC_out[i]


class NaiveGemm:
    """The host side for one (Config, majors): build the global tensors from pointers and
    sizes (their element types are the pointers'), launch one CTA per tile."""

    def __init__(self, config: Config, a_major: str, b_major: str):
        self.cfg, self.a_major, self.b_major = config, a_major, b_major

    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        config = self.cfg
        mA, mB, mC = global_tensors(a_ptr, b_ptr, c_ptr, m, n, k, self.a_major, self.b_major)
        grid = [
            (m + config.tile_m - 1) // config.tile_m,
            (n + config.tile_n - 1) // config.tile_n,
            1,
        ]
        naive_gemm_kernel(mA, mB, mC, config).launch(
            grid=grid, block=[config.threads, 1, 1], stream=stream
        )


# ---------------------------------------------------------------- compile / run

GEMM = GemmHost(
    "naive_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: NaiveGemm(config, a_major, b_major),
    Config,
    # element-wise loads: either major, any size, element-aligned views; 32-bit indexing;
    # fp32 FMAs (make_tiled_mma), so fp32 accumulators whatever A's type
    Operands(
        ab_dtypes=DTYPES,
        a_majors=("m", "k"),
        b_majors=("n", "k"),
        row_bytes=None,
        int32_offsets=True,
    ),
    default_dtype=torch.float32,
    default_majors=("m", "n"),  # as notebook 03 traces it
)


# compile(dtype, config) / artifacts(arch, dtype, config) / run(a, b, out, config) /
# prepare(problem, config): the step's surface, from kernels.gemm_host
compile, artifacts, run, prepare = GEMM.compile, GEMM.artifacts, GEMM.run, GEMM.prepare


if __name__ == "__main__":
    raise SystemExit(
        selftest.gemm_main(GEMM, "naive_gemm", (torch.float32, torch.bfloat16), sizes=(2048,))
    )
