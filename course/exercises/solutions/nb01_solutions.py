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


REFERENCE = {"01.saxpy": saxpy_kernel}
WRONG = {
    "01.saxpy": {
        saxpy_kernel__no_guard: ("predicate", "cpu"),
        saxpy_kernel__thread_index_only: ("block", "cpu"),
    }
}
ALTERNATIVES = {"01.saxpy": [saxpy_kernel_grid_stride, saxpy_kernel_named_values]}
