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
        lambda calls, reps, warmup=0: (order.append(calls[0]()), [1.0] * reps)[1],
    )
    t = timing.alternating({"a": [lambda: "a"], "b": [lambda: "b"]}, rounds=4, reps=3, warmup=1)
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"]  # warm-ups, then ABBA
    assert len(t["a"].samples_ms) == 12 and t["a"].median_ms == 1.0


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
