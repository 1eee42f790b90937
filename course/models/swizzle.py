"""Swizzle<B,M,S>: the XOR that moves shared-memory data off colliding banks.

A swizzle is a function on an integer offset. It keeps the lowest M bits (a block
of 2^M units stays contiguous), takes the B bits that start S places above them,
and XORs those into the B bits just above the M kept bits:

    Swizzle<B,M,S>(x) = x ^ ((x & source_mask) >> S)      (S > 0)
    source_mask = (2^B - 1) << (M + S),   target_mask = (2^B - 1) << M

The *unit* of the offset matters and this module never guesses it:

* composed with a layout, as in `composition(Swizzle<3,2,3>, (8,8):(1,8))`, the
  swizzle acts on the layout's output, an offset in **elements** (the seed tutorial's
  8x8 float tile, where M=2 keeps 4 floats = 16 bytes together);
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
from typing import Iterable

import numpy as np

Offset = "int | np.ndarray"


@dataclass(frozen=True)
class Swizzle:
    """Swizzle<B,M,S> on integer offsets (the caller says whether they are bytes or elements)."""

    bits: int  # B: how many bits are XORed
    base: int  # M: how many low bits are left alone
    shift: int  # S: how far above the target bits the source bits start

    def __post_init__(self):
        if self.bits < 0 or self.base < 0:
            raise ValueError(f"Swizzle<{self.bits},{self.base},{self.shift}>: B and M must be >= 0")
        if abs(self.shift) < self.bits:
            raise ValueError(f"Swizzle<{self.bits},{self.base},{self.shift}>: |S| must be >= B, "
                             "or the source and target bits would overlap")

    @property
    def target_mask(self) -> int:
        """The bits that get changed (the 'bank' bits when the unit is right)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, -self.shift))

    @property
    def source_mask(self) -> int:
        """The bits that are read (the 'row' bits) and XORed into the target bits."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def is_identity(self) -> bool:
        return self.bits == 0

    def __call__(self, offset):
        """The swizzled offset (works on Python ints and numpy integer arrays)."""
        if self.shift >= 0:
            return offset ^ ((offset & self.source_mask) >> self.shift)
        return offset ^ ((offset & self.source_mask) << -self.shift)

    def on_elements(self, elem_bytes: int) -> "Swizzle":
        """This byte-address swizzle as a swizzle on element offsets of `elem_bytes` each."""
        log = _log2(elem_bytes)
        if self.is_identity:
            return Swizzle(0, max(0, self.base - log), self.shift)
        if self.base < log:
            raise ValueError(f"{self} keeps only {2 ** self.base}-byte blocks whole: it cannot "
                             f"be written on {elem_bytes}-byte elements")
        return Swizzle(self.bits, self.base - log, self.shift)

    def on_bytes(self, elem_bytes: int) -> "Swizzle":
        """This element-offset swizzle as a swizzle on byte addresses."""
        return Swizzle(self.bits, self.base + _log2(elem_bytes), self.shift)

    def bit_roles(self, width: int | None = None) -> list[str]:
        """Role of each bit, lowest first: 'kept' (below M), 'target', 'source' or 'other'."""
        width = width or self.base + abs(self.shift) + self.bits + 1
        roles = []
        for b in range(width):
            if (self.target_mask >> b) & 1:
                roles.append("target")
            elif (self.source_mask >> b) & 1:
                roles.append("source")
            elif b < self.base:
                roles.append("kept")
            else:
                roles.append("other")
        return roles

    def trace(self, offset: int, width: int | None = None) -> dict:
        """The worked XOR for one offset, as the bit diagram shows it."""
        width = width or max(self.base + abs(self.shift) + self.bits + 1, int(offset).bit_length())
        moved = ((offset & self.source_mask) >> self.shift if self.shift >= 0
                 else (offset & self.source_mask) << -self.shift)
        return {"offset": int(offset), "source_bits": int(offset & self.source_mask),
                "moved": int(moved), "result": int(self(offset)), "width": width,
                "binary": format(int(offset), f"0{width}b"),
                "moved_binary": format(int(moved), f"0{width}b"),
                "result_binary": format(int(self(offset)), f"0{width}b")}

    def __str__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"


def _log2(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


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
class Layout:
    """A flat CuTe layout shape:stride (rank 1 or 2), evaluated column-major like CuTe."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def __post_init__(self):
        if len(self.shape) != len(self.stride) or not 1 <= len(self.shape) <= 2:
            raise ValueError(f"layout {self.shape}:{self.stride}: rank 1 or 2, one stride per mode")

    @classmethod
    def col_major(cls, rows: int, cols: int, ld: int | None = None) -> "Layout":
        return cls((rows, cols), (1, ld or rows))

    @classmethod
    def row_major(cls, rows: int, cols: int, ld: int | None = None) -> "Layout":
        return cls((rows, cols), (ld or cols, 1))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __call__(self, *coord: int) -> int:
        if len(coord) == 1 and isinstance(coord[0], tuple):
            coord = coord[0]
        if len(coord) == 1 and len(self.shape) == 2:  # a 1-D index into a 2-D layout
            coord = (coord[0] % self.shape[0], coord[0] // self.shape[0])
        return sum(int(c) * s for c, s in zip(coord, self.stride))

    def offsets(self) -> np.ndarray:
        """Every offset, as an array of the layout's shape."""
        grids = np.meshgrid(*[np.arange(n) for n in self.shape], indexing="ij")
        return sum(g * s for g, s in zip(grids, self.stride)).astype(np.int64)

    @property
    def cosize(self) -> int:
        return int(self.offsets().max()) + 1

    def __str__(self) -> str:
        def fmt(t):
            return f"({','.join(map(str, t))})" if len(t) > 1 else str(t[0])
        return f"{fmt(self.shape)}:{fmt(self.stride)}"


@dataclass(frozen=True)
class SwizzledLayout:
    """composition(swizzle, layout): coordinate -> layout offset -> swizzled offset.

    `unit` says what the swizzle acts on: 'elements' (the layout's own output, as
    CuTe's composed layouts do) or 'bytes' (the address, as TMA modes and CuTe DSL's
    pointer swizzles do; `elem_bytes` is then needed to convert).
    """

    layout: Layout
    swizzle: Swizzle | None = None
    unit: str = "elements"
    elem_bytes: int = 4

    def __post_init__(self):
        if self.unit not in ("elements", "bytes"):
            raise ValueError("unit must be 'elements' or 'bytes'")

    def byte_offsets(self) -> np.ndarray:
        """Byte offset of every element, shaped like the layout."""
        off = self.layout.offsets()
        if self.swizzle is None:
            return off * self.elem_bytes
        if self.unit == "elements":
            return self.swizzle(off) * self.elem_bytes
        return self.swizzle(off * self.elem_bytes)

    def offsets(self) -> np.ndarray:
        """Element offset of every element (byte offsets / element size)."""
        b = self.byte_offsets()
        if np.any(b % self.elem_bytes):
            raise ValueError(f"{self}: a byte swizzle moved an element off its alignment")
        return b // self.elem_bytes

    def __call__(self, *coord: int) -> int:
        off = self.layout(*coord)
        if self.swizzle is None:
            return off
        if self.unit == "elements":
            return int(self.swizzle(off))
        return int(self.swizzle(off * self.elem_bytes)) // self.elem_bytes

    def __str__(self) -> str:
        if self.swizzle is None or self.swizzle.is_identity:
            return str(self.layout)
        tail = "" if self.unit == "elements" else " (on byte addresses)"
        return f"{self.swizzle} o {self.layout}{tail}"


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


def apply_all(swizzle: Swizzle, offsets: Iterable[int]) -> list[int]:
    """Swizzle each offset (a convenience for printing small tables)."""
    return [int(swizzle(int(o))) for o in offsets]
