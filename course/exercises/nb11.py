"""Notebook 11's exercises: the budgets of the speed-of-light kernel."""

from __future__ import annotations

import math

from course.exercises.check import Wrong, exercise


# Each asks about a case the notebook does not print: another C, another warpgroup count,
# another rung's tile.
SMS, CLUSTER_TILE, C_SHAPE = 132, (256, 256), (4096, 8192)


def _busiest_cluster() -> int:
    tiles = (C_SHAPE[0] // CLUSTER_TILE[0]) * (C_SHAPE[1] // CLUSTER_TILE[1])
    return math.ceil(tiles / (SMS // 2))


@exercise(
    "11.clusters",
    f"The persistent kernel with 2-CTA clusters (128x256 CTA tiles, so a cluster computes a "
    f"256x256 tile of C) runs on a {SMS}-SM H100 with one CTA per SM. C is "
    f"{C_SHAPE[0]}x{C_SHAPE[1]}. How many tiles does the busiest cluster compute?",
    "how many clusters run, how many cluster tiles does C have, and how does the scheduler "
    "hand them out (section 2: tile c, c + clusters, ...)?",
    f"{_busiest_cluster()}: 66 clusters share 16 x 32 = 512 cluster tiles; cluster c takes "
    "c, c + 66, ..., so clusters 0-49 take 8 and the others 7.",
)
def _clusters(answer):
    want = _busiest_cluster()
    tiles = (C_SHAPE[0] // CLUSTER_TILE[0]) * (C_SHAPE[1] // CLUSTER_TILE[1])
    try:
        got = float(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a whole number of tiles")
    if got == want:
        return True, (
            f"{want}: {tiles} cluster tiles over {SMS // 2} clusters; the last round is "
            f"partial ({tiles - (want - 1) * (SMS // 2)} of {SMS // 2} clusters busy)."
        )
    if got == SMS // 2:
        raise Wrong(f"{SMS // 2} is how many clusters run; the question is tiles per cluster")
    if got == math.ceil(tiles / SMS):
        raise Wrong(
            f"that shares the {tiles} cluster tiles among {SMS} CTAs: a cluster tile is "
            "computed by a whole cluster of two CTAs"
        )
    if got == math.ceil(2 * tiles / (SMS // 2)):
        raise Wrong(
            f"that gives each of the {SMS // 2} clusters CTA tiles (128x256), "
            "but a cluster computes a 256x256 tile at a time"
        )
    if got == tiles // (SMS // 2) or got == tiles / (SMS // 2):
        raise Wrong(
            "that is the average: tiles are whole, and the clusters that take one more "
            "tile than the others decide how long the kernel runs"
        )
    return False, "not quite: count the cluster tiles of C and the clusters that share them"


REG_FILE, PRODUCER_REGS, CONSUMER_WARPGROUPS = 65536, 40, 3  # the notebook's kernel has 2


def _consumer_regs() -> int:
    return (REG_FILE - PRODUCER_REGS * 128) // (CONSUMER_WARPGROUPS * 128) // 8 * 8


@exercise(
    "11.regs",
    f"A variant of the kernel has one producer warpgroup at {PRODUCER_REGS} registers per "
    f"thread and {CONSUMER_WARPGROUPS} consumer warpgroups. What is the most registers per "
    f"thread (setmaxnreg takes multiples of 8) the consumer warpgroups can each take "
    f"within the SM's {REG_FILE:,}?",
    "what is left once the producer has its share, how many threads share it, and which "
    "way must a count that setmaxnreg cannot take be rounded?",
    f"{_consumer_regs()}: (65,536 - 40 x 128) / 384 = 157.3, rounded down to a multiple of 8.",
)
def _regs(answer):
    want = _consumer_regs()
    try:
        got = float(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a number of registers per thread")
    if got == want:
        used = PRODUCER_REGS * 128 + want * CONSUMER_WARPGROUPS * 128
        return True, f"{want}: {used:,} of {REG_FILE:,} registers."
    if got == 232:
        raise Wrong("232 is the notebook's kernel, with two consumer warpgroups: count three")
    left = (REG_FILE - PRODUCER_REGS * 128) / (CONSUMER_WARPGROUPS * 128)
    if want < got < left + 8 and got % 8:
        raise Wrong(f"{got:g} is not a multiple of 8, which setmaxnreg needs")
    if got == want + 8:
        over = PRODUCER_REGS * 128 + got * CONSUMER_WARPGROUPS * 128
        raise Wrong(f"rounded up: {over:,.0f} registers, more than the SM's {REG_FILE:,}")
    if got == REG_FILE // (CONSUMER_WARPGROUPS * 128) // 8 * 8:
        raise Wrong("that gives the consumers the whole register file: the producer keeps its 40")
    return False, "not quite: subtract the producer's share first"


MCAST_TILE = (128, 128)  # the ping-pong rung's tile, B multicast in 2x1 clusters


def _mcast_factor() -> float:
    tile_m, tile_n = MCAST_TILE
    return (tile_m + tile_n) / (tile_m + tile_n / 2)


@exercise(
    "11.multicast",
    "In the model (each byte of B read from L2 once per cluster): the ping-pong rung has "
    f"{MCAST_TILE[0]}x{MCAST_TILE[1]} CTA tiles in 2-CTA clusters that multicast B. By what "
    "factor does multicast cut the A + B bytes each CTA asks L2 for, against the same tile "
    "without a cluster?",
    "count the bytes of A and of B one CTA asks L2 for per k-tile, with and without the "
    "cluster; only one of the two operands is shared.",
    "4/3 = 1.33: per k-tile a CTA asks for 128 rows of A and 128 of B without a cluster, 128 "
    "of A and 64 of B with one. That is the model's prediction; notebook 08's counters show "
    "why L2's own reads need not follow it.",
)
def _mcast(answer):
    want = _mcast_factor()
    try:
        got = float(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a number (a factor, e.g. 1.25)")
    if abs(got - want) <= 0.01 * want:
        return True, (
            "4/3 in the model: each CTA still asks L2 for all of its A, and B is only half "
            "of its bytes. Section 3's 128x256 tile gains 1.5 from the same multicast, because "
            "there B is two thirds of the bytes: a narrower tile shares less of what it loads."
        )
    if abs(got - 2) < 0.02:
        raise Wrong("2 is B's factor alone: A is not multicast, and each CTA still loads all of it")
    if abs(got - 1.5) < 0.015:
        raise Wrong(
            "1.5 is section 3's 128x256 tile, where B is two thirds of the bytes: "
            "here A and B are the same size"
        )
    if abs(got - 0.75) < 0.01 or abs(got - 0.25) < 0.01:
        raise Wrong("that is a fraction left or saved: the question asks for the factor")
    return False, "not quite: count A's and B's bytes per k-tile, with and without the cluster"


from course.exercises import nb11_tma_store_kernel  # noqa: E402,F401  registers 11.tma_store
