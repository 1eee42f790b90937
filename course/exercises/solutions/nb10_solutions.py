"""Notebook 10's kernel exercise: the WGMMA main loop of kernels.wgmma_gemm.

`mainloop` is a method of kernels.wgmma_gemm.WgmmaGemm. The prologue has filled the ring
(`produce` is the next k-tile to load); `read` is the stage of k-tile t, `release` the
oldest stage not handed back yet; `self.load_k_tile(ring, produce, *loads)` is step 09's
TMA load of k-tile produce.count into stage produce.index. The wrong variants are the
reference with one edit each.
"""

import cutlass
import cutlass.cute as cute

from course.exercises.learner_code import edited


@cute.jit
def mainloop(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles, warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)  # k-tile t's bytes have landed
        cute.nvgpu.warpgroup.fence()  # accumulator registers ready for the async proxy
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(
                tiled_mma,
                acc,
                tCrA[None, None, kb, read.index],
                tCrB[None, None, kb, read.index],
                acc,
            )
        cute.nvgpu.warpgroup.commit_group()  # k-tile t's wgmmas: one group
        read.advance()
        if t > 0:
            cute.nvgpu.warpgroup.wait_group(1)  # only k-tile t's group may still run
            ring.consumer_release(release)  # so k-tile t-1's stage is free
            release.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


FENCE = "        cute.nvgpu.warpgroup.fence()  # accumulator registers ready for the async proxy\n"
COMMIT = "        cute.nvgpu.warpgroup.commit_group()  # k-tile t's wgmmas: one group\n"
WAIT = "            cute.nvgpu.warpgroup.wait_group(1)  # only k-tile t's group may still run\n"
RELEASE = (
    "            ring.consumer_release(release)  # so k-tile t-1's stage is free\n"
    "            release.advance()\n"
)

mainloop__no_fence = edited(mainloop, "mainloop__no_fence", (FENCE, ""))
mainloop__release_before_wait = edited(
    mainloop,
    "mainloop__release_before_wait",
    (WAIT + RELEASE, RELEASE + "            cute.nvgpu.warpgroup.wait_group(1)  # too late\n"),
)
mainloop__no_wait = edited(mainloop, "mainloop__no_wait", (WAIT, ""))
mainloop__wait_all = edited(mainloop, "mainloop__wait_all", ("wait_group(1)", "wait_group(0)"))
mainloop__no_commit = edited(mainloop, "mainloop__no_commit", (COMMIT, ""))
mainloop__releases_stage_in_use = edited(  # k-tile t's own stage, its wgmmas still in flight
    mainloop,
    "mainloop__releases_stage_in_use",
    (
        COMMIT + "        read.advance()\n        if t > 0:\n" + WAIT + RELEASE,
        COMMIT + "        if t > 0:\n" + WAIT + "        ring.consumer_release(read)\n"
        "        read.advance()\n        if t > 0:\n",
    ),
)


# correct, written otherwise --------------------------------------------------------------
# NVIDIA's Hopper examples fence once, before the loop: wgmmas of one shape that accumulate
# into the same registers are ordered without a fence between them (the PTX ISA)
mainloop_fenced_once = edited(
    mainloop,
    "mainloop_fenced_once",
    (FENCE, ""),
    (
        "    k_blocks = cute.size(tCrA, mode=[2])\n",
        "    k_blocks = cute.size(tCrA, mode=[2])\n"
        "    cute.nvgpu.warpgroup.fence()  # once: the accumulator was written before the loop\n",
    ),
)


@cute.jit
def mainloop_first_k_tile_peeled(
    self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles, warp, loads
):
    """k-tile 0 issued before the loop, as NVIDIA's Hopper GEMM issues its prologue MMAs;
    every later k-tile then retires the one before it."""
    k_blocks = cute.size(tCrA, mode=[2])
    cute.nvgpu.warpgroup.fence()
    ring.consumer_wait(read)
    for kb in cutlass.range(k_blocks, unroll_full=True):
        cute.gemm(
            tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc
        )
    cute.nvgpu.warpgroup.commit_group()
    read.advance()
    for _ in range(1, k_tiles):
        ring.consumer_wait(read)
        for kb in cutlass.range(k_blocks, unroll_full=True):
            cute.gemm(
                tiled_mma,
                acc,
                tCrA[None, None, kb, read.index],
                tCrB[None, None, kb, read.index],
                acc,
            )
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        cute.nvgpu.warpgroup.wait_group(1)  # the previous k-tile's wgmmas are done
        ring.consumer_release(release)
        release.advance()
        if warp == 0 and produce.count < k_tiles:
            self.load_k_tile(ring, produce, *loads)
            produce.advance()


