"""Swizzles in shared memory: the TMA modes, and tiles whose swizzle acts on byte addresses.

`Swizzle<B,M,S>` itself (course.models.layout.Swizzle) is a function on an integer
offset. The *unit* of that offset matters and this module never guesses it:

* composed with a layout, as in `composition(Swizzle<3,2,3>, (8,8):(1,8))`, the
  swizzle acts on the layout's output, an offset in **elements** (notebook 05's 8x8
  float tile, where M=2 keeps 4 floats = 16 bytes together): CuTe's ComposedLayout;
* the TMA / tensor-core modes (none, 32B, 64B, 128B) are Swizzle<0..3,4,3> on
  **byte** addresses: M=4 keeps 16-byte chunks whole, and the chunk index inside a
  2^B x 16-byte row is XORed with the row number. CuTe DSL attaches these to the
  shared-memory pointer (a "position-dependent" swizzle), which is why its atoms
  carry the same S<3,4,3> for bf16 and fp32 alike.

`Swizzle.on_elements(elem_bytes)` converts a byte swizzle to the equivalent
element-offset swizzle (M shrinks by log2(elem_bytes)). Everything here is plain
Python/numpy; tests/test_swizzle.py checks it against CuTe DSL's own algebra.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course.models.layout import ComposedLayout, Layout, Swizzle

# The TMA / tensor-core shared-memory swizzle modes, on BYTE addresses: 16-byte chunks
# stay whole (M=4); the chunk index inside a row of 16 * 2^B bytes is XORed with the
# row number (S=3: rows are 2^(4+3) = 128 bytes apart in the pattern's period).
TMA_SWIZZLES: dict[str, Swizzle] = {
    "none": Swizzle(0, 4, 3),
    "32B": Swizzle(1, 4, 3),
    "64B": Swizzle(2, 4, 3),
    "128B": Swizzle(3, 4, 3),
}


def tma_row_bytes(mode: str) -> int:
    """Bytes per row of the mode's 8-row atom (16 for none, up to 128 for 128B)."""
    return 16 << TMA_SWIZZLES[mode].bits


@dataclass(frozen=True)
class SwizzledLayout:
    """A layout of `elem_bytes`-byte elements with a swizzle: coordinate -> byte address.

    Why not simply a ComposedLayout: CuTe's ComposedLayout applies its swizzle to the
    layout's own output, an element offset, and knows nothing of bytes. A TMA mode
    applies its swizzle to the byte address, so the same Swizzle<3,4,3> serves every
    element size. `unit` says which ('elements' or 'bytes'); either way the mapping is
    the ComposedLayout `composed`, over element offsets or over byte offsets, and this
    class adds the element size that turns one into the other.
    """

    layout: Layout
    swizzle: Swizzle | None = None
    unit: str = "elements"
    elem_bytes: int = 4

    def __post_init__(self):
        if self.unit not in ("elements", "bytes"):
            raise ValueError("unit must be 'elements' or 'bytes'")

    @property
    def composed(self) -> ComposedLayout:
        """swizzle o 0 o layout in the swizzle's unit: for 'bytes', over the layout with
        its strides scaled to bytes (what CuTe DSL builds for a byte view of the tile)."""
        lay = self.layout
        if self.unit == "bytes":
            lay = Layout(lay.shape, _scaled(lay.stride, self.elem_bytes))
        return ComposedLayout(self.swizzle or Swizzle(0, 0, 0), 0, lay)

    def byte_offsets(self) -> np.ndarray:
        """Byte offset of every element, as a grid (rows: mode 0, columns: mode 1)."""
        grid = self.composed.grid()
        return grid if self.unit == "bytes" else grid * self.elem_bytes

    def offsets(self) -> np.ndarray:
        """Element offset of every element (byte offsets / element size)."""
        b = self.byte_offsets()
        if np.any(b % self.elem_bytes):
            raise ValueError(f"{self}: a byte swizzle moved an element off its alignment")
        return b // self.elem_bytes

    def __call__(self, *coord: int) -> int:
        off = self.composed(*coord)
        return off if self.unit == "elements" else off // self.elem_bytes

    def __str__(self) -> str:
        if self.swizzle is None or self.swizzle.is_identity:
            return str(self.layout)
        tail = "" if self.unit == "elements" else " (on byte addresses)"
        return f"{self.swizzle} o {self.layout}{tail}"


def _scaled(stride, factor: int):
    """Every stride of a (nested) stride tuple times `factor`."""
    if isinstance(stride, tuple):
        return tuple(_scaled(d, factor) for d in stride)
    return stride * factor


def tma_atom(mode: str, elem_bytes: int) -> SwizzledLayout:
    """The 8-row, K-major shared-memory atom of a TMA/WGMMA swizzle mode for one element size.

    Rows are tma_row_bytes(mode) long; the swizzle acts on byte addresses, so the same
    Swizzle<B,4,3> serves every element type (CuTe DSL: warpgroup.make_smem_layout_atom).
    """
    row_bytes = tma_row_bytes(mode)
    if row_bytes % elem_bytes:
        raise ValueError(f"{elem_bytes}-byte elements do not fill a {row_bytes}-byte row")
    cols = row_bytes // elem_bytes
    return SwizzledLayout(Layout.row_major(8, cols), TMA_SWIZZLES[mode], "bytes", elem_bytes)
