"""LayoutExplorer and OwnershipMap: their logic, their clicks and their static pictures."""

import pytest

from course.cute import algebra
from course.models import layout as pl
from course.models.ownership import Ownership
from course.viz import layout_pictures as vl
from course.widgets.static_widget import StaticWidget
from course.widgets.cell_grid import CellGrid
from course.widgets.layout_explorer import LayoutExplorer
from course.widgets.ownership_map import OwnershipMap

PNG = b"\x89PNG\r\n\x1a\n"


def test_explore_reports_cutes_answer_or_its_refusal():
    r = algebra.explore("(8,8):(1,8)", "zipped_divide", "(2,4)")
    assert r.ok and r.printed == "((2,4),(4,2)):((1,8),(2,32))"
    assert r.layout == pl.Layout(((2, 4), (4, 2)), ((1, 8), (2, 32)))
    assert (
        algebra.explore("(2,2)", "blocked_product", "(3,4)").printed
        == "((2,3),(2,4)):((1,4),(2,12))"
    )  # a bare shape becomes a layout for the products
    bad = algebra.explore("(8,8)", "zipped_divide", "(3,_)")
    assert not bad.ok and bad.layout is None and bad.error
    assert not algebra.explore("(2,4", "none").ok  # a typo is an error message, not a crash
    assert not algebra.explore("(8,8)", "logical_divide", "").ok
    s = algebra.explore("(8,8):(8,1)", "none", swizzle="S<2,1,3>")
    assert s.ok and isinstance(s.layout, pl.ComposedLayout) and s.layout((2, 0)) == 18


def test_layout_explorer_clicks_and_updates():
    e = LayoutExplorer("(8,8):(1,8)", "zipped_divide", "(2,4)")
    assert isinstance(e, StaticWidget)
    assert "((2,4),(4,2)):((1,8),(2,32))" in e.printout.value
    assert "size 64, cosize 64, rank 2, depth 2" in e.printout.value
    e._grid.click(2, 5)  # a click on the cell grid
    assert e.cell == (2, 5) and "offset 42" in e.cell_info.value
    assert "((0,1),(1,1))" in e.cell_info.value  # the hierarchical coordinate
    assert e._grid.label(2, 5) == "42"
    assert e._grid.selected == [2, 5]  # drawn with a red frame
    e.op_w.value = "logical_divide"
    assert "((2,4),(4,2)):((1,2),(8,32))" in e.printout.value
    e.layout_w.value = "(2,4"
    assert "refused" in e.printout.value and e.layout is None
    e.layout_w.value = "(64,64):(64,1)"  # too many cells for a clickable grid: a picture instead
    e.op_w.value = "none"
    assert e.grid_box.children == () and e.layout.size == 4096
    assert e.select(63, 63).endswith("offset 4095")
    with pytest.raises(IndexError):
        e.select(64, 0)


def test_layout_explorer_static_picture():
    e = LayoutExplorer("(4,8):(8,1)", "none", swizzle="S<2,0,2>", cell=(1, 2))
    bundle = e._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["image/png"] and e.snapshot().startswith(PNG)
    title = e.figure().axes[0].get_title()
    assert "S<2,0,2> o 0 o (4,8):(8,1)" in title and "cell (1, 2)" in title
    with pytest.raises(ValueError):
        LayoutExplorer("(2,2)", "transpose")


def test_layout_pictures():
    fig = vl.draw(pl.Layout((2, 4), (4, 1)), highlight=(1, 1), source="src")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["0", "1", "2", "3", "4", "5", "6", "7"][:4] + texts[4:]
    assert sorted(map(int, texts)) == list(range(8))
    assert fig.axes[0].get_title() == "(2,4):(4,1)"
    assert vl.memory_map(pl.Layout((2, 2), (1, 4)))[2] == []  # a gap
    assert vl.memory_map(pl.Layout((2, 2), (1, 0)))[0] == [(0, 0), (0, 1)]  # stored twice
    assert (
        vl.cell_label(pl.Layout((2, (2, 2)), (1, (4, 2))), 1, 3)
        == "cell (1, 3): index 7, coordinate (1,(1,1)) -> offset 7"
    )
    assert vl.draw_memory(pl.Layout((2, 4), (1, 6))).axes[0].get_title().startswith("memory")


def test_ownership_map_picks_threads_and_cells():
    own = Ownership.from_tv_layout("((4,8),4):((4,16),1)", (16, 8), title="copy")
    m = OwnershipMap(own)
    assert isinstance(m, StaticWidget) and "32 Ts" in m.info.value
    m._grid.click(6, 1)
    assert m.cell == (6, 1) and m.thread == 5
    assert "T5 value 2" in m.info.value and "v0=(4,1), v1=(5,1), v2=(6,1), v3=(7,1)" in m.info.value
    assert m._grid.label(4, 1) == "v0" and m._grid.label(0, 0) == ""
    m.select_thread(None)
    assert m._grid.label(0, 0) == "T0/v0"
    m.thread_w.value = 31
    assert m.thread == 31 and "T31 holds 4 cells" in m.info.value
    assert m.snapshot().startswith(PNG)
    with pytest.raises(TypeError):
        OwnershipMap("not an ownership")


def test_ownership_map_on_a_big_tile_uses_a_picture():
    pairs = [
        ((r // 4 * 16 + c // 8, (r % 4) * 8 + c % 8), (r, c)) for r in range(64) for c in range(128)
    ]
    own = Ownership.from_pairs((64, 128), pairs, thread_label="W")
    m = OwnershipMap(own, thread=3, source="test")
    assert m._grid is None and "W3 holds 32 cells" in m.info.value
    assert "W" in m.describe()
    m.row_w.value = 5
    assert m.cell == (5, 0) and m.thread == own.thread[5, 0]
    assert m._repr_mimebundle_()["image/png"]


def test_cell_grid_limits():
    with pytest.raises(ValueError):
        CellGrid(32, 32)
    g = CellGrid(2, 2)
    seen = []
    g.on_click(lambda r, c: seen.append((r, c)))
    g._from_browser(g, {"click": [1, 1]}, [])  # the message the browser sends on a click
    assert seen == [(1, 1)]
    with pytest.raises(IndexError):
        g.click(2, 0)
    g.paint([["a", "b"], ["c", "d"]], [[(0, 0, 0)] * 2, [(1, 1, 1)] * 2], selected=(0, 1))
    assert g.labels == ["a", "b", "c", "d"] and g.colours[0] == "#000000"
    assert g.inks == ["white", "white", "black", "black"] and g.selected == [0, 1]
