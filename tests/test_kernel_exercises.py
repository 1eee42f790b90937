"""Kernel exercises: each reference passes, each known wrong variant fails with its hint,
the shipped skeletons say "not solved yet", and every notebook from 01 to 16 has one.

On a CPU the checks are what every machine runs (compile, PTX, CuTe's trace) and, for
notebooks 01-07, a run of the kernel on the course's CPU executor; the
`gpu`-marked tests run the same exercises live on the GPU (correctness against torch under
the watchdog, speed where asked, compute-sanitizer where the exercise asks for it).
"""

import json
import re
from types import SimpleNamespace

import pytest

from course import ROOT
from course.exercises import kernel_check, kernel_exercises, solutions
from course.exercises.check import check
from course.exercises.learner_code import LearnerCode
from course.exercises.executor_checks import CHECK
from course.exercises.verdicts import RIGHT, UNPROVEN, WRONG

from . import h100_records
from .h100_records import AWAITING_H100_RECORD, CHANGED_SINCE_H100_RECORD, OLD_WORDS, ROWS

pytestmark = pytest.mark.usefixtures("cpu_reports_shared")  # one CPU report per solution

CASES = solutions.cases()
CORRECT = [c for c in CASES if c.correct]
MISTAKES = [c for c in CASES if not c.correct]
KERNEL_NOTEBOOKS = [
    "01_dsl_basics",
    "02_layouts",
    "03_tiling",
    "04_copies",
    "05_swizzle",
    "06_mma_atoms",
    "07_tiled_gemm",
    "08_tma",
    "09_pipelines",
    "10_wgmma",
    "11_hopper_sol",
    "12_fp8",
    "14_tcgen05",
    "15_cta_pair_clc_gemm",
    "16_blockscaled",
]
# notebooks whose exercise cell is being written: the exercise, and the module constants that
# hold the cells the notebook takes verbatim (the skeleton, then its check); each leaves this
# table once its notebook has the cells
AWAITING_NOTEBOOK_CELL: dict[str, str] = {}  # notebook stem -> its exercise not in it yet


def _ids(cases):
    return [f"{c.exercise}-{c.name}" for c in cases]


def _a_record_citing(citation: str):
    """What results.record returns, as far as the verify command reads it: a citation."""
    return SimpleNamespace(citation=lambda: citation)


@pytest.mark.parametrize("case", CORRECT, ids=_ids(CORRECT))
def test_a_correct_solution_is_never_called_wrong_without_a_run(case):
    """On a machine that does not run the kernel, every correct way of writing it (the
    reference and the alternatives) passes every check made here: not proven, never wrong;
    right only where something here really ran it and compared every output."""
    verdict = check(case.exercise, case.fn, quiet=True, gpu=False)
    if case.exercise in kernel_check.executor_exercises():  # run here, on the CPU executor
        assert verdict.status == RIGHT and "CPU executor" in verdict.message, verdict.message
    assert verdict.status in (RIGHT, UNPROVEN), verdict.message
    if verdict.status == UNPROVEN:
        assert "did not run here" in verdict.message and "Only a run shows" in verdict.message


@pytest.mark.parametrize("case", MISTAKES, ids=_ids(MISTAKES))
def test_a_wrong_variant_is_never_called_right_without_a_run(case):
    """On a CPU a mistake the CPU checks can see is wrong, named by its hint; one only a run
    shows is not proven here. Never right: the kernel did not run."""
    verdict = check(case.exercise, case.fn, quiet=True, gpu=False)
    if case.where == "cpu":
        assert verdict.status == WRONG, verdict.message
        assert case.word in _hint_line(verdict.message), verdict.message
    elif case.exercise in kernel_check.executor_exercises():  # the executor's run shows it
        assert verdict.status == WRONG and "CPU executor" in verdict.message, verdict.message
        assert case.word in verdict.message, verdict.message  # named, as `verify` asks
    else:
        assert verdict.status in (WRONG, UNPROVEN), verdict.message


