"""course.models.layout against CuTe DSL's own algebra, on hundreds of seeded random cases.

Every case is computed twice: by CuTe DSL (all cases in one @cute.jit trace on the
CPU, so the whole file costs a few seconds) and by the course's evaluator. They must
return the same layout -- the same shape and stride, not merely the same function --
or both refuse the operation. Evaluation (crd2idx, idx2crd, swizzles) is compared
element by element on a subset.
"""

import random

import pytest

from course.cute import algebra
from course.cute.partition_ownership import elements
from course.cute.trace import on_cpu
from course.models import layout as pl
from course.cute.layout_agreement import SEED, cases, rand_layout

CASES = cases()


@pytest.fixture(scope="module")
def cute_results():
    return algebra.apply_many(CASES)


def mine(op, *operands):
    try:
        return pl.OPERATIONS[op](*operands), None
    except pl.LayoutError as exc:
        return None, str(exc)


def test_there_are_hundreds_of_cases_and_most_are_valid(cute_results):
    assert len(CASES) >= 500
    valid = sum(r.ok for r in cute_results)
    assert valid >= 0.85 * len(CASES), f"only {valid} of {len(CASES)} cases were valid"
    assert {op for op, *_ in CASES} == set(pl.OPERATIONS)


def test_every_operation_matches_cute_exactly(cute_results):
    mismatches = []
    for (op, *operands), ref in zip(CASES, cute_results):
        got, err = mine(op, *operands)
        if not ref.ok:
            if err is None:  # CuTe refused: so must we (or our result must be CuTe's garbage)
                mismatches.append(
                    f"{ref.expression}: CuTe refused ({ref.error[:80]}), we gave {got}"
                )
            continue
        if err is not None or got != ref.layout:
            mismatches.append(f"{ref.expression}: CuTe {ref.printed}, course {got or err}")
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:20])


def test_printing_matches_cute(cute_results):
    for (op, *operands), ref in zip(CASES, cute_results):
        if ref.ok:
            assert str(ref.layout) == ref.printed


def test_evaluation_matches_cute():
    rng = random.Random(SEED + 1)
    layouts = [rand_layout(rng, injective=rng.random() < 0.5, budget=64) for _ in range(60)]
    swizzles = [
        pl.ComposedLayout(pl.Swizzle(b, m, s), 0, pl.Layout((8, 16), (16, 1)))
        for b, m, s in [(1, 0, 1), (2, 1, 3), (3, 4, 3), (2, 2, -2), (3, 0, 3), (0, 4, 3)]
    ]

    def job():
        import cutlass.cute as cute

        out = []
        for lay in layouts:
            L = algebra.to_cute(lay)
            out.append(
                (
                    [int(L(i)) for i in range(lay.size)],
                    [cute.idx2crd(i, lay.shape) for i in range(0, lay.size, 3)],
                    int(cute.size(L)),
                    int(cute.cosize(L)),
                    cute.rank(L),
                    cute.depth(L),
                )
            )
        for c in swizzles:
            C = algebra.to_cute(c)
            out.append([int(C(i)) for i in range(c.size)])
        return out

    ref = on_cpu(job)
    for lay, (offsets, crds, size, cosize, rank, depth) in zip(layouts, ref):
        assert lay.offsets().tolist() == offsets, lay
        assert [lay(i) for i in range(lay.size)] == offsets
        assert [pl.idx2crd(i, lay.shape) for i in range(0, lay.size, 3)] == crds, lay
        assert (lay.size, lay.cosize, lay.rank, lay.depth) == (size, cosize, rank, depth), lay
        for i in range(0, lay.size, 5):  # a hierarchical coordinate gives the same offset
            assert lay(pl.idx2crd(i, lay.shape)) == offsets[i]
    for c, offsets in zip(swizzles, ref[len(layouts) :]):
        assert c.offsets().tolist() == offsets, c


def test_the_seed_examples():
    col, row = pl.Layout((2, 4)), pl.make_layout_row_major((2, 4))
    assert (str(col), str(row)) == ("(2,4):(1,2)", "(2,4):(4,1)")
    assert col.grid().tolist() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert row.grid().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    z = pl.zipped_divide(pl.Layout((8, 8), (1, 8)), (2, 4))
    assert str(z) == "((2,4),(4,2)):((1,8),(2,32))"
    assert (
        str(pl.logical_divide(pl.Layout((8, 8), (1, 8)), (2, 4))) == "((2,4),(4,2)):((1,2),(8,32))"
    )


def test_parsing():
    assert pl.parse_layout(" ( 2 , (2,4) ) : (1,(2,4))") == pl.Layout((2, (2, 4)), (1, (2, 4)))
    assert pl.parse_layout("(2,4)") == pl.Layout((2, 4), (1, 2))
    assert pl.parse_layout("8:2") == pl.Layout(8, 2)
    assert pl.parse_layout("(4):(4)").shape == (4,)
    assert pl.parse_tiler("(2,4)") == (2, 4)
    assert pl.parse_tiler("(4:2,_)") == (pl.Layout(4, 2), None)
    assert pl.parse_tiler("(2,4):(4,1)") == pl.Layout((2, 4), (4, 1))
    assert pl.parse_swizzle("S<3,4,3>") == pl.Swizzle(3, 4, 3)
    for bad in ("(2,4):(1)", "(2,4", "2:", "(2,x)", "(2,4):(1,2))"):
        with pytest.raises(pl.LayoutError):
            pl.parse_layout(bad)
    with pytest.raises(pl.LayoutError, match="overlap"):
        pl.Swizzle(3, 4, 2)


def test_the_seed_examples_in_cute_itself():
    col, row, zipped = algebra.apply_many(
        [
            ("identity", "(2,4)"),
            ("identity", "(2,4):(4,1)"),
            ("zipped_divide", "(8,8):(1,8)", "(2,4)"),
        ]
    )
    assert (col.printed, row.printed) == ("(2,4):(1,2)", "(2,4):(4,1)")
    assert zipped.printed == "((2,4),(4,2)):((1,8),(2,32))"


def test_local_partition_is_an_outer_partition():
    """The seed's tutorial 02 prints (_2,_2):(_1,_8), 'thread 0 owns 0 1 8 9' for
    local_partition; CuTe computes the outer partition. Notebook 03 shows both."""

    def job():
        import cutlass
        import cutlass.cute as cute

        tile = cute.local_tile(cute.make_identity_tensor((8, 8)), (4, 4), (0, 0))
        outer = cute.local_partition(tile, cute.make_layout((2, 2)), cutlass.Int32(0))
        inner = cute.local_tile(tile, (2, 2), (0, 0))
        return (outer.layout, elements(outer), inner.layout, elements(inner))

    outer, outer_cells, inner, inner_cells = on_cpu(job)
    assert outer_cells == [(0, 0), (2, 0), (0, 2), (2, 2)]  # offsets 0 2 16 18 of (8,8):(1,8)
    assert inner_cells == [(0, 0), (1, 0), (0, 1), (1, 1)]  # offsets 0 1 8 9
    col_major = pl.Layout((8, 8), (1, 8))
    assert [col_major(c) for c in outer_cells] == [0, 2, 16, 18]
    assert [col_major(c) for c in inner_cells] == [0, 1, 8, 9]
