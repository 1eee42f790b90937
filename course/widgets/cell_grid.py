"""A grid of clickable, coloured cells, for widgets whose tiles are small.

Plain ipywidgets cannot report a click on a matplotlib image, so small grids (up to
MAX_CELLS cells) are drawn as HTML buttons: each cell shows its label in its colour and
reports (row, col) when clicked. Larger grids use a picture plus row/column pickers.

The grid is ONE widget model (an anywidget with a few lines of JavaScript), not one
ipywidgets Button per cell: a 32x16 tile as Buttons is 1,536 models (button, layout,
style) and a repaint is ~1,500 messages, which took JupyterLab tens of seconds on a
2-core machine. Here a repaint is one message, applied by the browser in one pass.
In the page every cell is a `<button title="(r, c)">` whose text is its label.
"""

from __future__ import annotations

from typing import Callable

import anywidget
import traitlets
from matplotlib.colors import to_hex

MAX_CELLS = 512

_ESM = r"""
function render({ model, el }) {
  const grid = document.createElement("div");
  grid.className = "course-cell-grid";
  el.appendChild(grid);
  let cells = [];
  function build() {
    const rows = model.get("rows"), cols = model.get("cols"), px = model.get("cell_px");
    grid.style.gridTemplateColumns = `repeat(${cols}, ${px}px)`;
    grid.replaceChildren();
    cells = [];
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const b = document.createElement("button");
        b.title = `(${r}, ${c})`;
        b.addEventListener("click", () => model.send({ click: [r, c] }));
        grid.appendChild(b);
        cells.push(b);
      }
    }
  }
  function paint() {
    const labels = model.get("labels"), colours = model.get("colours");
    const inks = model.get("inks"), sel = model.get("selected");
    const cols = model.get("cols");
    if (cells.length !== model.get("rows") * cols) build();
    cells.forEach((b, i) => {
      b.textContent = labels[i] ?? "";
      b.style.background = colours[i] ?? "#ffffff";
      b.style.color = inks[i] ?? "black";
      const picked = sel.length === 2 && sel[0] * cols + sel[1] === i;
      b.classList.toggle("course-cell-selected", picked);
    });
  }
  build();
  paint();
  model.on("change", paint);  // one repaint per message, however many traits it carries
  return () => model.off("change", paint);
}
export default { render };
"""

_CSS = """
.course-cell-grid { display: grid; gap: 1px; }
.course-cell-grid button {
  height: 24px; padding: 0; margin: 0; border: 1px solid transparent; border-radius: 2px;
  font: 9px monospace; overflow: hidden; white-space: nowrap; cursor: pointer;
}
.course-cell-grid button.course-cell-selected { border: 2px solid red; }
"""


def _ink(rgb) -> str:
    """Black or white text, whichever reads better on `rgb`."""
    r, g, b = rgb[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


class CellGrid(anywidget.AnyWidget):
    """rows x cols cells; `paint(labels, colours)` restyles them, `on_click(fn(r, c))`."""

    _esm = _ESM
    _css = _CSS
    rows = traitlets.Int(1).tag(sync=True)
    cols = traitlets.Int(1).tag(sync=True)
    cell_px = traitlets.Int(40).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)  # row-major
    colours = traitlets.List(traitlets.Unicode()).tag(sync=True)  # "#rrggbb", row-major
    inks = traitlets.List(traitlets.Unicode()).tag(sync=True)  # text colours
    selected = traitlets.List(traitlets.Int()).tag(sync=True)  # [] or [row, col]

    def __init__(self, rows: int, cols: int, cell_px: int = 40):
        if rows * cols > MAX_CELLS:
            raise ValueError(
                f"{rows}x{cols} is too many cells for a clickable grid "
                f"(max {MAX_CELLS}): draw a picture instead"
            )
        n = rows * cols
        super().__init__(
            rows=rows,
            cols=cols,
            cell_px=cell_px,
            labels=[""] * n,
            colours=["#ffffff"] * n,
            inks=["black"] * n,
            selected=[],
        )
        self._handlers: list[Callable[[int, int], None]] = []
        self.on_msg(self._from_browser)

    def label(self, r: int, c: int) -> str:
        return self.labels[r * self.cols + c]

    def paint(self, labels, colours, selected: tuple[int, int] | None = None) -> None:
        """labels[r][c] text and colours[r][c] RGB(A) floats; `selected` gets a red frame.
        Sent to the browser as one message."""
        flat = [
            (str(labels[r][c]), colours[r][c]) for r in range(self.rows) for c in range(self.cols)
        ]
        with self.hold_sync():
            self.labels = [text for text, _ in flat]
            self.colours = [to_hex(rgb[:3]) for _, rgb in flat]
            self.inks = [_ink(rgb) for _, rgb in flat]
            self.selected = list(selected) if selected is not None else []

    def on_click(self, fn: Callable[[int, int], None]) -> None:
        self._handlers.append(fn)

    def click(self, r: int, c: int) -> None:
        """What a click on cell (r, c) does (also callable from tests)."""
        if not (0 <= r < self.rows and 0 <= c < self.cols):
            raise IndexError(f"cell ({r}, {c}) is outside the {self.rows}x{self.cols} grid")
        for fn in self._handlers:
            fn(r, c)

    def _from_browser(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and "click" in content:
            r, c = content["click"]
            self.click(int(r), int(c))
