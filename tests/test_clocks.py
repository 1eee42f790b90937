"""course.bench.clocks and clock_rounds: attributing clock samples to contenders, and the
ratios in time and in cycles (no GPU needed: the rounds are made up)."""

import pytest

from course.bench import clock_rounds, clocks


def _round(name, index, ms, mhz, capped=0.0):
    return {
        "name": name,
        "round": index,
        "ms": ms,
        "mhz": mhz,
        "watts": 400.0,
        "capped": capped,
        "thermal": 0.0,
    }


def test_a_slower_clock_is_not_counted_against_the_kernel_in_cycles():
    # the kernel takes 10% longer, but only because its rounds ran at a 10% lower clock
    rounds = [_round("cublas", i, 1.0, 1980) for i in range(4)]
    rounds += [_round("kernel", i, 1.1, 1800, capped=1.0) for i in range(4)]
    time_pct = clock_rounds.paired_pct(rounds, "kernel")
    cycle_pct = clock_rounds.paired_pct(rounds, "kernel", cycles=True)
    assert time_pct[0] == pytest.approx(90.91, abs=0.01)
    assert cycle_pct[0] == pytest.approx(100.0, abs=0.01)
    summary = clock_rounds.summarize_rounds(rounds)
    assert summary["kernel"]["mcycles"] == pytest.approx(1.1 * 1800 / 1e3)
    assert summary["kernel"]["power_capped"] == 1.0 and summary["cublas"]["power_capped"] == 0.0


def test_ratios_pair_rounds_by_index_and_skip_rounds_without_samples():
    rounds = [
        _round("cublas", 0, 1.0, 1500),
        _round("cublas", 1, 2.0, 1500),
        _round("kernel", 1, 1.0, 1500),
        _round("kernel", 0, 0.5, None),
    ]
    assert clock_rounds.paired_pct(rounds, "kernel") == (200.0, 200.0, 200.0)


def test_sampler_summary_and_its_sentence():
    sampler = clocks.ClockSampler()
    sampler.samples = [
        clocks.Sample(t, mhz, 400.0, reasons)
        for t, mhz, reasons in ((0.0, 1980, 0), (0.1, 1500, 0x4), (0.2, 1400, 0x4))
    ]
    summary = sampler.summary()
    assert summary == {
        "median_mhz": 1500,
        "min_mhz": 1400,
        "max_mhz": 1980,
        "power_capped": pytest.approx(0.667),
    }
    assert clocks.describe_clock(summary) == (
        "SM clock 1500 MHz (1400-1980), power-capped in 67% of samples"
    )
    assert [s.mhz for s in sampler.between(0.05, 0.3)] == [1500, 1400]
    assert clocks.describe_clock({}) == ""


def test_no_nvml_means_no_sampler_not_an_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pynvml(name, *args, **kwargs):
        if name == "pynvml":
            raise ImportError("no pynvml here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    with clocks.sampled_clock() as sampler:
        assert sampler is None
