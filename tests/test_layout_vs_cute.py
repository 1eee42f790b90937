"""course.layout against CuTe DSL's own algebra, on hundreds of seeded random cases.

Every case is computed twice: by CuTe DSL (all cases in one @cute.jit trace on the
CPU, so the whole file costs a few seconds) and by the course's evaluator. They must
return the same layout -- the same shape and stride, not merely the same function --
or both refuse the operation. Evaluation (crd2idx, idx2crd, swizzles) is compared
element by element on a subset.
"""
import random

import numpy as np
import pytest

from course import algebra
from course import layout as pl

SEED = 20260301
EXTENTS = (1, 2, 2, 2, 3, 4, 4, 6, 8)


def rand_shape(rng, max_rank=3, max_depth=2, budget=256):
    """A random (nested) shape of size <= budget."""
    def mode(depth):
        if depth < max_depth and rng.random() < 0.3:
            return tuple(mode(depth + 1) for _ in range(rng.randint(1, 2)))
        return rng.choice(EXTENTS)

    for _ in range(100):
        r = rng.randint(1, max_rank)
        s = mode(max_depth) if r == 1 and rng.random() < 0.5 else tuple(mode(1) for _ in range(r))
        if pl.product(s) <= budget:
            return s
    return 8


def injective_strides(rng, shape, gaps=True):
    """Strides of a compact layout of `shape` in a random mode order, with random gaps."""
    leaves = pl.flatten(shape)
    order = list(range(len(leaves)))
    rng.shuffle(order)
    strides, current = [0] * len(leaves), 1
    for i in order:
        if gaps and rng.random() < 0.25:
            current *= rng.choice((2, 3))
        strides[i] = current
        current *= leaves[i]
    it = iter(strides)

    def rebuild(s):
        return tuple(rebuild(e) for e in s) if isinstance(s, tuple) else next(it)
    return rebuild(shape)


def any_strides(rng, shape):
    def rebuild(s):
        return tuple(rebuild(e) for e in s) if isinstance(s, tuple) else rng.choice(
            (0, 0, 1, 1, 2, 3, 4, 8, 16, 5))
    return rebuild(shape)


def rand_layout(rng, injective=True, gaps=True, **kw):
    shape = rand_shape(rng, **kw)
    stride = injective_strides(rng, shape, gaps) if injective else any_strides(rng, shape)
    return pl.Layout(shape, stride)


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def rand_tiler_for(rng, layout):
    """A by-mode tuple tiler (ints, small layouts or None) or a whole-layout tiler."""
    if rng.random() < 0.3:
        return pl.Layout(rng.choice(divisors(layout.size)), 1) if rng.random() < 0.5 else \
            pl.Layout((rng.choice((1, 2)), rng.choice((2, 4))), (rng.choice((1, 2)), 4))
    entries = []
    for m in layout.modes()[: rng.randint(1, layout.rank)]:
        roll = rng.random()
        if roll < 0.6:
            entries.append(rng.choice(divisors(m.size)))
        elif roll < 0.8:
            d = rng.choice(divisors(m.size))
            entries.append(pl.Layout(d, 1) if d == m.size or m.size % (2 * d) else pl.Layout(d, 2))
        else:
            entries.append(None)
    return tuple(entries)


def cases(n_per_op=40):
    rng = random.Random(SEED)
    out = []
    for _ in range(n_per_op):
        out.append(("coalesce", rand_layout(rng, injective=False)))
        a = rand_layout(rng, injective=False, max_rank=3)
        if a.rank > 1:
            out.append(("coalesce", a, tuple(1 for _ in range(a.rank))))
        a = rand_layout(rng, gaps=False)
        b = rand_layout(rng, gaps=rng.random() < 0.3, budget=a.size)
        out.append(("composition", a, b))
        a = rand_layout(rng, gaps=False, max_rank=2)
        out.append(("composition", a, rand_tiler_for(rng, a) if rng.random() < 0.7
                    else rng.choice(divisors(a.size))))
        a = rand_layout(rng)
        out.append(("complement", a, a.cosize * rng.choice((1, 2, 3))))
        a = rand_layout(rng, gaps=rng.random() < 0.5)
        out.append(("right_inverse", a))
        out.append(("left_inverse", rand_layout(rng, gaps=False)))
        for op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
            a = rand_layout(rng, gaps=rng.random() < 0.3, max_rank=2)
            out.append((op, a, rand_tiler_for(rng, a)))
        a = rand_layout(rng, gaps=False, budget=32)
        t = rand_layout(rng, budget=16, max_rank=2)
        out.append(("logical_product", a, t if rng.random() < 0.5 else
                    tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, a.rank)))))
        for op in ("zipped_product", "tiled_product", "flat_product", "blocked_product",
                   "raked_product"):
            out.append((op, rand_layout(rng, gaps=False, budget=32, max_rank=2),
                        rand_layout(rng, budget=16, max_rank=2)))
    return out


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
                mismatches.append(f"{ref.expression}: CuTe refused ({ref.error[:80]}), we gave {got}")
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
    swizzles = [pl.ComposedLayout(pl.Swizzle(b, m, s), 0, pl.Layout((8, 16), (16, 1)))
                for b, m, s in [(1, 0, 1), (2, 1, 3), (3, 4, 3), (2, 2, -2), (3, 0, 3), (0, 4, 3)]]

    def job():
        import cutlass.cute as cute

        out = []
        for lay in layouts:
            L = algebra.to_cute(lay)
            out.append(([int(L(i)) for i in range(lay.size)],
                        [cute.idx2crd(i, lay.shape) for i in range(0, lay.size, 3)],
                        int(cute.size(L)), int(cute.cosize(L)), cute.rank(L), cute.depth(L)))
        for c in swizzles:
            C = algebra.to_cute(c)
            out.append([int(C(i)) for i in range(c.size)])
        return out

    ref = algebra.on_cpu(job)
    for lay, (offsets, crds, size, cosize, rank, depth) in zip(layouts, ref):
        assert lay.offsets().tolist() == offsets, lay
        assert [lay(i) for i in range(lay.size)] == offsets
        assert [pl.idx2crd(i, lay.shape) for i in range(0, lay.size, 3)] == crds, lay
        assert (lay.size, lay.cosize, lay.rank, lay.depth) == (size, cosize, rank, depth), lay
        for i in range(0, lay.size, 5):  # a hierarchical coordinate gives the same offset
            assert lay(pl.idx2crd(i, lay.shape)) == offsets[i]
    for c, offsets in zip(swizzles, ref[len(layouts):]):
        assert c.offsets().tolist() == offsets, c


def test_the_seed_examples():
    col, row = pl.Layout((2, 4)), pl.make_layout_row_major((2, 4))
    assert (str(col), str(row)) == ("(2,4):(1,2)", "(2,4):(4,1)")
    assert col.grid().tolist() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert row.grid().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    z = pl.zipped_divide(pl.Layout((8, 8), (1, 8)), (2, 4))
    assert str(z) == "((2,4),(4,2)):((1,8),(2,32))"
    assert str(pl.logical_divide(pl.Layout((8, 8), (1, 8)), (2, 4))) == "((2,4),(4,2)):((1,2),(8,32))"


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
