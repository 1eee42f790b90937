import itertools

import pytest

from course.models.gemm_model import Gemm, attainable_tflops, bound


def test_the_4096_numbers_notebook_00_quotes():
    g = Gemm(4096, 4096, 4096)
    assert g.cells == 16_777_216
    assert g.macs == 68_719_476_736 and g.flops == 137_438_953_472
    assert g.tiles(128, 128) == 1024 and g.k_steps(64) == 64
    assert g.intensity() == pytest.approx(4096 / 3)
    assert g.intensity(1, 1) == pytest.approx(0.5, rel=1e-3)


@pytest.mark.parametrize(
    "m,n,k,tm,tn", [(64, 48, 16, 16, 16), (50, 70, 9, 32, 16), (7, 5, 3, 1, 1), (33, 17, 5, 8, 32)]
)
def test_tiled_traffic_matches_counting_each_ctas_loads(m, n, k, tm, tn):
    g = Gemm(m, n, k, in_bytes=2, out_bytes=4)
    loaded = 0
    for i0, j0 in itertools.product(range(0, m, tm), range(0, n, tn)):
        rows, cols = min(tm, m - i0), min(tn, n - j0)
        loaded += (rows * k + cols * k) * 2  # this CTA's A band and B band
    assert g.tiled_bytes(tm, tn) == loaded + m * n * 4
    assert g.tiles(tm, tn) == len(range(0, m, tm)) * len(range(0, n, tn))


def test_roofline_and_bound():
    assert attainable_tflops(10, 800, 3000) == pytest.approx(30)
    assert attainable_tflops(1000, 800, 3000) == 800
    assert bound(63, 800, 3000) == "memory" and bound(1365, 800, 3000) == "compute"
