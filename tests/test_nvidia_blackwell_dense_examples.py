"""NVIDIA's Blackwell dense GEMMs (cute/blackwell/kernel/dense_gemm: alpha-beta persistent,
persistent dynamic (CLC), persistent with prefetch, software pipeline) and RMSNorm with a
cluster reduction (N > 16K), unmodified, through `python -m course.execute`: their own
argparse, host code and check against torch.

They come from a full CUTLASS checkout (CI has only the subset in ../shared/cutlass): set
CUTLASS_DSL_EXAMPLES_FULL to its examples/python/CuTeDSL. The executor fixes they needed
are unit-tested without them in tests/test_execute_blackwell_dense_fixes.py."""

import pytest

from .nvidia_examples import FULL, needs_full, passed, run_script

DENSE = "cute/blackwell/kernel/dense_gemm/{}.py"
RMSNORM = "cute/blackwell/kernel/rmsnorm/rmsnorm.py"
REDUCE = "cute/blackwell/kernel/reduce/reduce.py"
ONCE = ("--warmup_iterations", "0", "--iterations", "1")
PAIR = ("--use_2cta_instrs", "--cluster_shape_mn", "2,1", "--mma_tiler_mn", "256,128")
# two CTAs of a cluster share a tile over halves of K, exchanging partial sums through
# st.async into each other's shared memory (CopyDsmemStoreOp)
SPLIT_K = ("--cluster_split_k", "2", "--cluster_shape_mn", "1,1", "--mma_tiler_mn", "128,64")


@needs_full
@pytest.mark.parametrize(
    "example, mnkl, extra",
    [
        ("dense_gemm_alpha_beta_persistent", "130,72,40,1", ("--alpha", "2.0", "--beta", "1.0")),
        ("dense_gemm_alpha_beta_persistent", "256,256,64,1", (*PAIR, "--alpha", "0.5")),
        ("dense_gemm_persistent_dynamic", "256,256,64,1", ()),
        ("dense_gemm_persistent_dynamic", "130,72,40,1", ("--use_tma_store",)),
        ("dense_gemm_persistent_dynamic", "128,64,64,1", SPLIT_K),
        ("dense_gemm_persistent_prefetch", "130,72,40,1", ("--use_tma_store",)),
        ("dense_gemm_persistent_prefetch", "256,128,64,1", PAIR),
        ("dense_gemm_software_pipeline", "130,72,40,1", ("--use_tma_store",)),
        ("dense_gemm_software_pipeline", "256,128,64,1", ("--ab_dtype", "Float16")),
    ],
    ids=[
        "alpha-beta-ragged",
        "alpha-beta-cta-pair",
        "dynamic",
        "dynamic-ragged",
        "dynamic-split-k",
        "prefetch-ragged",
        "prefetch-cta-pair",
        "software-pipeline-ragged",
        "software-pipeline-fp16",
    ],
)
def test_blackwell_dense_gemms(example, mnkl, extra):
    """Each checks itself against torch (fp32 einsum; alpha-beta: alpha * A.B + beta * C).
    Their default A/B type is TFloat32: the kind::tf32 MMA, whose tf32 reading of fp32 is
    the executor's choice (a note); the examples' integer operands are exact in tf32."""
    done = run_script(
        "sm_100a", FULL / DENSE.format(example), "--mnkl", mnkl, *extra, "--iterations", "1"
    )
    passed(done)
    if "Float16" not in extra:
        assert "tf32 rounding (a note)" in done.stderr


@needs_full
@pytest.mark.parametrize(
    "m, n, extra",
    [
        (4, 32768, ()),
        (3, 65536, ("--dtype", "Float32", "--no_weight")),
        (
            2,
            40960,
            (
                "--dtype",
                "Float16",
            ),
        ),
    ],
)
def test_blackwell_rmsnorm_over_a_cluster(m, n, extra):
    """N > 16K: a cluster of 2 or 4 CTAs per row block, each reducing its share and sending
    it to every CTA of the cluster with reduce.py's inline PTX (mapa.shared::cluster,
    st.async ... complete_tx on the peer's mbarrier), then waiting on its own mbarrier."""
    done = run_script("sm_100a", FULL / RMSNORM, "--M", str(m), "--N", str(n), *extra, *ONCE)
    passed(done)
    assert f"grid ({m}, " in done.stderr


@needs_full
def test_blackwell_rmsnorm_without_its_wait_for_the_peers_stores(tmp_path):
    """Planted: cluster_reduce's mbarrier_wait removed. The peers' st.async stores may not
    have landed: the executor names the first read of the reduction buffer, in reduce.py's
    cluster_reduce at its line."""
    text = (FULL / REDUCE).read_text()
    old = "    cute.arch.mbarrier_wait(mbar_ptr, phase=0)\n"  # after the stores to the peers
    assert text.count(old) == 1
    root = tmp_path / "cute" / "blackwell" / "kernel"  # rmsnorm imports blackwell.kernel.reduce
    (root / "reduce").mkdir(parents=True)
    (root / "rmsnorm").mkdir()
    (root / "reduce" / "reduce.py").write_text(text.replace(old, "    pass  # planted\n"))
    (root / "rmsnorm" / "rmsnorm.py").write_text((FULL / RMSNORM).read_text())
    done = run_script("sm_100a", root / "rmsnorm" / "rmsnorm.py", "--M", "4", "--N", "32768", *ONCE)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "hazard: read while a copy is in flight" in done.stderr and "st.async" in done.stderr
    lines = text.splitlines()
    first = next(i for i, s in enumerate(lines) if s.startswith("def cluster_reduce("))
    read = next(i for i, s in enumerate(lines) if "reduction_buffer[row_idx, idx])" in s)
    assert f"at cluster_reduce line {read - first + 1} " in done.stderr


@needs_full
def test_blackwell_split_k_without_its_wait_for_the_peers_partials(tmp_path):
    """Planted: the split-K epilogue's wait on its mailbox's FULL mbarrier removed. CTA 0
    reads its mailbox (`(dsmem_mailbox_ptr + ...).load()`) before CTA 1's st.async of its
    partial sums into it: the store lands over bytes read with nothing ordering the two,
    and the executor names both lines."""
    example = FULL / DENSE.format("dense_gemm_persistent_dynamic")
    text = example.read_text()
    old = "cute.arch.mbarrier_wait(\n" + " " * 28 + "dsmem_mailbox_full_mbar, dsmem_full_phase\n"
    assert text.count(old) == 1
    planted = tmp_path / "dense_gemm_persistent_dynamic_planted.py"
    planted.write_text(text.replace(old, "(  # planted: no wait\n"))
    done = run_script("sm_100a", planted, "--mnkl", "128,64,64,1", *SPLIT_K, "--iterations", "1")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "hazard: overwrite while being read: an st.async" in done.stderr
    assert "into storage.dsmem_mailbox[0] of CTA (0, 0, 0)" in done.stderr
    assert "last read at kernel line" in done.stderr and "(`).load()`))" in done.stderr
