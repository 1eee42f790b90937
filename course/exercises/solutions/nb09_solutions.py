"""Notebook 09's kernel exercise: the TMA + mbarrier ring, fixed; and rings broken one way each.

The reference is the shipped broken ring with its four fixes; the wrong variants are the
reference with one edit each, made from its source (so each is real code the checker
compiles and runs, and differs from the reference in one place).
"""

import cutlass
import cutlass.cute as cute

from course.exercises.learner_code import edited
from course.exercises.nb09_ring_kernel import broken_ring


# the shipped broken ring (course.exercises.nb09_ring_kernel.broken_ring) with its four
# mistakes fixed: the fence, the release after the MMAs, the producer's parity, expect_tx
ring = edited(
    broken_ring,
    "ring",
    (
        "                cute.arch.mbarrier_init(empty + s, self.cfg.warps)  # one release per warp\n",
        "                cute.arch.mbarrier_init(empty + s, self.cfg.warps)  # one release per warp\n"
        "        cute.arch.mbarrier_init_fence()  # the barriers, visible to TMA\n",
    ),
    (
        "        with cute.arch.elect_one():\n            cute.arch.mbarrier_arrive(empty + s)\n"
        "        self.mma_k_tile(tiled_mma, f, s)\n",
        "        self.mma_k_tile(tiled_mma, f, s)\n        with cute.arch.elect_one():\n"
        "            cute.arch.mbarrier_arrive(empty + s)\n",
    ),
    ("(j // stages) % 2, j, report)", "((j // stages) % 2) ^ 1, j, report)"),
    (
        "                    cute.arch.mbarrier_arrive(full + s)\n",
        "                    cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)\n",
    ),
)


def one_edit(name: str, old: str, new: str):
    return edited(ring, name, (old, new))


RELEASE = "        with cute.arch.elect_one():\n            cute.arch.mbarrier_arrive(empty + s)\n"
MMA = "        self.mma_k_tile(tiled_mma, f, s)\n"

ring__no_fence = one_edit(
    "ring__no_fence",
    "        cute.arch.mbarrier_init_fence()  # the barriers, visible to TMA\n",
    "",
)
ring__producer_parity = one_edit(
    "ring__producer_parity", "((j // stages) % 2) ^ 1", "(j // stages) % 2"
)
ring__consumer_parity = one_edit(
    "ring__consumer_parity", "(t // stages) % 2, t", "((t // stages) % 2) ^ 1, t"
)
ring__plain_arrive = one_edit(
    "ring__plain_arrive",
    "                cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)",
    "                cute.arch.mbarrier_arrive(full + s)",
)
ring__early_release = one_edit("ring__early_release", MMA + RELEASE, RELEASE + MMA)
ring__every_lane_releases = one_edit(
    "ring__every_lane_releases", RELEASE, "        cute.arch.mbarrier_arrive(empty + s)\n"
)
ring__counts_threads = one_edit(
    "ring__counts_threads", "(empty + s, self.cfg.warps)", "(empty + s, self.cfg.threads)"
)

# the release goes to the next stage's empty barrier: the stage just read is never freed
ring__releases_next_stage = one_edit(
    "ring__releases_next_stage",
    MMA + RELEASE,
    MMA + RELEASE.replace("empty + s", "empty + (t + 1) % stages"),
)

# correct, written otherwise: the producer's parity as 1 - bit, and the release from lane 0
ring_parity_as_one_minus = one_edit(
    "ring_parity_as_one_minus", "((j // stages) % 2) ^ 1", "1 - (j // stages) % 2"
)
ring_lane_zero_releases = one_edit(
    "ring_lane_zero_releases",
    RELEASE,
    "        if cute.arch.lane_idx() == 0:\n            cute.arch.mbarrier_arrive(empty + s)\n",
)


