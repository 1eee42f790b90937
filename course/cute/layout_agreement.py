"""Random layouts and operations, for checking course.models.layout against CuTe DSL.

The course's evaluator must agree with CuTe DSL on every operation it implements;
tests/test_layout_vs_cute.py checks hundreds of these cases on every test run, and
notebook 02 re-runs a sample live. Generation is seeded, so a failure reproduces.
"""

from __future__ import annotations

import random

from course.models import layout as pl

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
        return (
            tuple(rebuild(e) for e in s)
            if isinstance(s, tuple)
            else rng.choice((0, 0, 1, 1, 2, 3, 4, 8, 16, 5))
        )

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
        return (
            pl.Layout(rng.choice(divisors(layout.size)), 1)
            if rng.random() < 0.5
            else pl.Layout((rng.choice((1, 2)), rng.choice((2, 4))), (rng.choice((1, 2)), 4))
        )
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


def cases(n_per_op=40, seed=SEED):
    rng = random.Random(seed)
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
        out.append(
            (
                "composition",
                a,
                rand_tiler_for(rng, a) if rng.random() < 0.7 else rng.choice(divisors(a.size)),
            )
        )
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
        out.append(
            (
                "logical_product",
                a,
                t
                if rng.random() < 0.5
                else tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, a.rank))),
            )
        )
        for op in (
            "zipped_product",
            "tiled_product",
            "flat_product",
            "blocked_product",
            "raked_product",
        ):
            out.append(
                (
                    op,
                    rand_layout(rng, gaps=False, budget=32, max_rank=2),
                    rand_layout(rng, budget=16, max_rank=2),
                )
            )
    return out


def agreement(n_per_op: int = 8, seed: int = SEED) -> dict:
    """Run random cases through CuTe DSL (one trace) and course.models.layout; count agreement.

    Returns {'cases', 'cute_valid', 'identical', 'both_refused', 'mismatches': [...]}:
    identical = same shape and stride; both_refused = CuTe and the course both reject.
    """
    from course.cute import algebra

    todo = cases(n_per_op, seed)
    ref = algebra.apply_many(todo)
    out = {"cases": len(todo), "cute_valid": 0, "identical": 0, "both_refused": 0, "mismatches": []}
    for (op, *operands), r in zip(todo, ref):
        try:
            mine, err = pl.OPERATIONS[op](*operands), None
        except pl.LayoutError as exc:
            mine, err = None, str(exc)
        if not r.ok:
            if err is not None:
                out["both_refused"] += 1
            else:
                out["mismatches"].append(f"{r.expression}: CuTe refused, course gave {mine}")
            continue
        out["cute_valid"] += 1
        if err is None and mine == r.layout:
            out["identical"] += 1
        else:
            out["mismatches"].append(f"{r.expression}: CuTe {r.printed}, course {mine or err}")
    return out
