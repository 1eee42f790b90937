"""Notebooks 02-03's exercises: right answers pass, wrong ones get a specific hint."""

import pytest

from course.exercises.check import check, solution
from course.exercises.nb03 import copy_sectors


@pytest.mark.parametrize(
    "id,answer",
    [
        ("02.padded", "(4,8):(9,1)"),
        ("02.zipped", "((2,4),(4,2)):((8,1),(16,4))"),
        ("02.complement", "(2,2):(2,8)"),
        ("02.product", (1, 3)),
        ("03.owner", (0, 29)),
        ("03.tCgC", "(1,(2,4),(2,4)):(0,(128,4096),(1,32))"),
        ("03.coalesced", "(1,32)"),
        ("03.coalesced", "(4,8):(8,1)"),
    ],
)
def test_right_answers(id, answer):
    v = check(id, answer, quiet=True)
    assert v.ok, v


@pytest.mark.parametrize(
    "id,answer,says",
    [
        ("02.padded", "(4,8):(8,1)", "unpadded"),
        ("02.padded", "(8,4):(1,9)", "(rows, cols)"),
        ("02.padded", "(4,8):(1,4)", "row-major"),
        ("02.padded", "(4,8", "could not read"),
        ("02.padded", 42, "layout string"),
        ("02.zipped", "((2,4),(4,2)):((8,16),(1,4))", "logical_divide"),
        ("02.zipped", "((2,4),(4,2)):((1,8),(2,32))", "column-major"),
        ("02.complement", "(2,2):(1,8)", "exactly once"),  # section 5's answer for 4:2
        ("02.product", (2, 1), "where blocked_product puts"),
        ("02.product", (0, 3), "holds offset 2"),
        ("02.product", (4, 0), "4 rows by 6 columns"),
        ("02.product", "raked", "a pair (row, col)"),
        ("03.owner", (0, 3), "right thread"),
        ("03.owner", (25, 38), "T25 holds rows [4, 5, 6, 7, 68, 69, 70, 71]"),
        ("03.owner", 25, "pair"),
        ("03.tCgC", "(1,(4,2),(4,2)):(0,(128,8192),(1,64))", "the shape is"),
        ("03.coalesced", "(32,1)", "32 sectors"),
        ("03.coalesced", "(8,4)", "8 sectors"),
        ("03.coalesced", "(4,4)", "a warp is 32"),
    ],
)
def test_wrong_answers_get_a_helpful_message(id, answer, says):
    v = check(id, answer, quiet=True)
    assert v.ok is False and says in v.message, v
    assert "Traceback" not in v.message


def test_unanswered_and_solutions():
    for id in (
        "02.padded",
        "02.zipped",
        "02.complement",
        "02.product",
        "03.owner",
        "03.tCgC",
        "03.coalesced",
    ):
        assert check(id, ..., quiet=True).ok is None
        assert solution(id) and "no worked solution" not in solution(id)


def test_copy_sectors_reads_cutes_tiled_copy():
    sectors, cells = copy_sectors("(1,32)")
    assert sectors == 4 and cells[:3] == [(0, 0), (0, 1), (0, 2)]
    assert copy_sectors("(32,1)", row_major=False)[0] == 4  # column-major data likes (32,1)
