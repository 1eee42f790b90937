"""course.sim.ring_code runs a ring's own code on the CPU: the kernel's ring holds, each
mistake the kernel can inject (Config.bug) is found and named, and what the model does
not know is said, not guessed."""

import pytest

from course.sim import ring_code
from kernels import tma_gemm
from kernels.tma_gemm import TmaGemm

BUG_MISTAKES = {
    "producer_parity": "wrong parity",
    "missing_arrive": "missing release",
    "arrival_count": "arrival count",
    "thread_arrival_count": "arrival count",
}


def test_the_kernels_own_ring_holds_everywhere_it_is_tried():
    v = ring_code.verdict(TmaGemm.ring, TmaGemm, seeds=4)
    assert v.ok, v.detail


@pytest.mark.parametrize("bug", tma_gemm.BUGS[1:])
def test_each_injected_bug_deadlocks_and_is_named(bug):
    v = ring_code.verdict(TmaGemm.ring, TmaGemm, config=tma_gemm.Config(bug=bug))
    assert (v.kind, v.mistake) == ("deadlock", BUG_MISTAKES[bug]), v
    assert "waits on empty[" in v.detail or "wait on full[" in v.detail, v.detail


def test_a_deadlock_names_the_barrier_its_phase_and_the_parity_needed():
    v = ring_code.run(
        TmaGemm.ring, TmaGemm, tma_gemm.Config(stages=2, bug="producer_parity"), k_tiles=4
    )
    assert v.kind == "deadlock"
    assert (
        "warp 0 waits on empty[0] for parity 0 (loading k-tile 0, which needs parity 1)" in v.detail
    ), v.detail


def test_the_interleaving_changes_with_the_seed_but_a_correct_ring_never_fails():
    runs = {
        ring_code.run(TmaGemm.ring, TmaGemm, tma_gemm.Config(stages=3), 7, seed).detail
        for seed in range(8)
    }
    assert runs == {ring_code.run(TmaGemm.ring, TmaGemm, tma_gemm.Config(stages=3), 7).detail}


def test_a_ring_the_model_does_not_know_is_unmodelled_not_judged():
    v = ring_code.verdict(
        tma_gemm.TmaPipelineGemm.ring,
        tma_gemm.TmaPipelineGemm,
        stages_list=(2,),
        k_tiles_list=(3,),
        seeds=1,
    )
    assert v.kind == "unmodelled" and "cutlass.pipeline" in v.detail, v


def test_an_early_release_is_a_race_on_the_stage_being_read():
    from course.exercises.solutions import nb09_solutions as s

    v = ring_code.verdict(s.ring__early_release, TmaGemm)
    assert (v.kind, v.mistake) == ("race", "released too early"), v
    assert "while warp" in v.detail or "loaded over it" in v.detail
