"""The executor's own index <-> coordinate math agrees with CuTe DSL, element by element.

Most static layout algebra the executor asks of CuTe (course.execute.oracle). A few maps a
thread evaluates many times it computes itself (course.execute.static_layout, api):
Layout.get_hier_coord and get_flat_coord (NVIDIA's pipelines, dense_gemm's epilogue and
tile order, the CTA-pair kernels call them), evaluating a layout at an int or a
hierarchical coordinate (`layout(c)`, cute.crd2idx on a layout or a shape), cute.idx2crd,
and cute.size / cosize (of the layout and of a mode). Each is compared here with what CuTe
DSL itself computes, statically, in one CPU trace for 200 random layouts (fixed seed):
ranks 1-3, nested modes, compact, row-major, strided, zero and negative strides (CuTe
allows them), indices in the layout's image and outside it, negative ones (CuTe divides as
C does), and coordinates past a mode's end. The executor's answers are checked twice: for
one int at a time and for all the queries at once as per-lane values (`Lanes`), as a warp
passes them.
"""

import numpy as np
import pytest

from course.cute.trace import on_cpu
from course.execute import api
from course.execute.lanes import Lanes
from course.execute.static_layout import Layout, product

SEED = 20261201
N_LAYOUTS = 200
MAX_SIZE = 4096


# ---------------------------------------------------------------- random layouts


def _random_shape(rng, rank):
    """A shape of `rank` top-level modes, some nested, each leaf 1..16."""
    while True:
        modes = []
        for _ in range(rank):
            if rng.random() < 0.35:
                modes.append(tuple(int(rng.integers(1, 17)) for _ in range(rng.integers(2, 4))))
            else:
                modes.append(int(rng.integers(1, 17)))
        shape = tuple(modes) if rank > 1 or isinstance(modes[0], tuple) else modes[0]
        if product(shape) <= MAX_SIZE:
            return shape


def _leaves(t):
    return sum((_leaves(e) for e in t), ()) if isinstance(t, tuple) else (t,)


def _like(shape, values):
    """values (one per leaf) arranged as shape's tree."""
    it = iter(values)

    def build(s):
        return tuple(build(e) for e in s) if isinstance(s, tuple) else next(it)

    return build(shape)


def _random_stride(rng, shape):
    leaves = _leaves(shape)
    kind = rng.choice(["compact", "row", "strided", "zeros", "negative"])
    if kind in ("compact", "row"):
        order = list(range(len(leaves)))
        if kind == "row":
            order.reverse()
        strides, step = [0] * len(leaves), 1
        for k in order:
            strides[k], step = step, step * leaves[k]
        return _like(shape, strides)
    strides = [int(rng.integers(1, 40)) for _ in leaves]
    if kind == "zeros":
        strides = [0 if rng.random() < 0.4 else d for d in strides]
    if kind == "negative":
        strides = [-d if rng.random() < 0.4 else d for d in strides]
    return _like(shape, strides)


def _random_coord(rng, shape, past_end):
    """A hierarchical coordinate congruent with shape; leaves past their mode's end (or
    negative) when past_end."""

    def leaf(s):
        if past_end and rng.random() < 0.5:
            return int(rng.integers(-s, 2 * s + 3))
        return int(rng.integers(0, s))

    return _like(shape, [leaf(s) for s in _leaves(shape)])


def _by_mode(rng, shape):
    """One int per top-level mode (colexicographic within a nested mode)."""
    if not isinstance(shape, tuple):
        return int(rng.integers(0, shape))
    return tuple(int(rng.integers(0, product(m) + 2)) for m in shape)


def _image(shape, stride):
    """Every offset the layout takes (worked out here, not by the code under test)."""
    offsets = np.zeros(1, dtype=np.int64)
    for s, d in zip(_leaves(shape), _leaves(stride)):
        offsets = np.add.outer(offsets, np.arange(s) * d).reshape(-1)
    return offsets


