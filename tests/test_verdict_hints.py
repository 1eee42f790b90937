"""A hint says what was observed before it guesses a cause: CuTe DSL's errors mapped to the
slip that causes them, a wrong output described by its pattern, a guard that lets one lane
through recognised however it is written."""

import pytest
import torch

from course.cute.ptx_lanes import single_lane
from course.exercises import kernel_check, kernel_exercises
from course.exercises.gpu_run import _k_tiles_missed, judge_output
from course.exercises.learner_code import LearnerCode
from course.exercises.nb01 import _wrong_formulas
from course.exercises.verdicts import WRONG
from tests import learner_mistakes as slips

COMPILE_SLIPS = [
    ("04.vector_copy", slips.make_vector_copy__value_int, "cute.make_layout(4)"),
    ("04.vector_copy", slips.make_vector_copy__bare_int, "wrap a count in cute.make_layout"),
    ("01.saxpy", slips.saxpy__tuple_index, "tid, _, _ = cute.arch.thread_idx()"),
    ("01.saxpy", slips.saxpy__early_return, "cannot return early"),
    ("01.saxpy", slips.saxpy__constexpr_range, "cutlass.range"),
    ("01.saxpy", slips.saxpy__float_index, "`//` an integer"),
    ("06.mma_tile", slips.mma_tile_kernel__never_stored, "the kernel stores nothing"),
]


@pytest.mark.parametrize("id,fn,words", COMPILE_SLIPS, ids=[s[1].__name__ for s in COMPILE_SLIPS])
def test_a_compile_error_is_named_by_the_slip_that_causes_it(id, fn, words):
    report = kernel_check.run_checks(kernel_exercises.lookup(id), fn, gpu=False)
    assert report.status == WRONG
    first = report.first_failure()
    assert words in first.hint, first.hint
    assert "\x1b[" not in first.detail and "/tmp/" not in first.detail, first.detail


def test_an_error_points_at_the_line_of_the_learners_code():
    report = kernel_check.run_checks(
        kernel_exercises.lookup("01.saxpy"), slips.saxpy__early_return, gpu=False
    )
    lines = LearnerCode.from_function(slips.saxpy__early_return).source.splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == "return")
    assert f"your code, line {line}" in report.first_failure().detail  # counted as the source


@pytest.mark.parametrize(
    "id,fn,seen,hint", slips.EXECUTOR_SLIPS, ids=[s[1].__name__ for s in slips.EXECUTOR_SLIPS]
)
def test_a_slip_only_a_run_shows_is_wrong_on_a_cpu_with_what_the_executor_saw(id, fn, seen, hint):
    report = kernel_check.run_checks(kernel_exercises.lookup(id), fn, gpu=False)
    assert report.status == WRONG
    first = report.first_failure()
    assert "ran on the course's CPU executor" in first.check
    assert seen in first.detail and hint in first.hint, first
    assert f"{fn.__name__} line " in first.detail  # the line of the learner's code


@pytest.mark.parametrize(
    "id,fn,seen,hint",
    [
        (
            "05.transpose_swizzle",
            slips.transpose_tile_layout__padded_by_two,
            "(64,64):(66,1)",
            "only an odd stride sends them",
        ),
        ("03.partition", slips.gemm_partitions__c_with_partition_a, "its value ", "partition_C"),
    ],
    ids=["padded_by_two", "c_with_partition_a"],
)
def test_a_layout_slip_is_described_where_it_differs(id, fn, seen, hint):
    report = kernel_check.run_checks(kernel_exercises.lookup(id), fn, gpu=False)
    assert report.status == WRONG
    first = report.first_failure()
    assert seen in first.detail and hint in first.hint, first


def _saxpy(n=1000, alpha=1.7):
    x, y = torch.randn(n, dtype=torch.float64), torch.randn(n, dtype=torch.float64)
    return x, y, alpha, alpha * x + y


