import pytest

from course.cute.trace import on_cpu
from course.models.tile_order import grouped_tile, visit_order, wave_panels
from kernels.sm80_gemm import grouped_tile as grouped_tile_dsl


@pytest.mark.parametrize("tm,tn,g", [(16, 16, 8), (5, 7, 2), (33, 3, 8), (4, 4, 1)])
def test_every_tile_once_and_dsl_agrees(tm, tn, g):
    order = visit_order(tm, tn, g)
    assert sorted(t for row in order for t in row) == list(range(tm * tn))
    dsl = on_cpu(
        lambda: [tuple(int(x) for x in grouped_tile_dsl(t, tm, tn, g)) for t in range(tm * tn)]
    )
    assert dsl == [grouped_tile(t, tm, tn, g) for t in range(tm * tn)]


def test_grouping_shrinks_a_waves_footprint():
    # 32 x 32 tiles, 132 CTAs in flight: row-major order touches 5 A rows + 32 B columns
    assert wave_panels(32, 32, 1, 132)[0] == 5 + 32
    assert wave_panels(32, 32, 8, 132)[0] == 8 + 17
    assert grouped_tile(11, 16, 16, 8) == (3, 1)
