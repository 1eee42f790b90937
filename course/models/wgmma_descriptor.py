"""The shared-memory matrix descriptor wgmma reads its operands through (PTX ISA,
"Matrix Descriptor Format"), as plain Python: encode, decode, and explain.

64 bits:  [0,14)  start address >> 4      (shared-memory byte address)
          [16,30) leading dimension byte offset >> 4   (LBO)
          [32,46) stride dimension byte offset >> 4    (SBO)
          [49,52) base offset (for swizzle patterns not aligned to their repeat)
          [62,64) swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte

The unit is the *core matrix*: 8 rows of 16 bytes. For a K-major bf16 tile stored with
the 128-byte swizzle (rows of 64 elements = 128 bytes), the 8 rows of a core matrix are
consecutive 128-byte rows, the next 8-row group is 1024 bytes further (SBO = 1024), and
LBO is unused (the whole K extent of one wgmma, 16 elements = 32 bytes, sits inside one
swizzled row). Moving to the next k16 step only moves the start address by 32 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

SWIZZLE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}


@dataclass(frozen=True)
class Descriptor:
    start: int  # byte address in shared memory
    lbo: int  # bytes
    sbo: int  # bytes
    swizzle: str = "128B"
    base_offset: int = 0

    def encode(self) -> int:
        for name, value in (("start", self.start), ("lbo", self.lbo), ("sbo", self.sbo)):
            if value % 16 or not 0 <= value >> 4 < 1 << 14:
                raise ValueError(f"{name}={value}: must be a multiple of 16 below 256 KiB")
        return (
            (self.start >> 4)
            | (self.lbo >> 4) << 16
            | (self.sbo >> 4) << 32
            | (self.base_offset & 7) << 49
            | SWIZZLE[self.swizzle] << 62
        )

    @staticmethod
    def decode(value: int) -> "Descriptor":
        mode = {v: k for k, v in SWIZZLE.items()}[(value >> 62) & 3]
        return Descriptor(
            start=(value & 0x3FFF) << 4,
            lbo=((value >> 16) & 0x3FFF) << 4,
            sbo=((value >> 32) & 0x3FFF) << 4,
            swizzle=mode,
            base_offset=(value >> 49) & 7,
        )


def k_major_sw128(tile_base: int, k_step: int, elem_bytes: int = 2) -> Descriptor:
    """The descriptor of k16 step `k_step` of a K-major, 128B-swizzled operand tile."""
    return Descriptor(start=tile_base + k_step * 16 * elem_bytes, lbo=16, sbo=1024)


def core_matrix_bytes(row: int, col_bytes: int) -> int:
    """Byte offset of (row, byte column) inside a 128B-swizzled tile: the 16-byte chunk
    index is XORed with the row's position within its 8-row group (Swizzle<3,4,3>)."""
    chunk = (col_bytes // 16) ^ (row % 8)
    return row * 128 + chunk * 16 + col_bytes % 16