HINTS = {"repeats": "BLOCK INDEX", "values": "VALUES"}


@pytest.mark.parametrize(
    "name,make,seen,hint",
    [
        ("alpha on y", lambda x, y, a, r: a * y + x, "equals alpha * y + x", "alpha multiplies y"),
        (
            "first block repeated",
            lambda x, y, a, r: r[torch.arange(r.numel()) % 256],
            "i mod 256",
            "BLOCK INDEX",
        ),
        ("doubled", lambda x, y, a, r: 2 * r, "2 times the right value", "VALUES"),
        (
            "tail never written",
            lambda x, y, a, r: torch.cat(
                [r[:600], torch.full((400,), float("nan"), dtype=r.dtype)]
            ),
            "400 of 1000 outputs were never written (every one of indices 600..999",
            "VALUES",
        ),
    ],
)
def test_a_wrong_output_is_described_before_a_cause_is_guessed(name, make, seen, hint):
    x, y, a, ref = _saxpy()
    f = judge_output(
        name,
        make(x, y, a, ref).float(),
        ref,
        period=256,
        candidates=_wrong_formulas(x, y, a),
        wrong_hint=HINTS,
    )
    assert f.status == kernel_check.FAIL
    assert seen in f.detail, f.detail
    assert hint in f.hint, f.hint


def test_a_gemm_that_drops_a_k_tile_or_the_edge_is_told_apart():
    a, b = torch.randn(200, 192, dtype=torch.float64), torch.randn(136, 192, dtype=torch.float64)
    ref = a @ b.T

    class Config:
        tile_m, tile_n, tile_k = 128, 128, 64

    short = judge_output(
        "short",
        (a[:, :128] @ b[:, :128].T).float(),
        ref,
        tile=(128, 128),
        candidates=_k_tiles_missed(a, b, Config),
        wrong_hint="V",
        edge_hint="E",
    )
    assert "without its last k-tile" in short.detail and "never multiplied" in short.hint
    edge = ref.clone()
    edge[128:, :] = 0
    f = judge_output("edge", edge.float(), ref, tile=(128, 128), wrong_hint="V", edge_hint="E")
    assert "all in the last partial tile" in f.detail and f.hint == "E"


ELECTED = """\
elect.sync 	%r1|%p5, -1;
not.pred 	%p6, %p5;
@%p6 bra 	$L__BB0_7;
mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r84], %r80;
$L__BB0_7:"""
LANE0 = """\
mov.u32 	%r79, %laneid;
setp.ne.b32 	%p5, %r79, 0;
@%p5 bra 	$L__BB0_7;
mbarrier.arrive.shared.b64 %rd3, [%r84], %r80;
$L__BB0_7:"""
TID_MOD = """\
mov.u32 	%r2, %tid.x;
and.b32 	%r3, %r2, 31;
setp.eq.s32 	%p1, %r3, 0;
@!%p1 bra 	$L__BB0_7;
mbarrier.arrive.shared.b64 %rd3, [%r84], %r80;
$L__BB0_7:"""
ALL_BUT_LANE0 = LANE0.replace("setp.ne.b32", "setp.eq.b32")
UNGUARDED = "mbarrier.arrive.shared.b64 %rd3, [%r84], %r80;"


@pytest.mark.parametrize(
    "ptx,expected",
    [
        (ELECTED, "the elected lane"),
        (LANE0, "lane 0"),
        (TID_MOD, "lane 0"),
        (ALL_BUT_LANE0, None),
        (UNGUARDED, None),
    ],
    ids=["elect.sync", "laneid == 0", "tid % 32 == 0", "laneid != 0", "none"],
)
def test_one_lane_is_read_from_the_guard_however_it_is_written(ptx, expected):
    lines = [ln.strip() for ln in ptx.splitlines()]
    i = next(k for k, ln in enumerate(lines) if ln.startswith("mbarrier"))
    assert single_lane(lines, i) == expected
