"""Notebook 01's kernel exercise: a first elementwise kernel, out = alpha * x + y."""

import cutlass
import cutlass.cute as cute


@cute.kernel
def saxpy_kernel(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy_kernel__no_guard(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid
    gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy_kernel__thread_index_only(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    i, _, _ = cute.arch.thread_idx()
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


# correct, written otherwise --------------------------------------------------------------
@cute.kernel
def saxpy_kernel_grid_stride(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    """A grid-stride loop: correct for any grid, here one pass."""
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    blocks, _, _ = cute.arch.grid_dim()
    for i in range(bid * threads + tid, n, blocks * threads):
        gOut[i] = gY[i] + gX[i] * alpha


@cute.kernel
def saxpy_kernel_named_values(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    i = cute.arch.block_idx()[0] * cute.arch.block_dim()[0] + cute.arch.thread_idx()[0]
    if n > i:
        x = gX[i]
        y = gY[i]
        gOut[i] = x * alpha + y


@cute.kernel
def saxpy_kernel_tiled_copy(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    """NVIDIA's elementwise_add spelling: the block's tile by zipped_divide, each thread's
    share by a TiledCopy, register fragments, and a predicate per value from an identity
    tensor (cute.elem_less against the shape) on every copy."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tiler, blk = (256,), (None, bidx)  # the launcher's 256-thread blocks
    blkX, blkY, blkOut = (cute.zipped_divide(t, tiler)[blk] for t in (gX, gY, gOut))
    blkCrd = cute.zipped_divide(cute.make_identity_tensor(gOut.shape), tiler)[blk]
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gX.element_type)
    tiled_copy = cute.make_tiled_copy_tv(atom, cute.make_layout(256), cute.make_layout(1))
    thr_copy = tiled_copy.get_slice(tidx)
    thrX, thrY, thrOut = (thr_copy.partition_S(t) for t in (blkX, blkY, blkOut))
    thrCrd = thr_copy.partition_S(blkCrd)
    frgX, frgY, frgOut = (cute.make_fragment_like(t) for t in (thrX, thrY, thrOut))
    frgPred = cute.make_rmem_tensor(thrCrd.shape, cutlass.Boolean)
    for i in range(cute.size(frgPred)):
        frgPred[i] = cute.elem_less(thrCrd[i], gOut.shape)
    cute.copy(atom, thrX, frgX, pred=frgPred)
    cute.copy(atom, thrY, frgY, pred=frgPred)
    frgOut.store(alpha * frgX.load() + frgY.load())
    cute.copy(atom, frgOut, thrOut, pred=frgPred)


@cute.kernel
def saxpy_kernel_local_tile(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    """The block's tile by local_tile, the tail guarded by the thread's coordinate in an
    identity tensor (the GEMM examples' predication), one element per thread."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tX, tY, tOut = (cute.local_tile(t, (256,), (bidx,)) for t in (gX, gY, gOut))
    tCrd = cute.local_tile(cute.make_identity_tensor(gOut.shape), (256,), (bidx,))
    if cute.elem_less(tCrd[tidx], gOut.shape):
        tOut[tidx] = alpha * tX[tidx] + tY[tidx]


REFERENCE = {"01.saxpy": saxpy_kernel}
WRONG = {
    "01.saxpy": {
        saxpy_kernel__no_guard: ("predicate", "cpu"),
        saxpy_kernel__thread_index_only: ("block", "cpu"),
    }
}
ALTERNATIVES = {
    "01.saxpy": [
        saxpy_kernel_grid_stride,
        saxpy_kernel_named_values,
        saxpy_kernel_tiled_copy,
        saxpy_kernel_local_tile,
    ]
}
