"""Notebook 13: split-K over a cluster (kernels.split_k_gemm) -- compiled for sm_90a, run on the
CPU executor against torch (ragged shapes, fewer k-tiles than parts, whole tiles before split
ones), a broken hand-off seen there, inputs refused before a launch; on a Hopper GPU, run
against torch over ragged shapes."""

import pytest
import torch

from course.execute import ladder_runs
from kernels import hopper_gemm, split_k_gemm
from kernels.host import KernelInputError
from kernels.selftest import TOLERANCE, relative_error

from .helpers import refuse_launch

PRESETS = split_k_gemm.PRESETS


@pytest.mark.compile
@pytest.mark.parametrize("preset", PRESETS)
def test_partials_are_read_through_the_cluster(preset):
    """The leader reads every helper's accumulator through DSMEM (ld.shared::cluster, one load
    per element per helper), hands slots back with cluster-scope arrivals, and no thread
    leaves before the cluster barrier; nothing is spilled."""
    cfg = PRESETS[preset]
    art = split_k_gemm.artifacts("sm_90a", torch.bfloat16, cfg)
    per_thread = 128 * cfg.tile_n // 256
    assert art.count_ptx(r"ld\.shared::cluster\.b32") == (cfg.split_k - 1) * per_thread
    assert art.count_ptx(r"mapa\.shared::cluster") > 0
    assert art.count_ptx(r"mbarrier\.arrive\.release\.cluster\.shared::cluster") > 0
    assert art.count_ptx(r"barrier\.cluster\.arrive") >= 2  # the ring's set-up, and the exit
    assert art.count_ptx(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16") > 0
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0, res


def test_config_rules():
    with pytest.raises(ValueError, match="split_k must be"):
        split_k_gemm.Config(split_k=5)
    with pytest.raises(ValueError, match="cooperative"):
        split_k_gemm.Config(tile_n=128, pingpong=True, epi_stages=2)
    with pytest.raises(ValueError, match="pairs of 16-element slices"):
        split_k_gemm.Config(tile_n=96)
    with pytest.raises(ValueError, match="at most 4 CTAs"):
        split_k_gemm.Config(split_k=4)  # with the default 2 x 1 cluster: 8 CTAs
    # the slots take shared memory from the ring: one stage less than the SOL kernel's
    assert PRESETS["split_k2"].ring_stages(2) == hopper_gemm.Config().ring_stages(2) - 1


EXECUTED = [
    # (preset, m, n, k, clusters): ragged M, N and K; a K of 2 k-tiles split 4 ways and one
    # of 1 split 2 ways (parts without k-tiles of their own); split_tail over 5 x 2 tiles on
    # 2 clusters of 2: a full wave of 4 whole tiles twice, then 2 tiles split)
    ("split_k2", 130, 264, 192, 1),
    ("split_k4", 130, 136, 128, 1),
    ("split_k2", 70, 264, 40, 1),
    ("split_tail", 600, 392, 192, 2),
]


@pytest.mark.parametrize("preset, m, n, k, clusters", EXECUTED)
def test_the_executor_runs_split_k_against_torch(preset, m, n, k, clusters):
    run = ladder_runs.run_split_k_gemm(PRESETS[preset], m, n, k, clusters=clusters)
    assert run.ok, run.summary()
    assert run.written_past == 0


class LeaderSkipsStore(split_k_gemm.SplitKGemm):
    """A mistake: a split tile's leader adds up the partial sums but never stores the tile
    (only whole tiles are stored)."""

    def store_tile(self, out, shared, me, work, done):
        if work.part == -1:
            super().store_tile(out, shared, me, work, done)


class NoHandOff(split_k_gemm.SplitKGemm):
    """A mistake: the leader stores its own part of K and never adds the helpers'."""

    def reduce_partial_sums(self, acc, work, handoff, ctid):
        pass


@pytest.mark.parametrize("kernel", [LeaderSkipsStore, NoHandOff], ids=lambda c: c.__name__)
def test_a_broken_hand_off_is_seen_on_the_executor(kernel):
    run = ladder_runs.run_split_k_gemm(PRESETS["split_k2"], 130, 264, 192, 1, kernel=kernel)
    assert not run.ok
    # NaN: C's poison, where a tile was never stored
    assert run.hazard is not None or not relative_error(run.output, run.reference) <= 0.1


def test_bad_input_is_refused_before_a_launch(monkeypatch):
    refuse_launch(monkeypatch, split_k_gemm.GEMM)
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(100, 64).bfloat16()
    with pytest.raises(KernelInputError, match="multiple of 8"):
        split_k_gemm.run(a, b)
    with pytest.raises(KernelInputError, match="same K"):
        split_k_gemm.run(a, torch.randn(96, 32).bfloat16())


# ---------------------------------------------------------------- on a Hopper GPU


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("preset", PRESETS)
def test_split_k_gemm_matches_torch(preset, dtype):
    """Every preset over split_k_gemm.CHECK_SHAPES (ragged edges, K of one k-tile, few tiles
    with a long K, a partly filled last wave), C poisoned first."""
    rows = split_k_gemm.check(presets={preset: PRESETS[preset]}, dtype=dtype)
    bad = [r for r in rows if not r[3]]
    assert not bad, bad
    assert all(err <= TOLERANCE[dtype] for *_, err, _ in rows)