@cute.jit
def ring_phase_bits(self, k_tiles, warp, full, empty, loads, tiled_mma, f, report):
    """The ring kept the way NVIDIA's pipeline.PipelineState keeps it: a stage index and a
    phase bit that flips each time the index wraps (the producer's starting at 1, so fresh
    barriers pass), waits spelled cute.arch.mbarrier_wait, loops cutlass.range(..., unroll=1)."""
    stages = self.cfg.stages
    if warp == 0:
        with cute.arch.elect_one():
            for s in cutlass.range_constexpr(stages):
                cute.arch.mbarrier_init(full + s, 1)
                cute.arch.mbarrier_init(empty + s, self.cfg.warps)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()

    put, put_phase, loaded = cutlass.Int32(0), cutlass.Int32(1), cutlass.Int32(0)
    if warp == 0:
        for _ in cutlass.range(cutlass.min(stages, k_tiles), unroll=1):
            cute.arch.mbarrier_wait(empty + put, put_phase)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full + put, self.tx_bytes)
            self.copy_k_tile(loads, loaded, put, full + put)
            loaded = loaded + 1
            put = put + 1
            if put == stages:
                put = 0
                put_phase = put_phase ^ 1

    get, get_phase = cutlass.Int32(0), cutlass.Int32(0)
    for _ in cutlass.range(k_tiles, unroll=1):
        cute.arch.mbarrier_wait(full + get, get_phase)
        self.mma_k_tile(tiled_mma, f, get)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(empty + get)
        get = get + 1
        if get == stages:
            get = 0
            get_phase = get_phase ^ 1
        if warp == 0:
            if loaded < k_tiles:  # the stage just released, once every warp has released it
                cute.arch.mbarrier_wait(empty + put, put_phase)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full + put, self.tx_bytes)
                self.copy_k_tile(loads, loaded, put, full + put)
                loaded = loaded + 1
                put = put + 1
                if put == stages:
                    put = 0
                    put_phase = put_phase ^ 1


# only the thread that initialised the barriers fences them (CUTLASS's fence_barrier_init)
ring_fence_by_initialiser = one_edit(
    "ring_fence_by_initialiser",
    "                cute.arch.mbarrier_init(empty + s, self.cfg.warps)  # one release per warp\n"
    "        cute.arch.mbarrier_init_fence()  # the barriers, visible to TMA\n",
    "                cute.arch.mbarrier_init(empty + s, self.cfg.warps)  # one release per warp\n"
    "            cute.arch.mbarrier_init_fence()\n",
)
# the parities with bit operations
ring_parity_bit_ops = edited(
    ring,
    "ring_parity_bit_ops",
    ("((j // stages) % 2) ^ 1, j, report)", "1 ^ ((j // stages) & 1), j, report)"),
    ("(t // stages) % 2, t", "(t // stages) & 1, t"),
)

# another legal order: the refill's TMA issued before full[s] is armed for it (tx-count may go
# below zero; the phase still waits for the one arrival)
ring_copy_then_arm = one_edit(
    "ring_copy_then_arm",
    "                with cute.arch.elect_one():\n"
    "                    cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)\n"
    "                self.copy_k_tile(loads, j, s, full + s)\n",
    "                self.copy_k_tile(loads, j, s, full + s)\n"
    "                with cute.arch.elect_one():\n"
    "                    cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)\n",
)


REFERENCE = {"09.ring": ring}
WRONG = {
    "09.ring": {
        ring__no_fence: ("missing fence", "cpu"),
        ring__producer_parity: ("wrong parity", "cpu"),
        ring__consumer_parity: ("wrong parity", "cpu"),
        ring__plain_arrive: ("missing expect_tx", "cpu"),
        ring__early_release: ("released too early", "cpu"),
        ring__every_lane_releases: ("every lane arrives", "cpu"),
        ring__counts_threads: ("arrival count", "cpu"),
        ring__releases_next_stage: ("wrong stage released", "cpu"),
    }
}
ALTERNATIVES = {
    "09.ring": [
        ring_parity_as_one_minus,
        ring_lane_zero_releases,
        ring_phase_bits,
        ring_copy_then_arm,
        ring_fence_by_initialiser,
        ring_parity_bit_ops,
    ]
}
