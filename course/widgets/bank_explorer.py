"""BankConflictExplorer: pick a tile, a swizzle and a warp's access; see the banks it hits.

Choose the element type, the tile's shape and storage order, a swizzle (CuTe's
Swizzle<B,M,S> on element offsets, or a TMA mode on byte addresses) and an access
pattern (a warp reading a row or a column, notebook 04's TiledCopy fragment, an
ldmatrix-style 16-byte row read, an mma.sync operand fragment, 64/128-bit vectors).
The explorer shows the bank of every element with the current request's cells
outlined, that request's bank heat per phase, and the wavefronts and conflicts of
every request: the course.models.bank_model model's prediction, which notebook 05 then measures.
A preset loads each of notebook 05's measured cases.
"""

from __future__ import annotations

import html

import ipywidgets as w
import matplotlib.pyplot as plt

from course.models import bank_model, smem_access as sa
from course.models.layout import Layout, Swizzle
from course.models.swizzle import TMA_SWIZZLES
from course.viz.bank_pictures import bank_map, request_heat
from course.widgets.static_widget import StaticWidget

SHAPES = ("8x8", "16x8", "16x16", "16x64", "32x2", "32x4", "32x8", "32x16", "32x32", "32x64")
STORAGE = ("column-major", "row-major", "column-major, padded +1", "row-major, padded +1")
SWIZZLES: dict[str, tuple[Swizzle | None, str]] = {
    "none": (None, "elements"),
    "Swizzle<3,2,3> on elements": (Swizzle(3, 2, 3), "elements"),
    "Swizzle<3,3,3> on elements": (Swizzle(3, 3, 3), "elements"),
    "Swizzle<5,0,5> on elements": (Swizzle(5, 0, 5), "elements"),
    "TMA 32B: Swizzle<1,4,3> on bytes": (TMA_SWIZZLES["32B"], "bytes"),
    "TMA 64B: Swizzle<2,4,3> on bytes": (TMA_SWIZZLES["64B"], "bytes"),
    "TMA 128B: Swizzle<3,4,3> on bytes": (TMA_SWIZZLES["128B"], "bytes"),
}
ACCESSES = (
    "a warp reads a row",
    "a warp reads a column",
    "TiledCopy fragment (notebook 04's 16x8, 16 B per thread)",
    "ldmatrix.x4: lane l reads 16 B of row l",
    "mma.sync m16n8k16 A fragment (32-bit)",
    "lane l reads 8 B of row l",
    "lane l reads 4 B of row l",
)
CUSTOM = "(custom)"


def make_tile(dtype: str, shape: str, storage: str, swizzle: str) -> sa.SmemTile:
    rows, cols = (int(x) for x in shape.split("x"))
    padded = storage.endswith("padded +1")
    if storage.startswith("column"):
        layout = Layout.col_major(rows, cols, ld=rows + 1 if padded else None)
    else:
        layout = Layout.row_major(rows, cols, ld=cols + 1 if padded else None)
    sw, unit = SWIZZLES[swizzle]
    return sa.SmemTile(dtype, layout, sw, unit)


