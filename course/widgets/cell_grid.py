"""A grid of clickable cells (ipywidgets buttons), for widgets whose tiles are small.

Plain ipywidgets cannot report a click on a matplotlib image, so small grids (up to
MAX_CELLS cells) are drawn as buttons: each cell shows its label in its colour and
reports (row, col) when clicked. Larger grids use a picture plus row/column pickers.
"""
from __future__ import annotations

from typing import Callable

import ipywidgets as w
from matplotlib.colors import to_hex

MAX_CELLS = 512


def _text_colour(rgb) -> str:
    r, g, b = rgb[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


class CellGrid:
    """rows x cols buttons; `paint(labels, colours)` restyles them, `on_click(fn(r, c))`."""

    def __init__(self, rows: int, cols: int, cell_px: int = 40):
        if rows * cols > MAX_CELLS:
            raise ValueError(f"{rows}x{cols} is too many cells for buttons (max {MAX_CELLS})")
        self.rows, self.cols = rows, cols
        self._handlers: list[Callable[[int, int], None]] = []
        self.buttons = []
        for r in range(rows):
            for c in range(cols):
                b = w.Button(description="", tooltip=f"({r}, {c})",
                             layout=w.Layout(width=f"{cell_px}px", height="24px", padding="0px",
                                             margin="0px"),
                             style=w.ButtonStyle(font_size="9px"))
                b.on_click(lambda _b, r=r, c=c: self.click(r, c))
                self.buttons.append(b)
        self.view = w.GridBox(self.buttons, layout=w.Layout(
            grid_template_columns=f"repeat({cols}, {cell_px}px)", grid_gap="1px"))

    def button(self, r: int, c: int) -> w.Button:
        return self.buttons[r * self.cols + c]

    def paint(self, labels, colours, selected: tuple[int, int] | None = None) -> None:
        """labels[r][c] text and colours[r][c] RGB(A) floats; `selected` gets a red frame."""
        for r in range(self.rows):
            for c in range(self.cols):
                b = self.button(r, c)
                rgb = colours[r][c]
                b.description = str(labels[r][c])
                b.style.button_color = to_hex(rgb[:3])
                b.style.text_color = _text_colour(rgb)
                b.layout.border = "2px solid red" if selected == (r, c) else ""

    def on_click(self, fn: Callable[[int, int], None]) -> None:
        self._handlers.append(fn)

    def click(self, r: int, c: int) -> None:
        """What a click on cell (r, c) does (also callable from tests)."""
        for fn in self._handlers:
            fn(r, c)
