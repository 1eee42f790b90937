"""Notebook 09's exercises: phases, arrival counts, ring depth, and a parity to write."""

from __future__ import annotations

import math

from course.exercises.check import Wrong, exercise, number, pair
from course.sim import ring_protocol


@exercise(
    "09.parities",
    "A ring of 3 stages. List the parities the producer waits for on the empty barrier for "
    "its loads j = 0..6 (a list of 7 numbers).",
    "load j uses stage j % 3 on trip j // 3; the producer waits for the phase completed one "
    "trip earlier, and on the first trip for parity 1 (a fresh barrier's 'previous' phase).",
    "[1, 1, 1, 0, 0, 0, 1]: ((j // 3) % 2) ^ 1.",
)
def _parities(answer):
    try:
        got = [int(x) for x in answer]
    except (TypeError, ValueError):
        raise Wrong("answer with a list of 7 numbers, each 0 or 1")
    want = [((j // 3) % 2) ^ 1 for j in range(7)]
    if got == want:
        return True, "parity 1 on the first trip, then flipping every time the stage index wraps."
    if got == [1 - p for p in want]:
        raise Wrong("that is the consumer's sequence: the producer starts at parity 1")
    return False, "not quite: work out each load's stage and trip first"


@exercise(
    "09.counts",
    "The course's kernel has 8 warps; one elected lane per warp releases a stage, and one "
    "elected lane of warp 0 does arrive.expect_tx. What arrival counts must the full and "
    "the empty barriers be initialised with? Answer (full, empty).",
    "count the mbarrier.arrive instructions that really execute per phase; TMA's bytes are "
    "counted separately (expect_tx / complete_tx), not as arrivals.",
    "(1, 8).",
)
def _counts(answer):
    full, empty = pair(answer, "answer with a pair: (full, empty)")
    if (int(full), int(empty)) == (1, 8):
        return True, "one arrival with the bytes, eight releases."
    if int(empty) == 256:
        raise Wrong(
            "256 counts threads, but only one lane per warp arrives: that barrier never "
            "completes (the kernel's 'thread_arrival_count' bug)"
        )
    if int(full) == 2:
        raise Wrong(
            "the TMA copy brings bytes, not an arrival: a full barrier expecting 2 never "
            "completes (the kernel's 'arrival_count' bug)"
        )
    return False, ""


@exercise(
    "09.depth",
    "A TMA load takes 600 cycles and the MMAs of one k-tile 200. What is the fewest stages "
    "with which the tensor core never waits for data (after the first load)?",
    "a stage's round trip is load + MMA; while it is away the other stages must keep the "
    "tensor core busy: S x MMA >= load + MMA.",
    "4: (600 + 200) / 200.",
)
def _depth(answer):
    return number(answer, math.ceil((600 + 200) / 200))


@exercise(
    "09.producer_parity",
    "Write producer_parity(j, stages): the parity the producer's j-th load waits for on "
    "empty[j % stages]. It is checked by running the kernel's whole barrier protocol "
    "(course.sim.ring_protocol) with it, over several ring depths and interleavings.",
    "the trip round the ring is j // stages; on trip 0 no stage was ever released, so the "
    "wait must pass at once on a fresh barrier.",
    "def producer_parity(j, stages): return ((j // stages) % 2) ^ 1",
)
def _producer_parity(fn):
    if not callable(fn):
        raise Wrong("pass a function of (j, stages)")
    verdict = ring_protocol.check(producer_parity=lambda j, s: int(fn(j, s)) & 1)
    if verdict == "ok":
        return True, "no deadlock and no race over every depth, length and interleaving tried."
    return False, verdict


from course.exercises import nb09_ring_kernel  # noqa: E402,F401  registers 09.ring
