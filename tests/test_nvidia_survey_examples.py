"""CuTe DSL examples no other test ran, surveyed on the executor, unmodified, through
`python -m course.execute`: their own argparse, host code and check against torch; the
notebooks of cute/notebooks as scripts of their code cells. Where the executor does not
model what an example needs, the run stops with exit 3 naming it.

They come from a full CUTLASS checkout (CI has only the subset in ../shared/cutlass): set
CUTLASS_DSL_EXAMPLES_FULL to its examples/python/CuTeDSL. The executor fixes they needed
are unit-tested without them in tests/test_execute_survey_fixes.py."""

import json
from pathlib import Path

import pytest


from .nvidia_examples import FULL, needs_full, run_script

BW = "cute/blackwell/kernel/"
CONTIGUOUS = BW + "blockwise_gemm/contiguous_grouped_gemm.py"
GEFORCE_DENSE = "cute/blackwell_geforce/kernel/dense_gemm/dense_gemm.py"
GEFORCE_SCALED = (
    "cute/blackwell_geforce/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_{}.py"
)
MLA = BW + "attention/mla/mla_decode_fp16.py"
SM103 = BW + "blockscaled_gemm/sm103_dense_blockscaled_gemm_persistent.py"
GROUPED = BW + "grouped_gemm/grouped_gemm.py"
NOTEBOOKS = "cute/notebooks"
ONCE = ("--warmup_iterations", "0", "--iterations", "1")


def _no_hazard(done) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no hazard" in done.stderr and "hazard:" not in done.stderr


def _stops_naming(done, what: str) -> None:
    assert done.returncode == 3, done.stderr[-3000:]
    assert f"does not model `{what}" in done.stderr


@needs_full
def test_contiguous_grouped_gemm():
    """The blockwise-scaled FP8 grouped GEMM over groups laid end to end along M, with a
    scheduler warp handing tiles through shared memory; checked by its own assert_close
    (it prints no PASS)."""
    _no_hazard(run_script("sm_100a", FULL / CONTIGUOUS, "--mnkl", "256,128,128,2", *ONCE))


@needs_full
def test_geforce_dense_gemm_on_ragged_shapes():
    """sm_120's GEMM: TMA loads into a PipelineTmaAsync ring, ldmatrix and warp-level
    mma.sync, M, N and K not whole tiles, over two batches."""
    done = run_script("sm_120a", FULL / GEFORCE_DENSE, "--mnkl", "136,72,80,2", *ONCE)
    _no_hazard(done)
    assert "PASS" in done.stdout


@needs_full
def test_geforce_dense_gemm_without_its_consumer_wait(tmp_path):
    """The mainloop's first `consumer_wait` removed: the ldmatrix of the first k-block
    reads shared memory its TMA load still writes."""
    text = (FULL / GEFORCE_DENSE).read_text()
    old = (
        "                mainloop_pipeline.consumer_wait(\n"
        "                    mainloop_consumer_state, peek_ab_full_status\n"
        "                )\n"
        "                # tCsA_p"
    )
    assert text.count(old) == 1
    copy = tmp_path / "dense_gemm.py"
    copy.write_text(text.replace(old, "                pass\n" * 3 + "                # tCsA_p"))
    done = run_script("sm_120a", copy, "--mnkl", "128,128,64,1", *ONCE)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "hazard: read while a copy is in flight" in done.stderr
    assert "TMA load" in done.stderr and "no mbarrier wait has seen its bytes land" in done.stderr


@needs_full
@pytest.mark.parametrize(
    "arch, script, args, what",
    [
        ("sm_100a", MLA, ("--batch_size", "1", "--seq_len_k", "128"), "cutlass._mlir.dialects"),
        ("sm_103a", SM103, ("--mnkl", "128,128,768,1"), "cute.nvgpu.tcgen05.SM103MmaMXF4NVF4Op"),
        (
            "sm_120a",
            GEFORCE_SCALED.format("cooperative"),
            ("--mnkl", "128,128,128,1"),
            "cute.nvgpu.warp.MmaMXF4NVF4Op",
        ),
        (
            "sm_100a",
            GROUPED,
            ("--num_groups", "2", "--problem_sizes_mnkl", "(128,128,64,1),(64,128,128,1)"),
            "device-side tensor maps",
        ),
    ],
)
def test_what_the_executor_does_not_model_yet_is_named(arch, script, args, what):
    """MLA's paged TMA atom built from raw MLIR ops, sm_103's and sm_120's block-scaled
    MMAs, and TMA descriptors rewritten on the device: exit 3, naming them."""
    _stops_naming(run_script(arch, FULL / script, *args, *ONCE), what)


def _notebook_script(name: str, tmp_path) -> Path:
    """A CuTe DSL notebook's code cells, in order, as one script."""
    cells = json.loads((FULL / NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    script = tmp_path / f"{name}.py"
    script.write_text("\n\n".join(code) + "\n")
    return script


@needs_full
@pytest.mark.parametrize(
    "name, says",
    [
        ("hello_world", "Hello world"),
        ("data_types", "Int32(300) => Int8(44)"),
        ("tensorssa", "[3 0 7]"),
        ("cute_layout_algebra", "Composition"),
        ("print", ">>>"),
        ("tensor", "tensor<"),
        ("cuda_graphs", ""),
    ],
)
def test_notebook_code_cells_run(name, says, tmp_path):
    """The notebooks' code cells run as a script on the executor; each prints what it
    shows (values of dynamic prints the executor knows where CuTe's compile-time print
    shows `?`)."""
    done = run_script("sm_90a", _notebook_script(name, tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert says in done.stdout and "hazard:" not in done.stderr
