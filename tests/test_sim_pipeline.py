"""Notebook 09's pipeline simulator: correctness, the speed-up shape, and every injected
mistake caught with the right explanation (never a hang)."""

import itertools
import time

import matplotlib
import pytest

matplotlib.use("Agg")

from course.sim import pipeline_sim  # noqa: E402
from course.viz import pipeline_pictures  # noqa: E402
from course.sim.pipeline_diagnosis import CAUSES  # noqa: E402
from course.sim.event_engine import Arrive, Busy, Engine, Issue, Signal, Wait  # noqa: E402


@pytest.mark.parametrize(
    "stages,k_tiles,load,mma",
    [
        (1, 1, 600, 200),
        (1, 7, 300, 300),
        (2, 16, 600, 200),
        (3, 5, 1500, 25),
        (4, 16, 600, 200),
        (6, 33, 0, 700),
        (8, 9, 50, 200),
    ],
)
def test_every_k_tile_is_consumed_once_in_order(stages, k_tiles, load, mma):
    sim = pipeline_sim.simulate(stages=stages, k_tiles=k_tiles, load_latency=load, mma_latency=mma)
    expected = [f"k{k}" for k in range(k_tiles)]
    assert sim.ok, sim.explain()
    assert sim.consumed == expected and sim.loaded == expected
    assert sim.deadlock is None and sim.fault is None and sim.hazards == []
    assert sim.explain() == "" and sim.cause is None


def test_persistent_tiles_keep_order_and_phases_across_tiles():
    sim = pipeline_sim.simulate(stages=3, k_tiles=5, tiles=4, acc_stages=2, epilogue_latency=900)
    assert sim.ok, sim.explain()
    assert sim.consumed == [f"t{t}.k{k}" for t in range(4) for k in range(5)]


def test_total_cycles_match_the_formula_exactly():
    for s, k, load, mma in itertools.product(
        (1, 2, 3, 5, 8), (1, 4, 17), (0, 450, 1200), (50, 300)
    ):
        sim = pipeline_sim.simulate(stages=s, k_tiles=k, load_latency=load, mma_latency=mma)
        assert sim.total_cycles == pipeline_sim.predicted_cycles(s, k, load, mma), (s, k, load, mma)


def test_one_stage_serializes_and_enough_stages_hide_the_load():
    k, load, mma = 16, 600, 200
    sims = pipeline_sim.sweep(range(1, 7), k_tiles=k, load_latency=load, mma_latency=mma)
    totals = [s.total_cycles for s in sims]
    assert totals[0] == k * (load + mma)  # 1 stage: fully serial
    assert all(a >= b for a, b in zip(totals, totals[1:]))  # more stages never hurt
    need = pipeline_sim.stages_to_hide_latency(load, mma)
    assert need == 4  # load/mma + 1
    assert totals[need - 1] == load + k * mma  # tensor core never waits
    assert totals[need - 2] > load + k * mma  # one fewer is not enough
    assert sims[0].utilisation == pytest.approx(mma / (load + mma))
    assert sims[need - 1].utilisation == pytest.approx(k * mma / (load + k * mma))
    assert sims[0].waits("mma") > sims[need - 1].waits("mma")


def test_bandwidth_limit_bounds_the_throughput():
    sim = pipeline_sim.simulate(stages=8, k_tiles=16, load_interval=300)
    assert sim.ok and sim.total_cycles >= 15 * 300


def test_ping_pong_accumulators_hide_a_long_epilogue():
    one = pipeline_sim.simulate(stages=4, k_tiles=8, tiles=4, acc_stages=1, epilogue_latency=1200)
    two = pipeline_sim.simulate(stages=4, k_tiles=8, tiles=4, acc_stages=2, epilogue_latency=1200)
    assert one.ok and two.ok
    assert two.total_cycles < one.total_cycles * 0.85


# -- injected mistakes -------------------------------------------------------------------

