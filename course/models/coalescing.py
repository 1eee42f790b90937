"""Coalescing: which 128-byte lines and 32-byte sectors one warp's global access touches.

A warp's load is one request to the memory system. The request is served in 32-byte
sectors of 128-byte cache lines; a sector is moved whole even if one byte of it is
wanted. So what a copy pays for is the sectors its warps touch, and its efficiency
is the bytes the lanes asked for over the bytes the sectors hold:

* 32 lanes reading 32 consecutive floats: 128 bytes, 1 line, 4 sectors, 100%;
* the same 32 floats 4 KiB apart: 32 lines, 32 sectors (1024 bytes) for 128 wanted: 12.5%;
* 32 lanes reading 16 bytes each, consecutive: 512 bytes, 4 lines, 16 sectors, 100%
  with a quarter of the instructions.

`warp_of(variant)` gives the first request of one warp of each copy in kernels/copies.py.
"""

from __future__ import annotations

from dataclasses import dataclass

LINE_BYTES = 128
SECTOR_BYTES = 32
WARP = 32
STRIDED_WIDTH = 1024  # kernels.copies.STRIDED_WIDTH (a test keeps the two equal)
VARIANTS = ("scalar", "strided", "vector", "tiled", "cp_async")  # kernels.copies.VARIANTS


@dataclass(frozen=True)
class Coalescing:
    """What one warp-wide global access costs the memory system."""

    addresses: tuple[int, ...]  # byte address of each lane's access
    width: int  # bytes per lane

    @property
    def lines(self) -> list[int]:
        """The 128-byte lines touched (by line index)."""
        return sorted({b // LINE_BYTES for a in self.addresses for b in (a, a + self.width - 1)})

    @property
    def sectors(self) -> list[int]:
        """The 32-byte sectors touched (by sector index)."""
        out = set()
        for a in self.addresses:
            out.update(range(a // SECTOR_BYTES, (a + self.width - 1) // SECTOR_BYTES + 1))
        return sorted(out)

    @property
    def requested_bytes(self) -> int:
        return len({(a + k) for a in self.addresses for k in range(self.width)})

    @property
    def moved_bytes(self) -> int:
        return len(self.sectors) * SECTOR_BYTES

    @property
    def efficiency(self) -> float:
        """Useful bytes over moved bytes (1.0 = perfectly coalesced)."""
        return self.requested_bytes / self.moved_bytes

    def summary(self) -> str:
        return (
            f"{len(self.addresses)} lanes x {self.width} B = {self.requested_bytes} B wanted: "
            f"{len(self.lines)} line(s), {len(self.sectors)} sector(s) = {self.moved_bytes} B "
            f"moved, {100 * self.efficiency:.1f}% useful"
        )


def analyze(addresses, width: int) -> Coalescing:
    return Coalescing(tuple(int(a) for a in addresses), width)


def warp_of(variant: str, base: int = 0) -> Coalescing:
    """The first request of warp 0 of a kernels/copies.py variant (fp32 source)."""
    if variant == "scalar":
        return analyze([base + 4 * l for l in range(WARP)], 4)
    if variant == "strided":  # lane l reads row l of a (rows, 1024) row-major view
        return analyze([base + 4 * STRIDED_WIDTH * l for l in range(WARP)], 4)
    if variant in ("vector", "tiled", "cp_async"):
        return analyze([base + 16 * l for l in range(WARP)], 16)
    raise ValueError(f"variant {variant!r}: expected one of {VARIANTS}")
