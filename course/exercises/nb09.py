"""Notebook 09's exercises: phases, arrival counts, ring depth, and a parity to write. Each
asks about a ring other than the one the notebook prints (another depth, another kernel's
warps, other latencies, the pre-arrived start), so its answer is worked out, not read off."""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, pair
from course.sim import ring_protocol


PARITY_STAGES, PARITY_LOADS = 4, 10  # section 3's table shows 3 stages: this asks for 4


@exercise(
    "09.parities",
    f"A ring of {PARITY_STAGES} stages. List the parities the producer waits for on the "
    f"empty barrier for its loads j = 0..{PARITY_LOADS - 1} (a list of {PARITY_LOADS} "
    "numbers, each 0 or 1).",
    "work out, for each load, which stage it refills and which trip round the ring that is; "
    "then ask which phase of that stage's empty barrier the previous trip's releases "
    "completed (and what a fresh barrier counts as completed).",
    f"[1, 1, 1, 1, 0, 0, 0, 0, 1, 1]: load j refills stage j % {PARITY_STAGES} on trip "
    f"j // {PARITY_STAGES}, and waits for parity ((j // {PARITY_STAGES}) % 2) ^ 1.",
)
def _parities(answer):
    try:
        got = [int(x) for x in answer]
    except (TypeError, ValueError):
        raise Wrong(f"answer with a list of {PARITY_LOADS} numbers, each 0 or 1")
    if len(got) != PARITY_LOADS:
        raise Wrong(f"that is {len(got)} numbers: one per load j = 0..{PARITY_LOADS - 1}")
    want = [((j // PARITY_STAGES) % 2) ^ 1 for j in range(PARITY_LOADS)]
    if got == want:
        return True, "parity 1 on the first trip, then flipping every time the stage index wraps."
    if got == [1 - p for p in want]:
        raise Wrong(
            "that is the consumers' sequence on the full barriers: the producer's first trip "
            "waits for parity 1, which a fresh empty barrier counts as completed"
        )
    if got == [((j // 3) % 2) ^ 1 for j in range(PARITY_LOADS)]:
        raise Wrong(
            f"that flips every 3 loads, as in section 3's 3-stage table: with {PARITY_STAGES} "
            f"stages a stage comes round again only every {PARITY_STAGES} loads"
        )
    if got == [j % 2 for j in range(PARITY_LOADS)] or got == [
        (j % 2) ^ 1 for j in range(PARITY_LOADS)
    ]:
        raise Wrong(
            "that alternates load by load: the parity belongs to a stage's trip round the "
            "ring, and consecutive loads use different stages on the same trip"
        )
    return False, "not quite: work out each load's stage and trip first"


@exercise(
    "09.counts",
    "A warp-specialized variant of the ring: one producer warp, whose elected lane arms each "
    "stage's full barrier with one arrive.expect_tx covering both TMA copies (A and B), and "
    "three consumer warpgroups (12 warps) in which one elected lane per warp releases a "
    "stage. The producer warp never reads the stages. What arrival counts must the full and "
    "the empty barriers be initialised with? Answer (full, empty).",
    "count, per phase, the arrive instructions that really execute on each barrier, and who "
    "executes them; what the TMA copies bring is counted apart from arrivals.",
    "(1, 12): one arrive.expect_tx per stage fill; one release per consumer warp.",
)
def _counts(answer):
    full, empty = pair(answer, "answer with a pair: (full, empty)")
    full, empty = int(full), int(empty)
    if (full, empty) == (1, 12):
        return True, "one arrival with the bytes, twelve releases."
    if full == 2:
        raise Wrong(
            "the two TMA copies bring bytes, not arrivals: a full barrier expecting 2 "
            "arrivals never completes (the kernel's 'arrival_count' bug)"
        )
    if full != 1:
        raise Wrong("one lane of the producer warp arrives on a full barrier, once per fill")
    if empty == 12 * 32:
        raise Wrong(
            "384 counts threads, but only one lane per warp arrives: that barrier never "
            "completes (the kernel's 'thread_arrival_count' bug)"
        )
    if empty == 3:
        raise Wrong("3 counts warpgroups, but each of the 12 consumer warps releases")
    if empty == 13:
        raise Wrong(
            "13 counts the producer warp too, but it never reads a stage, so it never "
            "releases one: the empty barrier would wait for an arrival that never comes"
        )
    if empty == 8:
        raise Wrong("8 is this notebook's kernel (8 warps, all consumers): count this one's")
    return False, ""


DEPTH_LOAD, DEPTH_MMA = 1000, 300  # section 4 uses 600 and 200


@exercise(
    "09.depth",
    f"A TMA load takes {DEPTH_LOAD} cycles and the MMAs of one k-tile {DEPTH_MMA}. What is "
    "the fewest stages with which the tensor core never waits for data (after the first "
    "load)?",
    "follow one stage: how long is it away from the tensor core between two of its uses, and "
    "how many MMAs of the other stages must fill that time?",
    "5: a stage is away for load + MMA = 1300 cycles, and 5 x 300 = 1500 >= 1300 "
    "(4 x 300 = 1200 is not enough).",
)
def _depth(answer):
    from course.sim import pipeline_sim

    want = pipeline_sim.stages_to_hide_latency(DEPTH_LOAD, DEPTH_MMA)
    try:
        got = float(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a whole number of stages")
    if got == want:
        return True, f"{want}: {want} x {DEPTH_MMA} covers the {DEPTH_LOAD + DEPTH_MMA} cycles."
    if got == want - 1:
        raise Wrong(
            f"{want - 1} stages keep the tensor core busy for {(want - 1) * DEPTH_MMA} cycles, "
            f"but a stage is away for its load and its own MMAs, {DEPTH_LOAD + DEPTH_MMA}: "
            "count the MMA time too"
        )
    if got == DEPTH_LOAD / DEPTH_MMA or got == DEPTH_LOAD // DEPTH_MMA:
        raise Wrong("stages are whole, and they must cover the load and the stage's own MMAs")
    if got < want:
        return False, f"with {got:g} stages the tensor core waits for every load"
    return False, f"{got:g} stages work, but fewer do too"


@exercise(
    "09.producer_parity",
    "Some hand-written Hopper kernels start their ring differently from section 3's: right "
    "after the barriers are initialised, every consumer warp arrives once on every empty "
    "barrier, so each stage starts out released. Write producer_parity(j, stages) for "
    "that ring: the parity the producer's j-th load waits for on empty[j % stages]. It is "
    "checked by running the kernel's whole barrier protocol with those startup arrivals "
    "(course.sim.ring_protocol, pre_arrived=True), over several ring depths and "
    "interleavings.",
    "after the startup arrivals, which phase of each empty barrier has already completed? "
    "Which phase do the releases of the trip before load j complete?",
    "def producer_parity(j, stages): return (j // stages) % 2  -- the startup arrivals "
    "complete phase 0, so trip 0 waits for parity 0 and each trip after it for the phase "
    "the previous trip's releases completed.",
)
def _producer_parity(fn):
    if not callable(fn):
        raise Wrong("pass a function of (j, stages)")
    verdict = ring_protocol.check(producer_parity=lambda j, s: int(fn(j, s)) & 1, pre_arrived=True)
    if verdict == "ok":
        return True, "no deadlock and no race over every depth, length and interleaving tried."
    if all(int(fn(j, s)) & 1 == ((j // s) % 2) ^ 1 for s in (1, 2, 3, 4) for j in range(12)):
        raise Wrong(
            "that is the parity of section 3's ring, whose empty barriers start fresh. Here "
            "the startup arrivals have completed phase 0 already, so parity 1 names the next "
            "phase, which only the releases of a k-tile not loaded yet can complete: " + verdict
        )
    return False, verdict


from course.exercises import nb09_ring_kernel  # noqa: E402,F401  registers 09.ring