DEADLOCKS = {
    "producer_parity": (
        "wrong_parity",
        ["producer waits on ab.empty[0] with parity 0", "start its phase bit at 1"],
    ),
    "arrival_count": (
        "arrival_count",
        ["ab.full[0] was initialised to expect 2 arrivals", "1/2 arrivals"],
    ),
    "missing_arrive": (
        "missing_arrive",
        ["mma passed ab.full[0] 1 time(s) but arrived on ab.empty[0] only 0 time(s)"],
    ),
    "tx_bytes": ("tx_bytes", ["4096 bytes", "expect_tx announced more bytes"]),
}


@pytest.mark.parametrize("bug", sorted(DEADLOCKS))
def test_deadlocks_are_caught_and_explained(bug):
    cause, phrases = DEADLOCKS[bug]
    t = time.perf_counter()
    sim = pipeline_sim.simulate(stages=4, k_tiles=16, bug=bug)
    assert time.perf_counter() - t < 2  # stops, never hangs
    assert sim.deadlock is not None and not sim.ok
    assert sim.deadlock.cause == cause and sim.cause == cause
    text = str(sim.deadlock)
    assert text.startswith("DEADLOCK at t=")
    for phrase in phrases:
        assert phrase in text, (phrase, text)
    assert "deadlock" in sim.summary()
    assert {b.role for b in sim.deadlock.blocked} == {"producer", "mma", "epilogue"}


def test_wrong_consumer_parity_is_a_race_then_a_fault():
    sim = pipeline_sim.simulate(stages=4, k_tiles=16, bug="consumer_parity")
    kinds = {h.kind for h in sim.hazards}
    assert "early_pass" in kinds and "read_before_write" in kinds
    assert sim.cause == "wrong_parity"
    assert sim.fault is not None and "over-arrival" in str(sim.fault)
    assert sim.explain().startswith("Most likely cause (wrong parity)")
    assert sim.consumed[0] is None  # the first MMA read a stage still in flight


def test_early_release_overwrites_a_stage_being_read():
    sim = pipeline_sim.simulate(stages=4, k_tiles=16, bug="early_release")
    assert sim.deadlock is None and sim.fault is None  # it "works"...
    assert sim.cause == "early_release"  # ...but it races
    over = [h for h in sim.hazards if h.kind == "overwrite_before_read"]
    assert (
        over
        and "load k4 starts overwriting ab stage 0 while mma k0 is still reading" in over[0].message
    )
    assert "arrivals: mma at t=600" in over[0].message  # released at issue, not at end
    assert sim.consumed != [f"k{k}" for k in range(16)]  # the MMAs read wrong data
    assert "Release a stage when the MMA is done" in sim.explain()


@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize("stages", [1, 2, 5])
def test_every_bug_is_caught_at_every_depth(stages, consumers):
    for bug in pipeline_sim.BUGS:
        if bug is None:
            continue
        sim = pipeline_sim.simulate(stages=stages, k_tiles=6, bug=bug, consumers=consumers)
        assert not sim.ok and sim.cause is not None, (bug, stages)
        assert sim.explain()


def test_bad_arguments():
    with pytest.raises(ValueError, match="stages"):
        pipeline_sim.simulate(stages=0)
    with pytest.raises(ValueError, match="bug"):
        pipeline_sim.simulate(bug="typo")
    with pytest.raises(ValueError, match="mma_latency"):
        pipeline_sim.simulate(mma_latency=-1)


# -- the engine itself ------------------------------------------------------------------


def test_an_endless_role_hits_the_event_limit_instead_of_hanging():
    e = Engine(max_events=1000)

    def spinner():
        while True:
            yield Busy(1, "spin")

    e.role("spinner", spinner())
    e.run()
    assert e.fault is not None and e.fault.kind == "event limit"
    assert e.events == 1000


def test_two_roles_waiting_on_each_other():
    e = Engine()
    a, b = e.barrier(1, "a"), e.barrier(1, "b")

    def left():
        yield Wait(a, 0)
        yield Arrive(b)

    def right():
        yield Wait(b, 0)
        yield Arrive(a)

    e.role("left", left())
    e.role("right", right())
    e.run()
    from course.sim.pipeline_diagnosis import diagnose

    d = diagnose(e)
    assert d is not None and d.cause in CAUSES
    assert {w.role for w in d.blocked} == {"left", "right"}
    assert "left waits on a with parity 0" in str(d)


