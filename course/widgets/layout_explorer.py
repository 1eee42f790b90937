"""The layout explorer: type shape:stride, pick an operation, see CuTe's answer as a grid.

    LayoutExplorer("(8,8):(1,8)", "zipped_divide", "(2,4)")

Every result is computed by CuTe DSL itself (course.cute.algebra.explore, one CPU trace,
~0.1 s) and printed the way CuTe prints it; the grid beside it is coloured by
offset (drawn with course.models.layout, which is tested against CuTe). Click a cell (or
pick its row and column) to see its index, hierarchical coordinate and offset.
Operations: composition, complement, coalesce, the four divides, the six
products, the two inverses, and an optional swizzle S<B,M,S> applied on top.
"""

from __future__ import annotations

import html

import ipywidgets as w
import matplotlib.pyplot as plt

from course.cute import algebra
from course.models import layout as pl
from course.viz import layout_pictures as vl
from course.widgets.static_widget import StaticWidget, show_figure
from course.widgets.cell_grid import MAX_CELLS, CellGrid

OPERATIONS = (
    "none",
    "coalesce",
    "composition",
    "complement",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "right_inverse",
    "left_inverse",
)

OPERAND_HINT = {
    "none": "(no operand)",
    "coalesce": "optional profile, e.g. (1,1): coalesce each mode separately",
    "composition": "B, e.g. (4,2):(2,1), or a per-mode tiler (2,4)",
    "complement": "cotarget, e.g. 24 (default: the cosize)",
    "right_inverse": "(no operand)",
    "left_inverse": "(no operand)",
}
SOURCE = (
    "layout computed by CuTe DSL on this machine (course.cute.algebra); drawn by "
    "course.models.layout"
)


