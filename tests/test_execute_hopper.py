"""Hopper's core on the CPU executor: mbarriers, TMA (load, store, multicast), clusters and
NVIDIA's own cutlass.pipeline, run under notebook 08's TMA kernels and notebook 09's TMA
GEMM (both rings), with every planted bug of the ring named as a deadlock and the TMA
hazards (a stage read before its wait, a store with no proxy fence, a staging buffer
rewritten before the store has read it) named with thread, tensor and line.
"""

import cutlass
import numpy as np
import pytest
import torch

from course.execute import Hazard, hazards, ladder_runs, pointer, run
from course.execute.mbarriers import MBARRIER
from course.execute.sm90 import PROXY_FENCE
from course.models import tensormap
from kernels import tma
from tests import execute_hopper_kernels as planted

# ---------------------------------------------------------------- notebook 08: TMA


@pytest.mark.parametrize("kernel", ["load", "boxes", "store"])
@pytest.mark.parametrize("shape", [(100, 72), (64, 64), (1, 8), (130, 200)], ids=str)
def test_the_tma_kernels_copy_exactly_at_ragged_shapes(kernel, shape):
    r = ladder_runs.run_tma(kernel, shape)
    assert r.ok, r.summary()


@pytest.mark.parametrize(
    "dtype, cfg",
    [
        (torch.float16, tma.Config(box_rows=16, box_cols=32, swizzle=64, threads=64)),
        (torch.float32, tma.Config(box_rows=8, box_cols=32, swizzle=128, threads=32)),
        (torch.bfloat16, tma.Config(box_rows=32, box_cols=8, swizzle=0, threads=32)),
    ],
    ids=["fp16-sw64", "fp32-sw128", "bf16-noswizzle"],
)
def test_the_tma_kernels_copy_exactly_with_other_boxes(dtype, cfg):
    for kernel in ("load", "store"):
        r = ladder_runs.run_tma(kernel, (45, 40), dtype, cfg)
        assert r.ok, r.summary()


@pytest.mark.parametrize(
    "cluster, multicast", [(2, True), (4, True), (2, False), (1, False)], ids=str
)
def test_multicast_gives_every_cta_of_the_cluster_every_tile(cluster, multicast):
    cfg = tma.MulticastConfig(cluster=cluster, tiles=2, multicast=multicast)
    r = ladder_runs.run_tma("multicast", config=cfg)
    assert r.ok, r.summary()


def test_the_physical_box_shows_the_swizzle_the_tensor_map_model_predicts():
    """The raw bytes of each box in address order are the 128B swizzle of the logical box
    (course.models.tensormap.swizzled_box), as the H100 shows in tests/test_tma.py."""
    cfg = tma.Config()
    x = torch.randn(128, 64).to(torch.bfloat16)
    shape = (128, 64)
    mosaics = {}
    for mode in ("boxes", "physical"):
        out = torch.full(shape, float("nan"), dtype=x.dtype)
        run(tma.TmaLoad(cutlass.BFloat16, cfg, mode).__call__, pointer(x), pointer(out),
            128, 64, 64, 64, None)  # fmt: skip
        mosaics[mode] = out
    for i in range(2):
        logical = mosaics["boxes"][64 * i : 64 * (i + 1)].contiguous().view(torch.int16)
        got = mosaics["physical"][64 * i : 64 * (i + 1)].contiguous().view(torch.int16)
        want = tensormap.swizzled_box(logical, cfg.swizzle)
        assert np.array_equal(got.numpy(), np.asarray(want)), i


# ---------------------------------------------------------------- notebook 09: the TMA GEMM


@pytest.mark.parametrize(
    "m, n, k, ring",
    [
        (256, 256, 192, "mbarrier"),
        (256, 256, 192, "pipeline"),
        (129, 264, 200, "mbarrier"),
        (129, 264, 200, "pipeline"),
    ],
    ids=str,
)
def test_the_tma_gemm_agrees_with_torch_with_both_rings(m, n, k, ring):
    r = ladder_runs.run_tma_gemm(m, n, k, ring)
    assert r.ok, r.summary()


def test_the_tma_gemm_agrees_with_torch_in_fp16():
    r = ladder_runs.run_tma_gemm(129, 264, 200, "pipeline", dtype=cutlass.Float16)
    assert r.ok, r.summary()


@pytest.mark.parametrize(
    "bug, state",
    [
        ("producer_parity", "full[4] for parity 0"),  # empty[0]: full + stages
        ("missing_arrive", "full[4] for parity 0"),
        ("arrival_count", "with 1/2 arrivals"),
        ("thread_arrival_count", "with 8/256 arrivals"),
    ],
)
def test_each_planted_ring_bug_is_a_deadlock_naming_the_barrier(bug, state):
    from kernels import tma_gemm

    r = ladder_runs.run_tma_gemm(128, 128, 320, config=tma_gemm.Config(bug=bug))
    assert r.hazard is not None and r.hazard.kind == hazards.DEADLOCK, r.summary()
    detail = r.hazard.detail
    assert "wait on mbarrier" in detail and state in detail, detail
    assert "mbarrier_wait(bar, parity)" in str(r.hazard)


# ---------------------------------------------------------------- planted TMA hazards


