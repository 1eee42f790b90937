"""NVIDIA's Blackwell block-scaled and blockwise GEMMs, unmodified, through
`python -m course.execute` (their own argparse, host code and check against torch, which
runs torch._scaled_mm on the CPU: course.execute.scaled_mm_on_cpu).

They come from a full CUTLASS checkout (CI has only the subset in ../shared/cutlass): set
CUTLASS_DSL_EXAMPLES_FULL to its examples/python/CuTeDSL. The executor fixes they needed are
unit-tested without them in tests/test_execute_blackwell_scaled_fixes.py. The CTA-pair
NVFP4 tutorial (nvfp4_gemm_1) is run in tests/test_nvidia_more_examples.py."""

from .nvidia_examples import FULL, needs_full, passed, run_script

BLOCKSCALED = "cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent{}.py"
AMAX, PREFETCH = BLOCKSCALED.format("_amax"), BLOCKSCALED.format("_prefetch")
BLOCKWISE = "cute/blackwell/kernel/blockwise_gemm/blockwise_gemm.py"
ONCE = ("--warmup_iterations", "0", "--iterations", "1")


@needs_full
def test_blockscaled_gemm_with_amax():
    """NVFP4 with UE8M0 scales, C and its absolute maximum, on a ragged shape (2 x 2 tiles,
    the last ones partial): the host makes A and B with cute.testing.convert into
    Float4E2M1FN, the epilogue takes |acc| through the MLIR math dialect on the TensorSSA's
    ir_value(), warp_redux_sync and atomic_fmax; the example checks C and the amax."""
    passed(run_script("sm_100a", FULL / AMAX, "--mnkl", "200,160,192,1", *ONCE))


@needs_full
def test_blockscaled_gemm_with_amax_on_a_cta_pair():
    """The same with the 2-CTA MMA (256-row tiles, a 2 x 1 cluster): tcgen05.cp and the
    block-scaled MMA of cta_group::2, SFB multicast to both CTAs of the pair."""
    tiles = ("--mma_tiler_mn", "256,128", "--cluster_shape_mn", "2,1")
    passed(run_script("sm_100a", FULL / AMAX, "--mnkl", "256,256,256,1", *tiles, *ONCE))


@needs_full
def test_blockscaled_gemm_with_prefetch():
    """The persistent block-scaled GEMM that prefetches its TMA loads ahead."""
    passed(run_script("sm_100a", FULL / PREFETCH, "--mnkl", "256,256,256,1", *ONCE))


@needs_full
def test_blockwise_fp8_gemm():
    """FP8 with fp32 scales per 128 x 128 block of B and 1 x 128 of A, on a ragged shape
    (2 x 2 tiles, the last ones partial): the kind::f8f6f4 MMA,
    the scales through cp.async into a PipelineCpAsync (cp.async.mbarrier.arrive.noinc),
    their coordinates from an identity tensor of a hierarchical shape, and the rescaled
    accumulator stored back into TMEM with tcgen05.st for the epilogue warps."""
    passed(run_script("sm_100a", FULL / BLOCKWISE, "--mnkl", "200,136,256,1", *ONCE))


@needs_full
def test_blockscaled_gemm_without_its_wait_for_the_stage(tmp_path):
    """Planted: the MMA warp's ab_pipeline.consumer_wait removed. Its tcgen05.cp of the
    scale factors then reads shared memory the TMA load is still writing: the executor
    names it, at the copy's line in the kernel."""
    text = (FULL / AMAX).read_text()
    old = (
        "                        ab_pipeline.consumer_wait(\n"
        "                            ab_consumer_state, peek_ab_full_status\n"
        "                        )\n"
    )
    assert text.count(old) == 1
    planted = tmp_path / "dense_blockscaled_gemm_persistent_amax_planted.py"
    planted.write_text(text.replace(old, "                        pass  # planted\n"))
    done = run_script("sm_100a", planted, "--mnkl", "256,256,256,1", *ONCE)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "a tcgen05.cp reads" in done.stderr and "still writing it" in done.stderr
    lines = planted.read_text().splitlines()
    kernel = next(i for i, s in enumerate(lines) if s.strip().startswith("def kernel("))
    waited = next(i for i, s in enumerate(lines) if s.strip() == "pass  # planted")
    copy = next(i for i in range(waited, len(lines)) if "tiled_copy_s2t_sfa," in lines[i]) - 1
    assert f"line {copy - kernel + 1}" in done.stderr, done.stderr[-2000:]
