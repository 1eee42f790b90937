"""Notebook 08's pictures and explorer: labelled, reactive, with a static rendering."""

import matplotlib

matplotlib.use("Agg")

from course.models import tensormap  # noqa: E402
from course.viz import tma_pictures as viz  # noqa: E402
from course.widgets.static_widget import StaticWidget  # noqa: E402
from course.widgets.tensor_map_explorer import describe, tensor_map_explorer  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _texts(fig):
    return " ".join(
        t.get_text() for ax in fig.axes for t in [ax.title, ax.xaxis.label, ax.yaxis.label]
    ) + " ".join(t.get_text() for t in fig.texts)


def test_tensor_map_picture_is_labelled_and_marks_ragged_boxes():
    fig = viz.tensor_map_picture(tensormap.SEED)
    text = _texts(fig)
    assert "16,384 boxes" in text and "dim 0: 8192 columns" in text and "source:" in text
    assert "hatched" not in text
    ragged = _texts(viz.tensor_map_picture(tensormap.tiled(200, 136)))
    assert "hatched: outside the tensor" in ragged and "4 x 3 = 12 boxes" in ragged


def test_swizzle_and_multicast_pictures():
    assert "128B swizzle" in _texts(viz.swizzle_picture(128))
    assert "chunks stay in order" in _texts(viz.swizzle_picture(0))
    assert "cluster of 4" in _texts(viz.multicast_picture(4))
    assert "the model: each slice read from L2 once" in _texts(viz.multicast_picture(2))


def test_each_swizzle_mode_is_drawn_on_a_row_length_tma_accepts_for_it():
    fig = viz.swizzle_modes_picture()
    titles = [ax.title.get_text() for ax in fig.axes]
    assert [t.splitlines()[0] for t in titles] == [
        "32B swizzle, 32-byte rows",
        "64B swizzle, 64-byte rows",
        "128B swizzle, 128-byte rows",
    ]
    assert "(row // 4) mod 2" in titles[0] and "(row // 2) mod 4" in titles[1]
    for mode in (32, 64, 128):
        box = tensormap.tiled(64, mode // 2, box=(8, mode // 2), swizzle=mode)  # bf16 rows
        assert not tensormap.rule_violations(box), f"TMA refuses {mode}B on {mode}-byte rows"
        wider = tensormap.tiled(64, 128, box=(8, 2 * mode // 2), swizzle=mode)
        assert mode == 128 or tensormap.rule_violations(wider), "a wider row must be refused"
        rows = tensormap.chunk_map(mode, row_bytes=mode, rows=8)
        assert all(sorted(r) == list(range(mode // 16)) for r in rows)  # a permutation per row
    assert "source:" in _texts(fig)


def test_explorer_reacts_and_reports_broken_rules():
    widget = tensor_map_explorer()
    assert isinstance(widget, StaticWidget)
    cols_w = widget.view.children[0].children[1]
    text = widget.view.children[2].children[1]
    assert "accept" in text.value and "12 boxes" in text.value
    cols_w.value = 100  # 200-byte rows: not a multiple of 16
    assert "reject" in text.value and "globalStrides" in text.value
    bundle = widget._repr_mimebundle_()
    assert "image/png" in bundle and widget.snapshot().startswith(PNG)
    assert "swizzle span" in describe(tensormap.tiled(64, 256, box=(64, 128)))
