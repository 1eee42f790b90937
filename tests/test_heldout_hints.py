"""Mistakes of the held-out review whose hint named something else: each piece that now says
what was observed (the observation or cause it is chosen from, and the hint that follows)."""

import types

import pytest
import torch

from course.execute import hazards
from course.exercises import executor_checks, kernel_check, kernel_exercises
from course.exercises.mismatch import observe


def _hazard(what, subject, expected=None, observed=None, unit=""):
    cause = hazards.Cause(what, subject, expected, observed, unit)
    return hazards.Hazard(hazards.OUT_OF_BOUNDS, "detail", cause=cause)


# ---------------------------------------------------------------- 14: tiles swapped


def _swapped_output():
    """A 129x136 C of (128, 128) tiles whose tile (0, 1) and (1, 0) hold each other's
    values where both lie inside C, and what a kernel computes past C's edge (0) elsewhere."""
    ref = torch.randn(129, 136, dtype=torch.float64)
    out = ref.clone()
    out[0:128, 128:136] = 0
    out[0, 128:136] = ref[128, 0:8]
    out[128, 0:128] = 0
    out[128, 0:8] = ref[0, 128:136]
    return out, ref


def test_outputs_of_tile_i_j_found_at_j_i_are_said_so():
    out, ref = _swapped_output()
    seen = observe(out, ref, 8e-3, tile=(128, 128))
    assert seen.pattern == "tiles swapped", seen
    assert "tile (0, 1)'s at (1, 0)" in seen.sentence


def test_a_wrong_value_in_an_off_diagonal_tile_is_not_called_swapped():
    ref = torch.randn(129, 136, dtype=torch.float64)
    out = ref.clone()
    out[5, 130] += 3
    assert observe(out, ref, 8e-3, tile=(128, 128)).pattern != "tiles swapped"


def test_judge_output_gives_the_swapped_tiles_their_own_hint():
    from course.exercises.gpu_run import judge_output

    out, ref = _swapped_output()
    f = judge_output("C", out.float(), ref, wrong_hint="the sync recipe", tile=(128, 128))
    assert f.status == kernel_check.FAIL and f.hint.startswith("tiles swapped"), f


# ---------------------------------------------------------------- 13: a spill does not stop the run


def test_a_spill_is_not_what_the_verdict_leads_with_when_the_run_found_more():
    spill = kernel_check.failed(kernel_check.SPILLS, "8 bytes of stack frame", "hold fewer")
    ran = kernel_check.failed("ran: out of bounds", "residual read at (130, 32)", "swapped")
    report = kernel_check.Report((kernel_check.passed("compiled"), spill, ran))
    assert report.first_failure() is ran and report.first_hint() == "swapped"
    assert kernel_check.Report((spill,)).first_failure() is spill


def test_the_swapped_read_names_both_readings_of_the_coordinate():
    hint = executor_checks.hazard_hint(
        _hazard(hazards.SWAPPED_COORDINATES, "residual", (129, 264), (130, 32))
    )
    assert "swapped" in hint and "(32, 130) is inside" in hint and "predicate" in hint


# ---------------------------------------------------------------- 16: a stage past the ring


def test_a_slice_past_a_mode_names_the_mode_and_the_stages():
    hint = executor_checks.hazard_hint(_hazard(hazards.SLICE_PAST_MODE, "sSFA", (4, 4), 5))
    assert "past a mode" in hint and "sSFA's mode 4 has 4 entries" in hint and "5" in hint


def test_the_executor_refuses_a_shared_tensor_sliced_past_its_stages():
    from course.execute import tensor
    from course.execute.memory import SMEM

    memory = types.SimpleNamespace(space=SMEM, describe=lambda byte: "sSFA[0, 0] (stage 0)")
    ptr = tensor.Pointer.__new__(tensor.Pointer)
    ptr.memory, ptr.byte_offset = memory, 0
    layout = types.SimpleNamespace(shape=(8, 4))
    tensor._check_mode_extents(ptr, layout, (None, 3))  # inside: nothing said
    with pytest.raises(hazards.Hazard) as raised:
        tensor._check_mode_extents(ptr, layout, (None, 4))
    cause = raised.value.cause
    assert (cause.what, cause.subject, cause.expected, cause.observed) == (
        hazards.SLICE_PAST_MODE,
        "sSFA",
        (1, 4),
        4,
    )


