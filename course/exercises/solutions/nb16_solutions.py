"""Notebook 16's kernel exercise: the MMA warp's k-loop of the block-scaled GEMM (SFs copied
into TMEM per k-tile, each MMA pointed at its own)."""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

from course.exercises.learner_code import edited


@cute.jit
def mma_k_loop(self, tiled_mma, accumulator, tCrA, tCrB, sfa, sfb, ring, state, k_tiles):
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    for k_block in cutlass.range(k_tiles, unroll=1):
        ring.consumer_wait(state)
        stage = (None, None, None, None, state.index)
        cute.copy(sfa.s2t, sfa.smem[stage], sfa.tmem)
        cute.copy(sfb.s2t, sfb.smem[stage], sfb.tmem)
        for kk in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            tiled_mma.set(tcgen05.Field.SFA, sfa.mma[(None, None, kk)].iterator)
            tiled_mma.set(tcgen05.Field.SFB, sfb.mma[(None, None, kk)].iterator)
            operands = (None, None, kk, state.index)
            cute.gemm(tiled_mma, accumulator, tCrA[operands], tCrB[operands], accumulator)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        ring.consumer_release(state)
        state.advance()
    return state


COPY_SFA = "        cute.copy(sfa.s2t, sfa.smem[stage], sfa.tmem)\n"
COPY_SFB = "        cute.copy(sfb.s2t, sfb.smem[stage], sfb.tmem)\n"
SET_SFA = "            tiled_mma.set(tcgen05.Field.SFA, sfa.mma[(None, None, kk)].iterator)\n"
SET_SFB = "            tiled_mma.set(tcgen05.Field.SFB, sfb.mma[(None, None, kk)].iterator)\n"
WAIT = "        ring.consumer_wait(state)\n"
STAGE = "        stage = (None, None, None, None, state.index)\n"
RELEASE = "        ring.consumer_release(state)\n"

# the k-tile's number used as its stage: right only while the ring has not wrapped
mma_k_loop__k_tile_as_stage = edited(
    mma_k_loop,
    "mma_k_loop__k_tile_as_stage",
    (STAGE, "        stage = (None, None, None, None, k_block)\n"),
)

# ---------------------------------------------------------------- correct, written otherwise

# SFB's copy issued before SFA's: both still precede the MMAs
mma_k_loop_sfb_copied_first = edited(
    mma_k_loop, "mma_k_loop_sfb_copied_first", (COPY_SFA + COPY_SFB, COPY_SFB + COPY_SFA)
)
# Field.SFB set before Field.SFA
mma_k_loop_sfb_field_first = edited(
    mma_k_loop, "mma_k_loop_sfb_field_first", (SET_SFA + SET_SFB, SET_SFB + SET_SFA)
)


@cute.jit
def mma_k_loop_by_operand(self, tiled_mma, accumulator, tCrA, tCrB, sfa, sfb, ring, state,
                          k_tiles):  # fmt: skip
    # the SFs' copies and fields by operand, indexed without the tuples; the MMAs counted
    # from the SFs' own K mode
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    for k_block in cutlass.range(k_tiles, unroll=1):
        ring.consumer_wait(state)
        for sf in (sfa, sfb):
            cute.copy(sf.s2t, sf.smem[None, None, None, None, state.index], sf.tmem)
        for kk in cutlass.range_constexpr(cute.size(sfa.mma, mode=[2])):
            for field, sf in ((tcgen05.Field.SFA, sfa), (tcgen05.Field.SFB, sfb)):
                tiled_mma.set(field, sf.mma[None, None, kk].iterator)
            cute.gemm(
                tiled_mma,
                accumulator,
                tCrA[None, None, kk, state.index],
                tCrB[None, None, kk, state.index],
                accumulator,
            )
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        ring.consumer_release(state)
        state.advance()
    return state


@cute.jit
def mma_k_loop_nvidia_style(self, tiled_mma, accumulator, tCrA, tCrB, sfa, sfb, ring, state,
                            k_tiles):  # fmt: skip
    # as NVIDIA's block-scaled GEMM example writes its k-loop: the next stage's full barrier
    # peeked at (consumer_try_wait) while this k-tile's MMAs are issued, the wait given what
    # the peek saw, and the k-blocks in a cutlass.range unrolled in full
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    ready = ring.consumer_try_wait(state)
    for k_block in cutlass.range(k_tiles, unroll=1):
        ring.consumer_wait(state, ready)
        stage = (None, None, None, None, state.index)
        cute.copy(sfa.s2t, sfa.smem[stage], sfa.tmem)
        cute.copy(sfb.s2t, sfb.smem[stage], sfb.tmem)
        for kk in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
            tiled_mma.set(tcgen05.Field.SFA, sfa.mma[(None, None, kk)].iterator)
            tiled_mma.set(tcgen05.Field.SFB, sfb.mma[(None, None, kk)].iterator)
            operands = (None, None, kk, state.index)
            cute.gemm(tiled_mma, accumulator, tCrA[operands], tCrB[operands], accumulator)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        ring.consumer_release(state)
        state.advance()
        ready = cutlass.Boolean(True)
        if k_block + 1 < k_tiles:
            ready = ring.consumer_try_wait(state)
    return state


