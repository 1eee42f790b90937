"""Notebook 15's kernel exercise: read one answer of Cluster Launch Control."""

import cutlass
import cutlass.cute as cute

from course.exercises.learner_code import edited


@cute.jit
def read_next_tile(self, scheduler, read_state):
    clc_pipeline, clc_response = scheduler
    clc_pipeline.consumer_wait(read_state)
    first_x, first_y, _, cancelled = cute.arch.clc_response(clc_response)
    cute.arch.fence_proxy("async.shared", space="cta")
    clc_pipeline.consumer_release(read_state)
    read_state.advance()
    return (first_x // self.tile.ctas, first_y, cancelled != 0), read_state


WAIT = "    clc_pipeline.consumer_wait(read_state)\n"
DECODE = "    first_x, first_y, _, cancelled = cute.arch.clc_response(clc_response)\n"

read_next_tile__decoded_before_the_wait = edited(
    read_next_tile, "read_next_tile__decoded_before_the_wait", (WAIT + DECODE, DECODE + WAIT)
)
read_next_tile__never_released = edited(
    read_next_tile,
    "read_next_tile__never_released",
    ("    clc_pipeline.consumer_release(read_state)\n", ""),
)
read_next_tile__no_fence = edited(
    read_next_tile,
    "read_next_tile__no_fence",
    ('    cute.arch.fence_proxy("async.shared", space="cta")\n', ""),
)
# the buffer fenced and handed back before the answer is decoded from it
FENCE_RELEASE = (
    '    cute.arch.fence_proxy("async.shared", space="cta")\n'
    "    clc_pipeline.consumer_release(read_state)\n"
)
read_next_tile__released_before_decode = edited(
    read_next_tile,
    "read_next_tile__released_before_decode",
    (WAIT + DECODE + FENCE_RELEASE, WAIT + FENCE_RELEASE + DECODE),
)


@cute.jit
def read_next_tile_whole_answer(self, scheduler, read_state):
    """The answer kept whole, the fence by CuTe DSL's other name for it."""
    clc_pipeline, clc_response = scheduler
    clc_pipeline.consumer_wait(read_state)
    answer = cute.arch.clc_response(clc_response)
    cute.arch.fence_view_async_shared()  # fence.proxy.async.shared::cta
    clc_pipeline.consumer_release(read_state)
    read_state.advance()
    return (answer[0] // self.tile.ctas, answer[1], answer[3] != 0), read_state


@cute.jit
def read_next_tile_as_nvidia_scheduler(self, scheduler, read_state):
    """As NVIDIA's ClcDynamicPersistentTileScheduler reads an answer
    (cutlass.utils.dynamic_persistent_tile_scheduler: work_tile_info_from_clc_response):
    the four fields by their names there, the fence right after the decode, and the valid
    bit made the Boolean this kernel's loop carries."""
    clc_pipeline, clc_response = scheduler
    clc_pipeline.consumer_wait(read_state)
    m_idx, n_idx, l_idx, vld = cute.arch.clc_response(clc_response)
    cute.arch.fence_proxy("async.shared", space="cta")
    clc_pipeline.consumer_release(read_state)
    read_state.advance()
    return (m_idx // self.tile.ctas, n_idx, cutlass.Boolean(vld)), read_state


@cute.jit
def read_next_tile_tile_worked_out_first(self, scheduler, read_state):
    """The next tile worked out from the answer before the buffer is handed back: the
    fence still follows the last read of the answer and precedes the release."""
    clc_pipeline, clc_response = scheduler
    clc_pipeline.consumer_wait(read_state)
    answer = cute.arch.clc_response(clc_response)
    tile = (answer[0] // self.tile.ctas, answer[1], answer[3] != 0)
    cute.arch.fence_proxy("async.shared", space="cta")
    clc_pipeline.consumer_release(read_state)
    read_state.advance()
    return tile, read_state


REFERENCE = {"15.read_next_tile": read_next_tile}
WRONG = {
    "15.read_next_tile": {
        read_next_tile__decoded_before_the_wait: ("before it has arrived", "cpu"),
        read_next_tile__never_released: ("never freed", "cpu"),
        read_next_tile__no_fence: ("async proxy", "cpu"),
        read_next_tile__released_before_decode: ("read after the buffer was freed", "cpu"),
    }
}
ALTERNATIVES = {
    "15.read_next_tile": [
        read_next_tile_whole_answer,
        read_next_tile_as_nvidia_scheduler,
        read_next_tile_tile_worked_out_first,
    ]
}
