"""Notebook 11's kernel exercise: the TMA-store epilogue step of the Hopper GEMM.

`store_chunk` is a method of kernels.hopper_gemm.HopperGemm, run by the 256 consumer threads
for each 128 x 32 chunk of C; `epi` is a kernels.hopper_gemm.ChunkStore.
"""

import cutlass.cute as cute

from course.exercises.learner_code import edited


@cute.jit
def store_chunk(self, chunk, buf, coord, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])  # registers -> staging buffer
    cute.arch.fence_proxy("async.shared", space="cta")  # ... visible to the async proxy (TMA)
    epi.chunk_sync.arrive_and_wait()  # every thread's part of the chunk is written
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, coord])
        stores.producer_commit()  # one bulk group per chunk
        stores.producer_acquire()  # at most epi_stages - 1 stores still read shared memory
    epi.chunk_sync.arrive_and_wait()  # nobody writes a buffer before that wait


FENCE = (
    '    cute.arch.fence_proxy("async.shared", space="cta")  # ... visible to the async '
    "proxy (TMA)\n"
)
STORE = "        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, coord])\n"
ACQUIRE = (
    "        stores.producer_acquire()  # at most epi_stages - 1 stores still read shared memory\n"
)
SECOND_BARRIER = "    epi.chunk_sync.arrive_and_wait()  # nobody writes a buffer before that wait\n"

store_chunk__no_fence = edited(store_chunk, "store_chunk__no_fence", (FENCE, ""))
store_chunk__fence_in_the_store_warp = edited(
    store_chunk,
    "store_chunk__fence_in_the_store_warp",
    (FENCE, ""),
    (STORE, '        cute.arch.fence_proxy("async.shared", space="cta")\n' + STORE),
)
COMMIT = "        stores.producer_commit()  # one bulk group per chunk\n"
store_chunk__every_thread_stores = edited(  # no branch on the warp: all 256 threads store
    store_chunk,
    "store_chunk__every_thread_stores",
    (
        "    if epi.warp == epi.store_warp:\n" + STORE + COMMIT + ACQUIRE,
        STORE[4:] + COMMIT[4:] + ACQUIRE[4:],
    ),
)
store_chunk__no_wait = edited(store_chunk, "store_chunk__no_wait", (ACQUIRE, ""))
store_chunk__no_second_barrier = edited(
    store_chunk, "store_chunk__no_second_barrier", (SECOND_BARRIER, "")
)
store_chunk__stored_at_its_buffer = edited(
    store_chunk,
    "store_chunk__stored_at_its_buffer",
    ("epi.bSG_gC[None, coord]", "epi.bSG_gC[None, buf]"),
)

# the store always reads staging buffer 0, whatever buffer the chunk was written to: its
# commit and wait are right, its source is not (C gets chunk 0's data again and again)
store_chunk__stores_buffer_0_always = edited(
    store_chunk,
    "store_chunk__stores_buffer_0_always",
    ("epi.bSG_sC[None, buf]", "epi.bSG_sC[None, 0]"),
)


# correct, written otherwise: the fence by CuTe DSL's other name for it, and the store warp
# waiting for a free buffer before the chunk is written (as NVIDIA's epilogues order it)
store_chunk_fence_view = edited(
    store_chunk,
    "store_chunk_fence_view",
    (FENCE, "    cute.arch.fence_view_async_shared()  # the same fence.proxy.async.shared::cta\n"),
)


@cute.jit
def store_chunk_acquire_first(self, chunk, buf, coord, epi, stores):
    if epi.warp == epi.store_warp:
        stores.producer_acquire()  # buffer `buf` is no longer read by an earlier TMA store
    epi.chunk_sync.arrive_and_wait()
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    cute.arch.fence_proxy("async.shared", space="cta")
    epi.chunk_sync.arrive_and_wait()
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, coord])
        stores.producer_commit()


@cute.jit
def store_chunk_named_barrier_calls(self, chunk, buf, coord, epi, stores):
    """Spelled the way NVIDIA's Hopper dense_gemm spells its epilogue: the fence by keyword,
    the syncs as cute.arch.barrier on the consumers' named barrier (what pipeline.sync and
    NamedBarrier.arrive_and_wait issue), tensors sliced with tuple coordinates."""
    sync = epi.chunk_sync
    cute.copy(epi.r2s, chunk, epi.tRS_sC[(None, None, None, buf)])
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.barrier(barrier_id=sync.barrier_id, number_of_threads=sync.num_threads)
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[(None, buf)], epi.bSG_gC[(None, coord)])
        stores.producer_commit()
        stores.producer_acquire()
    cute.arch.barrier(barrier_id=sync.barrier_id, number_of_threads=sync.num_threads)


REFERENCE = {"11.tma_store": store_chunk}
WRONG = {
    "11.tma_store": {
        store_chunk__no_fence: ("async proxy", "cpu"),
        store_chunk__fence_in_the_store_warp: ("its own writes", "cpu"),
        store_chunk__every_thread_stores: ("every consumer thread", "cpu"),
        store_chunk__no_wait: ("reused while TMA may still read", "cpu"),
        store_chunk__no_second_barrier: ("overwrite a buffer", "cpu"),
        store_chunk__stored_at_its_buffer: ("chunk's own place", "gpu"),
        store_chunk__stores_buffer_0_always: ("epi.bSG_sC[None, buf]", "gpu"),
    }
}
ALTERNATIVES = {
    "11.tma_store": [
        store_chunk_fence_view,
        store_chunk_acquire_first,
        store_chunk_named_barrier_calls,
    ]
}
