"""`python -m course.execute script.py`: a CuTe DSL script, unmodified, with its kernels on
the CPU executor (course.execute.host) and its torch "cuda" on the CPU
(course.execute.cuda_on_cpu), the way TRITON_INTERPRET=1 runs a Triton script."""

import subprocess
import sys


from course import ROOT
from tests.nvidia_examples import examples_dir, needs_examples

ELEMENTWISE = "cute/ampere/kernel/elementwise/elementwise_add.py"


def _run(script, *args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "course.execute", "--arch", "sm_80", str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@needs_examples()
def test_nvidia_elementwise_add_runs_as_written():
    """NVIDIA's script, its own argument parser, host code and check (assert_close against
    torch) on a ragged shape: it prints PASS, and the launch is reported."""
    done = _run(examples_dir() / ELEMENTWISE, "--M", "37", "--N", "100")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Results verified successfully!" in done.stdout
    assert "PASS" in done.stdout
    assert "ran on the CPU executor, no hazard" in done.stderr
    assert "grid (" in done.stderr


@needs_examples()
def test_a_planted_out_of_bounds_store_stops_the_script(tmp_path):
    """The same script with the store's predicate dropped: on a ragged shape it writes past
    the tensor, and the executor names it with the kernel's line (exit status 1)."""
    source = (examples_dir() / ELEMENTWISE).read_text()
    planted = "cute.copy(copy_atom_store, frgC, thrC, pred=frgPred)"
    assert planted in source
    script = tmp_path / "elementwise_add.py"
    script.write_text(source.replace(planted, "cute.copy(copy_atom_store, frgC, thrC)"))
    done = _run(script, "--M", "37", "--N", "100")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "[course.execute] hazard:" in done.stderr
    assert "cute.copy(copy_atom_store, frgC, thrC)" in done.stderr


def _script_calling(tmp_path, name):
    script = tmp_path / "calls.py"
    script.write_text(
        f"import cutlass.cute as cute\n@cute.jit\ndef host():\n    cute.{name}()\nhost()\n"
    )
    return script


def test_an_unmodelled_name_says_so(tmp_path):
    """A CuTe DSL name the executor lacks (one of docs/executor-coverage.md's gaps) is
    reported as the executor's gap (exit status 3), not as the script's error."""
    from course.execute import coverage

    gaps = next(missing for module, _, missing in coverage.rows() if module == "cutlass.cute")
    done = _run(_script_calling(tmp_path, gaps[0]))
    assert done.returncode == 3, done.stderr[-3000:]
    assert f"does not model `cute.{gaps[0]}`" in done.stderr


def test_a_name_cute_dsl_lacks_too_is_the_scripts_error(tmp_path):
    """A misspelt name is the kernel's AttributeError, as CuTe DSL would raise on a GPU
    (exit status 1), never "the executor does not model it"."""
    done = _run(_script_calling(tmp_path, "no_such_function_in_cute_dsl"))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "has no attribute 'no_such_function_in_cute_dsl'" in done.stderr
    assert "does not model" not in done.stderr


def test_cuda_tensors_are_made_on_the_cpu():
    import torch

    from course.execute.cuda_on_cpu import cuda_on_cpu

    with cuda_on_cpu():
        assert torch.cuda.is_available()
        a = torch.ones(3, device="cuda")
        b = torch.zeros(2, device=torch.device("cuda:0")).cuda().to("cuda")
        stream = torch.cuda.current_stream()
    assert a.device.type == b.device.type == "cpu"
    assert stream.cuda_stream == 0
