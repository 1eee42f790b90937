"""The course's widgets, live in JupyterLab, used as a learner uses them.

To cover a new widget, add a test like `test_tile_roofline_explorer_redraws`: open
the notebook with `lab.notebook(...)`, take `nb.widget(<text of the cell>)`, act on
it (press_slider / drag_slider / type_text / choose / click) and `wait_changed`.
`test_every_static_widget_is_live_in_jupyterlab` already covers, for every
notebook, that each StaticWidget shows its live view rather than its PNG.
"""

from __future__ import annotations

import nbformat
import pytest

from course.catalogue import LESSONS

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def static_widget_cells(path) -> list[str]:
    """The last source line of each cell whose stored output is a StaticWidget."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data and "image/png" in data:
                found.append(cell.source.strip().splitlines()[-1])
                break
    return found


WIDGET_NOTEBOOKS = [l.path.name for l in LESSONS if l.written and static_widget_cells(l.path)]


@pytest.mark.parametrize("name", WIDGET_NOTEBOOKS)
def test_every_static_widget_is_live_in_jupyterlab(lab, name):
    nb = lab.notebook(name)
    for i, snippet in enumerate(static_widget_cells(lab.server.root / name)):
        widget = nb.widget(snippet)  # asserts the live view, not the fallback PNG
        assert widget.summary() or widget.picture()
        widget.screenshot(f"{name.removesuffix('.ipynb')}-widget{i}-live-after-run-all")


def test_tile_roofline_explorer_redraws(lab):
    nb = lab.notebook("00_orientation.ipynb")
    w = nb.widget("tile_roofline(")
    assert w.slider_value("tile") == "128" and "128x128 tiles" in w.summary()
    w.screenshot("00_tile_roofline-1-as-run")

    before = w.state()
    w.press_slider("tile", "ArrowLeft")  # keyboard: 128 -> 64
    after = w.wait_changed(before)
    assert w.slider_value("tile") == "64"
    assert "64x64 tiles" in after[0] and "4,096 CTAs" in after[0]
    w.screenshot("00_tile_roofline-2-tile-64-by-keyboard")

    before = after
    w.drag_slider("M=N=K", 0.0)  # mouse: drag the size to the left end
    after = w.wait_changed(before)
    assert w.slider_value("M=N=K") == "512"
    assert after[0].startswith("512x512x512, 64x64 tiles: 64 CTAs")
    w.screenshot("00_tile_roofline-3-size-512-by-drag")


def test_a_failing_cell_fails_the_run(lab):
    """The harness itself: an exception in a cell is reported with its text, not waited out."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("1 / 0"),
            nbformat.v4.new_code_cell("print('never')"),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, lab.server.root / "_broken.ipynb")
    page = lab.open("_broken.ipynb")
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        page.run_all(timeout_ms=60_000)


def test_widgets_work_in_presentation_mode(lab):
    """Lecture mode in JupyterLab: View > Appearance > Presentation Mode, and the explorer
    still reacts."""
    nb = lab.notebook("00_orientation.ipynb")
    nb.menu("View", "Appearance", "Presentation Mode")
    try:
        assert nb.page.locator(".jp-LabShell.jp-mod-presentationMode").count() == 1
        w = nb.widget("tile_roofline(")
        before = w.state()
        w.press_slider("tile", "End")  # the largest tile
        after = w.wait_changed(before)
        assert w.slider_value("tile") == "256" and "256x256 tiles" in after[0]
        w.screenshot("00_tile_roofline-4-presentation-mode-tile-256")
    finally:
        nb.menu("View", "Appearance", "Presentation Mode")


def test_layout_explorer_takes_a_typed_layout(lab):
    """Notebook 02: type a new shape:stride (the CuTe printout and the grid follow), then
    click a cell (its index, coordinate and offset are named)."""
    nb = lab.notebook("02_layouts.ipynb")
    w = nb.widget('LayoutExplorer("(8,8):(1,8)"')
    before = w.state()
    w.type_text("layout", "(4,8):(8,1)")
    summary, _ = w.wait_changed(before)
    assert "(4,8):(8,1)" in summary and "((2,4),(2,2)):((8,1),(16,4))" in summary
    # zipped_divide by (2,4): cell (r, c) of the drawn grid holds the offset of the result
    # at that coordinate; row 1 of the result starts with offset 8 (the row stride)
    grid = w.grid()
    assert len(grid) == 32 and sorted(int(t) for t in grid.values()) == list(range(32))
    assert grid[(0, 0)] == "0" and grid[(1, 0)] == "8"
    w.screenshot("01_layout_explorer-typed-4x8-row-major")

    before = (summary, w.picture())
    w.click_cell(1, 2)  # a mouse click names the cell's index, coordinate and offset
    summary, _ = w.wait_changed(before)
    assert "cell (1, 2): index 17, coordinate ((1,0),(0,1)) -> offset 12" in summary
    w.screenshot("01_layout_explorer-clicked-cell-1-2")


