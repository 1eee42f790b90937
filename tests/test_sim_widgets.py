"""The simulator explorers react to their controls and carry a static picture."""

import matplotlib

matplotlib.use("Agg")

from course.widgets.static_widget import StaticWidget  # noqa: E402
from course.widgets.pipeline_explorer import pipeline_explorer  # noqa: E402
from course.widgets.schedule_explorer import config, schedule_explorer  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def test_pipeline_explorer_reacts_and_explains_bugs():
    widget = pipeline_explorer()
    assert isinstance(widget, StaticWidget)
    stages_w, _, bug_w = widget.view.children[0].children
    mma_w = widget.view.children[1].children[1]
    text = widget.view.children[2]
    assert "tensor core busy 80%" in text.value and "DEADLOCK" not in text.value
    first_png = widget.snapshot()
    assert first_png.startswith(PNG)
    stages_w.value = 1
    assert "1 stage(s)" in text.value and "tensor core busy 25%" in text.value
    assert widget.snapshot() != first_png
    mma_w.value = 600
    assert "MMA 600" in text.value
    bug_w.value = "producer_parity"
    assert "DEADLOCK" in text.value and "start its phase bit at 1" in text.value
    bug_w.value = "early_release"
    assert "overwrite before read" in text.value or "lost tile" in text.value
    bundle = widget._repr_mimebundle_()
    assert "image/png" in bundle and "application/vnd.jupyter.widget-view+json" in bundle


def test_schedule_explorer_reacts():
    widget = schedule_explorer()
    text = widget.view.children[3]
    sched_w, work_w, draw_w = widget.view.children[2].children
    before = text.value
    assert "clc scheduling" in before and "CLC queries" in before
    # the same workload under the static schedule, beside it: draw 1 is a typical one
    assert "static schedule: 17,060 cycles (static takes 1.10x as long as clc)" in before
    draw_w.value = 0  # the unlucky draw the module docstring names: CLC loses a little
    assert "(static takes 0.99x as long as clc)" in text.value
    sched_w.value = "static"
    assert "static scheduling" in text.value and text.value != before
    assert "static takes" not in text.value  # no comparison with itself
    work_w.value = "2 SMs busy at start"
    sched_w.value = "clc"
    assert "(static takes 1.20x as long as clc)" in text.value
    assert widget.snapshot().startswith(PNG)


def test_schedule_explorer_workloads():
    kw = config(4, 2, 2, "clc", "uneven tiles", 800, 100)
    assert len(kw["tile_k"]) == 12 and max(kw["tile_k"]) > min(kw["tile_k"])
    assert config(4, 2, 2, "clc", "uneven tiles", 800, 100, draw=3)["tile_k"] != kw["tile_k"]
    assert config(4, 2, 2, "clc", "2 SMs busy at start", 800, 100)["sm_busy_until"]
    import pytest

    with pytest.raises(ValueError):
        config(4, 2, 2, "clc", "nonsense", 800, 100)
