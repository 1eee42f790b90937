"""Small Hopper kernels with one planted mistake each, for tests/test_execute_hopper.py: the
CPU executor must name the mistake (a read of a TMA load's stage before its mbarrier wait,
an mbarrier waited on by warps the init was not made visible to,
a TMA store of threads' writes with no proxy fence, a staging buffer rewritten while a TMA
store still reads it). Each is a (ROWS, COLS) float32 tile, one CTA of THREADS threads.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.memory.smem import SmemAllocator

ROWS, COLS, THREADS = 32, 32, 128
TX_BYTES = ROWS * COLS * 4
MISTAKES = (
    "read_before_wait",
    "no_sync_after_init",
    "store_without_fence",
    "overwrite_before_read_wait",
)


def _tile(ptr):
    return cute.make_tensor(ptr, cute.make_layout((ROWS, COLS), stride=(COLS, 1)))


def _smem_layout():
    return cute.make_layout((ROWS, COLS), stride=(COLS, 1))


@cute.kernel
def load_kernel(
    tma: cute.CopyAtom, tSrc: cute.Tensor, gOut: cute.Tensor, mistake: cutlass.Constexpr
):
    """TMA loads the tile; every thread copies it out (after the wait, unless the mistake
    is reading first)."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    sTile = smem.allocate_tensor(cutlass.Float32, _smem_layout(), 128)
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    if cutlass.const_expr(mistake != "no_sync_after_init"):
        cute.arch.sync_threads()
    gSrc = cute.local_tile(tSrc, (ROWS, COLS), (None, None))
    tAs, tAg = cute.nvgpu.cpasync.tma_partition(
        tma, 0, cute.make_layout(1), cute.group_modes(sTile, 0, 2), cute.group_modes(gSrc, 0, 2)
    )
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, TX_BYTES)
        cute.copy(tma, tAg[(None, 0, 0)], tAs, tma_bar_ptr=bar)
    if cutlass.const_expr(mistake != "read_before_wait"):
        cute.arch.mbarrier_wait(bar, 0)
    for v in cutlass.range_constexpr(ROWS * COLS // THREADS):
        i = tidx + v * THREADS
        gOut[i // COLS, i % COLS] = sTile[i // COLS, i % COLS]  # BUG when not waited for
    cute.arch.mbarrier_wait(bar, 0)


@cute.jit
def load(src_ptr: cute.Pointer, out_ptr: cute.Pointer, mistake: cutlass.Constexpr,
         stream: cuda.CUstream):  # fmt: skip
    tma, tSrc = cute.nvgpu.cpasync.make_tiled_tma_atom(
        cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), _tile(src_ptr), _smem_layout(), (ROWS, COLS)
    )
    load_kernel(tma, tSrc, _tile(out_ptr), mistake).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def store_kernel(
    tma: cute.CopyAtom, tDst: cute.Tensor, gSrc: cute.Tensor, mistake: cutlass.Constexpr
):
    """Threads fill the staging tile, warp 0 stores it by TMA; then the tile is filled
    again (doubled) and stored a second time."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = SmemAllocator()
    sTile = smem.allocate_tensor(cutlass.Float32, _smem_layout(), 128)
    gDst = cute.local_tile(tDst, (ROWS, COLS), (None, None))
    tBs, tBg = cute.nvgpu.cpasync.tma_partition(
        tma, 0, cute.make_layout(1), cute.group_modes(sTile, 0, 2), cute.group_modes(gDst, 0, 2)
    )
    for v in cutlass.range_constexpr(ROWS * COLS // THREADS):
        i = tidx + v * THREADS
        sTile[i // COLS, i % COLS] = gSrc[i // COLS, i % COLS]
    if cutlass.const_expr(mistake != "store_without_fence"):
        cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()
    if warp == 0:
        cute.copy(tma, tBs, tBg[(None, 0, 0)])
        cute.arch.cp_async_bulk_commit_group()
        if cutlass.const_expr(mistake != "overwrite_before_read_wait"):
            cute.arch.cp_async_bulk_wait_group(0, read=True)
    cute.arch.sync_threads()
    for v in cutlass.range_constexpr(ROWS * COLS // THREADS):
        i = tidx + v * THREADS
        sTile[i // COLS, i % COLS] = gSrc[i // COLS, i % COLS] * 2.0  # BUG if not yet read
    if warp == 0:
        cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def store(src_ptr: cute.Pointer, out_ptr: cute.Pointer, mistake: cutlass.Constexpr,
          stream: cuda.CUstream):  # fmt: skip
    tma, tDst = cute.nvgpu.cpasync.make_tiled_tma_atom(
        cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), _tile(out_ptr), _smem_layout(), (ROWS, COLS)
    )
    store_kernel(tma, tDst, _tile(src_ptr), mistake).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def cluster_kernel(gOut: cute.Tensor, mistake: cutlass.Constexpr):
    """A cluster of 2: each CTA's barrier is completed by its partner's remote arrival;
    warps 0-1 meet at named barrier 1; each thread writes its CTA's rank in the cluster."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    smem = SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()
    if cutlass.const_expr(mistake == "odd_register_count"):
        cute.arch.setmaxregister_decrease(36)  # BUG: a multiple of 8 only
    else:
        cute.arch.setmaxregister_decrease(40)
    if cutlass.const_expr(mistake != "no_remote_arrive"):
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(bar, rank ^ 1)  # the partner CTA's barrier
    cute.arch.mbarrier_wait(bar, 0)
    if warp < 2:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
    gOut[bidx * THREADS + tidx] = cutlass.Float32(rank)
    cute.arch.cluster_arrive()  # no CTA leaves while its partner may still arrive on it
    cute.arch.cluster_wait()


@cute.jit
def cluster(out_ptr: cute.Pointer, mistake: cutlass.Constexpr, stream: cuda.CUstream):
    gOut = cute.make_tensor(out_ptr, cute.make_layout(4 * THREADS))
    cluster_kernel(gOut, mistake).launch(
        grid=[4, 1, 1], block=[THREADS, 1, 1], cluster=[2, 1, 1], stream=stream
    )
