"""Notebook 07's kernel exercise: the multistage cp.async main loop of the SM80 GEMM.

`mainloop` is a method of kernels.sm80_gemm.Sm80Gemm (`self.cfg` is the Config); the
prologue has committed k-tiles 0 .. stages-2, one group each, and next_k = stages - 1.
"""

import cutlass
import cutlass.cute as cute

from course.exercises.learner_code import edited


@cute.jit
def mainloop(self, tiled_mma, f, copy_a, tAgA, tAsA, pA, copy_b, tBgB, tBsB, pB, k_tiles, next_k):
    stages = self.cfg.stages
    k_blocks = cute.size(f.tCrA, mode=[2])
    read = cutlass.Int32(0)  # the stage holding k-tile t
    write = cutlass.Int32(stages - 1)  # the stage read last iteration: free once all synced
    for t in range(k_tiles):
        cute.arch.cp_async_wait_group(stages - 2)  # k-tile t landed (this thread's copies)
        cute.arch.sync_threads()  # ... everyone's; and nobody still reads stage `write`
        if next_k < k_tiles:
            cute.copy(
                copy_a, tAgA[None, None, None, next_k], tAsA[None, None, None, write], pred=pA
            )
            cute.copy(
                copy_b, tBgB[None, None, None, next_k], tBsB[None, None, None, write], pred=pB
            )
        cute.arch.cp_async_commit_group()  # one group per iteration, even an empty one
        next_k = next_k + 1
        # ldmatrix k-block kb + 1 while the tensor cores multiply k-block kb
        cute.copy(f.s2r_a, f.tXsA[None, None, 0, read], f.tXrA[None, None, 0])
        cute.copy(f.s2r_b, f.tXsB[None, None, 0, read], f.tXrB[None, None, 0])
        for kb in cutlass.range_constexpr(k_blocks):
            if kb + 1 < k_blocks:
                cute.copy(f.s2r_a, f.tXsA[None, None, kb + 1, read], f.tXrA[None, None, kb + 1])
                cute.copy(f.s2r_b, f.tXsB[None, None, kb + 1, read], f.tXrB[None, None, kb + 1])
            cute.gemm(tiled_mma, f.acc, f.tCrA[None, None, kb], f.tCrB[None, None, kb], f.acc)
        read = (read + 1) % stages
        write = (write + 1) % stages


# the variants read every k-block with its own ldmatrix (no prefetch of k-block kb + 1)
PREFETCHED = """        # ldmatrix k-block kb + 1 while the tensor cores multiply k-block kb
        cute.copy(f.s2r_a, f.tXsA[None, None, 0, read], f.tXrA[None, None, 0])
        cute.copy(f.s2r_b, f.tXsB[None, None, 0, read], f.tXrB[None, None, 0])
        for kb in cutlass.range_constexpr(k_blocks):
            if kb + 1 < k_blocks:
                cute.copy(f.s2r_a, f.tXsA[None, None, kb + 1, read], f.tXrA[None, None, kb + 1])
                cute.copy(f.s2r_b, f.tXsB[None, None, kb + 1, read], f.tXrB[None, None, kb + 1])
            cute.gemm(tiled_mma, f.acc, f.tCrA[None, None, kb], f.tCrB[None, None, kb], f.acc)
"""
PLAIN = """        for kb in cutlass.range_constexpr(k_blocks):
            cute.copy(f.s2r_a, f.tXsA[None, None, kb, read], f.tXrA[None, None, kb])
            cute.copy(f.s2r_b, f.tXsB[None, None, kb, read], f.tXrB[None, None, kb])
            cute.gemm(tiled_mma, f.acc, f.tCrA[None, None, kb], f.tCrB[None, None, kb], f.acc)
"""
WAIT = (
    "        cute.arch.cp_async_wait_group(stages - 2)  # k-tile t landed (this thread's copies)\n"
)
SYNC = "        cute.arch.sync_threads()  # ... everyone's; and nobody still reads stage `write`\n"


def plain_loop_with(name: str, *edits):
    return edited(mainloop, name, (PREFETCHED, PLAIN), *edits)


mainloop__wait_all = plain_loop_with(
    "mainloop__wait_all",
    (WAIT, "        cute.arch.cp_async_wait_group(0)  # waits for the prefetched k-tiles too\n"),
)
mainloop__no_sync = plain_loop_with("mainloop__no_sync", (SYNC, ""))
mainloop__next_stage = plain_loop_with(
    "mainloop__next_stage",
    ("write = cutlass.Int32(stages - 1)", "write = cutlass.Int32(1)  # k-tile t+1's, in flight"),
)
mainloop__one_k_tile_short = plain_loop_with(
    "mainloop__one_k_tile_short",
    ("for t in range(k_tiles):", "for t in range(k_tiles - 1):  # the last is never multiplied"),
)

# the next k-tile copied into the stage this iteration reads (the wait and sync are right)
mainloop__copy_into_read_stage = edited(
    mainloop,
    "mainloop__copy_into_read_stage",
    ("tAsA[None, None, None, write]", "tAsA[None, None, None, read]"),
    ("tBsB[None, None, None, write]", "tBsB[None, None, None, read]"),
)