@cute.jit
def mainloop_released_a_k_tile_later(
    self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles, warp, loads
):
    """Each k-tile ends with wait_group(1); the stage it retired is handed back at the top of
    the next k-tile, before its wait. Correct: a stage is released only after its group
    completed."""
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        if t > 1:  # k-tile t-2's group was retired by the last k-tile's wait_group(1)
            ring.consumer_release(release)
            release.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()
        ring.consumer_wait(read)
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(
                tiled_mma,
                acc,
                tCrA[None, None, kb, read.index],
                tCrB[None, None, kb, read.index],
                acc,
            )
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        cute.nvgpu.warpgroup.wait_group(1)


@cute.jit
def mainloop_peeked_try_wait(
    self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles, warp, loads
):
    """Spelled the way NVIDIA's Hopper dense_gemm spells its consumer: the next stage peeked
    with consumer_try_wait and its token handed to consumer_wait; ACCUMULATE off for the
    first wgmma (the kernel's zeros are not read), on after it; k-blocks in
    cutlass.range(..., unroll_full=True), k-tiles in cutlass.range(..., unroll=1);
    wait_group(k_pipe_mmas) with one k-tile left in flight."""
    k_pipe_mmas = 1
    k_blocks = cute.size(tCrA, mode=[2])
    peek = cutlass.Boolean(1)
    if read.count < k_tiles:
        peek = ring.consumer_try_wait(read)
    tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, False)
    cute.nvgpu.warpgroup.fence()
    for t in cutlass.range(k_tiles, unroll=1):
        ring.consumer_wait(read, peek)
        for kb in cutlass.range(k_blocks, unroll_full=True):
            stage = (None, None, kb, read.index)
            cute.gemm(tiled_mma, acc, tCrA[stage], tCrB[stage], acc)
            tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        peek = cutlass.Boolean(1)
        if read.count < k_tiles:
            peek = ring.consumer_try_wait(read)
        if t >= k_pipe_mmas:
            cute.nvgpu.warpgroup.wait_group(k_pipe_mmas)
            ring.consumer_release(release)
            release.advance()
            if warp == 0 and produce.count < k_tiles:
                self.load_k_tile(ring, produce, *loads)
                produce.advance()


# one cute.gemm over the whole k-tile, tCrA[None, None, None, stage]: CuTe issues the wgmma of
# every k-block itself, in order, into the same group (as NVIDIA's dense_gemm writes its
# k-block loop's body as one call where the MMA atom allows)
K_BLOCK_LOOP = """        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(
                tiled_mma,
                acc,
                tCrA[None, None, kb, read.index],
                tCrB[None, None, kb, read.index],
                acc,
            )
"""
mainloop_whole_k_tile_gemm = edited(
    mainloop,
    "mainloop_whole_k_tile_gemm",
    (
        K_BLOCK_LOOP,
        "        cute.gemm(tiled_mma, acc, tCrA[None, None, None, read.index], "
        "tCrB[None, None, None, read.index], acc)\n",
    ),
)


REFERENCE = {"10.wgmma_mainloop": mainloop}
ALTERNATIVES = {
    "10.wgmma_mainloop": [
        mainloop_fenced_once,
        mainloop_first_k_tile_peeled,
        mainloop_released_a_k_tile_later,
        mainloop_peeked_try_wait,
        mainloop_whole_k_tile_gemm,
    ]
}
WRONG = {
    "10.wgmma_mainloop": {
        mainloop__no_fence: ("fence", "cpu"),
        mainloop__release_before_wait: ("released too early", "cpu"),
        mainloop__no_wait: ("no wait_group", "cpu"),
        mainloop__wait_all: ("serialises", "cpu"),
        mainloop__no_commit: ("commit", "cpu"),
        mainloop__releases_stage_in_use: ("still being read", "cpu"),
    }
}