def _case(rng):
    shape = _random_shape(rng, int(rng.integers(1, 4)))
    stride = _random_stride(rng, shape)
    size = product(shape)
    cosize = sum((s - 1) * abs(d) for s, d in zip(_leaves(shape), _leaves(stride))) + 1
    image = [int(o) for o in rng.choice(_image(shape, stride), size=6)]
    anywhere = [int(i) for i in rng.integers(-cosize - 3, cosize + 20, size=6)]
    ints = [int(i) for i in rng.integers(-size - 2, 2 * size + 3, size=8)]
    queries = dict(
        index=image + anywhere,  # get_hier_coord / get_flat_coord
        ints=ints,  # layout(i), crd2idx(i, .), idx2crd(i, shape)
        hier=[_random_coord(rng, shape, past_end=k >= 3) for k in range(5)],
        modes=[_by_mode(rng, shape) for _ in range(4)],
    )
    return shape, stride, queries


@pytest.fixture(scope="module")
def cases():
    rng = np.random.default_rng(SEED)
    return [_case(rng) for _ in range(N_LAYOUTS)]


# ---------------------------------------------------------------- CuTe's answers


def _cute_answers(cases):
    """Every query answered by CuTe DSL itself, all layouts in one trace."""
    import cutlass.cute as cute

    out = []
    for shape, stride, q in cases:
        lay = cute.make_layout(shape, stride=stride)
        coords = q["ints"] + q["hier"] + q["modes"]
        modes = range(cute.rank(lay))
        out.append(
            dict(
                hier=[lay.get_hier_coord(i) for i in q["index"]],
                flat=[lay.get_flat_coord(i) for i in q["index"]],
                call=[lay(c) for c in coords],
                crd2idx=[cute.crd2idx(c, lay) for c in coords],
                crd2idx_shape=[cute.crd2idx(c, shape) for c in coords],
                idx2crd=[cute.idx2crd(i, shape) for i in q["ints"]],
                sizes=_sizes(cute, lay, shape, modes),
            )
        )
    return out


def _sizes(cute, lay, shape, modes):
    """size and cosize of the layout, of each mode, and of each mode's modes."""
    answers = [cute.size(lay), cute.cosize(lay)]
    for m in modes:
        answers += [cute.size(lay, mode=[m]), cute.cosize(lay, mode=[m])]
        sub = shape[m] if isinstance(shape, tuple) else shape
        for j in range(len(sub) if isinstance(sub, tuple) else 0):
            answers += [cute.size(lay, mode=[m, j]), cute.cosize(lay, mode=[m, j])]
    return answers


@pytest.fixture(scope="module")
def cute_answers(cases):
    return on_cpu(lambda: _cute_answers(cases), arch="sm_90a")


# ---------------------------------------------------------------- comparing


def _lane(x, k):
    """Lane k of a per-lane result (a leaf that every lane agrees on may be an int)."""
    if isinstance(x, tuple):
        return tuple(_lane(e, k) for e in x)
    return int(x.v[k]) if isinstance(x, Lanes) else int(x)


def _per_lane(values):
    """Queries of one structure as one per-lane value: each leaf a vector over the queries."""
    first = values[0]
    if isinstance(first, tuple):
        return tuple(_per_lane([v[i] for v in values]) for i in range(len(first)))
    return Lanes(np.array(values, dtype=np.int64))


def _check(fn, queries, wants, what, shape, stride, bad):
    """fn on each query alone and on all of them at once per lane, against CuTe's wants."""
    for q, want in zip(queries, wants):
        got = fn(q)
        if got != want:
            bad.append(f"{what}: {shape}:{stride} at {q}: executor {got}, CuTe {want}")
    together = fn(_per_lane(queries))
    for k, (q, want) in enumerate(zip(queries, wants)):
        if _lane(together, k) != want:
            bad.append(
                f"{what} per lane: {shape}:{stride} at {q}: lane {k} "
                f"{_lane(together, k)}, CuTe {want}"
            )


def _report(bad):
    assert not bad, f"{len(bad)} disagreements with CuTe DSL, e.g.\n" + "\n".join(bad[:12])


def test_get_hier_coord_matches_cute(cases, cute_answers):
    bad = []
    for (shape, stride, q), want in zip(cases, cute_answers):
        lay = Layout(shape, stride)
        _check(lay.get_hier_coord, q["index"], want["hier"], "get_hier_coord", shape, stride, bad)
    _report(bad)


def test_get_flat_coord_matches_cute(cases, cute_answers):
    bad = []
    for (shape, stride, q), want in zip(cases, cute_answers):
        lay = Layout(shape, stride)
        _check(lay.get_flat_coord, q["index"], want["flat"], "get_flat_coord", shape, stride, bad)
    _report(bad)


