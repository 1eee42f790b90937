"""Notebook 01's kernel exercise: a first elementwise kernel, out = alpha * x + y."""
import cutlass
import cutlass.cute as cute


@cute.kernel
def saxpy_kernel(gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor,
                 alpha: cutlass.Float32, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy_kernel__no_guard(gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor,
                           alpha: cutlass.Float32, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid
    gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy_kernel__thread_index_only(gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor,
                                    alpha: cutlass.Float32, n: cutlass.Int32):
    i, _, _ = cute.arch.thread_idx()
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


REFERENCE = {"01.saxpy": saxpy_kernel}
WRONG = {"01.saxpy": {saxpy_kernel__no_guard: ("predicate", "cpu"),
                      saxpy_kernel__thread_index_only: ("block", "cpu")}}