# ---------------------------------------------------------------- 07: a copy into the read stage


def test_a_cp_async_issued_since_the_barrier_is_a_copy_into_the_stage_read():
    from course.execute.memory import AsyncCopy, _in_flight_cause

    from course.execute import happens_before

    class Warp:  # what the model reads of a warp
        def __init__(self):
            self.clock, self.barriers, self.knows = 2, 3, {}

    issuer, reader = Warp(), Warp()
    stamp = happens_before.now(issuer)
    copy = AsyncCopy(0, None, None, None, None, hazards.UNKNOWN, warp=issuer, stamp=stamp)
    copy.barriers = issuer.barriers
    assert _in_flight_cause(copy, reader) == hazards.COPIED_SINCE_BARRIER
    assert _in_flight_cause(copy, issuer) == hazards.COPIED_SINCE_BARRIER  # same warp, no barrier
    happens_before.join([issuer, reader])  # a barrier since: an earlier copy, a wait missing
    assert _in_flight_cause(copy, reader) == hazards.READ_IN_FLIGHT
    assert _in_flight_cause(copy, issuer) == hazards.READ_IN_FLIGHT
    hint = executor_checks.hazard_hint(
        _hazard(hazards.COPIED_SINCE_BARRIER, "sA[0, 0, 0]", unit=hazards.UNIT_CP_ASYNC)
    )
    assert "stage being read" in hint and "missing wait" not in hint


# ---------------------------------------------------------------- 05: a swizzle made the identity


def test_a_swizzle_with_shift_below_its_bits_is_said_to_have_collapsed():
    from course.exercises import nb05
    from course.exercises.solutions import nb05_solutions as s

    found = nb05.conflict_free_both_ways(
        types.SimpleNamespace(fn=s.transpose_tile_layout__swizzle_shift_four)
    )
    assert found.status == kernel_check.FAIL
    assert "S<0,4,3>" in found.detail and found.hint.startswith("swizzle collapsed"), found


# ---------------------------------------------------------------- 09: the release of another stage


def test_a_release_of_the_next_stage_is_named_in_the_deadlock():
    from course.exercises.solutions import nb09_solutions as s
    from course.sim import ring_code
    from kernels.tma_gemm import TmaGemm

    v = ring_code.verdict(s.ring__releases_next_stage, TmaGemm)
    assert v.mistake == "wrong stage released", v
    assert "after reading stage" in v.detail
    assert ring_code.verdict(s.ring__early_release, TmaGemm).mistake == "released too early"
    assert ring_code.verdict(s.ring, TmaGemm).ok


# ---------------------------------------------------------------- 15: decoded after the release


@pytest.fixture(scope="module")
def nb15_compiled():
    from course.exercises.solutions import nb15_solutions as s
    from course.exercises.learner_code import LearnerCode
    from kernels.artifacts import compile_artifacts

    ex = kernel_exercises.lookup("15.read_next_tile")

    def compiled(fn):
        code = LearnerCode.from_function(fn)
        art = compile_artifacts(("test", code.digest), ex.arch, *ex.build(code.load(), ex.arch))
        return kernel_check.Compiled(fn, code, ex.arch, art)

    return s, compiled


def test_a_decode_after_the_release_is_what_both_static_checks_say(nb15_compiled):
    from course.exercises import nb15_clc_kernel as k

    s, compiled = nb15_compiled
    c = compiled(s.read_next_tile__released_before_decode)
    for found in (k.releases_each_answer(c), k.fences_before_release(c)):
        assert found.status == kernel_check.FAIL
        assert "3 of 3 places release the buffer before decoding" in found.detail, found
        assert "read after the buffer was freed" in found.hint
    assert k.released_before_decode(compiled(s.read_next_tile)) == []


def test_the_executor_names_a_read_of_the_answer_after_its_fence_and_release():
    """Run past the static checks: the run itself says the read came after the fence (and
    the release beside it); a kernel with no fence at all is still told to fence."""
    from course.exercises.solutions import nb15_solutions as s

    run = executor_checks.EXECUTOR_CHECKS["15.read_next_tile"]
    (late,) = run(s.read_next_tile__released_before_decode)
    assert "they had fenced before reading it" in late.detail, late
    assert late.hint.startswith("the answer was decoded after the fence and the release")
    (unfenced,) = run(s.read_next_tile__no_fence)
    assert "with no fence.proxy.async between" in unfenced.detail, unfenced