def test_evaluating_at_coordinates_matches_cute(cases, cute_answers):
    """layout(c), cute.crd2idx(c, layout) and cute.crd2idx(c, shape) for int, hierarchical
    and one-int-per-mode coordinates, inside and past the end."""
    bad = []
    for (shape, stride, q), want in zip(cases, cute_answers):
        lay = Layout(shape, stride)
        groups = (q["ints"], q["hier"], q["modes"])
        cuts = np.cumsum([0] + [len(g) for g in groups])
        for fn, key in (
            (lay, "call"),
            (lambda c, lay=lay: api.cute.crd2idx(c, lay), "crd2idx"),
            (lambda c, s=shape: api.cute.crd2idx(c, s), "crd2idx_shape"),
        ):
            for group, lo, hi in zip(groups, cuts[:-1], cuts[1:]):
                _check(fn, group, want[key][lo:hi], key, shape, stride, bad)
    _report(bad)


def test_idx2crd_matches_cute(cases, cute_answers):
    bad = []
    for (shape, stride, q), want in zip(cases, cute_answers):
        fn = lambda i, s=shape: api.cute.idx2crd(i, s)  # noqa: E731
        _check(fn, q["ints"], want["idx2crd"], "idx2crd", shape, stride, bad)
    _report(bad)


def test_size_and_cosize_match_cute(cases, cute_answers):
    bad = []
    for (shape, stride, _), want in zip(cases, cute_answers):
        lay = Layout(shape, stride)
        got = _sizes(api.cute, lay, shape, range(api.cute.rank(lay)))
        if got != want["sizes"]:
            bad.append(f"size/cosize of {shape}:{stride}: executor {got}, CuTe {want['sizes']}")
    _report(bad)


def test_the_random_layouts_cover_what_they_claim(cases):
    """The cases hold nested modes, zero and negative strides, and indices outside the
    image (a test that checked only compact layouts would pass the old bug)."""
    strides = [d for _, stride, _ in cases for d in _leaves(stride)]
    nested = sum(any(isinstance(m, tuple) for m in s) for s, _, _ in cases if isinstance(s, tuple))
    outside = sum(i not in set(_image(s, d).tolist()) for s, d, q in cases for i in q["index"])
    assert 0 in strides and min(strides) < 0 and nested >= 40 and outside >= 300
    assert {1, 2, 3} <= {len(s) if isinstance(s, tuple) else 1 for s, _, _ in cases}


# ---------------------------------------------------------------- named cases


def _docstring_case():
    import cutlass.cute as cute

    lay = cute.make_layout((4, 8), stride=(8, 1))
    return lay.get_hier_coord(9), lay.get_flat_coord(9)


def test_get_hier_coord_of_cutes_docstring_example():
    """CuTe DSL's own example: (4,8):(8,1) maps 9 back to (1,1) -- the offset's
    coordinate, not idx2crd(9, (4,8)) == (1,2)."""
    assert on_cpu(_docstring_case, arch="sm_90a") == ((1, 1), (1, 1))
    lay = Layout((4, 8), (8, 1))
    assert lay.get_hier_coord(9) == (1, 1)
    assert lay.get_flat_coord(9) == (1, 1)
    assert _lane(lay.get_hier_coord(Lanes(np.array([9, 3, 31]))), 0) == (1, 1)


def _tile_order_case(shape, stride, ids):
    import cutlass.cute as cute

    lay = cute.make_layout(shape, stride=stride)
    return [lay.get_flat_coord(i) for i in ids]


def test_dense_gemm_tile_order_unpacks_two_coordinates():
    """dense_gemm's swizzled tile order: `cid_m, cid_n = s_layout.get_flat_coord(id)` on
    ((group, cdimx // group), cdimy):((1, cdimy * group), group) -- a nested mode 0 gives
    one coordinate, as CuTe does, not one per leaf."""
    shape, stride = ((4, 3), 5), ((1, 5 * 4), 4)
    ids = list(range(60))
    want = on_cpu(lambda: _tile_order_case(shape, stride, ids), arch="sm_90a")
    lay = Layout(shape, stride)
    assert [lay.get_flat_coord(i) for i in ids] == want
    per_lane = lay.get_flat_coord(Lanes(np.array(ids)))
    assert [_lane(per_lane, k) for k in range(len(ids))] == want
    assert all(len(c) == 2 for c in want)