def make_access(name: str, tile: sa.SmemTile) -> sa.Access:
    """The access pattern called `name`, sized for `tile` (ValueError if it cannot apply)."""
    rows, cols = tile.shape
    e = tile.elem_bytes
    if name == ACCESSES[0]:
        return sa.rows(tile.shape)
    if name == ACCESSES[1]:
        return sa.columns(tile.shape)
    if name == ACCESSES[2]:
        if tile.dtype != "fp32" or (rows, cols) != (16, 8):
            raise ValueError("notebook 04's TiledCopy covers a 16x8 fp32 tile: pick fp32 and 16x8")
        return sa.tiled_copy_16x8_fragment()
    if name == ACCESSES[4]:
        if e != 2 or rows < 16 or cols < 16:
            raise ValueError("the m16n8k16 A fragment is 16-bit and needs a 16x16 tile or larger")
        return sa.mma_a_fragment()
    per_lane = {ACCESSES[3]: 16, ACCESSES[5]: 8, ACCESSES[6]: 4}[name]
    if per_lane % e:
        raise ValueError(f"{per_lane} bytes is not a whole number of {e}-byte elements")
    if rows < 32:
        raise ValueError("this pattern has lane l read row l: the tile needs 32 rows")
    return sa.lane_vectors(f"lane l reads {per_lane} B of row l", lambda l: (l, 0), per_lane // e)


class BankConflictExplorer:
    """The explorer's state and controls; `widget()` returns the StaticWidget."""

    def __init__(self, preset: str = "float8x8_rows"):
        self.cases = {c.name: c for c in sa.cases()}
        self.preset = w.Dropdown(options=[CUSTOM, *self.cases], value=preset, description="case")
        self.dtype = w.Dropdown(options=list(sa.ELEMENT_BYTES), value="fp32", description="element")
        self.shape = w.Dropdown(options=SHAPES, value="8x8", description="tile")
        self.storage = w.Dropdown(options=STORAGE, value="column-major", description="storage")
        self.swizzle = w.Dropdown(options=list(SWIZZLES), value="none", description="swizzle")
        self.access = w.Dropdown(
            options=ACCESSES,
            value=ACCESSES[0],
            description="access",
            layout=w.Layout(width="420px"),
        )
        self.request = w.IntSlider(value=0, min=0, max=0, description="request")
        self.text = w.HTML()
        self.out = w.Output()
        self._busy = False
        self.tile: sa.SmemTile | None = None
        self.pattern: sa.Access | None = None
        self.totals: bank_model.Totals | None = None
        self.error = ""
        for ctl in (self.dtype, self.shape, self.storage, self.swizzle, self.access):
            ctl.observe(self._custom, "value")
        self.preset.observe(self._load, "value")
        self.request.observe(lambda *_: self._redraw(), "value")
        self._load()

    # -- state
    def _load(self, *_):
        if self.preset.value == CUSTOM:
            return self._custom()
        c = self.cases[self.preset.value]
        self.tile, self.pattern = c.tile, c.access
        self._analyse()

    def _custom(self, *_):
        if self._busy:
            return
        self._busy = True
        self.preset.value = CUSTOM
        self._busy = False
        try:
            self.tile = make_tile(
                self.dtype.value, self.shape.value, self.storage.value, self.swizzle.value
            )
            self.pattern = make_access(self.access.value, self.tile)
        except ValueError as exc:
            self.tile, self.pattern, self.error = None, None, str(exc)
        self._analyse()

    def _analyse(self):
        self.totals = None
        if self.tile is not None and self.pattern is not None:
            try:
                self.totals = self.pattern.predict(self.tile)
                self.error = ""
            except ValueError as exc:
                self.error = str(exc)
        n = self.totals.requests if self.totals else 1
        self.request.max = max(0, n - 1)
        self.request.value = min(self.request.value, self.request.max)
        self._redraw()

    # -- output
    def summary(self) -> str:
        if self.totals is None:
            return f"cannot apply: {self.error}"
        t, a = self.totals, self.totals.analyses[self.request.value]
        return (
            f"{self.tile}, {self.pattern.name}, {a.request.width} bytes per lane. "
            f"All {t.requests} request(s): {t.wavefronts} wavefronts, ideal {t.ideal}, "
            f"{t.conflicts} bank conflict(s), worst {t.degree}-way. "
            f"Request {self.request.value}: {a.summary()}."
        )

    def figure(self):
        if self.totals is None:
            fig, ax = plt.subplots(figsize=(6, 1.2))
            ax.axis("off")
            ax.text(0, 0.5, f"cannot apply: {self.error}", fontsize=9, va="center", wrap=True)
            return fig
        a = self.totals.analyses[self.request.value]
        lanes = {}
        for lane, c in enumerate(self.pattern.coords[self.request.value]):
            for k in range(self.pattern.vector if c is not None else 0):  # the lane's vector
                cell = (c[0] + k, c[1]) if self.pattern.along == 0 else (c[0], c[1] + k)
                lanes[cell] = lane
        rows, cols = self.tile.shape
        fig = plt.figure(
            figsize=(
                max(7.5, min(1.5 + 0.42 * cols, 13)),
                min(1.2 + 0.36 * rows, 10) + 0.6 + 0.45 * len(a.phases),
            )
        )
        hm = 0.6 + 0.45 * len(a.phases)
        grid = fig.add_gridspec(2, 1, height_ratios=[min(1.2 + 0.36 * rows, 10), hm])
        bank_map(
            self.tile,
            lanes=lanes,
            ax=fig.add_subplot(grid[0]),
            title=f"Bank of each element; outlined: request {self.request.value}'s cells "
            f"(L = lane)",
        )
        request_heat(a, ax=fig.add_subplot(grid[1]))
        fig.text(
            0.01,
            0.003,
            "course.models.bank_model model: 32 banks x 4 B; 64-bit = 2 phases of 16 lanes, "
            "128-bit = 4 phases of 8 lanes",
            fontsize=7,
            color="grey",
        )
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        return fig

    def _redraw(self):
        self.text.value = html.escape(self.summary())
        self.out.clear_output(wait=True)
        with self.out:
            self.figure()
            plt.show()

    def widget(self) -> StaticWidget:
        controls = w.VBox(
            [
                self.preset,
                w.HBox([self.dtype, self.shape, self.storage]),
                w.HBox([self.swizzle, self.access]),
                self.request,
            ]
        )
        return StaticWidget(w.VBox([controls, self.text, self.out]), self.figure)


def bank_conflict_explorer(preset: str = "float8x8_rows") -> StaticWidget:
    """The explorer, opened on one of notebook 05's cases (or '(custom)')."""
    return BankConflictExplorer(preset).widget()