def test_ownership_map_picks_a_thread(lab):
    """Notebook 06: pick thread 5 in the mma.sync C map (its four accumulators are named),
    then click a cell (its owner is named and highlighted)."""
    nb = lab.notebook("06_mma_atoms.ipynb")
    w = nb.widget("OwnershipMap(c_map)")
    before = w.state()
    w.press_slider("T (-1: all)", "ArrowRight", times=6)  # -1 (all) -> thread 5
    summary, _ = w.wait_changed(before)
    assert "T5 holds 4 cells" in summary
    # only thread 5's four accumulators keep a label, in register order (seed 003's map)
    named = {cell: text for cell, text in w.grid().items() if text}
    assert named == {(1, 2): "v0", (1, 3): "v1", (9, 2): "v2", (9, 3): "v3"}
    w.screenshot("05_ownership_map-thread-5")

    before = (summary, w.picture())
    w.click_cell(8, 0)  # row 8 repeats row 0: thread 0's third accumulator
    summary, _ = w.wait_changed(before)
    assert "cell (8, 0) is held by T0 value 2" in summary
    named = {cell: text for cell, text in w.grid().items() if text}
    assert named == {(0, 0): "v0", (0, 1): "v1", (8, 0): "v2", (8, 1): "v3"}
    w.screenshot("05_ownership_map-clicked-cell-8-0")


def test_bank_explorer_swizzle_removes_the_conflicts(lab):
    """Notebook 05: the 8x8 float tile read row-wise has 8 conflicts; with
    Swizzle<3,2,3> it has none."""
    nb = lab.notebook("05_swizzle.ipynb")
    w = nb.widget('bank_conflict_explorer("float8x8_rows")')
    before = w.state()
    assert " 8 bank conflict(s)" in before[0]
    w.choose("swizzle", "Swizzle<3,2,3> on elements")
    summary, _ = w.wait_changed(before)
    assert " 0 bank conflict(s)" in summary
    w.screenshot("04_bank_explorer-swizzle-3-2-3")


def test_tensor_map_explorer_flags_a_box_too_wide_for_its_swizzle(lab):
    """Notebook 08: widen the box to 256 bf16 columns (512 B) under the 128B swizzle; the
    explorer says the driver would reject it, and why."""
    nb = lab.notebook("08_tma.ipynb")
    w = nb.widget("tensor_map_explorer(rows=200, cols=136)")
    before = w.state()
    assert "the driver would accept these arguments" in before[0]
    w.press_slider("box cols", "End")
    summary, _ = w.wait_changed(before)
    assert w.slider_value("box cols") == "256"
    assert "the driver would reject these arguments" in summary
    assert "inner dimension (512 B) must be <= the 128B swizzle span" in summary
    w.screenshot("07_tensor_map_explorer-box-too-wide")


def test_pipeline_explorer_explains_an_injected_bug(lab):
    """Notebook 09: one stage serializes; a wrong producer parity is caught and explained."""
    nb = lab.notebook("09_pipelines.ipynb")
    w = nb.widget("pipeline_explorer(stages=4")
    before = w.state()
    assert "tensor core busy 80%" in before[0]
    w.press_slider("stages", "Home")
    after = w.wait_changed(before)
    assert "1 stage(s)" in after[0] and "tensor core busy 25%" in after[0]
    w.choose("bug", "producer parity")
    summary, _ = w.wait_changed(after)
    assert "DEADLOCK" in summary and "start its phase bit at 1" in summary
    w.screenshot("08_pipeline_explorer-producer-parity")


def test_tile_order_explorer_counts_panels(lab):
    """Notebook 11: groups of 1 row (raster order) make each wave touch more A/B panels."""
    nb = lab.notebook("11_hopper_sol.ipynb")
    w = nb.widget("tile_order_explorer(tiles_m=16")
    before = w.state()
    assert "groups of 8 rows" in before[0] and "touches 16-21 panels" in before[0]
    w.press_slider("group", "Home")
    summary, _ = w.wait_changed(before)
    assert "groups of 1 rows" in summary and "touches 20-21 panels" in summary
    w.screenshot("10_tile_order_explorer-raster")


def test_schedule_explorer_compares_with_static(lab):
    """Notebook 15: the same workload under the static schedule is shown beside CLC; an
    unlucky random draw is visible as such; picking static drops the comparison."""
    nb = lab.notebook("15_cta_pair_clc_gemm.ipynb")
    w = nb.widget("schedule_explorer()")
    before = w.state()
    assert "clc scheduling" in before[0] and "static takes 1.10x as long as clc" in before[0]
    w.press_slider("draw", "ArrowLeft")  # draw 1 -> 0
    after = w.wait_changed(before)
    assert "static takes 0.99x as long as clc" in after[0]
    w.click("static")
    summary, _ = w.wait_changed(after)
    assert "static scheduling" in summary and "static takes" not in summary
    w.screenshot("15_schedule_explorer-static")
