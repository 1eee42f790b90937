"""The ownership map widget: who holds each cell of a tile, and in which register.

    OwnershipMap(ownership, thread=0)

`ownership` is a course.models.ownership.Ownership -- from a TV layout, a TiledCopy, a
TiledMMA partition, an mma.sync fragment, a WGMMA accumulator, TMEM lanes or a CTA
pair; the widget does not care which. Pick a thread to highlight its cells and see
them in register (value) order; pick a cell (click it, on tiles of up to 512 cells)
to name its owner(s) and value index. Displayed, it also carries a PNG of its
current state for static viewers.
"""

from __future__ import annotations

import html

import ipywidgets as w

from course.models.ownership import Ownership
from course.viz import ownership_pictures as vo
from course.widgets.static_widget import StaticWidget, show_figure
from course.widgets.cell_grid import MAX_CELLS, CellGrid


class OwnershipMap(StaticWidget):
    """A StaticWidget over one Ownership."""

    def __init__(
        self,
        ownership: Ownership,
        thread: int | None = None,
        cell: tuple[int, int] | None = None,
        source: str = "",
    ):
        if not isinstance(ownership, Ownership):
            raise TypeError(
                f"OwnershipMap needs a course.models.ownership.Ownership, got "
                f"{type(ownership).__name__}"
            )
        self.ownership = ownership
        self.source = source
        self.thread = thread
        self.cell = cell
        rows, cols = ownership.shape
        ids = ownership.thread_ids
        top = int(ids.max()) if len(ids) else 0
        lab = ownership.thread_label
        self.thread_w = w.IntSlider(
            value=-1 if thread is None else thread,
            min=-1,
            max=top,
            description=f"{lab} (-1: all)",
            continuous_update=False,
            style={"description_width": "initial"},
        )
        self.row_w = w.BoundedIntText(
            value=cell[0] if cell else 0,
            min=0,
            max=rows - 1,
            description="row",
            layout=w.Layout(width="140px"),
        )
        self.col_w = w.BoundedIntText(
            value=cell[1] if cell else 0,
            min=0,
            max=cols - 1,
            description="col",
            layout=w.Layout(width="140px"),
        )
        self.info = w.HTML()
        self.picture = w.Output()
        self._grid = (
            CellGrid(rows, cols, cell_px=56 if cols <= 12 else 40)
            if rows * cols <= MAX_CELLS
            else None
        )
        if self._grid is not None:
            self._grid.on_click(self.select_cell)
        self._quiet = False
        self.thread_w.observe(
            lambda ch: (
                None if self._quiet else self.select_thread(None if ch["new"] < 0 else ch["new"])
            ),
            "value",
        )
        for widget in (self.row_w, self.col_w):
            widget.observe(
                lambda _ch: (
                    None if self._quiet else self.select_cell(self.row_w.value, self.col_w.value)
                ),
                "value",
            )
        body = self._grid if self._grid is not None else self.picture
        view = w.VBox([w.HBox([self.thread_w, self.row_w, self.col_w]), self.info, body])
        super().__init__(view, self.figure)
        self._refresh()

    # ------------------------------------------------------------ selection
    def select_thread(self, thread: int | None) -> str:
        """Highlight `thread` (None: everyone); returns the description shown."""
        self.thread = thread
        self._quiet = True
        self.thread_w.value = -1 if thread is None else thread
        self._quiet = False
        self._refresh()
        return self.info.value

    def select_cell(self, row: int, col: int) -> str:
        """Name the owner(s) of cell (row, col) and highlight its (lowest) owner."""
        self.ownership.owners(row, col)  # IndexError outside the tile
        self.cell = (row, col)
        owner = int(self.ownership.thread[row, col])
        self.thread = owner if owner >= 0 else self.thread
        self._quiet = True
        self.row_w.value, self.col_w.value = row, col
        self.thread_w.value = -1 if self.thread is None else self.thread
        self._quiet = False
        self._refresh()
        return self.info.value

    # ------------------------------------------------------------ drawing
    def describe(self) -> str:
        own, parts = self.ownership, []
        if self.thread is not None:
            parts.append(own.describe_thread(self.thread))
        if self.cell is not None:
            parts.append(own.describe_cell(*self.cell))
        if not parts:
            lab = own.thread_label
            parts.append(
                f"{own.title or 'tile'}: {own.shape[0]}x{own.shape[1]} cells held by "
                f"{own.threads} {lab}s"
                + (" (some cells replicated)" if own.replicated else "")
                + ". Pick a thread or a cell."
            )
        return "<br>".join(html.escape(p) for p in parts)

    def _refresh(self) -> None:
        self.info.value = f"<div style='font-family:monospace'>{self.describe()}</div>"
        if self._grid is not None:
            self._paint_grid()
        else:
            self.picture.clear_output(wait=True)
            with self.picture:
                show_figure(self.figure())

    def _paint_grid(self) -> None:
        own, lab = self.ownership, self.ownership.thread_label
        rows, cols = own.shape
        mine = (
            {(r, c): v for r, c, v in own.cells_of(self.thread)} if self.thread is not None else {}
        )
        labels, colours = [], []
        for r in range(rows):
            lrow, crow = [], []
            for c in range(cols):
                t, v, n = (int(x[r, c]) for x in (own.thread, own.value, own.count))
                rgb = vo.owner_colour(t) if t >= 0 else vo.NOBODY
                if self.thread is not None:
                    if (r, c) in mine:
                        text = f"v{mine[(r, c)]}"
                    else:
                        rgb = tuple(0.86 + 0.12 * x for x in rgb)
                        text = ""
                else:
                    text = (
                        ""
                        if t < 0
                        else f"{lab}{t}"
                        + (f"/v{v}" if cols <= 12 else "")
                        + (f"x{n}" if n > 1 else "")
                    )
                lrow.append(text)
                crow.append(rgb)
            labels.append(lrow)
            colours.append(crow)
        self._grid.paint(labels, colours, self.cell)

    def figure(self):
        """The current state as a labelled figure (also the static picture)."""
        return vo.draw(self.ownership, highlight=self.thread, cell=self.cell, source=self.source)


def ownership_map(ownership: Ownership, thread: int | None = None, **kw) -> OwnershipMap:
    return OwnershipMap(ownership, thread, **kw)