# ---------------------------------------------------------------- known mistakes

mma_k_loop__no_sf_copies = edited(mma_k_loop, "mma_k_loop__no_sf_copies", (COPY_SFA + COPY_SFB, ""))
mma_k_loop__stage_0_always = edited(
    mma_k_loop,
    "mma_k_loop__stage_0_always",
    (
        COPY_SFA + COPY_SFB,
        "        cute.copy(sfa.s2t, sfa.smem[(None, None, None, None, 0)], sfa.tmem)\n"
        "        cute.copy(sfb.s2t, sfb.smem[(None, None, None, None, 0)], sfb.tmem)\n",
    ),
)
mma_k_loop__every_mma_at_kk_0 = edited(
    mma_k_loop,
    "mma_k_loop__every_mma_at_kk_0",
    (
        SET_SFA + SET_SFB,
        "            tiled_mma.set(tcgen05.Field.SFA, sfa.mma[(None, None, 0)].iterator)\n"
        "            tiled_mma.set(tcgen05.Field.SFB, sfb.mma[(None, None, 0)].iterator)\n",
    ),
)
mma_k_loop__copies_after_the_mmas = edited(
    mma_k_loop,
    "mma_k_loop__copies_after_the_mmas",
    (COPY_SFA + COPY_SFB, ""),
    (RELEASE, COPY_SFA + COPY_SFB + RELEASE),
)
mma_k_loop__sfa_sfb_swapped = edited(
    mma_k_loop,
    "mma_k_loop__sfa_sfb_swapped",
    (
        SET_SFA + SET_SFB,
        "            tiled_mma.set(tcgen05.Field.SFA, sfb.mma[(None, None, kk)].iterator)\n"
        "            tiled_mma.set(tcgen05.Field.SFB, sfa.mma[(None, None, kk)].iterator)\n",
    ),
)
mma_k_loop__copies_before_the_wait = edited(
    mma_k_loop,
    "mma_k_loop__copies_before_the_wait",
    (WAIT + STAGE + COPY_SFA + COPY_SFB, STAGE + COPY_SFA + COPY_SFB + WAIT),
)


# ACCUMULATE set False at every k-tile's start, not once before the k-loop: each k-tile's
# first MMA overwrites the accumulator, so C is the last k-tile's product (not the SFs' fault)
mma_k_loop__accumulate_reset_every_k_tile = edited(
    mma_k_loop,
    "mma_k_loop__accumulate_reset_every_k_tile",
    (
        "    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)\n"
        "    for k_block in cutlass.range(k_tiles, unroll=1):\n",
        "    for k_block in cutlass.range(k_tiles, unroll=1):\n"
        "        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)\n",
    ),
)

# the stage handed back by a plain mbarrier arrive right after its MMAs are issued, instead of
# consumer_release's tcgen05.commit (which arrives once the MMAs have read the stage): TMA may
# refill the stage under MMAs that have not run yet. Only a ring that wraps shows it: with no
# more k-tiles than stages no stage is ever refilled, and the values come out right
mma_k_loop__released_before_the_mmas_are_done = edited(
    mma_k_loop,
    "mma_k_loop__released_before_the_mmas_are_done",
    (
        RELEASE,
        "        with cute.arch.elect_one():\n"
        "            cute.arch.mbarrier_arrive(ring.sync_object_empty.get_barrier(state.index))\n",
    ),
)


REFERENCE = {"16.sf_copy_and_mma": mma_k_loop}
ALTERNATIVES = {
    "16.sf_copy_and_mma": [
        mma_k_loop_sfb_copied_first,
        mma_k_loop_sfb_field_first,
        mma_k_loop_by_operand,
        mma_k_loop_nvidia_style,
    ]
}
WRONG = {
    "16.sf_copy_and_mma": {
        mma_k_loop__no_sf_copies: ("no tcgen05.cp wrote", "cpu"),
        mma_k_loop__stage_0_always: ("state.index", "gpu"),
        mma_k_loop__k_tile_as_stage: ("past a mode", "gpu"),
        mma_k_loop__every_mma_at_kk_0: ("same SFs", "cpu"),
        mma_k_loop__copies_after_the_mmas: ("before the k-tile's tcgen05.cp", "cpu"),
        mma_k_loop__sfa_sfb_swapped: ("Field.SFA takes", "gpu"),
        mma_k_loop__copies_before_the_wait: ("TMA may still be writing", "cpu"),
        mma_k_loop__accumulate_reset_every_k_tile: ("overwritten at every k-tile", "gpu"),
        mma_k_loop__released_before_the_mmas_are_done: ("tcgen05.mma issued on it", "gpu"),
    }
}
