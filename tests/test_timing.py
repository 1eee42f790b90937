import statistics
import time

import pytest
import torch

from course.bench import timing
from course.bench.gemm_bench import GemmProblem, benchmark_gemm, check_gemm, cublas


def test_rotation_count_beats_the_l2():
    l2 = 50 * 2**20
    assert timing.rotation_count(16 * 2**20, l2) == 10  # 3x L2 / 16 MiB, rounded up
    assert timing.rotation_count(256 * 2**20, l2) == 2  # never fewer than two
    assert timing.rotation_count(2**10, l2) == 32  # capped
    assert timing.rotation_count(16 * 2**20, l2, free_bytes=64 * 2**20) == 2


def test_alternating_rounds_reverse_the_order(monkeypatch):
    order = []
    monkeypatch.setattr(
        timing,
        "time_calls",
        lambda calls, reps, warmup=0, hold=True: (order.append(calls[0]()), [1.0] * reps)[1],
    )
    t = timing.alternating({"a": [lambda: "a"], "b": [lambda: "b"]}, rounds=4, reps=3, warmup=1)
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"]  # warm-ups, then ABBA
    assert len(t["a"].samples_ms) == 12 and t["a"].median_ms == 1.0


class _FakeGpu:
    """torch.cuda's events and spin kernel on a simulated GPU clock: a spin of c cycles
    lasts c / HOLD_CYCLES_PER_MS ms times `spin_speed`, each call `call_ms`."""

    def __init__(self, spin_speed=1.0, call_ms=0.01):
        self.now, self.spin_speed, self.call_ms, self.spins = 0.0, spin_speed, call_ms, []
        gpu = self

        class Event:
            def __init__(self, enable_timing=True):
                self.t = None

            def record(self):
                self.t = gpu.now

            def elapsed_time(self, other):
                return other.t - self.t

        self.Event = Event

    def sleep(self, cycles):
        self.spins.append(cycles)
        self.now += cycles / timing.HOLD_CYCLES_PER_MS * self.spin_speed

    def call(self, host_ms):
        def run():
            end = time.perf_counter() + host_ms / 1e3
            while time.perf_counter() < end:  # the host's Python, before the launch
                pass
            self.now += self.call_ms

        return run

    def install(self, monkeypatch):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "Event", self.Event)
        monkeypatch.setattr(torch.cuda, "_sleep", self.sleep)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)


def test_a_hold_that_ran_out_is_run_again_longer(monkeypatch):
    gpu = _FakeGpu()
    gpu.install(monkeypatch)
    # 10 calls of 0.3 ms of host time each outlast the first 1 ms hold: run again, longer
    ms = timing.time_calls([gpu.call(0.3)], reps=10)
    assert len(gpu.spins) == 2 and gpu.spins[1] > 3 * gpu.spins[0]
    assert ms == pytest.approx([0.01] * 10)  # the GPU's time of a call, not the host's
    gpu.spins.clear()
    timing.time_calls([gpu.call(0.0)], reps=10)  # a quick host: the first hold suffices
    assert len(gpu.spins) == 1


def test_a_host_slower_than_every_hold_is_an_error(monkeypatch):
    gpu = _FakeGpu(spin_speed=0.0)  # a spin that ends at once: the host always comes late
    gpu.install(monkeypatch)
    with pytest.raises(timing.HostBoundError, match="the host took"):
        timing.time_calls([gpu.call(0.05)], reps=4)
    assert len(gpu.spins) == timing.HOLD_TRIES
    gpu.spins.clear()
    assert len(timing.time_calls([gpu.call(0.05)], reps=4, hold=False)) == 4  # no hold asked
    assert gpu.spins == []


@pytest.mark.gpu
def test_a_slow_host_does_not_reach_the_times():
    """A call whose host side takes 0.3 ms before a kernel of a few microseconds: held, the
    events time the kernel; without the hold, the host's 0.3 ms."""

    def call():
        end = time.perf_counter() + 3e-4
        while time.perf_counter() < end:
            pass
        torch.cuda._sleep(2000)

    held = statistics.median(timing.time_calls([call], reps=20, warmup=3))
    bare = statistics.median(timing.time_calls([call], reps=20, warmup=3, hold=False))
    assert held < 0.1 < 0.25 < bare, (held, bare)


def test_spread():
    t = timing.Timing("x", [1.0, 1.0, 1.0, 1.0, 2.0])
    assert t.median_ms == 1.0 and t.spread >= 0


@pytest.mark.gpu
def test_cublas_against_itself_reads_about_100_percent():
    p = GemmProblem(2048, 2048, 2048, torch.bfloat16)
    assert check_gemm(cublas, p).ok
    r = benchmark_gemm(cublas, p, "cublas", rounds=4, reps=10)
    assert 85 < r.pct_of_cublas < 115, r
    assert r.input_sets >= 2 and r.samples == 40
