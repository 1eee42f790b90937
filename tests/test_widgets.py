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


def test_tile_order_counts_clusters_when_a_cluster_computes_a_tile():
    """Notebook 11: a wave of 66 2-CTA clusters is labelled as clusters, not as 66 CTAs."""
    import matplotlib.pyplot as plt

    from course.viz.tile_order_pictures import draw
    from course.widgets.tile_order_explorer import tile_order_explorer

    widget = tile_order_explorer(tiles_m=16, tiles_n=16, group=8, wave=66, unit="clusters")
    assert "waves of 66 clusters" in widget.view.children[2].value
    assert widget.view.children[1].children[1].description == "wave (clusters)"
    fig = draw(16, 16, 8, 66, unit="clusters")
    assert "first wave (66 clusters, red)" in fig.axes[0].get_title()
    assert "CTAs" in draw(16, 16, 8, 132).axes[0].get_title()  # the default: one CTA per tile
    plt.close("all")