class LayoutExplorer(StaticWidget):
    """A StaticWidget: the live explorer, and a PNG of its current state."""

    def __init__(
        self,
        layout: str = "(8,8):(1,8)",
        operation: str = "none",
        operand: str = "",
        swizzle: str = "",
        cell: tuple[int, int] | None = None,
    ):
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; choose from {OPERATIONS}")
        self.layout_w = w.Text(
            value=layout,
            description="layout",
            continuous_update=False,
            layout=w.Layout(width="260px"),
        )
        self.op_w = w.Dropdown(options=OPERATIONS, value=operation, description="operation")
        self.operand_w = w.Text(
            value=operand,
            description="operand",
            continuous_update=False,
            placeholder="tiler / B / cotarget",
            layout=w.Layout(width="260px"),
        )
        self.swizzle_w = w.Text(
            value=swizzle,
            description="swizzle",
            continuous_update=False,
            placeholder="e.g. S<3,0,3> (optional)",
            layout=w.Layout(width="220px"),
        )
        self.row_w = w.BoundedIntText(
            value=0, min=0, max=0, description="row", layout=w.Layout(width="140px")
        )
        self.col_w = w.BoundedIntText(
            value=0, min=0, max=0, description="col", layout=w.Layout(width="140px")
        )
        self.printout = w.HTML()
        self.cell_info = w.HTML()
        self.picture = w.Output()
        self.grid_box = w.Box()
        self.result: algebra.Result | None = None
        self.cell = cell
        self._grid: CellGrid | None = None
        self._quiet = False
        for widget in (self.layout_w, self.op_w, self.operand_w, self.swizzle_w):
            widget.observe(lambda _change: self.update(), "value")
        for widget in (self.row_w, self.col_w):
            widget.observe(lambda _change: self._picked(), "value")
        side = w.VBox(
            [self.printout, w.HBox([self.row_w, self.col_w]), self.cell_info],
            layout=w.Layout(margin="0 0 0 16px", max_width="460px"),
        )
        view = w.VBox(
            [
                w.HBox([self.layout_w, self.op_w]),
                w.HBox([self.operand_w, self.swizzle_w]),
                w.HBox([w.VBox([self.grid_box, self.picture]), side]),
            ]
        )
        super().__init__(view, self.figure)
        self.update()

    # ------------------------------------------------------------ state
    @property
    def layout(self) -> pl.AnyLayout | None:
        return self.result.layout if self.result is not None and self.result.ok else None

    def update(self) -> None:
        """Recompute with CuTe DSL from the controls and redraw."""
        op = self.op_w.value
        self.operand_w.placeholder = OPERAND_HINT.get(op, "tiler, e.g. (2,4) or (2:1,4:2)")
        self.result = algebra.explore(
            self.layout_w.value, op, self.operand_w.value, self.swizzle_w.value
        )
        self.printout.value = self._printout_html()
        lay = self.layout
        if lay is None:
            self.cell = None
            self.grid_box.children = ()
            self.cell_info.value = ""
            self.picture.clear_output()
            return
        rows, cols = lay.grid().shape
        if self.cell is not None and not (self.cell[0] < rows and self.cell[1] < cols):
            self.cell = None
        self._quiet = True
        self.row_w.max, self.col_w.max = rows - 1, cols - 1
        if self.cell is not None:
            self.row_w.value, self.col_w.value = self.cell
        self._quiet = False
        self._redraw()

    def select(self, row: int, col: int) -> str:
        """Pick cell (row, col): returns (and shows) its index, coordinate and offset."""
        lay = self.layout
        if lay is None:
            return ""
        rows, cols = lay.grid().shape
        if not (0 <= row < rows and 0 <= col < cols):
            raise IndexError(f"cell ({row}, {col}) is outside the {rows}x{cols} grid")
        self.cell = (row, col)
        self._quiet = True
        self.row_w.value, self.col_w.value = row, col
        self._quiet = False
        self._redraw()
        return self.cell_info.value

    def _picked(self) -> None:
        if not self._quiet:
            self.select(self.row_w.value, self.col_w.value)

    # ------------------------------------------------------------ drawing
    def _printout_html(self) -> str:
        r = self.result
        expr = html.escape(r.expression)
        if not r.ok:
            return (
                f"<div style='font-family:monospace'>{expr}<br><b style='color:#b00'>CuTe DSL "
                f"refused:</b> {html.escape(r.error or r.printed)}</div>"
            )
        lay = r.layout
        facts = f"size {lay.size}, cosize {lay.cosize}, rank {lay.rank}, depth {lay.depth}"
        return (
            f"<div style='font-family:monospace'>{expr}<br>CuTe DSL: <b>"
            f"{html.escape(r.printed)}</b><br><span style='color:#555'>{facts}</span></div>"
        )

    def _redraw(self) -> None:
        lay = self.layout
        grid = lay.grid()
        rows, cols = grid.shape
        self.cell_info.value = (
            html.escape(vl.cell_label(lay, *self.cell))
            if self.cell is not None
            else "<span style='color:#555'>click a cell (or pick row/col)</span>"
        )
        if rows * cols <= MAX_CELLS:
            if self._grid is None or (self._grid.rows, self._grid.cols) != (rows, cols):
                self._grid = CellGrid(rows, cols)
                self._grid.on_click(self.select)
            norm = plt.Normalize(vmin=0, vmax=max(int(grid.max()), 1))
            colours = plt.get_cmap(vl.CMAP)(norm(grid))
            self._grid.paint(grid.tolist(), colours.tolist(), self.cell)
            self.grid_box.children = (self._grid,)
            self.picture.clear_output()
        else:
            self.grid_box.children = ()
            self.picture.clear_output(wait=True)
            with self.picture:
                show_figure(self.figure())

    def figure(self):
        """The current state as a labelled matplotlib figure (also the static picture)."""
        r = self.result
        if r is None or not r.ok:
            fig, ax = plt.subplots(figsize=(6, 1.4))
            ax.axis("off")
            ax.text(
                0,
                0.5,
                f"{r.expression if r else ''}\nCuTe DSL refused: {(r.error or '') if r else ''}"[
                    :300
                ],
                fontsize=8,
                va="center",
            )
            ax.set_title("layout explorer", fontsize=10)
            return fig
        title = f"{r.expression}\n= {r.printed}" if r.expression != r.printed else r.printed
        if self.cell is not None:
            title += "\n" + vl.cell_label(r.layout, *self.cell)
        return vl.draw(r.layout, title=title, highlight=self.cell, source=SOURCE)


def layout_explorer(*args, **kwargs) -> LayoutExplorer:
    return LayoutExplorer(*args, **kwargs)
