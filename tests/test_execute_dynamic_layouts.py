"""Dynamic extents on the executor: a layout CuTe DSL holds dynamic keeps a size-1 mode's
stride, as the GPU's build does (course.execute.dynamic, course.execute.dynamic_answers).

CuTe's algebra gives a *static* mode of size 1 stride 0, never a dynamic one. NVIDIA's Hopper
FMHA at one tile of queries takes its second warpgroup's tile past the last one; on the GPU
that tile's TMA store falls outside the tensor and is clipped, where a stride 0 would land it
on tile 0 (a false "two stores of one chunk"). Each answer below is checked against CuTe
DSL's own, asked in a CPU trace with the extents dynamic."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("cutlass")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

from course.cute.trace import on_cpu  # noqa: E402
from course.execute import api, host, oracle  # noqa: E402
from course.execute.dynamic import DynamicInt  # noqa: E402
from course.execute.static_layout import Layout  # noqa: E402


def _cute_dynamic_zipped_divide(rows: int, cols: int, tile: tuple) -> str:
    """CuTe DSL's own zipped_divide of (rows, cols):(cols, 1) with both extents dynamic."""

    def job():
        layout = cute.make_layout((cutlass.Int32(rows), cutlass.Int32(cols)), stride=(cols, 1))
        return str(cute.zipped_divide(layout, tile))

    return on_cpu(job, arch="sm_90a")


def test_a_dynamic_size_one_mode_keeps_its_stride_as_cutes_dynamic_layout_does():
    static = oracle.call("zipped_divide", Layout((64, 64), (64, 1)), (64, 64))
    dynamic = oracle.call(
        "zipped_divide", Layout((DynamicInt(64), DynamicInt(64)), (64, 1)), (64, 64)
    )
    assert static.stride == ((64, 1), (0, 0))  # CuTe's static simplification
    assert dynamic.shape == ((64, 64), (1, 1))
    assert dynamic.stride == ((64, 1), (4096, 64))
    # CuTe's own dynamic answer: ((64,64),(?,?)):((64,1),(4096,64))
    assert _cute_dynamic_zipped_divide(64, 64, (64, 64)).endswith(":((64,1),(4096,64))")
    # the rest mode's sizes stay dynamic for the next question asked of them
    assert all(isinstance(s, DynamicInt) for s in dynamic.shape[1])


def test_static_and_dynamic_layouts_of_the_same_values_are_different_layouts():
    static, dynamic = Layout((8, 4), (4, 1)), Layout((DynamicInt(8), 4), (4, 1))
    assert static is not dynamic and static != dynamic
    assert static(3, 2) == dynamic(3, 2) == 14


def _host_tensor(rows: int, cols: int, dynamic: bool):
    t = from_dlpack(torch.zeros(rows, cols, dtype=torch.float16), assumed_align=16)
    return host.executor_tensor(t.mark_layout_dynamic(leading_dim=1) if dynamic else t)


def test_mark_layout_dynamic_makes_the_executors_extents_dynamic():
    assert all(isinstance(s, DynamicInt) for s in _host_tensor(64, 32, True).shape)
    assert not any(isinstance(s, DynamicInt) for s in _host_tensor(64, 32, False).shape)


@pytest.mark.parametrize("dynamic, offset", [(True, 64 * 32), (False, 0)])
def test_a_tile_past_the_last_of_one_lands_past_the_tensor_only_when_dynamic(dynamic, offset):
    """local_tile at tile row 1 of a 64-row tensor cut in 64-row tiles: past its end on a
    dynamic layout (where TMA clips it on the GPU), tile 0 again on a static one (CuTe's
    static stride 0), as the GPU's build computes each."""
    tensor = _host_tensor(64, 32, dynamic)
    tile = api.local_tile(tensor, (64, 32), (1, 0))
    assert tile.iterator.byte_offset - tensor.iterator.byte_offset == offset * 2


def test_a_tma_tensor_over_a_dynamic_tensor_keeps_its_extents_dynamic():
    """The TMA tensor's coordinates are made over the global tensor's shape: its tile past
    the last one names row 64, outside the tensor, as CuTe's dynamic TMA tensor does."""
    from course.execute import tma

    coords = tma.tma_tensor(_host_tensor(64, 32, True))
    tile = api.local_tile(coords, (64, 32), (1, 0))
    assert tile[(0, 0)] == (64, 0)


def _cute_identity_tile_origin(m: int, n: int, tile: tuple, coord: tuple, int32=True) -> str:
    """CuTe DSL's own first coordinate of local_tile(identity((m, n)), tile, coord), m and n
    Int32 values (as a kernel's run-time arguments are) or Python ints."""

    def job():
        shape = (cutlass.Int32(m), cutlass.Int32(n)) if int32 else (m, n)
        c = cute.make_identity_tensor(shape)
        return str(cute.local_tile(c, tile, coord)[0])

    return on_cpu(job, arch="sm_90a")


def test_a_layout_made_from_an_int32_value_is_dynamic_as_cute_dsls_is():
    """A kernel's `n: cutlass.Int32` argument is a run-time value: CuTe DSL holds it dynamic
    in any layout made from it, and so does the executor (its Int32 scalar becomes a dynamic
    extent). A 1 x 2 cluster's partner CTA past a one-tile N then starts at column 256, past
    C, where the GPU puts it (its loads zero-filled, its stores clipped), not on tile 0."""
    from course.execute import numeric

    n = numeric.by_name("Int32")(200)
    tile = api.local_tile(
        api.make_identity_tensor((numeric.by_name("Int32")(65), n)), (128, 256), (0, 1)
    )
    assert tuple(int(x) for x in tile[0]) == (0, 256)
    assert _cute_identity_tile_origin(65, 200, (128, 256), (0, 1)) == "(0, 256)"
    static = api.local_tile(api.make_identity_tensor((65, 200)), (128, 256), (0, 1))
    assert tuple(int(x) for x in static[0]) == (0, 0)  # Python ints: static, stride 0
    assert _cute_identity_tile_origin(65, 200, (128, 256), (0, 1), int32=False) == "(0, 0)"
