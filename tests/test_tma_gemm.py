"""Notebook 09's TMA + mbarrier GEMM: its barrier protocol (modelled on the CPU with the
kernel's own parity functions), its compiled code, and -- on a GPU -- its results and
its injected bugs, which must come back as a clear error in bounded time."""

import time

import pytest
import torch

from course.sim import ring_protocol
from course.bench.gemm_bench import GemmProblem, check_gemm
from course.lessons.pipeline_checks import check_tma_gemm
from course.runtime.watchdog import PipelineHang, isolated
from kernels import tma_gemm
from kernels.host import KernelInputError

from .helpers import pretend_gpu

# ------------------------------------------------------------------ the protocol, modelled
# course.sim.ring_protocol runs the kernel's exact barrier protocol with the kernel's own
# parity functions, TMA copies landing in random orders.


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 5])
def test_the_ring_never_deadlocks_or_races(stages):
    for k_tiles in (1, 2, 3, stages, stages + 1, 2 * stages + 1, 13):
        for seed in range(6):
            assert ring_protocol.run(stages, k_tiles, seed=seed) == "ok", (stages, k_tiles, seed)
    assert ring_protocol.check() == "ok"


@pytest.mark.parametrize("bug", tma_gemm.BUGS[1:])
def test_each_injected_bug_deadlocks(bug):
    for stages in (1, 2, 4):
        verdict = ring_protocol.run(stages, 2 * stages + 1, bug=bug)
        assert verdict.startswith("deadlock: "), (bug, stages, verdict)
    if bug in ("missing_arrive", "thread_arrival_count"):  # these bite when a stage is reused
        assert ring_protocol.run(4, 4, bug=bug) == "ok"
    else:  # the very first wait already hangs
        assert ring_protocol.run(4, 1, bug=bug).startswith("deadlock")
    if bug == "producer_parity":
        assert "wait on empty[0] for parity 0" in ring_protocol.run(2, 5, bug=bug)


def test_a_consumer_waiting_on_the_wrong_parity_races_instead_of_hanging():
    wrong = lambda t, stages: 1 - tma_gemm.consumer_parity(t, stages)  # noqa: E731
    outcomes = {ring_protocol.run(2, 6, seed=s, consumer_parity=wrong)[:4] for s in range(8)}
    assert "race" in outcomes


def test_a_deadlock_after_some_warps_finished_is_reported():
    # a producer that never waits runs ahead until a consumer falls two phases behind on
    # full[0]; warps that finished meanwhile are no longer waiting on anything
    verdict = ring_protocol.run(2, 5, bug="missing_arrive", producer_parity=lambda j, s: 1)
    assert verdict.startswith("deadlock: warp 2 waiting for k-tile 2"), verdict


def test_parity_helpers():
    assert [tma_gemm.producer_parity(j, 2) for j in range(6)] == [1, 1, 0, 0, 1, 1]
    assert [tma_gemm.consumer_parity(t, 2) for t in range(6)] == [0, 0, 1, 1, 0, 0]
    assert tma_gemm.producer_parity(0, 4, "producer_parity") == 0


# ------------------------------------------------------------------ compiled (CPU)


