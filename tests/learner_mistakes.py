"""Plausible slips of a learner new to CuTe DSL (not the exercises' own wrong variants): the
checker must name each from what it observed."""

import cutlass
import cutlass.cute as cute


def make_vector_copy__value_int(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(1))


def make_vector_copy__bare_int(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), 4)


@cute.kernel
def saxpy__tuple_index(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid = cute.arch.thread_idx()
    bid = cute.arch.block_idx()
    i = bid * 256 + tid
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy__early_return(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * 256 + tid
    if i >= n:
        return
    gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy__constexpr_range(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    for i in cutlass.range_constexpr(n):
        gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy__float_index(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = (bid * 256 + tid) / 1
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]
