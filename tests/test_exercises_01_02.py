"""Notebooks 01-02's exercises: right answers pass, wrong ones get a specific hint."""
import pytest

from course.exercises.check import check, solution
from course.exercises.nb02 import copy_sectors


@pytest.mark.parametrize("id,answer", [
    ("01.padded", "(4,8):(9,1)"),
    ("01.zipped", "((2,4),(4,2)):((8,1),(16,4))"),
    ("01.complement", "(2,2):(1,8)"),
    ("01.product", "raked"),
    ("02.owner", (0, 29)),
    ("02.tCgC", "(1,(2,4),(2,4)):(0,(128,4096),(1,32))"),
    ("02.coalesced", "(1,32)"),
    ("02.coalesced", "(4,8):(8,1)"),
])
def test_right_answers(id, answer):
    v = check(id, answer, quiet=True)
    assert v.ok, v


@pytest.mark.parametrize("id,answer,says", [
    ("01.padded", "(4,8):(8,1)", "unpadded"),
    ("01.padded", "(8,4):(1,9)", "(rows, cols)"),
    ("01.padded", "(4,8):(1,4)", "row-major"),
    ("01.padded", "(4,8", "could not read"),
    ("01.padded", 42, "layout string"),
    ("01.zipped", "((2,4),(4,2)):((8,16),(1,4))", "logical_divide"),
    ("01.zipped", "((2,4),(4,2)):((1,8),(2,32))", "column-major"),
    ("01.complement", "(2,2):(1,4)", "exactly once"),
    ("01.product", "blocked", "offset 1 is at (1, 0)"),
    ("01.product", "both", "'blocked' or 'raked'"),
    ("02.owner", (0, 3), "right thread"),
    ("02.owner", (25, 38), "T25 holds rows [4, 5, 6, 7, 68, 69, 70, 71]"),
    ("02.owner", 25, "pair"),
    ("02.tCgC", "(1,(4,2),(4,2)):(0,(128,8192),(1,64))", "the shape is"),
    ("02.coalesced", "(32,1)", "32 sectors"),
    ("02.coalesced", "(8,4)", "8 sectors"),
    ("02.coalesced", "(4,4)", "a warp is 32"),
])
def test_wrong_answers_get_a_helpful_message(id, answer, says):
    v = check(id, answer, quiet=True)
    assert v.ok is False and says in v.message, v
    assert "Traceback" not in v.message


def test_unanswered_and_solutions():
    for id in ("01.padded", "01.zipped", "01.complement", "01.product", "02.owner", "02.tCgC",
               "02.coalesced"):
        assert check(id, ..., quiet=True).ok is None
        assert solution(id) and "no worked solution" not in solution(id)


def test_copy_sectors_reads_cutes_tiled_copy():
    sectors, cells = copy_sectors("(1,32)")
    assert sectors == 4 and cells[:3] == [(0, 0), (0, 1), (0, 2)]
    assert copy_sectors("(32,1)", row_major=False)[0] == 4  # column-major data likes (32,1)
