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
epilogue_role__no_wait = edited(epilogue_role, "epilogue_role__no_wait", (ACC_WAIT, ""))
epilogue_role__no_tail = edited(
    epilogue_role, "epilogue_role__no_tail", ("    c_pipeline.producer_tail()\n", "")
)
epilogue_role__free_without_barrier = edited(
    epilogue_role,
    "epilogue_role__free_without_barrier",
    ("    epi_barrier.arrive_and_wait()\n", ""),
)
epilogue_role__never_freed = edited(
    epilogue_role, "epilogue_role__never_freed", ("    tmem.free(tmem_ptr)\n", "")
)


# correct, written otherwise: the TMA stores drained before the accumulator is handed back
epilogue_role_drain_first = edited(
    epilogue_role,
    "epilogue_role_drain_first",
    (
        "    with cute.arch.elect_one():\n        acc_pipeline.consumer_release(acc_state)\n"
        "    c_pipeline.producer_tail()\n",
        "    c_pipeline.producer_tail()\n    with cute.arch.elect_one():\n"
        "        acc_pipeline.consumer_release(acc_state)\n",
    ),
)


REFERENCE = {"14.epilogue_role": epilogue_role}
WRONG = {
    "14.epilogue_role": {
        epilogue_role__no_wait: ("read before the MMAs finished", "cpu"),
        epilogue_role__no_tail: ("not drained", "cpu"),
        epilogue_role__free_without_barrier: ("still be reading", "cpu"),
        epilogue_role__never_freed: ("never freed", "cpu"),
    }
}
ALTERNATIVES = {"14.epilogue_role": [epilogue_role_drain_first]}
