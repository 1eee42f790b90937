"""Notebook 11's exercises: the budgets of the speed-of-light kernel."""

from __future__ import annotations

from course.exercises.check import exercise, number


@exercise(
    "11.clusters",
    "How many 2-CTA clusters does the persistent kernel launch on a 132-SM H100?",
    "one CTA per SM, two CTAs per cluster.",
    "132 // 2 = 66.",
)
def _clusters(answer):
    return number(answer, 132 // 2)


@exercise(
    "11.regs",
    "The producer warpgroup keeps 40 registers per thread. What is the most "
    "registers per thread (a multiple of 8) the two consumer warpgroups can take within "
    "65,536?",
    "65,536 - 40 * 128, shared by 256 threads, rounded down to a multiple of 8.",
    "(65536 - 5120) / 256 = 236 -> 232.",
)
def _regs(answer):
    return number(answer, ((65536 - 40 * 128) // 256) // 8 * 8)


@exercise(
    "11.multicast",
    "In the model (each byte of B read from L2 once per cluster), by what "
    "factor does a 2-CTA cluster with B multicast cut the B bytes each CTA asks L2 for?",
    "each CTA loads half of the tile and receives the other half.",
    "2 (each CTA loads half). That is the model's prediction; notebook 08's Nsight Compute "
    "counters, on a benchmark whose tiles stay in L2, did not show it, and are still an "
    "open measurement.",
)
def _mcast(answer):
    ok, message = number(answer, 2)
    if ok:
        return True, (
            "2, in the model: each CTA asks L2 for half of B. A prediction: notebook "
            "08's counters did not show the halving on an L2-resident benchmark."
        )
    return ok, message


from course.exercises import nb11_tma_store_kernel  # noqa: E402,F401  registers 11.tma_store
