"""How long does it take? CUDA-event timing done the way the course insists on.

* CUDA events around each call (device time, not host time);
* warm-up calls first (module load, compilation, clock ramp stay out);
* many repetitions, reported as the median;
* rotating input sets, so that consecutive calls do not find their inputs in L2
  (a 50 MB L2 holds a whole 2048^2 bf16 GEMM's operands and flatters it);
* optionally, each contender's launches captured in a CUDA graph and the graph
  replayed: the Python cost of launching (argument checks, wrapping pointers) then
  stays out of the device time, for cuBLAS and the course's kernels alike;
* the GPU held (a spin kernel, torch.cuda._sleep) while the host queues a round's calls,
  so that a slow host cannot leave the GPU idle between them: the events then measure
  the kernels back to back, not the host's Python. An H200 read every course kernel at
  half speed at 4096^3 in float8 (0.17 ms against 0.095) in fresh processes, where the host
  took 0.15 ms to queue one launch of the course's run() (2026-12-04); `hold=False` times
  what a Python-launched loop costs, host included (last_percent's launch part);
* contenders timed in alternating rounds (A B B A A B ...) in one process, because
  a GPU's clock falls under sustained load: an H100 ran cuBLAS fp16 4096^3 at
  760 TFLOP/s in a short burst and 666 sustained, so unpaired numbers taken at
  different moments mislead by 15% or more.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

Call = Callable[[], object]


def rotation_count(
    bytes_per_set: int, l2_bytes: int | None = None, free_bytes: int | None = None, limit: int = 32
) -> int:
    """How many input sets to rotate through so that their total exceeds 3x the L2.

    At least 2; at most `limit`, and never more than a quarter of free memory.
    """
    if l2_bytes is None:
        l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    n = max(2, math.ceil(3 * l2_bytes / max(bytes_per_set, 1)))
    if free_bytes is not None:
        n = min(n, max(2, free_bytes // 4 // max(bytes_per_set, 1)))
    return min(n, limit)


# The hold: the spin kernel counts SM clock cycles, and at most this many run in a
# millisecond (an H100/H200 boosts to 1.98 GHz): at a lower clock it lasts longer, never
# shorter. A round's first hold; one that ran out is doubled past the host's time, this often.
HOLD_CYCLES_PER_MS = 2_000_000
FIRST_HOLD_MS = 1.0
HOLD_TRIES = 4


class HostBoundError(RuntimeError):
    """The host could not queue a round of calls within the GPU's hold: the events would
    measure the host's Python rather than the kernels."""


def time_calls(calls: Sequence[Call], reps: int, warmup: int = 0, hold: bool = True) -> list[float]:
    """Milliseconds of `reps` calls, cycling through `calls` (one per input set).

    hold: a spin kernel keeps the GPU busy while the host queues the round, and the round
    counts only if the host finished queueing before the spin ended (the hold is measured
    by its own events); otherwise it is run again with a longer hold. Without it, a call
    whose launch takes the host longer than the kernel takes the GPU is timed at the
    host's pace."""
    if not torch.cuda.is_available():
        raise RuntimeError("timing needs a CUDA GPU")
    for i in range(warmup):
        calls[i % len(calls)]()
    hold_ms = FIRST_HOLD_MS
    for _ in range(HOLD_TRIES if hold else 1):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        if hold:  # the spin between its own two events
            held = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            held[0].record()
            torch.cuda._sleep(int(hold_ms * HOLD_CYCLES_PER_MS))
            held[1].record()
        queued = time.perf_counter()
        for i in range(reps):
            starts[i].record()
            calls[i % len(calls)]()
            ends[i].record()
        host_ms = (time.perf_counter() - queued) * 1e3
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        if not hold or host_ms < held[0].elapsed_time(held[1]):
            return samples
        hold_ms = 2 * host_ms
    raise HostBoundError(
        f"the host took {host_ms:.2f} ms to queue {reps} calls, longer than the GPU's hold of "
        f"{held[0].elapsed_time(held[1]):.2f} ms {HOLD_TRIES} times: these times would be "
        "the host's"
    )


def graphed(calls: Sequence[Call], launches: int) -> Call:
    """One call that replays a CUDA graph of `launches` calls (cycling through `calls`).

    The calls run once eagerly on a side stream first (lazy initialisation must not
    happen during capture).
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            calls[i % len(calls)]()
    return graph.replay


@dataclass
class Timing:
    """All samples of one contender; summary statistics on demand."""

    name: str
    samples_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    def round_medians(self, reps: int) -> list[float]:
        """The median of each round's `reps` samples (as `alternating` appends them)."""
        return [
            statistics.median(self.samples_ms[i : i + reps])
            for i in range(0, len(self.samples_ms) - reps + 1, reps)
        ]

    @property
    def spread(self) -> float:
        """Interquartile range over median: how noisy this contender's timing was."""
        if len(self.samples_ms) < 4:
            return 0.0
        q = statistics.quantiles(self.samples_ms, n=4)
        return (q[2] - q[0]) / self.median_ms


def alternating(
    contenders: dict[str, Sequence[Call]],
    rounds: int = 10,
    reps: int = 10,
    warmup: int = 5,
    round_done: Callable[[str, float, float, list[float]], None] | None = None,
    hold: bool = True,
) -> dict[str, Timing]:
    """Time every contender in `rounds` rounds of `reps` calls, alternating the order.

    Each contender is warmed up first. Round r runs the contenders forwards when r
    is even and backwards when odd, so no contender always runs on a hotter or
    cooler GPU than another. `round_done(name, start, end, ms)` gets the host's
    perf_counter times around each contender's round and the round's samples: the GPU
    is idle at `start` and has finished the round at `end` (time_calls synchronises),
    so whatever was sampled in between belongs to that contender. `hold`: time_calls'.
    """
    names = list(contenders)
    for name in names:
        time_calls(contenders[name], reps=1, warmup=warmup)
    timings = {name: Timing(name) for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            ms = time_calls(contenders[name], reps, hold=hold)
            timings[name].samples_ms += ms
            if round_done is not None:
                round_done(name, start, time.perf_counter(), ms)
    return timings


def round_ratios(reference: Timing, candidate: Timing, reps: int) -> tuple[float, float, float]:
    """(median, lowest, highest) over rounds of 100 x reference / candidate time: the
    speed of `candidate` in percent of `reference`, one ratio per alternating round (the
    two ran back to back, on the same clock), so drift between rounds cancels."""
    return spread(
        [100 * r / c for r, c in zip(reference.round_medians(reps), candidate.round_medians(reps))]
    )


def spread(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(median, lowest, highest) of per-round ratios, to 0.01: how the course reports one."""
    return (round(statistics.median(ratios), 2), round(min(ratios), 2), round(max(ratios), 2))
