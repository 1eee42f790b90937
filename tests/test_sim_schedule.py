"""Notebook 15's schedule simulator: invariants, and the seed document's lessons."""

import matplotlib
import pytest

matplotlib.use("Agg")

from course.sim import schedule_sim  # noqa: E402
from course.viz import schedule_pictures  # noqa: E402

SMALL = dict(sms=4, tiles_m=4, tiles_n=4, k_tiles=6)


def _check_every_tile_once(sim):
    cfg = sim.config
    assert sim.ok, sim.explain()
    assert sim.tiles_written() == {u: cfg.cluster for u in range(cfg.units)}
    assert sim.mma_chunks == {u: cfg.k_of(u) for u in range(cfg.units)}


@pytest.mark.parametrize("scheduler", schedule_sim.SCHEDULERS)
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("workload", ["even", "uneven", "busy"])
def test_every_tile_is_produced_exactly_once(scheduler, cluster, workload):
    kw = dict(SMALL, cluster=cluster, scheduler=scheduler)
    units = schedule_sim.ScheduleConfig(**kw).units
    if workload == "uneven":
        kw["tile_k"] = schedule_sim.uneven_work(units, 6)
    elif workload == "busy":
        kw["sm_busy_until"] = (5000, 5000)
    _check_every_tile_once(schedule_sim.simulate(**kw))


@pytest.mark.parametrize("stages,acc_slots", [(1, 1), (2, 2), (3, 1), (6, 2)])
def test_any_depth_and_tmem_slots_are_correct(stages, acc_slots):
    _check_every_tile_once(schedule_sim.simulate(stages=stages, acc_slots=acc_slots, **SMALL))


def test_clc_asks_once_per_extra_tile_plus_one_failure_per_cluster():
    sim = schedule_sim.simulate(scheduler="clc", **SMALL)
    cfg = sim.config
    assert sim.clc_queries == (cfg.units - cfg.clusters) + cfg.clusters
    assert schedule_sim.simulate(scheduler="static", **SMALL).clc_queries == 0


def test_static_round_robin_assignment():
    sim = schedule_sim.simulate(scheduler="static", **SMALL)  # 2 pairs, 8 pair tiles
    by_pair = {}
    for rec in sim.tiles:
        by_pair.setdefault(rec.sm // 2, set()).add(rec.unit)
    assert by_pair == {0: {0, 2, 4, 6}, 1: {1, 3, 5, 7}}


def test_utilisation_per_sm():
    sim = schedule_sim.simulate(**SMALL)
    u = sim.per_sm_utilisation
    assert len(u) == 4 and all(0 < x <= 1 for x in u)
    assert u[0] == u[1] and u[2] == u[3]  # a paired MMA keeps both SMs busy
    assert sim.utilisation == pytest.approx(sum(u) / 4)
    late = schedule_sim.simulate(scheduler="clc", sm_busy_until=(6000, 6000), **SMALL)
    assert late.per_sm_utilisation[0] < late.per_sm_utilisation[2]  # fewer tiles for SM 0/1


def test_deep_pipeline_hides_the_handshake_shallow_does_not():
    lesson = schedule_sim.handshake_lesson(stages=(1, 2, 4, 6), sms=4, tiles_m=4, tiles_n=4)
    cost = dict(zip(lesson.column("stages"), lesson.column("handshake cost")))
    assert cost[1] > 0.10 and cost[2] > 0.10  # shallow: the handshake shows
    assert cost[4] < 0.05 and cost[6] < 0.05  # deep: it is hidden
    speedup = dict(zip(lesson.column("stages"), lesson.column("pair speed-up")))
    assert speedup[1] < 1 and speedup[2] < 1  # pairs lose while shallow...
    assert speedup[4] > 1 and speedup[6] > 1  # ...and win once deep enough
    assert "a deep pipeline hides it" in lesson.claim
    assert "handshake cost" in lesson.table()


def test_handshake_only_matters_for_pairs():
    a = schedule_sim.simulate(cluster=1, handshake_latency=0, **SMALL)
    b = schedule_sim.simulate(cluster=1, handshake_latency=500, **SMALL)
    assert a.total_cycles == b.total_cycles


def test_tmem_ping_pong_overlaps_the_epilogue():
    lesson = schedule_sim.pingpong_lesson(epilogue_latencies=(0, 1600), **SMALL)
    one, two = lesson.column("1 slot"), lesson.column("2 slots")
    assert two[1] < 0.8 * one[1]  # long epilogue: ping-pong wins big
    assert one[1] - one[0] > 2 * (two[1] - two[0])  # and the epilogue costs it far less


def test_clc_balances_uneven_work_and_late_sms():
    lesson = schedule_sim.scheduler_lesson(seeds=range(4))  # 8 SMs, 24 pair tiles
    rows = {r[0].split(" (")[0]: dict(zip(lesson.columns, r)) for r in lesson.rows}
    assert rows["uneven tiles"]["static / clc"] > 1.05  # on average over workloads
    assert rows["uneven tiles"]["best"] > 1.2
    assert rows["2 SMs busy at start"]["clc"] < 0.8 * rows["2 SMs busy at start"]["static"]
    even = rows["even tiles"]
    assert abs(even["clc"] - even["static"]) <= 0.05 * even["static"]
    for r in rows.values():  # a launch per tile is slowest
        assert r["launch"] > r["static"] and r["launch"] > r["clc"]


def test_lesson_figures_and_timeline_are_labelled():
    sim = schedule_sim.simulate(scheduler="clc", sm_busy_until=(3000,), **SMALL)
    fig = schedule_pictures.timeline(sim, warps=True)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time (cycles)" and "clc scheduling" in ax.get_title()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "SM 0 tensor core" in labels and "SM 3 epilogue" in labels
    assert "SM 0 TMA warp" in labels
    lesson = schedule_sim.pingpong_lesson(epilogue_latencies=(0, 800), **SMALL)
    ax = schedule_pictures.lesson(lesson).axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    import matplotlib.pyplot as plt

    plt.close("all")


def test_every_lesson_kind_has_its_chart():
    lessons = [
        schedule_sim.handshake_lesson(stages=(1, 4), **SMALL),
        schedule_sim.pingpong_lesson(epilogue_latencies=(0, 800), **SMALL),
        schedule_sim.scheduler_lesson(seeds=range(1), sms=4, tiles_m=4, tiles_n=4, k_tiles=4),
    ]
    assert {lesson.kind for lesson in lessons} == set(schedule_pictures.CHARTS)
    for lesson in lessons:
        ax = schedule_pictures.lesson(lesson).axes[0]
        series = 2 if lesson.kind == "pingpong" else 3
        assert ax.get_title() and len(ax.get_legend().get_texts()) == series, lesson.kind
    import matplotlib.pyplot as plt

    plt.close("all")


def test_bad_configs():
    with pytest.raises(ValueError, match="cluster"):
        schedule_sim.simulate(cluster=4)
    with pytest.raises(ValueError, match="multiples of 2"):
        schedule_sim.simulate(sms=5)
    with pytest.raises(ValueError, match="scheduler"):
        schedule_sim.simulate(scheduler="random")
    with pytest.raises(ValueError, match="tile_k"):
        schedule_sim.simulate(tile_k=(1, 2))


def test_uneven_work_is_reproducible():
    a, b = schedule_sim.uneven_work(16, 8, seed=3), schedule_sim.uneven_work(16, 8, seed=3)
    assert a == b and len(a) == 16 and set(a) == {8, 24} and a.count(24) == 4
