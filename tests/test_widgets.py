from course.models.gemm_model import Gemm
from course.widgets.static_widget import StaticWidget, figure_png
from course.widgets.tile_roofline_explorer import summary, tile_roofline

PNG = b"\x89PNG\r\n\x1a\n"


def test_summary_numbers():
    text = summary(Gemm(4096, 4096, 4096), 128, 800, 3000)
    assert "1,024 CTAs" in text and "memory-bound" in text and "63.0 FLOP/B" in text
    assert "compute-bound" in summary(Gemm(4096, 4096, 4096), 128, 100, 3000)


def test_tile_roofline_reacts_and_has_a_static_picture():
    widget = tile_roofline(800, 3000, source="test")
    assert isinstance(widget, StaticWidget)
    size_w, tile_w = widget.view.children[0].children
    text = widget.view.children[1]
    before = text.value
    tile_w.value = 32
    assert text.value != before and "32x32 tiles" in text.value
    bundle = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "image/png" in bundle
    assert widget.snapshot().startswith(PNG)


def test_figure_png():
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    assert figure_png(fig).startswith(PNG)


def test_tile_order_explorer_reacts():
    from course.widgets.tile_order_explorer import tile_order_explorer

    widget = tile_order_explorer(tiles_m=8, tiles_n=8, group=8, wave=16)
    sliders = [s for row in widget.view.children[:2] for s in row.children]
    text = widget.view.children[2]
    before = text.value
    sliders[2].value = 1  # row-major order: a wave touches more panels
    assert text.value != before
    assert widget.snapshot().startswith(PNG)
