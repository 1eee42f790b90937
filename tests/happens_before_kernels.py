"""Small CuTe DSL kernels whose threads hand shared memory to each other through each kind of
synchronisation the executor models, for tests/test_execute_happens_before.py.

Warp 1 writes a buffer, warp 0 reads it (each lane its neighbour's element); what orders the
write before the read is the Constexpr `order`: "mbarrier" (warp 1 arrives, warp 0 waits on
the phase), "named" (warps 0 and 1 meet at named barrier 1; warp 2 is not in it), "sync"
(sync_threads) or "none". `reader_warp` picks which warp reads (2: the one outside the named
barrier).
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the annotations
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.memory.smem import SmemAllocator

WARPS = 3


@cute.kernel
def hand_off_kernel(gOut: cute.Tensor, order: cutlass.Constexpr, reader_warp: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    warp, lane = tid // 32, tid % 32
    smem = SmemAllocator()
    buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)
    bar = smem.allocate_array(cutlass.Int64, 1)
    if tid == 0:
        cute.arch.mbarrier_init(bar, 32)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp == 1:
        buf[lane] = cutlass.Float32(lane) * 2.0
        if cutlass.const_expr(order == "mbarrier"):
            cute.arch.mbarrier_arrive(bar)
    if cutlass.const_expr(order == "named"):
        if warp < 2:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
    if cutlass.const_expr(order == "sync"):
        cute.arch.sync_threads()
    if warp == reader_warp:
        if cutlass.const_expr(order == "mbarrier"):
            cute.arch.mbarrier_wait(bar, 0)
        gOut[lane] = buf[(lane + 1) % 32]


@cute.jit
def hand_off(
    out_ptr: cute.Pointer,
    stream: cuda.CUstream,
    order: cutlass.Constexpr,
    reader_warp: cutlass.Constexpr,
):
    hand_off_kernel(cute.make_tensor(out_ptr, cute.make_layout(32)), order, reader_warp).launch(
        grid=[1, 1, 1], block=[32 * WARPS, 1, 1], stream=stream
    )


@cute.kernel
def lanes_kernel(gOut: cute.Tensor, barrier_between: cutlass.Constexpr):
    """One warp: each lane writes its element, then reads its neighbour's (a warp-wide
    named barrier between, or nothing)."""
    tid, _, _ = cute.arch.thread_idx()
    smem = SmemAllocator()
    buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)
    buf[tid] = cutlass.Float32(tid)
    if cutlass.const_expr(barrier_between):
        cute.arch.barrier(barrier_id=1, number_of_threads=32)
    gOut[tid] = buf[(tid + 1) % 32]


@cute.jit
def lanes(out_ptr: cute.Pointer, stream: cuda.CUstream, barrier_between: cutlass.Constexpr):
    lanes_kernel(cute.make_tensor(out_ptr, cute.make_layout(32)), barrier_between).launch(
        grid=[1, 1, 1], block=[32, 1, 1], stream=stream
    )
