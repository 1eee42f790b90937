"""NVIDIA CuTe DSL examples the course does not name, unmodified, through
`python -m course.execute` (their own argparse, host code and check against torch).

They come from a full CUTLASS checkout (CI has only the subset in ../shared/cutlass): set
CUTLASS_DSL_EXAMPLES_FULL to its examples/python/CuTeDSL. The executor fixes they needed
are unit-tested without them in tests/test_execute_more_examples_fixes.py."""

import pytest

from .nvidia_examples import FULL, needs_full, run_script

SGEMM = "cute/ampere/kernel/dense_gemm/sgemm.py"
APPLY = "cute/ampere/kernel/elementwise/elementwise_apply.py"


@needs_full
@pytest.mark.parametrize(
    "mnk, majors",
    [
        ("128,128,16", ()),
        ("100,72,20", ("--a_major", "k", "--b_major", "n")),  # ragged M, N and K
        ("64,130,13", ("--c_major", "m")),
    ],
)
def test_ampere_sgemm(mnk, majors):
    """The SIMT GEMM checks itself against torch (assert_close) and prints PASS; a ragged K
    needs the predicated cp.async's zero fill of its first k-tile."""
    done = run_script(
        "sm_80", SGEMM, "--mnk", mnk, *majors, "--warmup_iterations", "0", "--iterations", "1"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Results verified successfully!" in done.stdout and "PASS" in done.stdout
    assert "no hazard" in done.stderr


@needs_full
@pytest.mark.parametrize("op", ["add", "mul", "sub"])
def test_ampere_elementwise_apply_on_whole_tiles(op):
    """elementwise_apply on shapes that are whole tiles (64 x 256 for Float32)."""
    done = run_script(
        "sm_80",
        APPLY,
        "--M",
        "64",
        "--N",
        "512",
        "--op",
        op,
        "--warmup_iterations",
        "0",
        "--iterations",
        "1",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout
    assert "grid (2, 1, 1), block (256, 1, 1)" in done.stderr


@needs_full
def test_ampere_elementwise_apply_reads_past_a_ragged_tensor():
    """The example builds its bounds predicate (frgPred) but loads and stores without it: on
    a ragged shape it reads past the tensor, as it would on a GPU. The executor names it
    (exit status 1) with the load's line; not a false hazard."""
    done = run_script(
        "sm_80", APPLY, "--M", "37", "--N", "100", "--warmup_iterations", "0", "--iterations", "1"
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "hazard: out of bounds" in done.stderr
    assert "thrInput.load()" in done.stderr


# ---------------------------------------------------------------- Ampere/Hopper sweep

FLASH = "cute/ampere/kernel/attention/flash_attention_v2.py"
AUTOTUNE = "cute/ampere/tutorial/elementwise_add_autotune.py"
FP8_2XACC = "cute/hopper/kernel/dense_gemm/dense_gemm_fp8_2xacc.py"
ONCE = ("--warmup_iterations", "0", "--iterations", "1")


def _flash_args(q, k, *extra):
    """Tiny shapes (one head of 64); `extra` comes later, so argparse lets it override."""
    shape = ("--batch_size", "1", "--num_head", "1", "--head_dim", "64")
    return (*shape, "--seqlen_q", str(q), "--seqlen_k", str(k), *extra, *ONCE)


@needs_full
@pytest.mark.parametrize(
    "q, k, extra",
    [
        (128, 128, ()),
        (100, 70, ("--is_causal",)),  # ragged: a partial M block and a masked N block
        (100, 150, ("--batch_size", "2", "--num_head", "2", "--dtype", "Float16")),
    ],
)
def test_ampere_flash_attention_v2(q, k, extra):
    """Flash attention 2 (cp.async, ldmatrix, mma.sync, online softmax with
    TensorSSA.reduce and quad shuffles) checks itself against torch's attention."""
    done = run_script("sm_80", FLASH, *_flash_args(q, k, *extra))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Results verified successfully!" in done.stdout and "PASS" in done.stdout
    assert "no hazard" in done.stderr


@needs_full
def test_ampere_flash_attention_v2_without_its_wait_for_v(tmp_path):
    """Planted: the cp_async_wait_group(0) before the P*V GEMM removed. The barrier after
    it still orders the threads, but V's cp.async copies are not retired: the executor
    names the first read of sV (the ldmatrix of V's first k-block), in the function and
    line it is at."""
    text = (FULL / FLASH).read_text()
    old = "        # wait for smem tile V for O\n        cute.arch.cp_async_wait_group(0)\n"
    assert text.count(old) == 1
    planted_copy = tmp_path / "flash_attention_v2_planted.py"
    planted_copy.write_text(
        text.replace(old, "        # wait for smem tile V for O\n        pass  # planted\n")
    )
    done = run_script("sm_80", planted_copy, *_flash_args(128, 128))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "hazard: read while a copy is in flight" in done.stderr
    assert "storage.sV" in done.stderr
    lines = text.splitlines()
    first = next(i for i, s in enumerate(lines) if "def compute_one_n_block(" in s)
    read = next(i for i, s in enumerate(lines) if "# load first V k-block" in s) + 1
    # the site quotes the whole call, wrapped over lines in the source: its start names V's copy
    call = "`cute.copy(smem_copy_params.smem_tiled_copy_V"
    site = f"at compute_one_n_block line {read - first + 1} ({call}"
    assert site in done.stderr


@needs_full
@pytest.mark.parametrize("m, n", [(128, 256), (100, 72)])
def test_ampere_elementwise_add_autotune(m, n):
    """testing.tune and testing.autotune_jit try each copy width (every configuration runs
    and is checked; they tie, the first is kept), then the example checks both results."""
    done = run_script("sm_80", AUTOTUNE, "--M", str(m), "--N", str(n), *ONCE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("Results verified successfully!") == 2 and "PASS" in done.stdout
    assert "no hazard" in done.stderr


@needs_full
@pytest.mark.parametrize(
    "mnkl, extra",
    [
        ("128,128,128,1", ()),
        (
            "100,72,96,1",
            ("--tile_shape_mn", "64,64", "--cluster_shape_mn", "1,1", "--c_dtype", "Float32"),
        ),
    ],
)
def test_hopper_dense_gemm_fp8_2xacc(mnkl, extra):
    """FP8 GEMM with its accumulator promoted every 4 k-blocks; its float8 inputs made by
    cutlass.torch.cute_tensor_like (testing.convert, on the CPU). Ragged M, N and K."""
    done = run_script("sm_90a", FP8_2XACC, "--mnkl", mnkl, *extra, *ONCE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout
    assert "no hazard" in done.stderr


# ---------------------------------------------------------------- Blackwell (sm_100a)
# unit tests of the fixes these needed: tests/test_execute_blackwell_fixes.py

BW_DENSE = "cute/blackwell/kernel/dense_gemm/dense_gemm.py"
BW_PERSISTENT = "cute/blackwell/kernel/dense_gemm/dense_gemm_persistent.py"
BW_TMA = "cute/blackwell/tutorial/tutorial_tma/tma_v{}.py"
BW_NVFP4 = "cute/blackwell/tutorial/tutorial_gemm/nvfp4_gemm_{}.py"
BW_RMSNORM = "cute/blackwell/kernel/rmsnorm/rmsnorm.py"
BW_BLOCKSCALED = "cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent.py"
F16_ONLY = ("--ab_dtype", "Float16", "--c_dtype", "Float16")
MXFP8 = ("--a_dtype", "Float8E4M3FN", "--b_dtype", "Float8E4M3FN")
MXFP8 += ("--sf_dtype", "Float8E8M0FNU", "--sf_vec_size", "32")


@needs_full
@pytest.mark.parametrize("example", [BW_DENSE, BW_PERSISTENT], ids=["dense", "persistent"])
@pytest.mark.parametrize(
    "mnkl, extra",
    [
        ("256,256,64,1", ()),
        ("200,136,72,1", ("--use_tma_store",)),  # ragged M, N and K (TMA store clips)
        (
            "256,256,64,1",
            ("--use_2cta_instrs", "--cluster_shape_mn", "2,1", "--mma_tiler_mn", "256,128"),
        ),
    ],
    ids=["whole", "ragged", "cta-pair"],
)
def test_blackwell_dense_gemm(example, mnkl, extra):
    """NVIDIA's tcgen05 GEMMs, fp16 in and out, checked against torch by the example."""
    done = run_script("sm_100a", example, "--mnkl", mnkl, *F16_ONLY, *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout and "no hazard" in done.stderr


@needs_full
def test_blackwell_dense_gemm_tf32():
    """The examples' default TFloat32: the kind::tf32 MMA reads each fp32 operand as tf32.
    The PTX ISA leaves how implementation defined; the executor keeps the top 10 mantissa
    bits (course.execute.numeric.tf32_toward_zero) and says so in a note. The example's
    operands are small integers, exact in tf32, so any such rounding meets its tolerance."""
    done = run_script("sm_100a", BW_DENSE, "--mnkl", "256,256,64,1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout and "no hazard" in done.stderr
    assert "tf32 rounding (a note)" in done.stderr


@needs_full
@pytest.mark.parametrize("version, mn", [(0, (256, 128)), (1, (256, 256)), (2, (256, 256))])
def test_blackwell_tma_tutorials(version, mn):
    """tma_v0..v2 (copy, transpose, pipelined transpose). tma_v0 exits right after its TMA
    store, never waiting on the bulk group: the PTX ISA leaves that defined, so it is a
    note, not a hazard."""
    m, n = mn
    args = ("--M", str(m), "--N", str(n), "--num_warmup", "0", "--num_iters", "1")
    done = run_script("sm_100a", BW_TMA.format(version), *args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Verification: PASSED" in done.stdout and "no hazard" in done.stderr
    if version == 0:
        assert "TMA store not drained (a note)" in done.stderr


@needs_full
def test_blackwell_nvfp4_gemm_0():
    """NVFP4 tutorial GEMM: host pointers from make_ptr(t.data_ptr()), its torch check
    torch._scaled_mm on the CPU (course.execute.scaled_mm_on_cpu)."""
    done = run_script("sm_100a", BW_NVFP4.format(0), "--mnkl", "256,256,256,1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout and "no hazard" in done.stderr


@needs_full
def test_blackwell_nvfp4_gemm_1():
    """The CTA-pair NVFP4 tutorial: SFB multicast to both CTAs of the pair (filter_zeros of
    a multicast TMA partition), tcgen05.cp and the block-scaled MMA with cta_group::2."""
    done = run_script("sm_100a", BW_NVFP4.format(1), "--mnkl", "256,256,256,1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout and "no hazard" in done.stderr


@needs_full
@pytest.mark.parametrize(
    "m, n, extra",
    [
        (64, 256, ()),
        (37, 512, ("--dtype", "Float32", "--no_weight")),
        (33, 1024, ("--dtype", "Float16")),
    ],
)
def test_blackwell_rmsnorm(m, n, extra):
    """RMSNorm with NVIDIA's reduce.py (warp_reduction, block reduction); one CTA per row
    block (N up to 16K: no cluster)."""
    done = run_script("sm_100a", BW_RMSNORM, "--M", str(m), "--N", str(n), *extra, *ONCE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout and "no hazard" in done.stderr


@needs_full
@pytest.mark.parametrize(
    "mnkl, extra",
    [
        ("256,256,256,1", ()),
        ("200,136,256,1", ()),
        ("256,256,256,1", MXFP8),
    ],
    ids=["nvfp4", "nvfp4-ragged", "mxfp8"],
)
def test_blackwell_dense_blockscaled_gemm_persistent(mnkl, extra):
    """The block-scaled persistent GEMM (cute.gemm with [A, SFA], [B, SFB]), checked by
    the example against torch._scaled_mm (on the CPU)."""
    tiles = ("--mma_tiler_mn", "128,128", "--cluster_shape_mn", "1,1")
    done = run_script("sm_100a", BW_BLOCKSCALED, "--mnkl", mnkl, *tiles, *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASS" in done.stdout and "no hazard" in done.stderr