# correct, written otherwise: each k-block read from shared memory right before its MMA (no
# ldmatrix prefetch), and the stages computed from t instead of stepped
mainloop_plain = plain_loop_with("mainloop_plain")
mainloop_stages_from_t = edited(
    mainloop,
    "mainloop_stages_from_t",
    (
        "    read = cutlass.Int32(0)  # the stage holding k-tile t\n"
        "    write = cutlass.Int32(stages - 1)  # the stage read last iteration: free once all synced\n",
        "",
    ),
    (
        "    for t in range(k_tiles):\n",
        "    for t in range(k_tiles):\n        read = t % stages\n"
        "        write = (t + stages - 1) % stages  # the stage k-tile t-1 was read from\n",
    ),
    ("        read = (read + 1) % stages\n        write = (write + 1) % stages\n", ""),
)


@cute.jit
def mainloop_register_pipeline(
    self, tiled_mma, f, copy_a, tAgA, tAsA, pA, copy_b, tBgB, tBsB, pB, k_tiles, next_k
):
    """Ordered the way NVIDIA's Ampere tensorop_gemm orders its main loop: k-tile 0 waited
    for and its k-block 0 read before the loop; inside, the last k-block of a k-tile moves the
    shared-memory view to the next stage and waits + syncs there, so k-block 0 of the next
    k-tile is read while this k-tile's last MMA runs; the cp.async of the next k-tile goes out
    at k-block 0, into the stage the previous k-tile was read from."""
    stages = self.cfg.stages
    k_blocks = cute.size(f.tCrA, mode=[2])
    pipe_read = cutlass.Int32(0)
    pipe_write = cutlass.Int32(stages - 1)
    tXsA_p = f.tXsA[None, None, None, pipe_read]
    tXsB_p = f.tXsB[None, None, None, pipe_read]
    if k_blocks > 1:
        cute.arch.cp_async_wait_group(stages - 2)
        cute.arch.sync_threads()
        cute.copy(f.s2r_a, tXsA_p[None, None, 0], f.tXrA[None, None, 0])
        cute.copy(f.s2r_b, tXsB_p[None, None, 0], f.tXrB[None, None, 0])
    for _ in range(k_tiles):
        for kb in cutlass.range(k_blocks, unroll_full=True):
            if kb == k_blocks - 1:  # the next k-tile's stage: landed, and read by nobody else
                tXsA_p = f.tXsA[None, None, None, pipe_read]
                tXsB_p = f.tXsB[None, None, None, pipe_read]
                cute.arch.cp_async_wait_group(stages - 2)
                cute.arch.sync_threads()
            kb_next = (kb + 1) % k_blocks
            cute.copy(f.s2r_a, tXsA_p[None, None, kb_next], f.tXrA[None, None, kb_next])
            cute.copy(f.s2r_b, tXsB_p[None, None, kb_next], f.tXrB[None, None, kb_next])
            if kb == 0:
                if next_k < k_tiles:
                    cute.copy(
                        copy_a,
                        tAgA[None, None, None, next_k],
                        tAsA[None, None, None, pipe_write],
                        pred=pA,
                    )
                    cute.copy(
                        copy_b,
                        tBgB[None, None, None, next_k],
                        tBsB[None, None, None, pipe_write],
                        pred=pB,
                    )
                next_k = next_k + 1
                cute.arch.cp_async_commit_group()
                pipe_write = pipe_read
                pipe_read = pipe_read + 1
                if pipe_read == stages:
                    pipe_read = 0
            cute.gemm(tiled_mma, f.acc, f.tCrA[None, None, kb], f.tCrB[None, None, kb], f.acc)


# another legal order: the next k-tile's cp.async issued after this k-tile's MMAs (the stage
# it writes was read by k-tile t-1, which the sync at the top has seen every thread finish)
COPY_NEXT = """        if next_k < k_tiles:
            cute.copy(
                copy_a, tAgA[None, None, None, next_k], tAsA[None, None, None, write], pred=pA
            )
            cute.copy(
                copy_b, tBgB[None, None, None, next_k], tBsB[None, None, None, write], pred=pB
            )
        cute.arch.cp_async_commit_group()  # one group per iteration, even an empty one
        next_k = next_k + 1
"""
mainloop_copy_after_mma = edited(
    mainloop,
    "mainloop_copy_after_mma",
    (COPY_NEXT, ""),
    ("        read = (read + 1) % stages\n", COPY_NEXT + "        read = (read + 1) % stages\n"),
)


REFERENCE = {"07.mainloop": mainloop}
WRONG = {
    "07.mainloop": {
        mainloop__wait_all: ("overlap", "cpu"),
        mainloop__no_sync: ("missing sync", "cpu"),
        mainloop__next_stage: ("stage", "gpu"),
        mainloop__one_k_tile_short: ("k-tile", "gpu"),
        mainloop__copy_into_read_stage: ("being read", "gpu"),
    }
}
ALTERNATIVES = {
    "07.mainloop": [
        mainloop_plain,
        mainloop_stages_from_t,
        mainloop_register_pipeline,
        mainloop_copy_after_mma,
    ]
}
