"""NVIDIA CuTe DSL examples the course does not name, unmodified, through
`python -m course.execute` (their own argparse, host code and check against torch).

They come from a full CUTLASS checkout (CI has only the subset in ../shared/cutlass): set
CUTLASS_DSL_EXAMPLES_FULL to its examples/python/CuTeDSL. The executor fixes they needed
are unit-tested without them in tests/test_execute_more_examples_fixes.py."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from course import ROOT

SETTING = "CUTLASS_DSL_EXAMPLES_FULL"
FULL = Path(os.environ.get(SETTING, "/nonexistent"))
needs_full = pytest.mark.skipif(
    not FULL.is_dir(), reason=f"no full CUTLASS checkout's CuTe DSL examples (set {SETTING})"
)
SGEMM = "cute/ampere/kernel/dense_gemm/sgemm.py"
APPLY = "cute/ampere/kernel/elementwise/elementwise_apply.py"


def _run(arch, relative, *args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "course.execute", "--arch", arch, str(FULL / relative), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


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
    done = _run(
        "sm_80", SGEMM, "--mnk", mnk, *majors, "--warmup_iterations", "0", "--iterations", "1"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Results verified successfully!" in done.stdout and "PASS" in done.stdout
    assert "no hazard" in done.stderr


@needs_full
@pytest.mark.parametrize("op", ["add", "mul", "sub"])
def test_ampere_elementwise_apply_on_whole_tiles(op):
    """elementwise_apply on shapes that are whole tiles (64 x 256 for Float32)."""
    done = _run(
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
    done = _run(
        "sm_80", APPLY, "--M", "37", "--N", "100", "--warmup_iterations", "0", "--iterations", "1"
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "hazard: out of bounds" in done.stderr
    assert "thrInput.load()" in done.stderr
