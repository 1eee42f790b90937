"""Notebook 06's kernel exercise: one TiledMMA tile of C = A . B^T with mma.sync."""

import cutlass
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


@cute.kernel
def mma_tile_kernel_tiled_copies(
    tiled_mma: cute.TiledMma, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor
):
    """NVIDIA's tensorop_gemm spelling: the operands come in through TiledCopies made
    for the MMA (make_tiled_copy_A/B) into the fragments retiled for them, the accumulator
    is cleared before the loads, and leaves through a fragment of C's element type."""
    tidx, _, _ = cute.arch.thread_idx()
    thr_mma = tiled_mma.get_slice(tidx)
    tCgC = thr_mma.partition_C(mC)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(mA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(mB))
    tCrC = tiled_mma.make_fragment_C(tCgC)
    tCrC.fill(0.0)
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mA.element_type)
    thr_copy_A = cute.make_tiled_copy_A(atom, tiled_mma).get_slice(tidx)
    thr_copy_B = cute.make_tiled_copy_B(atom, tiled_mma).get_slice(tidx)
    cute.copy(atom, thr_copy_A.partition_S(mA), thr_copy_A.retile(tCrA))
    cute.copy(atom, thr_copy_B.partition_S(mB), thr_copy_B.retile(tCrB))
    cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    tCrD = cute.make_fragment_like(tCrC, mC.element_type)
    tCrD.store(tCrC.load().to(mC.element_type))
    cute.autovec_copy(tCrD, tCgC)


@cute.kernel
def mma_tile_kernel_smem_epilogue(
    tiled_mma: cute.TiledMma, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor
):
    """tensorop_gemm's epilogue: the accumulator goes to a shared-memory tile of C first,
    then, after a barrier, a TiledCopy of row-major threads takes it to global memory."""
    tidx, _, _ = cute.arch.thread_idx()
    thr_mma = tiled_mma.get_slice(tidx)
    tCgA, tCgB = thr_mma.partition_A(mA), thr_mma.partition_B(mB)
    tCrA, tCrB = tiled_mma.make_fragment_A(tCgA), tiled_mma.make_fragment_B(tCgB)
    tCrC = tiled_mma.make_fragment_C(thr_mma.partition_C(mC))
    tCrC.fill(0.0)
    cute.autovec_copy(tCgA, tCrA)
    cute.autovec_copy(tCgB, tCrB)
    cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    sC = cutlass.memory.smem.SmemAllocator().allocate_tensor(mC.element_type, mC.layout, 16)
    cute.autovec_copy(tCrC, thr_mma.partition_C(sC))
    cute.arch.barrier()
    n = cute.size(mC, mode=[1])
    threads = cute.make_ordered_layout((cute.size(tiled_mma) // n, n), order=(1, 0))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mC.element_type)
    thr_copy = cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 1))).get_slice(tidx)
    tDsC, tDgC = thr_copy.partition_S(sC), thr_copy.partition_D(mC)
    tDrC = cute.make_fragment_like(tDsC)
    cute.autovec_copy(tDsC, tDrC)
    cute.copy(atom, tDrC, tDgC)


mma_tile_kernel_smem_epilogue__never_copied_out = edited(
    mma_tile_kernel_smem_epilogue,
    "mma_tile_kernel_smem_epilogue__never_copied_out",
    ("    cute.copy(atom, tDrC, tDgC)\n", ""),
)


@cute.kernel
def mma_tile_kernel__separate_d(
    tiled_mma: cute.TiledMma, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor
):
    """D = A * B + C into a fragment D apart from the zeroed C, then D stored: right by
    cute.gemm's docstring, but CuTe DSL 4.8.1 writes the MMA's result into C and leaves D
    unwritten, so the compiler removes the MMA and the store (no mma.sync in the PTX). The
    hint says it is CuTe DSL's fault, and to pass the one accumulator as D and C."""
    tid, _, _ = cute.arch.thread_idx()
    thr = tiled_mma.get_slice(tid)
    tCgC = thr.partition_C(mC)
    tCrZ = tiled_mma.make_fragment_C(tCgC)
    tCrD = tiled_mma.make_fragment_C(tCgC)
    tCrZ.fill(0.0)
    tCrA = tiled_mma.make_fragment_A(thr.partition_A(mA))
    tCrB = tiled_mma.make_fragment_B(thr.partition_B(mB))
    tCrA.store(thr.partition_A(mA).load())
    tCrB.store(thr.partition_B(mB).load())
    cute.gemm(tiled_mma, tCrD, tCrA, tCrB, tCrZ)
    cute.autovec_copy(tCrD, tCgC)


REFERENCE = {"06.mma_tile": mma_tile_kernel}
WRONG = {
    "06.mma_tile": {
        mma_tile_kernel__a_as_b: ("wrong partition mode", "cpu"),
        mma_tile_kernel__no_clear: ("accumulator not cleared", "cpu"),
        mma_tile_kernel__slice_zero: ("get_slice(tid)", "cpu"),
        mma_tile_kernel__b_transposed: ("swapped strides", "gpu"),
        mma_tile_kernel_smem_epilogue__never_copied_out: ("store the accumulator", "cpu"),
        mma_tile_kernel__separate_d: ("CuTe DSL's fault", "cpu"),
    }
}
ALTERNATIVES = {
    "06.mma_tile": [
        mma_tile_kernel_tensor_ssa,
        mma_tile_kernel_tiled_copies,
        mma_tile_kernel_smem_epilogue,
    ]
}
