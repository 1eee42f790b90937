"""The live cells of notebooks 06-16 are one call of their lesson each: the harness
(`live_or`, `executed`, `compile_only`, lambdas) lives in course/lessons, and each call keeps
the need, the fallbacks and the label its cell had (recorded live outputs are filed under the
label, course/runtime/live_outputs.py)."""

from __future__ import annotations

import importlib
import json
import re

import pytest

from course import ROOT
from course.lessons import (
    blockscaled_lesson,
    cta_pair_lesson,
    fp8_lesson,
    gemm_lesson,
    hopper_lesson,
    last_percent_lesson,
    mma_lesson,
    pipeline_lesson,
    tcgen05_lesson,
    tiling_lesson,
    tma_checks,
    tma_lesson,
    vector_add_lesson,
    wgmma_lesson,
)
from course.runtime import live
from course.runtime.live import Mode

E, C, S = Mode.EXECUTED, Mode.COMPILE_ONLY, Mode.SIMULATED

# (cell function, its arguments, need, label, fallbacks in the order they run)
CELLS = [
    (mma_lesson.stamped_owners, (), "sm_80+", "06.stamp", (E, C)),
    (mma_lesson.micro_gemm_check, (), "sm_80+", "06.micro_gemm", (E, C)),
    (mma_lesson.tiled_micro_gemm_check, (None,), "sm_80+", "06.tiled_micro_gemm", (C,)),
    (gemm_lesson.sm80_sweep, (), "sm_80+", "07.sm80_sweep", (E, C)),
    (tma_lesson.encoded_map, (None,), "sm_90+", "08.encode", (S,)),
    (tma_lesson.descriptor_bytes, (), "sm_90+", "08.descriptor", (C,)),
    (tma_checks.loads_checked, (), "sm_90+", "08.tma_loads", (E, C)),
    (tma_checks.stores_checked, (), "sm_90+", "08.tma_stores", (E, C)),
    (pipeline_lesson.tma_gemm_sweep, (), "sm_90+", "09.tma_gemm_sweep", (E, C)),
    (pipeline_lesson.pipeline_ring_check, (), "sm_90+", "09.ring_check", (E, C)),
    (pipeline_lesson.ring_bugs, (), "sm_90+", "09.ring_bugs", (E,)),
    (wgmma_lesson.wgmma_sweep, (), "sm_90a", "10.wgmma_sweep", (E, C)),
    (hopper_lesson.hopper_sweep, (), "sm_90a", "11.hopper_sweep", (E, C)),
    (fp8_lesson.presets_check, (), "sm_90a", "12.fp8_check", (E,)),
    (last_percent_lesson.split_check, (), "sm_90a", "13.split_check", (E,)),
    (last_percent_lesson.fused_check, (), "sm_90a", "13.fused_check", (E,)),
    (tcgen05_lesson.tcgen05_sweep, (), "sm_100a", "14.tcgen05_sweep", (E,)),
    (tcgen05_lesson.tcgen05_bench, (), "sm_100a", "14.tcgen05_bench", (C,)),
    (cta_pair_lesson.checked_and_timed, (), "sm_100a", "15.cta_pair", (C,)),
    (blockscaled_lesson.formats_check, (), "sm_100a", "16.blockscaled_check", (E,)),
]
# notebooks 00-03's cells, one call already, built on the same helper
EARLY = [
    (vector_add_lesson.live_cell, (1.0,), "gpu", "00.vector_add", (E, C)),
    (vector_add_lesson.ragged_cell, (), "gpu", "01.vector_add_check", (E, C)),
    (tiling_lesson.live_cell, (), "gpu", "03.naive_check", (E, C)),
]
MODULES = {fn.__module__ for fn, *_ in CELLS + EARLY}


def _fallbacks(fallback) -> tuple[Mode, ...]:
    """The modes of a fallback and of the one chained after it (`executed(..., then=)`)."""
    then = next((c.cell_contents for c in fallback.run.__closure__ or () if _is_fallback(c)), None)
    return (fallback.mode,) + (_fallbacks(then) if then is not None else ())


def _is_fallback(cell) -> bool:
    try:
        return isinstance(cell.cell_contents, live.Fallback)
    except ValueError:  # an empty closure cell
        return False


@pytest.mark.parametrize(
    "fn, args, needs, label, modes", CELLS + EARLY, ids=lambda x: getattr(x, "__name__", None)
)
def test_a_cell_call_keeps_its_need_fallbacks_and_label(monkeypatch, fn, args, needs, label, modes):
    seen = []

    def fake_live_or(needs_, live_fn, fallback, quiet=False, label=None):
        assert callable(live_fn)
        seen.append((needs_, label, _fallbacks(fallback)))
        return "outcome"

    monkeypatch.setattr(live, "live_or", fake_live_or)  # what live_or_executed calls
    for name in MODULES:
        module = importlib.import_module(name)
        if hasattr(module, "live_or"):
            monkeypatch.setattr(module, "live_or", fake_live_or)
    assert fn(*args) == "outcome"
    assert seen == [(needs, label, modes)]


def _code_cells(path):
    return [
        "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    ]


@pytest.mark.parametrize(
    "path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name[:2]
)
def test_no_notebook_cell_composes_the_live_harness(path):
    for src in _code_cells(path):
        assert not re.search(r"\b(live_or|executed|compile_only|simulated)\(", src), src[:300]


def test_every_cell_call_is_made_by_its_notebook_once_and_says_where_it_runs():
    alias = {"last_percent_lesson": "lesson"}  # notebook 13 imports it so
    for fn, _, _, label, _ in CELLS:
        module = fn.__module__.rsplit(".", 1)[1]
        call = f"{alias.get(module, module)}.{fn.__name__}("
        (path,) = (ROOT / "notebooks").glob(f"{label[:2]}_*.ipynb")
        found = [s for s in _code_cells(path) if call in s]
        assert len(found) == 1, (path.name, call)
        assert found[0].lstrip().startswith("# on ") or found[0].lstrip().startswith(
            "# timed on "
        ), f"{call}: the cell says first where it runs"


@pytest.mark.parametrize(
    "fn, kernel, shapes",
    [
        (gemm_lesson.sm80_sweep, "sm80_gemm", gemm_lesson.RAGGED),
        (pipeline_lesson.tma_gemm_sweep, "tma_gemm", gemm_lesson.RAGGED),
        (wgmma_lesson.wgmma_sweep, "wgmma_gemm", gemm_lesson.RAGGED),
        (hopper_lesson.hopper_sweep, "hopper_gemm", gemm_lesson.RAGGED),
        (tcgen05_lesson.tcgen05_sweep, "tcgen05_gemm", tcgen05_lesson.LIVE_SHAPES),
    ],
    ids=lambda x: getattr(x, "__name__", None),
)
def test_a_sweep_cell_sweeps_its_own_kernel_live(monkeypatch, fn, kernel, shapes):
    """What the cells ran live before, `check_sweep(<kernel>.run[, shapes])`, is what runs."""
    swept = []
    monkeypatch.setattr(live, "live_or", lambda needs, live_fn, *a, **k: live_fn())
    monkeypatch.setattr(gemm_lesson, "check_sweep", lambda run, s: swept.append((run, s)))
    fn()
    assert swept == [(importlib.import_module(f"kernels.{kernel}").run, shapes)]
