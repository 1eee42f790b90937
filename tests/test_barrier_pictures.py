"""The pictures of the mbarrier (notebook 08), of WGMMA's groups (notebook 10) and of a
ring's barrier phases (notebook 14): drawn from the course's models, and labelled."""

import matplotlib

matplotlib.use("Agg")

from course.models import wgmma_groups  # noqa: E402
from course.sim import pipeline_sim  # noqa: E402
from course.viz import barrier_pictures, wgmma_pictures  # noqa: E402


def _texts(fig):
    return (
        [t.get_text() for ax in fig.axes for t in ax.texts]
        + [t.get_text() for t in fig.texts]
        + [t.get_text() for ax in fig.axes for t in (ax.title, ax.xaxis.label)]
    )


def test_the_wgmma_loop_releases_a_stage_only_after_its_group_completed():
    s = wgmma_groups.schedule(k_tiles=6, stages=4, keep=1)
    assert not s.races
    assert all(s.released[t] >= s.groups[t].end for t in range(6))
    # k-tile t-1's stage goes back only after k-tile t was issued: t's group is in flight
    issued = {x.k_tile: x.end for x in s.warpgroup if x.what == "issue"}
    assert all(s.released[t - 1] >= issued[t] for t in range(1, 6))
    assert s.tensor_core_idle == 0  # one group always queued behind the running one


def test_wait_group_0_idles_the_tensor_cores_and_an_early_release_races():
    assert wgmma_groups.schedule(k_tiles=6, keep=0, issue=1, mma=4).tensor_core_idle == 5
    assert wgmma_groups.schedule(k_tiles=6, release="after_commit").races == list(range(6))


def test_the_wgmma_timeline_is_labelled():
    texts = _texts(wgmma_pictures.group_timeline())
    assert any("wait_group(1)" in t for t in texts)
    assert any(t.startswith("source: course.models.wgmma_groups") for t in texts)
    assert "time (illustrative units)" in texts
    assert {f"group {t}" for t in range(6)} <= set(texts)


def test_the_mbarrier_picture_is_the_models_states():
    fig = barrier_pictures.mbarrier_states()
    texts = _texts(fig)
    assert texts.count("try_wait.parity(0): False") == 3
    assert "phase 1 (parity 1)" in texts and "try_wait.parity(0): True" in texts
    assert "tx bytes pending: 8,192" in texts
    assert any(t.startswith("source: course.models.mbarrier") for t in texts)
    # too few bytes landing: the phase never completes, as the model says
    short = barrier_pictures.TMA_LOAD_STEPS[:3]
    assert "try_wait.parity(0): True" not in _texts(barrier_pictures.mbarrier_states(short))


def test_the_barrier_timeline_draws_every_phase_of_every_barrier():
    sim = pipeline_sim.simulate(stages=4, k_tiles=8, epilogue_latency=600)
    fig = barrier_pictures.barrier_timeline(sim)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    names = [
        b.name
        for pipe in (sim.parts["ab"], sim.parts["acc"])
        for kind in ("full", "empty")
        for b in getattr(pipe, kind)
    ]
    assert set(names) <= set(labels) and not any(l.startswith("smem stage") for l in labels)
    texts = _texts(fig)
    for bar in sim.parts["ab"].full:  # k-tiles 0..7 through 4 stages: each full twice
        assert len(sim.engine.log[id(bar)].completions) == 2
    assert texts.count("ph 2") >= 8 and any("source: course.sim.pipeline_sim" in t for t in texts)
