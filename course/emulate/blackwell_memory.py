"""Tensor memory, TMA boxes and output rounding, as the emulated kernels use them.

TMEM is 128 lanes x 512 columns of 32-bit cells per SM. `tcgen05.alloc` hands out a
power-of-two number of columns (32..512) spanning all 128 lanes; an epilogue warp w may
read only lanes 32*(w % 4) .. 32*(w % 4) + 31 (its sub-partition). `Tmem` enforces both,
so an emulated kernel that breaks either rule fails loudly.

TMA boxes: a load of a box that hangs over the edge of the tensor delivers zeros for the
outside part (that is how the kernels handle ragged M, N, K), and still counts the full
box's bytes; a store writes only the inside part.

The executor enforces the same TMEM rules on a running kernel's CTA (course.execute.tmem) and
the same boxes (course.execute.tma); `Tmem` here stands apart from any kernel, one SM's TMEM
that several CTAs' requests share, for notebook 14's allocation picture and exercise.
"""

from __future__ import annotations

import numpy as np

TMEM_LANES = 128
TMEM_COLUMNS = 512
LANES_PER_WARP = 32


class TmemError(RuntimeError):
    """An allocation or access the hardware would reject."""


def tmem_alloc_columns(requested: int) -> int:
    """The columns a kernel must ask tcgen05.alloc for to hold `requested` columns: the next
    power of two >= 32. The allocator itself rounds nothing: it takes only such requests."""
    if requested < 1 or requested > TMEM_COLUMNS:
        raise TmemError(f"cannot allocate {requested} TMEM columns (1..{TMEM_COLUMNS})")
    cols = 32
    while cols < requested:
        cols *= 2
    return cols


class Tmem:
    """One SM's tensor memory, with its allocator."""

    def __init__(self, name: str = "tmem"):
        self.name = name
        self.cells = np.full((TMEM_LANES, TMEM_COLUMNS), np.nan, dtype=np.float32)
        self.allocations: dict[int, int] = {}  # first column -> columns
        self.permit = True

    def alloc(self, columns: int) -> int:
        """tcgen05.alloc: the first free, naturally aligned block of `columns` (a power of 2)."""
        if not self.permit:
            raise TmemError(f"{self.name}: alloc after relinquish_alloc_permit")
        if columns != tmem_alloc_columns(columns):
            raise TmemError(f"{self.name}: {columns} columns is not a power of two >= 32")
        for start in range(0, TMEM_COLUMNS, columns):
            if all(start + columns <= s or s + n <= start for s, n in self.allocations.items()):
                self.allocations[start] = columns
                return start
        raise TmemError(f"{self.name}: no {columns} free columns (in use: {self.allocations})")

    def relinquish(self) -> None:
        self.permit = False

    def dealloc(self, start: int, columns: int) -> None:
        if self.allocations.get(start) != columns:
            raise TmemError(
                f"{self.name}: dealloc of {columns} columns at {start} that were "
                f"not allocated (in use: {self.allocations})"
            )
        del self.allocations[start]

    def _check_columns(self, col0: int, ncols: int) -> None:
        if not any(s <= col0 and col0 + ncols <= s + n for s, n in self.allocations.items()):
            raise TmemError(f"{self.name}: columns {col0}..{col0 + ncols - 1} are not allocated")

    def write(self, col0: int, values: np.ndarray, accumulate: bool) -> None:
        """The MMA writes (or adds to) all 128 lanes of columns col0 .. col0 + N - 1."""
        lanes, ncols = values.shape
        if lanes != TMEM_LANES:
            raise TmemError(f"an MMA writes all {TMEM_LANES} lanes, not {lanes}")
        self._check_columns(col0, ncols)
        block = self.cells[:, col0 : col0 + ncols]
        if accumulate:
            block += values
        else:
            block[:] = values

    def read(self, warp: int, lane0: int, col0: int, ncols: int) -> np.ndarray:
        """tcgen05.ld 32x32b by epilogue warp `warp`: 32 lanes from lane0, ncols columns."""
        quarter = LANES_PER_WARP * (warp % 4)
        if lane0 != quarter:
            raise TmemError(
                f"{self.name}: warp {warp} may access lanes {quarter}.."
                f"{quarter + LANES_PER_WARP - 1}, not {lane0}.."
            )
        self._check_columns(col0, ncols)
        return self.cells[lane0 : lane0 + LANES_PER_WARP, col0 : col0 + ncols].copy()


def tma_load(src: np.ndarray, row0: int, col0: int, rows: int, cols: int) -> np.ndarray:
    """A TMA box load: `rows x cols` from (row0, col0); outside `src` reads as zero."""
    box = np.zeros((rows, cols), dtype=np.float32)
    r1, c1 = min(row0 + rows, src.shape[0]), min(col0 + cols, src.shape[1])
    if r1 > row0 and c1 > col0:
        box[: r1 - row0, : c1 - col0] = src[row0:r1, col0:c1]
    return box


def tma_store(dst: np.ndarray, writes: np.ndarray, row0: int, col0: int, box: np.ndarray) -> None:
    """A TMA box store: the part of `box` inside `dst` is written (and counted)."""
    r1, c1 = min(row0 + box.shape[0], dst.shape[0]), min(col0 + box.shape[1], dst.shape[1])
    if r1 > row0 and c1 > col0:
        dst[row0:r1, col0:c1] = box[: r1 - row0, : c1 - col0]
        writes[row0:r1, col0:c1] += 1


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round fp32 values to `dtype` ('bfloat16' or 'float16'), returned as float32."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":  # round to nearest even on the top 16 bits
        bits = x.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = bits.astype(np.uint32).view(np.float32)
        return np.where(np.isnan(x), x, out)
    if dtype == "float32":
        return x.copy()
    raise ValueError(f"unknown output dtype {dtype!r}")
