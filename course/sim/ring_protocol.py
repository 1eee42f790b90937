"""The barrier protocol of notebook 09's kernel (kernels/tma_gemm.py), executed on the CPU.

No timing here (course.sim models that): this runs the exact sequence of mbarrier
operations the kernel's warps perform -- warp 0 fills the ring, every warp waits on
full[t % S], reads, arrives on empty[t % S], warp 0 refills -- with TMA copies landing
in a random order, and reports whether that order can deadlock or race. Whatever
parity functions it is given are used for the waits: the kernel's own
(kernels.tma_gemm.producer_parity / consumer_parity) or a learner's attempt.

    run(stages=4, k_tiles=10)            "ok"
    run(4, 10, bug="missing_arrive")     "deadlock: ..."
"""

from __future__ import annotations

import random
from typing import Callable

from course.models.mbarrier import MBarrier

Parity = Callable[[int, int], int]


def kernel_parities(bug: str = "") -> tuple[Parity, Parity]:
    from kernels.tma_gemm import consumer_parity, producer_parity

    return (lambda j, s: producer_parity(j, s, bug)), consumer_parity


def run(
    stages: int,
    k_tiles: int,
    warps: int = 8,
    bug: str = "",
    seed: int = 0,
    producer_parity: Parity | None = None,
    consumer_parity: Parity | None = None,
    pre_arrived: bool = False,
) -> str:
    """One random interleaving of the kernel's protocol: "ok", "deadlock: ..." or
    "race: ..." (a stage read before its k-tile landed, or overwritten while read).

    `pre_arrived`: the other convention of hand-written Hopper kernels: every warp first
    arrives once on every empty barrier, so each stage starts released (phase 0 of its
    empty barrier completes before any load), and the producer's waits must name the
    phases that follow."""
    kp, kc = kernel_parities(bug)
    producer_parity = producer_parity or kp
    consumer_parity = consumer_parity or kc
    rng = random.Random(seed)
    full = [MBarrier(2 if bug == "arrival_count" else 1, f"full[{s}]") for s in range(stages)]
    empty_count = warps * 32 if bug == "thread_arrival_count" else warps
    empty = [MBarrier(empty_count, f"empty[{s}]") for s in range(stages)]
    content: list[int | None] = [None] * stages  # which k-tile each stage holds
    readers: list[set] = [set() for _ in range(stages)]
    in_flight: list[tuple[int, int]] = []  # (stage, k-tile) copies issued, not landed
    problems: list[str] = []

    def produce(j):
        s = j % stages
        yield (empty[s], producer_parity(j, stages), f"warp 0 refilling stage {s} with k-tile {j}")
        full[s].arrive(tx=1)
        in_flight.append((s, j))

    def warp(w):
        if pre_arrived:
            for s in range(stages):
                empty[s].arrive()
            yield None  # other warps may start before this one's startup arrivals
        if w == 0:
            for j in range(min(stages, k_tiles)):
                yield from produce(j)
        for t in range(k_tiles):
            s = t % stages
            yield (full[s], consumer_parity(t, stages), f"warp {w} waiting for k-tile {t}")
            if content[s] != t:
                problems.append(
                    f"race: warp {w} read stage {s} expecting k-tile {t} but it "
                    f"held {'nothing yet' if content[s] is None else content[s]}"
                )
            readers[s].add((w, t))
            yield None  # the MMAs: other warps and copies may run meanwhile
            readers[s].discard((w, t))
            if bug != "missing_arrive":
                empty[s].arrive()
            if w == 0 and t + stages < k_tiles:
                yield from produce(t + stages)

    agents = {w: warp(w) for w in range(warps)}
    waiting: dict = {w: None for w in agents}
    while agents or in_flight:
        runnable = [
            w for w in agents if waiting[w] is None or waiting[w][0].try_wait(waiting[w][1])
        ]
        choices = [("warp", w) for w in runnable] + [("tma", i) for i in range(len(in_flight))]
        if not choices:
            stuck = sorted(
                {
                    f"{why} (wait on {bar.name} for parity {p}; that barrier is in "
                    f"phase {bar.phase})"
                    for bar, p, why in waiting.values()
                }
            )
            return "deadlock: " + "; ".join(stuck[:3]) + ("; ..." if len(stuck) > 3 else "")
        kind, x = rng.choice(choices)
        if kind == "tma":
            s, j = in_flight.pop(x)
            if any(t < j for _, t in readers[s]):
                problems.append(
                    f"race: k-tile {j} landed in stage {s} while k-tile "
                    f"{min(t for _, t in readers[s])} was still being read"
                )
            content[s] = j
            full[s].complete_tx(1)
        else:
            try:
                waiting[x] = next(agents[x])
            except StopIteration:
                del agents[x], waiting[x]
        if problems:
            return problems[0]
    return "ok"


def check(stages_list=(1, 2, 3, 4), k_tiles_list=(1, 3, 5, 9), seeds: int = 4, **kwargs) -> str:
    """run() over several ring depths, lengths and interleavings: the first problem
    found, or "ok"."""
    for stages in stages_list:
        for k_tiles in k_tiles_list:
            for seed in range(seeds):
                verdict = run(stages, k_tiles, seed=seed, **kwargs)
                if verdict != "ok":
                    return f"{stages} stage(s), {k_tiles} k-tiles: {verdict}"
    return "ok"
