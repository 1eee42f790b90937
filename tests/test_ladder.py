"""The one ladder registry (kernels/ladder.py) and the notebooks agree: a step's number is the
notebook that introduces it, the chart highlights the notebook that draws it, and
ARCHITECTURE.md, course.bench and the chart are all written from the registry."""

import ast
import importlib
import json
import re

import pytest

from course import ROOT
from course.bench.gemm_bench import LADDER
from course.lessons import ladder as ladder_lesson
from course.tools import ladder_table
from kernels import ladder

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _code(path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _text(path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])


def _uses(path, module: str) -> bool:
    """The notebook imports kernels.<module> or names kernels/<module>.py."""
    code = _code(path)
    return bool(
        re.search(
            rf"from kernels import [^\n]*\b{module}\b|import kernels\.{module}\b|"
            rf"from kernels\.{module} import",
            code,
        )
        or f"kernels/{module}.py" in _text(path)
    )


@pytest.mark.parametrize("step", ladder.STEPS, ids=lambda s: s.module)
def test_a_steps_number_is_the_first_notebook_that_uses_it(step):
    first = next((int(p.name[:2]) for p in NOTEBOOKS if _uses(p, step.module)), None)
    assert first == step.notebook, (
        f"kernels/{step.module}.py is introduced by notebook "
        f"{first:02d}, but the ladder says {step.notebook:02d}"
    )


def test_the_steps_run_in_notebook_order_and_cover_every_step_module():
    numbers = [s.notebook for s in ladder.STEPS]
    assert numbers == sorted(numbers)
    host = {"__init__", *ladder.HOST_MODULES}
    assert {p.stem for p in (ROOT / "kernels").glob("*.py")} - host == {
        s.module for s in ladder.in_order()
    }
    steps = [s.module for s in ladder.STEPS]
    for part in ladder.PARTS:  # a parts module sits just before a step that uses it
        assert part.first_user in steps and ladder.in_order().index(
            part
        ) + 1 == ladder.in_order().index(ladder.step(part.first_user))


@pytest.mark.parametrize("gemm", ladder.GEMMS, ids=lambda g: g.name)
def test_a_gemm_needs_what_its_module_says_and_course_bench_prepares_it(gemm):
    module = importlib.import_module(f"kernels.{gemm.module}")
    assert gemm.needs == module.NEEDS
    assert callable(module.prepare)
    path, needs, title = LADDER[gemm.name]
    assert path == f"kernels.{gemm.module}:prepare" and needs == gemm.needs
    assert title.startswith(f"notebook {gemm.notebook:02d}: ")


@pytest.mark.parametrize("rung", ladder.RUNGS, ids=lambda r: f"{r.gemm}-{r.preset}")
def test_a_rung_is_a_gemm_and_a_preset_of_it_labelled_with_its_notebook(rung):
    gemm = ladder.gemm(rung.gemm)
    if rung.preset:
        module = importlib.import_module(f"kernels.{gemm.module}")
        assert rung.preset in module.PRESETS
    assert rung.label.startswith(f"{gemm.notebook:02d} ")


FIGURE_CALLS = [
    (p, node)
    for p in NOTEBOOKS
    for node in ast.walk(ast.parse(_code(p)))
    if isinstance(node, ast.Call)
    and isinstance(node.func, ast.Attribute)
    and node.func.attr == "figure"
    and isinstance(node.func.value, ast.Name)
    and node.func.value.id == "ladder"
]


def test_the_notebooks_draw_the_ladder():
    assert {p.name[:2] for p, _ in FIGURE_CALLS} >= {"07", "09", "10", "11"}


@pytest.mark.parametrize("path, call", FIGURE_CALLS, ids=lambda x: getattr(x, "name", ""))
def test_the_ladder_chart_highlights_the_notebook_that_draws_it(path, call):
    highlight = next((kw.value for kw in call.keywords if kw.arg == "highlight"), None)
    assert highlight is not None, f"{path.name}: ladder.figure(...) without highlight="
    assert ast.literal_eval(highlight) == int(path.name[:2])
    assert any(r.notebook == int(path.name[:2]) for r in ladder.RUNGS), (
        f"{path.name} draws the ladder but introduces no rung"
    )


def test_a_highlight_that_introduces_no_rung_is_an_error():
    with pytest.raises(ValueError, match="no recorded rung is introduced by notebook 8"):
        ladder_lesson.figure(highlight=8)


def test_the_chart_and_table_label_rungs_from_the_registry():
    labels = [r.label for r in ladder_lesson.rungs()]
    assert labels == [r.label for r in ladder.RUNGS]
    assert "| 03 naive SIMT (FFMA) |" in ladder_lesson.table()


def test_architecture_md_table_is_written_from_the_registry():
    text = ladder_table.ARCHITECTURE.read_text()
    assert ladder_table.section() in text, "stale: run `python -m course ladder --write`"
    assert ladder_table.builds_on("hopper_gemm") == ["sm80_gemm", "sm90_parts"]
