"""NVIDIA's Blackwell EFC (epilogue fusion) and mixed-input GEMMs, unmodified, through `python -m
course.execute` (its own argparse, host code and check against torch).

It comes from a full CUTLASS checkout (CI has only the subset in ../shared/cutlass): set
CUTLASS_DSL_EXAMPLES_FULL to its examples/python/CuTeDSL. The executor fixes they needed
are unit-tested without them in tests/test_execute_mixed_input_fixes.py."""

import shutil

import pytest


from .nvidia_examples import FULL, needs_full, run_script

EFC = "cute/blackwell/efc"
CUSTOM = f"{EFC}/custom_epilogue_dense_gemm.py"
MIXED = "cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py"


@needs_full
@pytest.mark.parametrize(
    "args",
    [
        ("--mnkl", "128,128,64,1", "--ab_dtype", "Float16"),
        # ragged M, N and K, a CTA pair, C read (beta), TF32 operands
        (
            "--mnkl",
            "200,136,96,1",
            "--cluster_shape_mn",
            "2,1",
            "--use_2cta_instrs",
            "--mma_tiler_mn",
            "256,64",
            "--beta",
            "1.0",
        ),  # fmt: skip
    ],
)
def test_blackwell_custom_epilogue_gemm(args):
    run = run_script("sm_100a", FULL / CUSTOM, *args, "--iterations", "0")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "PASS" in run.stdout
    assert "no hazard" in run.stderr


@needs_full
def test_blackwell_custom_epilogue_gemm_without_its_wait_for_c(tmp_path):
    """The epilogue's wait on the TMA loads of C and X removed: its read of shared memory
    is caught while the TMA load to it is still in flight, in the EFC helper's copy."""
    shutil.copytree(FULL / EFC, tmp_path / "efc")
    common = tmp_path / "efc" / "common_dense_gemm_efc.py"
    wait = "c_pipeline.consumer_wait(c_pipeline_consumer_state)"
    lines = common.read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == wait]
    assert len(hits) == 1
    lines[hits[0]] = lines[hits[0]].replace(wait, "pass")  # the `if` keeps a body
    common.write_text("".join(lines))
    run = run_script(
        "sm_100a",
        tmp_path / "efc" / "custom_epilogue_dense_gemm.py",
        *("--mnkl", "128,128,64,1", "--ab_dtype", "Float16", "--beta", "1.0"),
        *("--iterations", "0"),
    )
    assert run.returncode != 0
    assert "read while a copy is in flight" in run.stderr
    assert "TMA load" in run.stderr and "cutlass.cute.copy(" in run.stderr


@needs_full
@pytest.mark.parametrize(
    "shape",
    [
        ("--mnkl", "128,128,128,1"),
        # ragged M, N and K (OOB tiles need its TMA store), two batches
        ("--mnkl", "208,136,192,2", "--use_tma_store"),
    ],
)
def test_blackwell_mixed_input_gemm_int8(shape):
    """Int8 A converted to BFloat16 by transform warps (convert-only mode), B in BFloat16."""
    run = run_script(
        "sm_100a",
        FULL / MIXED,
        *("--a_dtype", "Int8", "--scale_granularity_m", "0", "--scale_granularity_k", "0"),
        *shape,
        *("--iterations", "0"),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "PASS" in run.stdout
    assert "no hazard" in run.stderr


@needs_full
def test_blackwell_mixed_input_gemm_int4_says_what_it_lacks():
    """Its default Int4 A (convert-scale mode) now passes host code, Int4's conversion
    included, and stops at the scale factors' TMA partition, named (exit 3)."""
    run = run_script("sm_100a", FULL / MIXED, "--iterations", "0")
    assert run.returncode == 3, run.stderr[-3000:]
    assert "does not model `the layout of a TMA partition whose elements are" in run.stderr