def _planted(fn, mistake):
    x = torch.randn(planted.ROWS, planted.COLS)
    out = torch.full_like(x, float("nan"))
    run(fn, pointer(x, "src"), pointer(out, "out"), mistake, None)
    return x, out


def test_the_planted_kernels_run_clean_without_their_mistake():
    for fn in (planted.load, planted.store):
        x, out = _planted(fn, "")
        assert torch.equal(out, x)


def test_a_stage_read_before_its_tma_loads_wait_is_named():
    with pytest.raises(Hazard) as found:
        _planted(planted.load, "read_before_wait")
    h = found.value
    assert h.kind == hazards.IN_FLIGHT and "TMA load" in h.detail and "sTile[0, 0]" in h.detail
    assert "BUG when not waited for" in h.site.text()


def test_a_tma_store_without_the_proxy_fence_is_named():
    with pytest.raises(Hazard) as found:
        _planted(planted.store, "store_without_fence")
    assert found.value.kind == PROXY_FENCE and "fence.proxy.async" in found.value.detail


def test_a_staging_buffer_rewritten_before_the_stores_read_wait_is_named():
    with pytest.raises(Hazard) as found:
        _planted(planted.store, "overwrite_before_read_wait")
    h = found.value
    assert h.kind == hazards.STAGE_OVERWRITE and "TMA store" in h.detail
    assert "BUG if not yet read" in h.site.text()


def test_an_mbarrier_waited_on_before_its_init_is_visible_is_named():
    """Warp 0 initialises and fences the barrier; with no sync_threads after, the other
    warps' wait may see it uninitialised."""
    with pytest.raises(Hazard) as found:
        _planted(planted.load, "no_sync_after_init")
    h = found.value
    assert h.kind == MBARRIER and "no a sync_threads" not in h.detail
    assert "sync_threads (or cluster barrier)" in h.detail and "bar[0]" in h.detail


# ---------------------------------------------------------------- clusters


def _cluster(mistake):
    out = torch.full((4 * planted.THREADS,), float("nan"))
    run(planted.cluster, pointer(out, "out"), mistake, None)
    return out


def test_a_clusters_ctas_run_together_and_arrive_on_each_others_barriers():
    out = _cluster("")
    ranks = torch.arange(4).repeat_interleave(planted.THREADS) % 2
    assert torch.equal(out, ranks.float())


def test_a_missing_remote_arrival_is_a_deadlock_of_both_ctas():
    with pytest.raises(Hazard) as found:
        _cluster("no_remote_arrive")
    h = found.value
    assert h.kind == hazards.DEADLOCK
    assert "CTA (0, 0, 0)" in h.detail and "CTA (1, 0, 0)" in h.detail
    assert "wait on mbarrier bar[0] for parity 0" in h.detail


def test_a_register_count_setmaxnreg_refuses_is_named():
    with pytest.raises(Hazard) as found:
        _cluster("odd_register_count")
    assert "multiple of 8 in [24, 256]" in found.value.detail


# ---------------------------------------------------------------- interleavings and pipelines


@pytest.mark.parametrize("seed", [1, 2])
def test_other_interleavings_land_copies_early_and_stay_correct(seed):
    for r in (
        ladder_runs.run_tma_gemm(129, 264, 200, "pipeline", seed=seed),
        ladder_runs.run_tma("multicast", seed=seed),
        ladder_runs.run_tma("store", seed=seed),
    ):
        assert r.ok, r.summary()


def test_cutlass_pipeline_is_nvidias_own_code_translated():
    """PipelineTmaAsync on the executor is CuTe DSL's class, its methods compiled from CuTe
    DSL's own file with `cute` bound to the executor's stand-ins."""
    import cutlass.pipeline as real

    from course.execute import api
    from course.execute.translate import Translator

    mine = Translator().value(real).PipelineTmaAsync
    create = mine.__dict__["create"].__func__
    assert create.__code__.co_filename == real.sm90.__file__
    assert create.__globals__["cute"] is api.cute


def test_a_stage_released_before_it_was_read_is_named_when_tma_refills_it():
    """Notebook 09's early-release variant: a warp arrives on empty[s] before its MMAs read
    the stage, so warp 0's next TMA load into it is not ordered after those reads."""
    from course.exercises.kernel_check import subclass_with
    from course.exercises.solutions import nb09_solutions
    from kernels import tma_gemm
    from kernels.gemm_host import GemmTypes

    # the kernel with the variant's ring, as the exercise's checker plants a learner's
    early = subclass_with(tma_gemm.TmaGemm, "ring", nb09_solutions.ring__early_release)
    gemm = early(GemmTypes(cutlass.BFloat16, cutlass.Float32, cutlass.BFloat16), tma_gemm.Config())
    m, n, k = 128, 256, 320
    a, b = (torch.randn(r, k).to(torch.bfloat16) for r in (m, n))
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16)
    report = torch.zeros(tma_gemm.REPORT_WORDS, dtype=torch.int32)
    with pytest.raises(Hazard) as found:
        run(gemm.__call__, pointer(a), pointer(b), pointer(out), m, n, k, pointer(report), None)
    h = found.value
    assert h.kind == hazards.STAGE_OVERWRITE and "TMA load" in h.detail
    assert "released too early" in h.detail
