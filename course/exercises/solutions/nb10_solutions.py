"""Notebook 10's kernel exercise: the WGMMA main loop of kernels.wgmma_gemm.

`mainloop` is a method of kernels.wgmma_gemm.WgmmaGemm. The prologue has filled the ring
(`produce` is the next k-tile to load); `read` is the stage of k-tile t, `release` the
oldest stage not handed back yet; `self.load_k_tile(ring, produce, *loads)` is step 09's
TMA load of k-tile produce.count into stage produce.index.
"""
import cutlass
import cutlass.cute as cute


@cute.jit
def mainloop(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles, warp,
             loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)  # k-tile t's bytes have landed
        cute.nvgpu.warpgroup.fence()  # accumulator registers ready for the async proxy
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
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


@cute.jit
def mainloop__no_fence(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles,
                       warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)
        for kb in cutlass.range_constexpr(k_blocks):  # no wgmma.fence first
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        if t > 0:
            cute.nvgpu.warpgroup.wait_group(1)
            ring.consumer_release(release)
            release.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


@cute.jit
def mainloop__release_before_wait(self, tiled_mma, acc, tCrA, tCrB, ring, read, release,
                                  produce, k_tiles, warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        if t > 0:
            ring.consumer_release(release)  # k-tile t-1's wgmmas may still read the stage
            release.advance()
            cute.nvgpu.warpgroup.wait_group(1)
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


@cute.jit
def mainloop__no_wait(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles,
                      warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        if t > 0:  # no wait_group: nothing says k-tile t-1's wgmmas are done
            ring.consumer_release(release)
            release.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


@cute.jit
def mainloop__wait_all(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles,
                       warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
        cute.nvgpu.warpgroup.commit_group()
        read.advance()
        if t > 0:
            cute.nvgpu.warpgroup.wait_group(0)  # correct, but k-tile t's wgmmas too
            ring.consumer_release(release)
            release.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


@cute.jit
def mainloop__no_commit(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles,
                        warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
        read.advance()  # no commit_group: wait_group has no group to wait for
        if t > 0:
            cute.nvgpu.warpgroup.wait_group(1)
            ring.consumer_release(release)
            release.advance()
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


@cute.jit
def mainloop__releases_stage_in_use(self, tiled_mma, acc, tCrA, tCrB, ring, read, release,
                                    produce, k_tiles, warp, loads):
    k_blocks = cute.size(tCrA, mode=[2])
    for t in range(k_tiles):
        ring.consumer_wait(read)
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index],
                      tCrB[None, None, kb, read.index], acc)
        cute.nvgpu.warpgroup.commit_group()
        if t > 0:
            cute.nvgpu.warpgroup.wait_group(1)
        ring.consumer_release(read)  # k-tile t's stage: its wgmmas are still in flight
        read.advance()
        if t > 0:
            if warp == 0:
                if produce.count < k_tiles:
                    self.load_k_tile(ring, produce, *loads)
                    produce.advance()


REFERENCE = {"10.wgmma_mainloop": mainloop}
WRONG = {"10.wgmma_mainloop": {mainloop__no_fence: ("fence", "cpu"),
                               mainloop__release_before_wait: ("released too early", "cpu"),
                               mainloop__no_wait: ("no wait_group", "cpu"),
                               mainloop__wait_all: ("serialises", "cpu"),
                               mainloop__no_commit: ("commit", "cpu"),
                               mainloop__releases_stage_in_use: ("still being read", "cpu")}}
