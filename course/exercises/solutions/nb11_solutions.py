"""Notebook 11's kernel exercise: the TMA-store epilogue step of the Hopper GEMM.

`store_chunk` is a method of kernels.hopper_gemm.HopperGemm, run by the 256 consumer threads
for each 128 x 32 chunk of C; `epi` is a kernels.hopper_gemm.ChunkStore.
"""
import cutlass
import cutlass.cute as cute


@cute.jit
def store_chunk(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])  # registers -> staging buffer
    cute.arch.fence_proxy("async.shared", space="cta")  # ... visible to the async proxy (TMA)
    epi.chunk_sync.arrive_and_wait()  # every thread's part of the chunk is written
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
        stores.producer_commit()  # one bulk group per chunk
        stores.producer_acquire()  # at most epi_stages - 1 stores still read shared memory
    epi.chunk_sync.arrive_and_wait()  # nobody writes a buffer before that wait


@cute.jit
def store_chunk__no_fence(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    epi.chunk_sync.arrive_and_wait()
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
        stores.producer_commit()
        stores.producer_acquire()
    epi.chunk_sync.arrive_and_wait()


@cute.jit
def store_chunk__fence_in_the_store_warp(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    epi.chunk_sync.arrive_and_wait()
    if epi.warp == epi.store_warp:
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
        stores.producer_commit()
        stores.producer_acquire()
    epi.chunk_sync.arrive_and_wait()


@cute.jit
def store_chunk__every_thread_stores(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    cute.arch.fence_proxy("async.shared", space="cta")
    epi.chunk_sync.arrive_and_wait()
    cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
    stores.producer_commit()
    stores.producer_acquire()
    epi.chunk_sync.arrive_and_wait()


@cute.jit
def store_chunk__no_wait(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    cute.arch.fence_proxy("async.shared", space="cta")
    epi.chunk_sync.arrive_and_wait()
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
        stores.producer_commit()
    epi.chunk_sync.arrive_and_wait()


@cute.jit
def store_chunk__no_second_barrier(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    cute.arch.fence_proxy("async.shared", space="cta")
    epi.chunk_sync.arrive_and_wait()
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, at])
        stores.producer_commit()
        stores.producer_acquire()


@cute.jit
def store_chunk__stored_at_its_buffer(self, chunk, buf, at, epi, stores):
    cute.copy(epi.r2s, chunk, epi.tRS_sC[None, None, None, buf])
    cute.arch.fence_proxy("async.shared", space="cta")
    epi.chunk_sync.arrive_and_wait()
    if epi.warp == epi.store_warp:
        cute.copy(epi.tma_c, epi.bSG_sC[None, buf], epi.bSG_gC[None, buf])
        stores.producer_commit()
        stores.producer_acquire()
    epi.chunk_sync.arrive_and_wait()


REFERENCE = {"11.tma_store": store_chunk}
WRONG = {"11.tma_store": {
    store_chunk__no_fence: ("async proxy", "cpu"),
    store_chunk__fence_in_the_store_warp: ("its own writes", "cpu"),
    store_chunk__every_thread_stores: ("every consumer thread", "cpu"),
    store_chunk__no_wait: ("reused while TMA may still read", "cpu"),
    store_chunk__no_second_barrier: ("overwrite a buffer", "cpu"),
    store_chunk__stored_at_its_buffer: ("chunk's own place", "gpu")}}