@pytest.mark.compile
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_compiles_to_tma_mbarriers_ldmatrix_and_mma_sync(stages):
    art = tma_gemm.artifacts("sm_90a", torch.bfloat16, tma_gemm.Config(stages=stages))
    assert (
        art.count_ptx(
            r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.tile\."
            r"mbarrier::complete_tx::bytes"
        )
        >= 2
    )  # A and B
    assert art.count_ptx(r"mbarrier\.init\.shared") == 2 * stages  # full + empty per stage
    assert art.count_ptx(r"mbarrier\.arrive\.expect_tx") >= 1
    assert art.count_ptx(r"mbarrier\.arrive\.shared") >= 1  # consumers release stages
    assert art.count_ptx(r"mbarrier\.try_wait\.parity") >= 2  # full and empty waits
    assert art.count_ptx(r"ldmatrix\.sync\.aligned\.m8n8\.x4") > 0
    assert art.count_ptx(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16") > 0
    assert art.count_ptx(r"cp\.async\.(cg|ca)\.shared\.global") == 0  # no cp.async left
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0, "registers spilled to local memory"


@pytest.mark.compile
def test_fp16_sass_and_the_injected_bugs_change_what_they_claim():
    sass = tma_gemm.artifacts("sm_90a", torch.float16).sass()
    assert "UTMALDG" in sass and "LDSM" in sass and "HMMA.16816.F32" in sass
    good = tma_gemm.artifacts("sm_90a", torch.bfloat16)
    first_wait = good.ptx_lines(r"mbarrier\.try_wait\.parity")[0]
    bad = tma_gemm.artifacts("sm_90a", torch.bfloat16, tma_gemm.Config(bug="producer_parity"))
    assert first_wait.replace(" 1,", " 0,") == bad.ptx_lines(r"mbarrier\.try_wait\.parity")[0]
    missing = tma_gemm.artifacts("sm_90a", torch.bfloat16, tma_gemm.Config(bug="missing_arrive"))
    assert missing.count_ptx(r"mbarrier\.arrive\.shared") == 0
    assert good.count_ptx(r"mbarrier\.arrive\.shared") > 0


@pytest.mark.compile
def test_debug_mode_bounds_every_wait():
    art = tma_gemm.artifacts("sm_90a", torch.bfloat16, tma_gemm.Config(debug_timeout_ms=100))
    assert "%globaltimer" in art.ptx
    assert art.count_ptx(r"atom\.global\.cas") >= 1  # the first thread to give up reports
    assert art.count_ptx(r"mbarrier\.try_wait\.parity\.acquire") >= 2  # single polls, no loop


def test_config_rules():
    assert tma_gemm.Config().max_stages() == 4  # 128 x 256 tiles: 48 KB a stage
    assert tma_gemm.Config(tile_n=128).max_stages() == 7
    assert tma_gemm.Config().max_stages("sm_80") == 3  # an A100's 163 KB
    with pytest.raises(KernelInputError, match="shared memory.*sm_90a has 232448"):
        tma_gemm.artifacts("sm_90a", torch.bfloat16, tma_gemm.Config(stages=5))
    with pytest.raises(ValueError, match="hand-written ring"):
        tma_gemm.Config(ring="pipeline", bug="missing_arrive")
    with pytest.raises(ValueError, match="bug"):
        tma_gemm.Config(bug="typo")
    with pytest.raises(ValueError, match="at least 1"):
        tma_gemm.Config(stages=0)
    with pytest.raises(ValueError, match="256"):
        tma_gemm.Config(tile_n=512, warps_n=4)


def test_report_reads_as_a_sentence():
    text = tma_gemm.describe_report([1, 3, 0, tma_gemm.EMPTY, 1, 0, 5, 200], tma_gemm.Config())
    assert "CTA 3, warp 0" in text and "empty[1]" in text and "parity 0" in text
    assert "k-tile 5" in text and "200 ms" in text


@pytest.mark.compile
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_the_pipeline_ring_compiles_to_the_same_instructions(stages):
    """ring="pipeline" (CuTe DSL's PipelineTmaAsync) is the hand-written ring: the same
    barrier inits, TMA copies, expect_tx, waits, arrivals, ldmatrix and mma.sync."""
    hand = tma_gemm.artifacts("sm_90a", torch.bfloat16, tma_gemm.Config(stages=stages))
    lib = tma_gemm.artifacts(
        "sm_90a", torch.bfloat16, tma_gemm.Config(stages=stages, ring="pipeline")
    )
    for pattern in (
        r"mbarrier\.init\.shared",
        r"cp\.async\.bulk\.tensor",
        r"mbarrier\.arrive\.expect_tx",
        r"mbarrier\.try_wait",
        r"mbarrier\.arrive",
        r"ldmatrix\.sync",
        r"mma\.sync",
    ):
        assert lib.count_ptx(pattern) == hand.count_ptx(pattern), pattern
    (res,) = lib.resource_usage().values()
    assert res["stack_frame_bytes"] == 0


def test_validation_before_launch(monkeypatch):
    pretend_gpu(monkeypatch)
    a = torch.zeros(64, 64, dtype=torch.bfloat16)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        tma_gemm.run(a, a)


# ------------------------------------------------------------------ on a Hopper GPU

SHAPES = [
    (128, 256, 64),
    (4096, 4096, 4096),
    (1000, 1016, 520),
    (1, 8, 8),
    (129, 264, 72),
    (3000, 2056, 1000),
    (64, 4096, 8),
    (8192, 256, 128),
    (256, 512, 4104),
]


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("ring", tma_gemm.RINGS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_torch(mnk, dtype, ring):
    cfg = tma_gemm.Config(ring=ring)
    verdict = check_gemm(lambda a, b, c: tma_gemm.run(a, b, c, cfg), GemmProblem(*mnk, dtype))
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize(
    "mnk",
    [(1000, 1016, 520), (512, 256, 2048), (129, 264, 72)],
    ids=lambda s: "x".join(map(str, s)),
)
def test_every_stage_count_matches_torch(mnk, stages):
    for ring in tma_gemm.RINGS:
        cfg = tma_gemm.Config(stages=stages, ring=ring)
        for dtype in (torch.bfloat16, torch.float16):
            verdict = check_gemm(
                lambda a, b, c: tma_gemm.run(a, b, c, cfg), GemmProblem(*mnk, dtype)
            )
            assert verdict.ok, (stages, ring, verdict)


@pytest.mark.gpu(needs="sm_90+")
def test_smaller_tiles_and_debug_mode_stay_correct():
    for cfg in (
        tma_gemm.Config(tile_n=128, warps_n=2, stages=6),
        tma_gemm.Config(debug_timeout_ms=1000),
    ):
        verdict = check_gemm(
            lambda a, b, c: tma_gemm.run(a, b, c, cfg), GemmProblem(777, 384, 1096)
        )
        assert verdict.ok, (cfg, verdict)


@pytest.mark.gpu(needs="sm_90+")
def test_a_correct_kernel_passes_through_the_watchdog():
    ok, text = isolated(check_tma_gemm, 512, 512, 1024, "bf16", tma_gemm.Config(), timeout_s=30)
    assert ok, text


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("bug", tma_gemm.BUGS[1:])
def test_buggy_kernels_hang_and_the_watchdog_says_so_in_bounded_time(bug):
    cfg = tma_gemm.Config(stages=2, bug=bug)
    start = time.perf_counter()
    with pytest.raises(PipelineHang, match="did not finish within 10 s"):
        isolated(check_tma_gemm, 256, 256, 1024, "bf16", cfg, timeout_s=10)
    from course.runtime.watchdog import LAST_TIMING

    assert LAST_TIMING.launch < 10 + 12  # the kill itself is quick
    assert time.perf_counter() - start < 300


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize(
    "bug, who, where",
    [
        ("producer_parity", "warp 0 gave up after 200 ms", "empty[0] for parity 0: the producer"),
        ("missing_arrive", "warp 0 gave up after 200 ms", "empty[0] for parity 0: the producer"),
        (
            "thread_arrival_count",
            "warp 0 gave up after 200 ms",
            "empty[0] for parity 0: the producer",
        ),
        ("arrival_count", "gave up after 400 ms", "full[0] for parity 0: a consumer"),
    ],
)
def test_debug_mode_names_the_barrier_that_never_completed(bug, who, where):
    """A stuck producer (warp 0) reports first: consumers wait twice as long."""
    cfg = tma_gemm.Config(stages=2, bug=bug, debug_timeout_ms=200)
    with pytest.raises(PipelineHang) as info:
        isolated(check_tma_gemm, 256, 256, 1024, "bf16", cfg, timeout_s=60)
    text = str(info.value)
    assert who in text and f"waiting on {where}" in text, text
