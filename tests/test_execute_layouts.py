"""The executor's stand-ins agree with CuTe DSL itself.

What the executor computes on its own -- evaluating and slicing layouts, local_tile's slice,
identity tensors' coordinates, where each thread's partition starts, bf16 rounding -- is
compared with what CuTe DSL computes in a CPU trace (course.cute.trace.on_cpu) for the same
static layouts; what it asks of CuTe (course.execute.oracle) is CuTe's by construction.
"""

import numpy as np
import pytest
import torch

from course.cute.trace import on_cpu
from course.execute import api, oracle
from course.execute.lanes import Lanes
from course.execute.static_layout import Layout
from course.execute.tensor import Tensor

LAYOUTS = [
    ((1, (4, 2), 8, 3), (0, (1, 64), 300, 2400)),
    (((8, 1), 4, 1, 3), ((1, 0), 8, 0, 32)),
    ((4, 3), (10, 100)),
    (((2, 2), 3), ((10, 20), 100)),
    (7, 3),
    ((128, 64, 2), (72, 1, 64)),
]
COORDS = [13, 0, 5, (1, 2), ((1, 0), 2, 0, 1), 40, (0, 5, 3, 1)]
SLICES = [
    (None, None, None, 1),
    (None, (1, None), 2, None),
    (0, 5, None, None),
    (None, 2),
    ((None, 1), None),
    (None, None, 0),
]


def _cute_eval(shape, stride, crds, slices):
    import cutlass.cute as cute

    t = cute.make_tensor(0, cute.make_layout(shape, stride=stride))
    values, sliced = [], []
    for c in crds:
        try:
            values.append(int(t[c]))
        except Exception:  # noqa: BLE001 -- a coordinate that does not fit this shape
            values.append(None)
    for s in slices:
        try:
            part = t[s]
            sliced.append((int(part.iterator), str(part.layout)))
        except Exception:  # noqa: BLE001
            sliced.append(None)
    return values, sliced


@pytest.mark.parametrize("shape,stride", LAYOUTS)
def test_evaluation_and_slicing_match_cute(shape, stride):
    values, sliced = on_cpu(lambda: _cute_eval(shape, stride, COORDS, SLICES))
    lay = Layout(shape, stride)
    t = Tensor(0, lay)
    checked = 0
    for c, want in zip(COORDS, values):
        if want is not None:
            assert t[c] == want, (shape, c)
            checked += 1
    for s, want in zip(SLICES, sliced):
        if want is not None:
            part = t[s]
            assert (part.iterator, str(part.layout)) == want, (shape, s)
            checked += 1
    assert checked >= 3


def test_per_lane_coordinates_evaluate_like_one_lane_at_a_time():
    lay = Layout(((8, 16), (64, 1), (1, 3)), ((64, 512), (1, 0), (0, 8192)))
    rows = np.arange(32)
    per_lane = lay((Lanes(rows), Lanes(rows % 7), 2))
    assert per_lane.v.tolist() == [lay((int(r), int(r) % 7, 2)) for r in rows]


def _cute_tiles(shape, tiler, coords, proj):
    import cutlass.cute as cute

    out = []
    for crd in coords:
        t = cute.local_tile(cute.make_tensor(0, cute.make_layout(shape)), tiler, crd, proj=proj)
        ident = cute.local_tile(cute.make_identity_tensor(shape), tiler, crd, proj=proj)
        out.append(
            (
                int(t.iterator),
                str(t.layout),
                [tuple(int(x) for x in ident[i]) for i in (0, 1, 129, 300)],
            )
        )
    return out


