"""Notebook 06's kernel exercise: one TiledMMA tile of C = A . B^T with mma.sync."""

import cutlass.cute as cute

from course.exercises.learner_code import edited


@cute.kernel
def mma_tile_kernel(tiled_mma: cute.TiledMma, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    thr_mma = tiled_mma.get_slice(tid)
    tCgA, tCgB, tCgC = thr_mma.partition_A(mA), thr_mma.partition_B(mB), thr_mma.partition_C(mC)
    tCrA = tiled_mma.make_fragment_A(tCgA)
    tCrB = tiled_mma.make_fragment_B(tCgB)
    tCrC = tiled_mma.make_fragment_C(tCgC)
    cute.autovec_copy(tCgA, tCrA)
    cute.autovec_copy(tCgB, tCrB)
    tCrC.fill(0.0)
    cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    cute.autovec_copy(tCrC, tCgC)


PARTITIONS = "thr_mma.partition_A(mA), thr_mma.partition_B(mB)"

mma_tile_kernel__a_as_b = edited(
    mma_tile_kernel,
    "mma_tile_kernel__a_as_b",
    (PARTITIONS, "thr_mma.partition_B(mA), thr_mma.partition_B(mB)"),
)
mma_tile_kernel__no_clear = edited(
    mma_tile_kernel, "mma_tile_kernel__no_clear", ("    tCrC.fill(0.0)\n", "")
)
mma_tile_kernel__slice_zero = edited(
    mma_tile_kernel,
    "mma_tile_kernel__slice_zero",
    ("    tid, _, _ = cute.arch.thread_idx()\n", ""),
    ("get_slice(tid)", "get_slice(0)"),
)
mma_tile_kernel__b_transposed = edited(
    mma_tile_kernel,
    "mma_tile_kernel__b_transposed",
    (
        "    tCgA, tCgB, tCgC = " + PARTITIONS + ", thr_mma.partition_C(mC)\n",
        "    n, k = mB.shape\n"
        "    mB_nk = cute.make_tensor(mB.iterator, cute.make_layout((n, k), stride=(1, n)))"
        "  # as if (K,N)\n"
        "    tCgA, tCgB, tCgC = thr_mma.partition_A(mA), thr_mma.partition_B(mB_nk), "
        "thr_mma.partition_C(mC)\n",
    ),
)


@cute.kernel
def mma_tile_kernel_tensor_ssa(
    tiled_mma: cute.TiledMma, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor
):
    """Fragments filled and stored through TensorSSA values (load / store)."""
    thr_mma = tiled_mma.get_slice(cute.arch.thread_idx()[0])
    tCgA = thr_mma.partition_A(mA)
    tCgB = thr_mma.partition_B(mB)
    tCgC = thr_mma.partition_C(mC)
    tCrA = tiled_mma.make_fragment_A(tCgA)
    tCrB = tiled_mma.make_fragment_B(tCgB)
    tCrC = tiled_mma.make_fragment_C(tCgC)
    tCrA.store(tCgA.load())
    tCrB.store(tCgB.load())
    tCrC.fill(0)
    cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    tCgC.store(tCrC.load())


REFERENCE = {"06.mma_tile": mma_tile_kernel}
WRONG = {
    "06.mma_tile": {
        mma_tile_kernel__a_as_b: ("wrong partition mode", "cpu"),
        mma_tile_kernel__no_clear: ("accumulator not cleared", "cpu"),
        mma_tile_kernel__slice_zero: ("get_slice(tid)", "cpu"),
        mma_tile_kernel__b_transposed: ("swapped strides", "gpu"),
    }
}
ALTERNATIVES = {"06.mma_tile": [mma_tile_kernel_tensor_ssa]}
