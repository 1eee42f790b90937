"""Notebook 14's kernel exercise: the epilogue warps of the 1-CTA tcgen05 GEMM."""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from course.exercises.learner_code import edited


@cute.jit
def epilogue_role(
    self,
    tidx,
    warp_idx,
    tmem,
    acc_layout,
    tma_c,
    sC,
    tCgC,
    epi_tile,
    acc_pipeline,
    tile_row,
    tile_col,
):
    tmem_ptr, accumulators, c_pipeline, epi_barrier = self.epilogue_setup(
        tmem, acc_layout, self.acc_dtype, self.epi_stages
    )
    acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.acc_slots)
    acc_pipeline.consumer_wait(acc_state)
    self.epilogue_tile(
        tidx,
        warp_idx,
        accumulators[((None, None), 0, 0, acc_state.index)],
        tma_c,
        sC,
        tCgC[((None, None), 0, 0, tile_row, tile_col)],
        epi_tile,
        self.c_dtype,
        epi_barrier,
        c_pipeline,
        cutlass.Int32(0),
    )
    with cute.arch.elect_one():
        acc_pipeline.consumer_release(acc_state)
    c_pipeline.producer_tail()
    epi_barrier.arrive_and_wait()
    tmem.free(tmem_ptr)


ACC_WAIT = "    acc_pipeline.consumer_wait(acc_state)\n"
RELEASE = "    with cute.arch.elect_one():\n        acc_pipeline.consumer_release(acc_state)\n"
TAIL = "    c_pipeline.producer_tail()\n"
MEET = "    epi_barrier.arrive_and_wait()\n"
FREE = "    tmem.free(tmem_ptr)\n"

# ---------------------------------------------------------------- known mistakes

epilogue_role__no_wait = edited(epilogue_role, "epilogue_role__no_wait", (ACC_WAIT, ""))
epilogue_role__never_freed = edited(epilogue_role, "epilogue_role__never_freed", (FREE, ""))
# the tile's coordinates swapped where C's tile is chosen: tile (i, j) stored at (j, i)
epilogue_role__tile_swapped = edited(
    epilogue_role,
    "epilogue_role__tile_swapped",
    ("0, 0, tile_row, tile_col)]", "0, 0, tile_col, tile_row)]"),
)
# TMEM freed before the accumulator is read: every warp's tcgen05.ld reads freed columns
epilogue_role__freed_before_the_drain = edited(
    epilogue_role,
    "epilogue_role__freed_before_the_drain",
    (ACC_WAIT, ACC_WAIT + FREE),
    (MEET + FREE, MEET),
)

# ---------------------------------------------------------------- correct, written otherwise

# the TMA stores drained before the accumulator is handed back
epilogue_role_drain_first = edited(
    epilogue_role, "epilogue_role_drain_first", (RELEASE + TAIL, TAIL + RELEASE)
)
# as NVIDIA's Blackwell tutorial GEMMs end: hand back, drain, free, with no barrier of its own
# (epilogue_tile's last barrier already follows every warp's last tcgen05.ld and wait::ld);
# the course taught this as a mistake until the PTX ISA was read again: it has no such rule
epilogue_role_as_the_tutorial = edited(
    epilogue_role, "epilogue_role_as_the_tutorial", (TAIL + MEET + FREE, TAIL + FREE)
)
# as NVIDIA's block-scaled GEMM ends: meet, free, then drain: the stores read shared memory,
# never TMEM, so they may still be in flight when TMEM is freed
epilogue_role_free_then_drain = edited(
    epilogue_role, "epilogue_role_free_then_drain", (TAIL + MEET + FREE, MEET + FREE + TAIL)
)
# as NVIDIA's TMA tutorials end: the stores still in flight when the CTA exits. The PTX ISA
# leaves that defined (it reads only this CTA's shared memory); the checks say it as a note
epilogue_role_no_tail = edited(epilogue_role, "epilogue_role_no_tail", (TAIL, ""))
# the warps meet first; warp 0 drains its stores, then frees
epilogue_role_meet_then_drain = edited(
    epilogue_role, "epilogue_role_meet_then_drain", (TAIL + MEET + FREE, MEET + TAIL + FREE)
)


REFERENCE = {"14.epilogue_role": epilogue_role}
WRONG = {
    "14.epilogue_role": {
        epilogue_role__no_wait: ("read before the MMAs finished", "cpu"),
        epilogue_role__freed_before_the_drain: ("after tcgen05.dealloc freed it", "cpu"),
        epilogue_role__never_freed: ("never freed", "cpu"),
        epilogue_role__tile_swapped: ("tiles swapped", "gpu"),
    }
}
ALTERNATIVES = {
    "14.epilogue_role": [
        epilogue_role_drain_first,
        epilogue_role_as_the_tutorial,
        epilogue_role_free_then_drain,
        epilogue_role_meet_then_drain,
        epilogue_role_no_tail,
    ]
}