def test_async_ops_queue_on_their_unit_and_signal_when_done():
    e = Engine()
    done = e.barrier(2, "done")
    unit = e.unit("tc")
    finish = []

    def issuer():
        yield Issue(unit, 100, "op0", on_done=(Signal(done),))
        yield Issue(unit, 100, "op1", on_done=(Signal(done),))
        yield Wait(done, 0)
        finish.append(e.now)

    e.role("issuer", issuer())
    e.run()
    assert e.finished and finish == [200]  # serial: 0-100, 100-200
    assert [(o.start, o.end) for o in e.ops] == [(0, 100), (100, 200)]


def test_remote_arrive_lands_later():
    e = Engine()
    b = e.barrier(1, "peer")
    seen = []

    def sender():
        yield Arrive(b, delay=150)

    def waiter():
        yield Wait(b, 0)
        seen.append(e.now)

    e.role("sender", sender())
    e.role("waiter", waiter())
    e.run()
    assert seen == [150]


# -- pictures ----------------------------------------------------------------------------


def test_figures_are_labelled():
    sim = pipeline_sim.simulate(stages=2, k_tiles=6)
    fig = pipeline_pictures.timeline(sim)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time (cycles)"
    assert "2-stage" in ax.get_title() and ax.get_legend() is not None
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "TMA warp (producer)" and "tensor core" in labels  # top row last
    dead = pipeline_pictures.timeline(
        pipeline_sim.simulate(stages=2, k_tiles=6, bug="missing_arrive")
    )
    assert "deadlock" in dead.axes[0].get_title()
    sweep = pipeline_pictures.sweep(
        pipeline_sim.sweep(range(1, 5), k_tiles=8), measured={1: 9.0, 2: 5.0, 4: 3.0}
    )
    ax = sweep.axes[0]
    assert ax.get_xlabel() == "pipeline stages" and "speed-up" in ax.get_ylabel()
    import matplotlib.pyplot as plt

    plt.close("all")


def test_a_bad_parity_is_a_fault_not_a_crash():
    e = Engine()
    b = e.barrier(1, "b")

    def role():
        yield Wait(b, 2)

    e.role("r", role())
    e.run()
    assert e.fault is not None and "0 or 1" in str(e.fault)


def test_calibrate_recovers_the_latencies_of_a_sweep():
    sims = pipeline_sim.sweep(range(1, 7), k_tiles=16, load_latency=600, mma_latency=200)
    measured = {s.config.stages: s.total_cycles * 1e-3 for s in sims}  # "microseconds"
    cal = pipeline_sim.calibrate(measured, k_tiles=16)
    assert cal.load_latency == pytest.approx(0.6, rel=0.03)
    assert cal.mma_latency == pytest.approx(0.2, rel=0.03)
    assert cal.max_error < 0.02
    assert "load/MMA = 3.00" in str(cal)
    partial = pipeline_sim.calibrate({1: measured[1], 6: measured[6]}, k_tiles=16)
    assert partial.predicted[2] == pytest.approx(measured[2], rel=0.05)  # predicts unmeasured
    with pytest.raises(ValueError):
        pipeline_sim.calibrate({1: 1.0}, k_tiles=16)


def test_two_consumer_warpgroups_share_each_stage():
    sim = pipeline_sim.simulate(stages=4, k_tiles=8, consumers=2)
    assert sim.ok, sim.explain()
    assert sim.consumed_by == {
        "mma0": [f"k{k}" for k in range(8)],
        "mma1": [f"k{k}" for k in range(8)],
    }
    assert sim.total_cycles == pipeline_sim.predicted_cycles(4, 8, 600, 200)
    assert sim.engine.barriers[0].name == "ab.full[0]"
    empty = next(b for b in sim.engine.barriers if b.name == "ab.empty[0]")
    assert empty.count == 2


def test_empty_count_too_low_lets_the_producer_overwrite():
    sim = pipeline_sim.simulate(stages=2, k_tiles=8, bug="empty_count")
    assert sim.config.consumers == 2
    assert sim.cause == "early_release"
    assert {"overwrite_before_read", "lost_tile"} & {h.kind for h in sim.hazards}
    assert "one arrival per consumer" in sim.explain()
