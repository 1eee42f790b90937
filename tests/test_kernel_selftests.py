"""`python -m kernels.<step>`: every step checks and times itself with only torch and CuTe DSL.

On a machine whose GPU cannot run a step (this CPU-only CI included), the step compiles
itself for its target and prints what the compiler produced: that path is checked for
every step here, in a fresh process, with `course` made unimportable to prove the kernels
do not need it. On a GPU the steps are run for real (the fast ones here; the GEMMs in the
GPU validation pass, where their timing is recorded).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import host, ladder

ROOT = Path(__file__).resolve().parent.parent
STEPS = [s.module for s in ladder.STEPS if s.selftest]  # the one ladder registry
NEEDS = {step: __import__(f"kernels.{step}", fromlist=["NEEDS"]).NEEDS for step in STEPS}

# A sitecustomize that makes `import course` fail in the child: the kernels must not need it.
NO_COURSE = "import sys; sys.modules['course'] = None\n"


def run_step(step: str, tmp_path: Path) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(NO_COURSE)
    path = [str(tmp_path), str(ROOT)] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "-m", f"kernels.{step}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=900,
    )


@pytest.mark.compile
@pytest.mark.parametrize(
    "step", [s for s in STEPS if not host.satisfies(host.device_capability(), NEEDS[s])]
)
def test_a_step_that_cannot_run_here_compiles_itself_without_the_course(step, tmp_path):
    out = run_step(step, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"compiling for {host.COMPILE_TARGET[NEEDS[step]]} instead" in out.stdout
    assert "registers/thread" in out.stdout and "compiled for" in out.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("step", ["vector_add", "mma_atom"])
def test_a_step_checks_itself_on_the_gpu_without_the_course(step, tmp_path):
    out = run_step(step, tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "FAIL" not in out.stdout and "ok" in out.stdout
