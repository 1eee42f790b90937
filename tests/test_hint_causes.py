"""A hint chosen from what was observed (issue 40, "hints from structure"): each planted
slip below was once told about something else. A wrong output is described as true of the
shape (no "last partial tile" where no tile is full); a hazard's hint comes from its
structured cause (course.execute.hazards.Cause), not from the words of its sentence."""

import pytest
import torch

from course.exercises.check import check
from course.exercises.gpu_run import judge_output
from course.exercises.learner_code import edited
from course.exercises.verdicts import WRONG


def _hint(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("hint:"))


def _observed(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("observed:"))


def test_a_shape_smaller_than_a_tile_is_not_called_its_last_partial_tile():
    """M = 65 < tile_m: every tile is partial, so wrong values everywhere are not "all in the
    last partial tile" with "the full tiles right"; the sentence counts tiles and outputs."""
    ref = torch.randn(65, 264, dtype=torch.float64)
    out = ref + 1.0
    f = judge_output("m65", out.float(), ref, tile=(128, 128), wrong_hint="V", edge_hint="E")
    assert "partial tile" not in f.detail.replace("every one of them partial", "")
    assert "full (128, 128) tiles are right" not in f.detail
    assert "17160 of 17160 outputs (100%) wrong" in f.detail
    assert "in 3 of 3 (128, 128) tiles, every one of them partial (65 rows < 128" in f.detail
    assert f.hint == "V"  # no edge to blame: the values hint


def test_wrong_values_only_past_the_full_tiles_are_still_the_edge():
    ref = torch.randn(200, 136, dtype=torch.float64)
    out = ref.clone()
    out[128:, :] = 0
    f = judge_output("edge", out.float(), ref, tile=(128, 128), wrong_hint="V", edge_hint="E")
    assert "all in the last partial tiles" in f.detail and f.hint == "E"
    assert "the 1 full (128, 128) tile is right" in f.detail and "(36%)" in f.detail


def _promotion(name: str, *edits):
    from course.exercises.solutions import nb12_solutions as s12

    return edited(s12.after_k_tile, f"after_k_tile__{name}", *edits)


def test_a_promotion_wrong_everywhere_is_not_an_edge():
    """12.promotion's quick shape (129 x 136: one full and three partial 128 x 128 tiles): a
    promotion that adds the scales instead of multiplying them is wrong in every tile, full
    and partial, and said so (no "last partial tile"; the M = 65 sentence is tested above)."""
    fn = _promotion("scales_added", ("scales.append(sa * sb)", "scales.append(sa + sb)"))
    verdict = check("12.promotion", fn, quiet=True, gpu=False)
    assert verdict.status == WRONG, verdict.message
    seen = _observed(verdict.message)
    assert "last partial tile" not in seen and "tiles are right" not in seen, seen
    assert "in 1 of 1 full (128, 128) tiles and 3 of 3 partial ones" in seen, seen


def test_scales_of_the_previous_k_tile_are_an_index_before_the_start_not_the_edge():
    """a_scale[m, kt - 1] at kt = 0 reads element -1: a read before the tensor, named from the
    hazard's cause (its tensor and index), not "a missing predicate at the edge"."""
    fn = _promotion(
        "scales_of_the_previous_k_tile",
        ("rows - 1), kt]", "rows - 1), kt - 1]"),
        ("blocks - 1), kt]", "blocks - 1), kt - 1]"),
    )
    verdict = check("12.promotion", fn, quiet=True, gpu=False)
    assert verdict.status == WRONG, verdict.message
    hint = _hint(verdict.message)
    assert "predicate at the edge" not in hint.replace("no predicate at the edge", ""), hint
    assert "element -1 of" in hint and "before its first element" in hint, hint
    assert "kt - 1" in hint, hint


@pytest.mark.parametrize(
    "what,index,words",
    [("index past the end", 9, "predicate at the edge"), ("index below the start", -1, "before")],
)
def test_an_out_of_bounds_hint_follows_the_cause_not_the_sentence(what, index, words):
    """The same sentence, two causes: the end the index fell off picks the hint."""
    from course.execute import hazards
    from course.exercises.executor_checks import _hazard_finding

    exc = hazards.Hazard(
        hazards.OUT_OF_BOUNDS,
        "reads an element of x outside its 3 Float32 elements",
        cause=hazards.Cause(what, "x", (0, 2), index),
    )
    assert words in _hazard_finding(exc).hint


def test_a_wait_for_too_many_stores_is_told_its_count_not_a_missing_commit():
    """wait_group.read 4 where epi_stages = 4 allows at most 3: commit and wait are both there,
    and the finding says what count was found and what the ring allows."""
    from course.exercises.solutions import nb11_solutions as s11

    fn = edited(
        s11.store_chunk,
        "store_chunk__waits_for_four",
        (s11.ACQUIRE, "        cute.arch.cp_async_bulk_wait_group(4, read=True)\n"),
    )
    verdict = check("11.tma_store", fn, quiet=True, gpu=False)
    assert verdict.status == WRONG, verdict.message
    seen, hint = _observed(verdict.message), _hint(verdict.message)
    assert "no commit_group" not in seen, seen
    assert "wait_group.read 4" in seen and "at most 3" in seen, seen
    assert "wait_group.read 4 waits too little" in hint, hint


def test_a_fence_after_the_release_is_told_it_is_late_not_missing():
    """fence_proxy after consumer_release: the fence is in the PTX, after the release."""
    from course.exercises.solutions import nb15_solutions as s15

    fence = '    cute.arch.fence_proxy("async.shared", space="cta")\n'
    release = "    clc_pipeline.consumer_release(read_state)\n"
    fn = edited(
        s15.read_next_tile,
        "read_next_tile__fence_after_release",
        (fence + release, release + fence),
    )
    verdict = check("15.read_next_tile", fn, quiet=True, gpu=False)
    assert verdict.status == WRONG, verdict.message
    seen, hint = _observed(verdict.message), _hint(verdict.message)
    assert "0 of 3 places fence before the release" in seen, seen
    assert "the fence comes after it" in seen, seen
    assert "the fence is there but after consumer_release" in hint, hint
