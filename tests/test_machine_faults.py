"""The machine's faults are the machine's (issue 40): a package missing from the Python that
runs the course, a driver that does not start or a GPU with no memory gives the verdict
"the checker could not run here: <what>, <fix>", counted apart in the progress file, never
"your answer raised". Whose fault it is comes from the traceback: an import that fails in
the learner's own code stays the learner's mistake."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from course import ROOT
from course.exercises import check, kernel_check, machine_faults
from course.exercises.learner_code import CODE_DIR, FIRST_LINE, LearnerCode
from course.exercises.verdicts import MACHINE_FAULT, RIGHT, VERDICTS, WRONG, Verdict

# a Python without greenlet (sys.modules[name] = None makes every import of it fail), the
# course imported fresh, exercise 01 checked with its reference solution
WITHOUT_GREENLET = """
import json, sys
sys.modules["greenlet"] = None
from course.exercises import check, kernel_check
from course.exercises.solutions.nb01_solutions import saxpy_kernel
{setup}
v = check.check("01.saxpy", saxpy_kernel, quiet=True)
print(json.dumps({{"status": v.status, "text": str(v)}}))
"""
# what a GPU that can run the kernel reports for the reference: every output right
ON_A_GPU = """
from course.exercises import gpu_run
kernel_check.runner_for = lambda *a, **k: "gpu"
gpu_run.in_child = lambda ex, code: [
    kernel_check.Finding("ran on the GPU: 257 elements against torch", "pass", ran=True)
]
"""


def _check_without_greenlet(tmp_path, setup: str = "") -> tuple[dict, list[dict]]:
    """(the verdict, the progress file's lines) of 01.saxpy's reference in a fresh Python
    that has no greenlet."""
    progress = tmp_path / "progress.jsonl"
    env = {**os.environ, "COURSE_PROGRESS_FILE": str(progress), "COURSE_PROGRESS": "on"}
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_GREENLET.format(setup=setup)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    verdict = json.loads(out.stdout.strip().splitlines()[-1])
    lines = [json.loads(ln) for ln in progress.read_text().splitlines()]
    return verdict, lines


def test_a_missing_package_is_the_machines_fault_and_says_how_to_mend_it(tmp_path):
    verdict, lines = _check_without_greenlet(tmp_path)
    assert verdict["status"] == MACHINE_FAULT, verdict["text"]
    text = verdict["text"]
    assert "the checker could not run here" in text and "your answer raised" not in text, text
    assert "no module 'greenlet'" in text, text
    assert "pip install greenlet==3.5.6 (requirements.txt)" in text, text
    # counted apart in the progress file: its own verdict, and what the machine lacked
    assert [ln["verdict"] for ln in lines] == [MACHINE_FAULT]
    assert "greenlet" in lines[0]["hint"], lines[0]


def test_a_gpu_run_judges_without_the_executors_packages(tmp_path):
    """The H200 of issue 40: the kernel ran right on the GPU; that the CPU executor's
    greenlet is missing there changes nothing."""
    verdict, lines = _check_without_greenlet(tmp_path, ON_A_GPU)
    assert verdict["status"] == RIGHT, verdict["text"]
    assert [ln["verdict"] for ln in lines] == [RIGHT]


def test_the_learners_own_bad_import_stays_the_learners():
    source = textwrap.dedent(
        """\
        @cute.kernel
        def saxpy_kernel(gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor,
                         alpha: cutlass.Float32, n: cutlass.Int32):
            import numpyy
            tid, _, _ = cute.arch.thread_idx()
            gOut[tid] = alpha * gX[tid] + gY[tid]
        """
    )
    fn = LearnerCode("saxpy_kernel", source).load()
    verdict = check.check("01.saxpy", fn, quiet=True, gpu=False, executor=False)
    assert verdict.status == WRONG, verdict
    assert "numpyy" in verdict.message and "could not run here" not in verdict.message


def _learners_import():
    import numpyy  # noqa: F401 -- the learner's misspelling


def test_a_plain_exercise_blames_the_learner_only_for_the_learners_import():
    with pytest.raises(ImportError) as theirs:
        _learners_import()
    assert check.raised("00.x", theirs.value).status == WRONG
    with pytest.raises(ImportError) as ours:
        _raise_in(ROOT / "course" / "exercises" / "nb99.py", "import greenlet_missing_here")
    verdict = check.raised("00.x", ours.value)
    assert verdict.status == MACHINE_FAULT and "greenlet_missing_here" in verdict.message


def _raise_in(filename, statement: str, **names) -> None:
    """Run `statement` as if it were a line of `filename` (a frame of that file)."""
    exec(compile(f"def _f():\n    {statement}\n_f()", str(filename), "exec"), dict(names))


def test_the_preamble_of_a_learners_module_is_the_courses():
    """learner_code writes the course's imports above the learner's function: a package
    missing there is the machine's, an import in the function the learner's."""
    preamble, body = CODE_DIR / "learner_f_0.py", FIRST_LINE
    assert not machine_faults.is_learners(str(preamble), 2)
    assert machine_faults.is_learners(str(preamble), body)
    assert machine_faults.is_learners("<ipython-input-3-abc>", 1)
    assert not machine_faults.is_learners(torch.__file__, 1)


def test_no_gpu_memory_is_the_machines_unless_the_learner_asked_for_it():
    oom = "raise OOM('CUDA out of memory. Tried to allocate 2.00 GiB')"
    with pytest.raises(torch.cuda.OutOfMemoryError) as ours:
        _raise_in(ROOT / "course" / "exercises" / "nb99.py", oom, OOM=torch.cuda.OutOfMemoryError)
    fault = machine_faults.diagnose(ours.value)
    assert fault is not None and fault.what == machine_faults.NO_GPU_MEMORY[0]
    with pytest.raises(torch.cuda.OutOfMemoryError) as theirs:
        _raise_in("<ipython-input-4-def>", oom, OOM=torch.cuda.OutOfMemoryError)
    assert machine_faults.diagnose(theirs.value) is None


class _CudaError(RuntimeError):
    """What CuTe DSL's DSLCudaRuntimeError carries: the CUDA error's name, structured."""

    def __init__(self, name):
        super().__init__("some message")
        self._error_name = name


@pytest.mark.parametrize(
    "name,expected",
    [
        ("CUDA_ERROR_NO_DEVICE", machine_faults.NO_DRIVER),
        (b"cudaErrorInsufficientDriver", machine_faults.OLD_DRIVER),
        ("CUresult.CUDA_ERROR_OUT_OF_MEMORY", machine_faults.NO_GPU_MEMORY),
        ("CUDA_ERROR_ILLEGAL_ADDRESS", None),  # the learner's kernel did that
    ],
)
def test_a_driver_that_cannot_run_any_kernel_is_the_machines(name, expected):
    with pytest.raises(_CudaError) as raised:
        _raise_in(torch.__file__, "raise E(name)", E=_CudaError, name=name)
    fault = machine_faults.diagnose(raised.value)
    assert (fault and (fault.what, fault.fix)) == expected


def test_a_machine_fault_in_a_kernel_check_is_a_finding_of_its_own():
    """A check that could not run makes the report a machine fault, never wrong; a failed
    check still makes it wrong."""
    fault = machine_faults.MachineFault("no module 'greenlet'", "pip install greenlet")
    cannot = kernel_check.could_not_run("running your kernel", fault)
    ok = kernel_check.passed("traced and compiled for sm_90a")
    bad = kernel_check.failed("no spills", "8 bytes", "hold fewer values")
    assert kernel_check.Report((ok, cannot)).status == MACHINE_FAULT
    assert kernel_check.Report((ok, cannot, bad)).status == WRONG
    assert MACHINE_FAULT in VERDICTS and check.status_of(MACHINE_FAULT) == MACHINE_FAULT
    verdict = Verdict("01.saxpy", MACHINE_FAULT, fault.message())
    assert verdict.ok is None and "the checker could not run here" in str(verdict)


def _write_and_read(code_dir, source, start, out):
    from course.exercises import learner_code

    learner_code.CODE_DIR = code_dir
    start.wait()
    out.put(LearnerCode("f", source).path().read_text() == learner_code.HEADER + source)


def test_a_learners_module_file_appears_whole(tmp_path):
    """Two pytest workers collecting the same solutions write the same module file: it is
    written under another name and renamed, so the other never imports it half written (an
    empty module, "not defined by its own source"), and nothing else is left beside it."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    source = "def f(x):\n    return x + 1\n" + "# padding\n" * 2_000_000
    for _ in range(3):
        for old in tmp_path.iterdir():
            old.unlink()
        start, out = ctx.Barrier(6), ctx.Queue()
        procs = [
            ctx.Process(target=_write_and_read, args=(tmp_path, source, start, out))
            for _ in range(6)
        ]
        for p in procs:
            p.start()
        whole = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join()
        assert all(whole), whole
        (only,) = tmp_path.iterdir()
        assert only.name.startswith("learner_f_") and only.stat().st_mode & 0o777 == 0o644