# Fidelity, measured (here, beside the CPU verdicts above, so the executor runs each case
# once for both: tests/conftest.py's cpu_reports_shared): the CPU executor's verdict on every
# case of the exercises an H100 runs equals the H100's recorded verdict
# (tests/h100_records.py); each run the executor makes of a shape the H100 also ran gives
# the same pass or fail, and a hazard is only ever found in a case the H100 failed.
@pytest.mark.parametrize("case", h100_records.CASES, ids=_ids(h100_records.CASES))
def test_the_executor_verdict_equals_the_h100_verdict(case):
    if case.exercise in AWAITING_H100_RECORD:
        pytest.skip(
            f"{case.exercise} has no H100 verdict to compare with yet: on an H100, "
            f"{AWAITING_H100_RECORD[case.exercise]}"
        )
    if case.exercise in CHANGED_SINCE_H100_RECORD:
        pytest.skip(
            f"{case.exercise} changed after its H100 record: on an H100, "
            f"{CHANGED_SINCE_H100_RECORD[case.exercise][1]}"
        )
    row = ROWS[(case.exercise, case.name)]
    report = kernel_check.run_checks(kernel_exercises.lookup(case.exercise), case.fn, gpu=False)
    assert report.status == OLD_WORDS.get(row["verdict"], row["verdict"]), report.text()

    runs = [f for f in report.findings if f.check.startswith(CHECK)]
    caught_before_a_run = any(
        f.status == kernel_check.FAIL and not f.check.startswith(CHECK) for f in report.findings
    )
    if caught_before_a_run:  # the checks every machine makes found it: no run, here or there
        return
    assert runs, "nothing ran on the executor"
    assert all(f.status != kernel_check.NOT_RUN for f in runs), report.text()
    h100 = {}
    for name, status, _ in row["checks"]:
        h100.setdefault(name, set()).add(status)
    for f in runs:
        name = f.check[len(CHECK) + 2 :]
        if name in h100:  # the same shape, run on both: the same outcome
            assert f.status in h100[name], (f.line(), h100[name])
        elif f.status == "fail":  # a hazard: only where the H100 failed the case too
            assert row["verdict"] in ("fail", WRONG), f.line()
    if case.where == "gpu":  # a mistake only a run shows: the executor's run shows it
        assert any(f.status == "fail" for f in runs), report.text()


def _hint_line(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("hint: "))


@pytest.mark.gpu
@pytest.mark.parametrize("case", CORRECT, ids=_ids(CORRECT))
def test_a_correct_solution_is_right_on_the_gpu(case):
    ex = kernel_exercises.lookup(case.exercise)
    _skip_unless_this_gpu_runs(ex)
    report = kernel_check.run_checks(ex, case.fn)
    assert report.status == RIGHT, report.text()
    assert any(f.ran and f.status == kernel_check.PASS for f in report.findings), report.text()


@pytest.mark.gpu
@pytest.mark.parametrize("case", MISTAKES, ids=_ids(MISTAKES))
def test_a_wrong_variant_is_wrong_on_the_gpu_with_its_hint(case):
    ex = kernel_exercises.lookup(case.exercise)
    _skip_unless_this_gpu_runs(ex)
    report = kernel_check.run_checks(ex, case.fn)
    assert report.status == WRONG, report.text()
    assert case.word in report.first_hint() or case.word in report.text(), report.text()


def _skip_unless_this_gpu_runs(ex):
    from course.runtime.hardware import machine

    if ex.gpu_checks is None or not machine().can(ex.needs):
        pytest.skip(f"{ex.id} runs live only on {ex.needs}; {machine().describe()}")


def _tagged_cells(stem):
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    cells = nb["cells"]
    return [
        (i, c)
        for i, c in enumerate(cells)
        if "exercise-kernel" in c.get("metadata", {}).get("tags", [])
    ], cells


@pytest.mark.parametrize("stem", KERNEL_NOTEBOOKS)
def test_each_notebook_has_a_kernel_exercise_shipped_unsolved(stem):
    tagged, cells = _tagged_cells(stem)
    if stem in AWAITING_NOTEBOOK_CELL:
        id = AWAITING_NOTEBOOK_CELL[stem]
        assert not tagged, f"{stem} has its exercise cell now: take it off AWAITING_NOTEBOOK_CELL"
        pytest.skip(f"{stem}: the cell of {id} is not in the notebook yet")
    assert tagged, f"{stem} has no cell tagged exercise-kernel"
    for i, cell in tagged:
        source = "".join(cell["source"])
        follow = "".join(cells[i + 1]["source"])
        assert "check(" in follow, "the cell after a kernel exercise checks it"
        ex = kernel_exercises.lookup(re.search(r'check\("([\w.]+)"', follow).group(1))
        if ex.shipped is not None:  # find and fix: the cell holds the broken code as shipped
            name = re.search(r"^def (\w+)\(", source, re.M).group(1)
            cell_fn = LearnerCode(name, source[source.index(f"def {name}(") :])
            assert cell_fn.same_statements(ex.shipped), f"{stem}: the cell is not {ex.id}'s code"
        else:
            assert LearnerCode("f", source).unwritten() or "..." in source, (
                "the shipped skeleton must hold a bare `...`"
            )
        shown = "".join("".join(o.get("text", "")) for o in cells[i + 1].get("outputs", []))
        assert "not solved yet" in shown, f"{stem} cell {i + 1} should report 'not solved yet'"


def test_notebook_16s_skeleton_cell_is_not_solved_yet_and_its_check_names_it():
    """The cells notebook 16 takes verbatim (course.exercises.nb16_sf_kernel): the skeleton
    holds a bare `...`, is checked as "not solved yet" without compiling or raising, and with
    the reference's body in place of the `...` it is the reference's code."""
    from course.exercises import nb16_sf_kernel as nb16
    from course.exercises.solutions import nb16_solutions
    from course.exercises.verdicts import UNANSWERED

    skeleton = LearnerCode("mma_k_loop", nb16.SKELETON_CELL)
    assert skeleton.unwritten()
    verdict = check(nb16.ID, skeleton.load(), quiet=True)
    assert verdict.status == UNANSWERED and "not solved yet" in verdict.message
    assert nb16.CHECK_CELL == f'check("{nb16.ID}", mma_k_loop)'
    body = LearnerCode.from_function(nb16_solutions.mma_k_loop).source
    loop = body[body.index("    for k_block") : body.index("    return state")]
    frame = nb16.SKELETON_CELL
    head, tail = frame[: frame.index("    for k_block")], frame[frame.index("    return state") :]
    filled = head + loop + tail
    assert LearnerCode("mma_k_loop", filled).same_statements(nb16_solutions.mma_k_loop)