@pytest.mark.parametrize(
    "shape,tiler,proj",
    [
        ((129, 72), (128, 256, 64), (1, None, 1)),
        ((130, 40), (128, 128, 8), (None, 1, 1)),
        ((300, 200), (128, 128, 8), (1, 1, None)),
    ],
)
def test_local_tile_of_a_ragged_tensor_matches_cute(shape, tiler, proj):
    coords = [(1, 0, None), (0, 1, None), (1, 1, None)]
    want = on_cpu(lambda: _cute_tiles(shape, tiler, coords, proj))
    for crd, (it, lay, cells) in zip(coords, want):
        t = api.local_tile(Tensor(0, Layout(shape)), tiler, crd, proj=proj)
        assert (t.iterator, str(t.layout)) == (it, lay)
        ident = api.local_tile(api.make_identity_tensor(shape), tiler, crd, proj=proj)
        assert [ident[i] for i in (0, 1, 129, 300)] == cells  # past the edge too


def _tiled_ops():
    """(name, tiled op maker on the executor, operand, tensor layout) cases."""
    from course.execute.translate import Translator
    from kernels import naive_gemm, sm80_gemm

    tr = Translator()
    ng, sg = tr.value(naive_gemm), tr.value(sm80_gemm)
    bf16 = api.cutlass.BFloat16
    mma80 = sg.tiled_mma_sync(bf16, 2, 4, atoms_n_per_warp=2)
    sA = api.cute.tile_to_shape(sg.swizzled_rows(64, 8), (128, 64, 3), (0, 1, 2))
    ldsm = api.make_copy_atom(api.warp.LdMatrix8x8x16bOp(False, 4), bf16)
    g2s = api.cpasync.CopyG2SOp(cache_mode=api.nvgpu.LoadCacheMode.GLOBAL)
    return [
        (
            "naive A",
            ng.make_tiled_mma(naive_gemm.Config()),
            "partition_A",
            Layout((128, 8, 3), (1, 300, 2400)),
        ),
        (
            "naive C",
            ng.make_tiled_mma(naive_gemm.Config()),
            "partition_C",
            Layout((128, 128), (130, 1)),
        ),
        ("sm80 A of sA", mma80, "partition_A", sA.outer),
        (
            "sm80 row copy",
            sg.row_copy(bf16, 256, 64, g2s),
            "partition_S",
            Layout((128, 64, 2), (72, 1, 64)),
        ),
        ("ldmatrix A", api.cute.make_tiled_copy_A(ldsm, mma80), "partition_S", sA.outer),
    ]


def _cute_starts(recipe, which, layout, threads):
    import cutlass.cute as cute

    obj = recipe.real()
    t = cute.make_tensor(0, oracle.to_real(layout))
    return [int(getattr(obj.get_slice(i), which)(t).iterator) for i in range(threads)]


def test_each_threads_partition_starts_where_cute_says():
    """The executor asks CuTe for thread 0's partition and for where threads start in one
    tile; the start of every thread in a real tensor follows from the tensor's layout. Checked
    against CuTe's own partition of each thread."""
    for name, op, which, layout in _tiled_ops():
        threads = op.size
        want = on_cpu(lambda: _cute_starts(op.recipe, which, layout, threads))
        got = getattr(op.get_slice(Lanes(np.arange(threads))), which)(Tensor(0, layout))
        assert got.iterator.v.tolist() == want, name


def test_bf16_rounding_matches_torch():
    from course.execute.numeric import round_bf16

    x = torch.randn(10_000, generator=torch.Generator().manual_seed(1)) * 1e3
    assert np.array_equal(round_bf16(x.numpy()), x.to(torch.bfloat16).float().numpy())


@pytest.mark.parametrize(
    "bits,base,shift", [(3, 0, 3), (2, 4, 3), (3, 4, -3), (2, 3, -3), (1, 0, -5)]
)
def test_the_executors_swizzle_is_the_course_models(bits, base, shift):
    """Swizzle<B,M,S> moves the B bits M + max(0, S) up onto those M + max(0, -S) up: a
    negative S moves them up, not down."""
    from course.execute.static_layout import Swizzle as ExecutorSwizzle
    from course.models.layout import Swizzle

    offsets = range(1 << (bits + base + abs(shift) + 1))
    assert [ExecutorSwizzle(bits, base, shift)(x) for x in offsets] == [
        Swizzle(bits, base, shift)(x) for x in offsets
    ]
