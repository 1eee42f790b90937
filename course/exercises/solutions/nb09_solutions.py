"""Notebook 09's kernel exercise: the TMA + mbarrier ring, fixed; and rings broken one way each.

The reference is the shipped broken ring with its four fixes; the wrong variants are the
reference with one edit each, made from its source (so each is real code the checker
compiles and runs, and differs from the reference in one place).
"""

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

# correct, written otherwise: the producer's parity as 1 - bit, and the release from lane 0
ring_parity_as_one_minus = one_edit(
    "ring_parity_as_one_minus", "((j // stages) % 2) ^ 1", "1 - (j // stages) % 2"
)
ring_lane_zero_releases = one_edit(
    "ring_lane_zero_releases",
    RELEASE,
    "        if cute.arch.lane_idx() == 0:\n            cute.arch.mbarrier_arrive(empty + s)\n",
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
    }
}
ALTERNATIVES = {"09.ring": [ring_parity_as_one_minus, ring_lane_zero_releases]}