def test_every_kernel_exercise_has_a_reference_and_wrong_variants():
    for mod in solutions.modules():
        for id in mod.REFERENCE:
            kernel_exercises.lookup(id)
    ids = {id for mod in solutions.modules() for id in mod.REFERENCE}
    assert ids == set(kernel_check.KERNEL_EXERCISES)
    for id in ids:
        assert any(c.exercise == id for c in MISTAKES), f"{id} has no known wrong variant"
        assert any(c.exercise == id and c.kind == "alternative" for c in CORRECT), (
            f"{id} has no alternative correct solution: the checker may accept one spelling only"
        )


def test_unwritten_means_a_bare_ellipsis():
    assert LearnerCode("f", "def f(x):\n    ...  # your code\n").unwritten()
    assert not LearnerCode("f", "def f(x):\n    return x[...]\n").unwritten()


def test_a_non_function_is_a_friendly_wrong_answer():
    verdict = check("01.saxpy", 42, quiet=True)
    assert verdict.status == WRONG and "pass the function" in verdict.message


def test_a_racecheck_report_becomes_a_sentence_naming_the_two_instructions():
    """The log as racecheck printed it on the H100 for notebook 07's ring with its barrier
    removed (the first race at +0x1d60), read against the same kernel compiled here."""
    from course.exercises import gpu_run
    from kernels.artifacts import compile_artifacts
    from tests.planted_mistakes import CP_ASYNC_RACE

    id, fn = CP_ASYNC_RACE
    ex, code = kernel_exercises.lookup(id), LearnerCode.from_function(fn)
    sass = compile_artifacts(
        ("exercise", id, code.digest), "sm_90a", *ex.build(code.load(), "sm_90a")
    ).sass()
    read = re.search(r"/\*([0-9a-f]{4})\*/\s+LDSM", sass).group(1)
    log = (
        f"========= Error: Race reported between Write access at kernel_x+0x1d60\n"
        f"=========     and Read access at kernel_x+0x{read} [12 hazards]\n"
        f"========= RACECHECK SUMMARY: 56 hazards displayed (56 errors, 0 warnings)\n"
    )
    finding = gpu_run.sanitizer_finding("racecheck", "racecheck", 99, log, sass=lambda: sass)
    assert finding.status == kernel_check.FAIL
    assert (
        "56 error(s); first: a cp.async copy into shared memory (LDGSTS at +0x1d60) and an "
        f"ldmatrix read (LDSM at +0x{read}) touch the same shared-memory bytes"
    ) in finding.detail, finding.detail
    clean = gpu_run.sanitizer_finding(
        "racecheck",
        "racecheck",
        1,
        "  ✘ 200x296x200 bf16 against torch: 3% wrong\n"
        "========= RACECHECK SUMMARY: 0 hazards displayed (0 "
        "errors, 0 warnings)\n",
    )
    assert clean.status == kernel_check.FAIL and "no racecheck error" in clean.detail


def test_an_interrupted_verify_records_the_cases_it_finished(monkeypatch):
    """A time limit's SIGTERM (or Ctrl-C) mid-run keeps the finished cases in the record."""
    from course.exercises import __main__ as cli
    from course.runtime import results

    calls, recorded = [], {}
    real = kernel_check.run_checks

    def second_call_interrupted(ex, fn, **kw):
        calls.append(fn)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(ex, fn, **kw)

    def kept(name, data, command=None):
        """results.record without a GPU: keeps what it is given."""
        recorded.update(name=name, data=data)
        return _a_record_citing("test")

    monkeypatch.setattr(kernel_check, "run_checks", second_call_interrupted)
    monkeypatch.setattr(results, "record", kept)
    assert cli.main(["verify", "01.saxpy", "--record"]) == 1
    assert recorded["name"] == "kernel_exercises" and recorded["data"]["interrupted"] is True
    assert [c["variant"] for c in recorded["data"]["cases"]] == ["saxpy_kernel"]


def test_a_traced_function_still_reads_back_with_its_decorator():
    """CuTe DSL rebuilds what it decorates; checking a function twice must see the same code."""
    from course.exercises.solutions import nb07_solutions

    fn = nb07_solutions.mainloop__no_sync
    before = LearnerCode.from_function(fn)
    check("07.mainloop", fn, quiet=True, gpu=False)  # traces it
    after = LearnerCode.from_function(fn)
    assert after.source == before.source and after.source.startswith("@cute.jit")
