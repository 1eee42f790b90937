"""Small CuTe DSL kernels with one planted bug each, for tests/test_execute_hazards.py.

Each launcher takes its bug as a Constexpr switch, so the same kernel runs once with the bug
and once without: the executor must name the hazard in the first case and find none in the
second.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the annotations
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync
from cutlass.memory.smem import SmemAllocator

THREADS = 128
VEC = 4


@cute.kernel
def neighbour_kernel(
    gIn: cute.Tensor,
    gOut: cute.Tensor,
    sync_before_read: cutlass.Constexpr,
    sync_before_overwrite: cutlass.Constexpr,
):
    """Each thread stages its element, reads its neighbour's, then overwrites its own."""
    tid, _, _ = cute.arch.thread_idx()
    smem = SmemAllocator()
    staged = smem.allocate_tensor(cutlass.Float32, cute.make_layout(THREADS), byte_alignment=16)
    staged[tid] = gIn[tid]
    if cutlass.const_expr(sync_before_read):
        cute.arch.sync_threads()
    neighbour = staged[(tid + 1) % THREADS]
    if cutlass.const_expr(sync_before_overwrite):
        cute.arch.sync_threads()
    staged[tid] = neighbour * 2.0
    cute.arch.sync_threads()
    gOut[tid] = staged[tid]


@cute.jit
def neighbour(
    in_ptr: cute.Pointer,
    out_ptr: cute.Pointer,
    stream: cuda.CUstream,
    sync_before_read: cutlass.Constexpr,
    sync_before_overwrite: cutlass.Constexpr,
):
    layout = cute.make_layout(THREADS)
    neighbour_kernel(
        cute.make_tensor(in_ptr, layout),
        cute.make_tensor(out_ptr, layout),
        sync_before_read,
        sync_before_overwrite,
    ).launch(grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream)


@cute.kernel
def staged_copy_kernel(
    gIn: cute.Tensor, gOut: cute.Tensor, g2s: cute.TiledCopy, wait: cutlass.Constexpr
):
    """cp.async a tile into shared memory, then read back the next thread's vector."""
    tid, _, _ = cute.arch.thread_idx()
    smem = SmemAllocator()
    staged = smem.allocate_tensor(
        cutlass.Float32, cute.make_layout(THREADS * VEC), byte_alignment=128
    )
    thr = g2s.get_slice(tid)
    cute.copy(g2s, thr.partition_S(gIn), thr.partition_D(staged))
    cute.arch.cp_async_commit_group()
    if cutlass.const_expr(wait):
        cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()
    for v in cutlass.range_constexpr(VEC):
        gOut[tid * VEC + v] = staged[((tid + 1) % THREADS) * VEC + v]


@cute.jit
def staged_copy(
    in_ptr: cute.Pointer, out_ptr: cute.Pointer, stream: cuda.CUstream, wait: cutlass.Constexpr
):
    layout = cute.make_layout(THREADS * VEC)
    atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
    g2s = cute.make_tiled_copy_tv(atom, cute.make_layout(THREADS), cute.make_layout(VEC))
    staged_copy_kernel(
        cute.make_tensor(in_ptr, layout), cute.make_tensor(out_ptr, layout), g2s, wait
    ).launch(grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream)


@cute.kernel
def partial_barrier_kernel(gOut: cute.Tensor, at_barrier: cutlass.Constexpr):
    """Only threads below `at_barrier` reach the barrier."""
    tid, _, _ = cute.arch.thread_idx()
    if tid < at_barrier:
        cute.arch.sync_threads()
    gOut[tid] = cutlass.Float32(1.0)


@cute.jit
def partial_barrier(out_ptr: cute.Pointer, stream: cuda.CUstream, at_barrier: cutlass.Constexpr):
    partial_barrier_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS)), at_barrier).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def voted_kernel(gOut: cute.Tensor):
    """Uses an instruction the executor does not model (a bit reversal, brev)."""
    tid, _, _ = cute.arch.thread_idx()
    if cute.arch.brev(cutlass.Uint32(tid)) != 0:
        gOut[tid] = cutlass.Float32(1.0)


@cute.jit
def voted(out_ptr: cute.Pointer, stream: cuda.CUstream):
    voted_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS))).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def spin_kernel(gOut: cute.Tensor):
    """A loop whose bound never changes: it never ends."""
    tid, _, _ = cute.arch.thread_idx()
    i = tid * 0
    while i < 1:
        gOut[tid] = cutlass.Float32(i)


@cute.jit
def spin(out_ptr: cute.Pointer, stream: cuda.CUstream):
    spin_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS))).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def per_lane_loops_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    """Loops whose trip counts differ between the threads of a warp: a grid-stride loop
    (each thread starts at its own index) and a while loop that runs tid times."""
    tid, _, _ = cute.arch.thread_idx()
    for i in range(tid, n, THREADS):  # thread t writes t, t + THREADS, ...
        gOut[i] = cutlass.Float32(i)
    total, j = tid * 0, tid * 0
    while j < tid:  # 0 + 1 + ... + (tid - 1)
        total = total + j
        j = j + 1
    gOut[n + tid] = cutlass.Float32(total)


@cute.jit
def per_lane_loops(out_ptr: cute.Pointer, n: cutlass.Int32, stream: cuda.CUstream):
    per_lane_loops_kernel(cute.make_tensor(out_ptr, cute.make_layout(n + THREADS)), n).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def looped_kernel(gOut: cute.Tensor, trips: cutlass.Int32, past_end: cutlass.Constexpr):
    """Each thread writes its element once per trip of a loop the executor rewrites; the
    planted bug also writes the next element, which the last thread has past the end."""
    tid, _, _ = cute.arch.thread_idx()
    for t in range(trips):
        gOut[tid] = cutlass.Float32(t)
        if cutlass.const_expr(past_end):
            gOut[tid + 1] = cutlass.Float32(t)


@cute.jit
def looped(
    out_ptr: cute.Pointer, trips: cutlass.Int32, stream: cuda.CUstream, past_end: cutlass.Constexpr
):
    looped_kernel(cute.make_tensor(out_ptr, cute.make_layout(THREADS)), trips, past_end).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )
