"""Notebook 09's kernel exercise: the TMA + mbarrier ring, fixed; and rings broken one way each.

The wrong variants are the reference with one edit, made from its source (so each is
real code the checker compiles and runs, and differs from the reference in one place).
"""
import cutlass
import cutlass.cute as cute

from course.exercises.learner_code import edited


@cute.jit
def ring(self, k_tiles, warp, full, empty, loads, tiled_mma, f, report):
    stages = self.cfg.stages
    # 1. barriers: one thread initialises them, a fence shows them to TMA, the CTA syncs
    if warp == 0:
        with cute.arch.elect_one():
            for s in cutlass.range_constexpr(stages):
                cute.arch.mbarrier_init(full + s, 1)  # the producer's arrive.expect_tx
                cute.arch.mbarrier_init(empty + s, self.cfg.warps)  # one release per warp
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()

    # 2. prologue: warp 0 fills every stage (fresh barriers: parity 1 passes at once)
    if warp == 0:
        for j in range(cutlass.min(stages, k_tiles)):
            self.wait_empty(empty + j, 1, j, report)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full + j, self.tx_bytes)
            self.copy_k_tile(loads, j, j, full + j)

    # 3. every warp, every k-tile: wait for it, multiply, then release the stage; then
    #    warp 0 refills the stage with k-tile j = t + stages once every warp released it
    for t in range(k_tiles):
        s = t % stages
        self.wait_full(full + s, (t // stages) % 2, t, report)
        self.mma_k_tile(tiled_mma, f, s)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(empty + s)
        j = t + stages
        if warp == 0:
            if j < k_tiles:
                self.wait_empty(empty + s, ((j // stages) % 2) ^ 1, j, report)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)
                self.copy_k_tile(loads, j, s, full + s)


def one_edit(name: str, old: str, new: str):
    return edited(ring, name, old, new)


RELEASE = ("        with cute.arch.elect_one():\n"
           "            cute.arch.mbarrier_arrive(empty + s)\n")
MMA = "        self.mma_k_tile(tiled_mma, f, s)\n"

ring__no_fence = one_edit("ring__no_fence", "        cute.arch.mbarrier_init_fence()\n", "")
ring__producer_parity = one_edit("ring__producer_parity", "((j // stages) % 2) ^ 1",
                                 "(j // stages) % 2")
ring__consumer_parity = one_edit("ring__consumer_parity", "(t // stages) % 2, t",
                                 "((t // stages) % 2) ^ 1, t")
ring__plain_arrive = one_edit(
    "ring__plain_arrive",
    "                cute.arch.mbarrier_arrive_and_expect_tx(full + s, self.tx_bytes)",
    "                cute.arch.mbarrier_arrive(full + s)")
ring__early_release = one_edit("ring__early_release", MMA + RELEASE, RELEASE + MMA)
ring__every_lane_releases = one_edit("ring__every_lane_releases", RELEASE,
                                     "        cute.arch.mbarrier_arrive(empty + s)\n")
ring__counts_threads = one_edit("ring__counts_threads", "(empty + s, self.cfg.warps)",
                                "(empty + s, self.cfg.threads)")

REFERENCE = {"09.ring": ring}
WRONG = {"09.ring": {
    ring__no_fence: ("missing fence", "cpu"),
    ring__producer_parity: ("wrong parity", "cpu"),
    ring__consumer_parity: ("wrong parity", "cpu"),
    ring__plain_arrive: ("missing expect_tx", "cpu"),
    ring__early_release: ("released too early", "cpu"),
    ring__every_lane_releases: ("every lane arrives", "cpu"),
    ring__counts_threads: ("arrival count", "cpu"),
}}
