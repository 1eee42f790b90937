"""Tiles in shared memory and the ways a warp reads them, turned into bank requests.

A `SmemTile` is an element type plus a (possibly swizzled) layout: every (row, col)
has a byte address. An `Access` says which element each of the 32 lanes reads in
each request, and how many contiguous elements (the vector) it reads at once. Put
together they give the `course.models.bank_model.Request`s whose wavefronts the model counts
and whose byte addresses the measuring kernel (kernels/smem_banks.py) reads.

`CASES` are notebook 05's measured cases: an 8x8 float tile (`float8x8_*`), the
classic 32x32 transpose, 128-bit and 64-bit vectors, the TMA swizzle modes read the
way ldmatrix reads them, and an mma.sync operand fragment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from course.models import bank_model
from course.models.layout import Layout, Swizzle
from course.models.ownership import Ownership
from course.models.swizzle import TMA_SWIZZLES, SwizzledLayout, tma_row_bytes

ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}

Coord = tuple[int, int]


@dataclass(frozen=True)
class SmemTile:
    """An element type and a layout (with an optional swizzle) for a 2-D tile in shared memory."""

    dtype: str
    layout: Layout
    swizzle: Swizzle | None = None
    unit: str = "elements"  # what the swizzle acts on: 'elements' or 'bytes'

    def __post_init__(self):
        if self.dtype not in ELEMENT_BYTES:
            raise ValueError(
                f"element type {self.dtype!r}: expected one of {sorted(ELEMENT_BYTES)}"
            )
        if self.layout.rank != 2:
            raise ValueError("a tile is 2-D: (rows, cols)")

    @property
    def elem_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def shape(self) -> tuple[int, int]:
        return self.layout[0].size, self.layout[1].size

    @property
    def mapping(self) -> SwizzledLayout:
        return SwizzledLayout(self.layout, self.swizzle, self.unit, self.elem_bytes)

    def byte_offsets(self) -> np.ndarray:
        """(rows, cols) byte address of every element, from the start of the buffer."""
        return self.mapping.byte_offsets()

    def bank_map(self) -> np.ndarray:
        """(rows, cols): the bank of each element's first byte."""
        return bank_model.bank_of(self.byte_offsets())

    @property
    def bytes(self) -> int:
        """Bytes the tile spans in shared memory (its cosize in bytes)."""
        return int(self.byte_offsets().max()) + self.elem_bytes

    def __str__(self) -> str:
        return f"{self.dtype} {self.mapping}"


@dataclass(frozen=True)
class Access:
    """Which element each lane reads, request by request, and how many at once.

    coords[request][lane] is the first element a lane reads (None: lane inactive);
    `vector` contiguous elements are read from there along mode `along` (0: down a
    column, 1: along a row); they must sit at consecutive addresses in the tile.
    """

    name: str
    coords: tuple[tuple[Coord | None, ...], ...]
    vector: int = 1
    along: int = 1

    def width(self, tile: SmemTile) -> int:
        return self.vector * tile.elem_bytes

    def requests(self, tile: SmemTile) -> list[bank_model.Request]:
        """The bank-model requests of this access on `tile` (checks bounds and contiguity)."""
        offsets = tile.byte_offsets()
        rows, cols = tile.shape
        out = []
        for q, lanes in enumerate(self.coords):
            addrs: list[int | None] = []
            for lane, coord in enumerate(lanes):
                if coord is None:
                    addrs.append(None)
                    continue
                r, c = coord
                last = (r + self.vector - 1, c) if self.along == 0 else (r, c + self.vector - 1)
                if not (0 <= r and 0 <= c and last[0] < rows and last[1] < cols):
                    raise ValueError(
                        f"{self.name}: lane {lane} of request {q} reads outside "
                        f"the {rows}x{cols} tile at {coord}"
                    )
                first = int(offsets[r, c])
                for k in range(1, self.vector):
                    rr, cc = (r + k, c) if self.along == 0 else (r, c + k)
                    if int(offsets[rr, cc]) != first + k * tile.elem_bytes:
                        raise ValueError(
                            f"{self.name} on {tile}: lane {lane}'s {self.vector} elements from "
                            f"{coord} are not contiguous in shared memory, so one vector load "
                            f"cannot read them"
                        )
                addrs.append(first)
            out.append(bank_model.Request.of(addrs, self.width(tile), f"{self.name} #{q}"))
        return out

    def predict(self, tile: SmemTile) -> bank_model.Totals:
        return bank_model.analyze_all(self.requests(tile))


# ---------------------------------------------------------------- access patterns


def _chunks(n: int) -> list[range]:
    return [range(s, min(s + bank_model.WARP, n)) for s in range(0, n, bank_model.WARP)]


def rows(shape: tuple[int, int]) -> Access:
    """A warp reads the tile row by row, one element per lane (wide rows: 32 at a time)."""
    R, C = shape
    reqs = [tuple((r, c) for c in chunk) for r in range(R) for chunk in _chunks(C)]
    return Access("a warp reads a row", tuple(_pad(q) for q in reqs))


def columns(shape: tuple[int, int]) -> Access:
    """A warp reads the tile column by column, one element per lane."""
    R, C = shape
    reqs = [tuple((r, c) for r in chunk) for c in range(C) for chunk in _chunks(R)]
    return Access("a warp reads a column", tuple(_pad(q) for q in reqs))


def lane_vectors(
    name: str, lane_coord: Callable[[int], Coord | None], vector: int, along: int = 1
) -> Access:
    """One request: lane l reads `vector` contiguous elements from lane_coord(l)."""
    return Access(name, (tuple(lane_coord(l) for l in range(bank_model.WARP)),), vector, along)


def from_ownership(
    name: str, pairs: Sequence[tuple[tuple[int, int], Coord]], vector: int, warp: int = 0
) -> Access:
    """A TiledCopy/MMA fragment as requests: thread t's values v*vector.. read as one vector.

    `pairs` are ((thread, value), (row, col)); only the threads of `warp` are used (every
    warp of a CTA issues its own requests).
    """
    by_thread: dict[int, dict[int, Coord]] = {}
    for (t, v), rc in pairs:
        by_thread.setdefault(t, {})[v] = tuple(rc)  # type: ignore[assignment]
    lanes = [by_thread.get(warp * bank_model.WARP + l, {}) for l in range(bank_model.WARP)]
    n_values = max((len(d) for d in lanes), default=0)
    if n_values % vector:
        raise ValueError(f"{name}: {n_values} values per thread do not split into {vector}-vectors")
    along = 1
    for d in lanes:
        if vector > 1 and 0 in d and 1 in d:
            along = 0 if d[1][1] == d[0][1] else 1
            break
    reqs = []
    for g in range(n_values // vector):
        reqs.append(tuple(d.get(g * vector) for d in lanes))
    return Access(name, tuple(reqs), vector, along)


def ldmatrix_x4_down_m() -> Access:
    """ldmatrix.x4 of four 8x8 16-bit matrices stacked down M (a tile of at least 32 rows):
    lane l gives the address of row l's first 16-byte chunk; each 8-lane phase is one matrix.
    (Measured with LDS.128 at the same addresses: the same 4 phases of 8 lanes.)"""
    return lane_vectors(
        "ldmatrix.x4: lane l reads the first 16 bytes of row l", lambda l: (l, 0), vector=8, along=1
    )


def mma_a_fragment() -> Access:
    """mma.sync m16n8k16's A operand (16x16, 16-bit, row-major) read with 32-bit loads:
    register i of lane l holds the pair at row l//4 + 8*(i%2), cols 2*(l%4) + 8*(i//2)."""
    reqs = []
    for i in range(4):
        reqs.append(
            tuple(
                (l // 4 + 8 * (i % 2), 2 * (l % 4) + 8 * (i // 2)) for l in range(bank_model.WARP)
            )
        )
    return Access("mma.sync m16n8k16 A fragment, 32-bit loads", tuple(reqs), vector=2, along=1)


# Notebook 04's TiledCopy: 32 threads (4,8) column-major over a 16x8 column-major fp32 tile,
# 4 contiguous floats each. CuTe DSL gives it this TV layout, (thread, value) -> column-major
# index of the tile; tests/test_tiled_copy.py checks it against course.cute.tiled_copy.
TILED_COPY_16X8_TV = "(32,4):(4,1)"


def tiled_copy_16x8_fragment() -> Access:
    """Notebook 04's TiledCopy as one request: each lane reads its 4 floats (16 bytes)."""
    own = Ownership.from_tv_layout(TILED_COPY_16X8_TV, (16, 8))
    pairs = [((t, v), (r, c)) for t, v, r, c in own.pairs.tolist()]
    return from_ownership("TiledCopy (4,8) threads x 4 floats", pairs, 4)


def _pad(lanes: Sequence[Coord | None]) -> tuple[Coord | None, ...]:
    return tuple(lanes) + (None,) * (bank_model.WARP - len(lanes))


# ---------------------------------------------------------------- the measured cases


@dataclass(frozen=True)
class Case:
    """One tile + access pattern that notebook 05 predicts and the GPU measures."""

    name: str
    title: str
    tile: SmemTile
    access: Access
    group: str

    def requests(self) -> list[bank_model.Request]:
        return self.access.requests(self.tile)

    def predict(self) -> bank_model.Totals:
        return self.access.predict(self.tile)

    @property
    def width(self) -> int:
        return self.access.width(self.tile)

    def kernel_offsets(self) -> np.ndarray:
        """(requests, 32) int32 offsets in units of the access width (-1: lane inactive):
        exactly what kernels/smem_banks.py reads, so the GPU sees the model's addresses."""
        w = self.width
        table = np.full((len(self.access.coords), bank_model.WARP), -1, dtype=np.int32)
        for q, req in enumerate(self.requests()):
            for lane, a in enumerate(req.addresses):
                if a is not None:
                    table[q, lane] = a // w
        return table


def _tma_cases() -> list[Case]:
    out = []
    for mode in ("none", "32B", "64B", "128B"):
        cols = tma_row_bytes(mode) // 2
        lay = Layout.row_major(32, cols)
        access = ldmatrix_x4_down_m()
        if mode != "none":
            out.append(
                Case(
                    f"tma_{mode}_plain",
                    f"bf16, {tma_row_bytes(mode)}-byte rows, no swizzle",
                    SmemTile("bf16", lay),
                    access,
                    "tma",
                )
            )
        out.append(
            Case(
                f"tma_{mode}",
                f"bf16, {tma_row_bytes(mode)}-byte rows, TMA swizzle {mode}",
                SmemTile("bf16", lay, TMA_SWIZZLES[mode], "bytes"),
                access,
                "tma",
            )
        )
    return out


def build_cases() -> list[Case]:
    """Notebook 05's cases, in the order the notebook shows them."""
    float8x8 = Layout.col_major(8, 8)
    t32 = Layout.col_major(32, 32)
    rowmajor = Layout.row_major(32, 32)
    mma_tile = Layout.row_major(16, 64)
    cases = [
        Case(
            "float8x8_rows",
            "8x8 fp32 (8,8):(1,8), a warp reads each row",
            SmemTile("fp32", float8x8),
            rows((8, 8)),
            "float8x8",
        ),
        Case(
            "float8x8_rows_swizzled",
            "the same tile composed with Swizzle<3,2,3>, rows",
            SmemTile("fp32", float8x8, Swizzle(3, 2, 3)),
            rows((8, 8)),
            "float8x8",
        ),
        Case(
            "float8x8_columns",
            "8x8 fp32 (8,8):(1,8), a warp reads each column",
            SmemTile("fp32", float8x8),
            columns((8, 8)),
            "float8x8",
        ),
        Case(
            "transpose_rows",
            "32x32 fp32 (32,32):(1,32), rows (a transpose's reads)",
            SmemTile("fp32", t32),
            rows((32, 32)),
            "transpose",
        ),
        Case(
            "transpose_rows_padded",
            "32x32 fp32 padded (32,32):(1,33), rows",
            SmemTile("fp32", Layout.col_major(32, 32, ld=33)),
            rows((32, 32)),
            "transpose",
        ),
        Case(
            "transpose_rows_swizzled",
            "32x32 fp32 with Swizzle<5,0,5>, rows",
            SmemTile("fp32", t32, Swizzle(5, 0, 5)),
            rows((32, 32)),
            "transpose",
        ),
        Case(
            "tiled_copy_128",
            "notebook 04's TiledCopy fragment: 16x8 fp32, 16 bytes per thread",
            SmemTile("fp32", Layout.col_major(16, 8)),
            tiled_copy_16x8_fragment(),
            "vector",
        ),
        Case(
            "vec128_rows",
            "32x32 fp32 row-major, lane l reads row l's first 16 bytes",
            SmemTile("fp32", rowmajor),
            lane_vectors("lane l: 4 floats of row l", lambda l: (l, 0), 4),
            "vector",
        ),
        Case(
            "vec128_rows_swizzled",
            "the same with Swizzle<3,2,3>",
            SmemTile("fp32", rowmajor, Swizzle(3, 2, 3)),
            lane_vectors("lane l: 4 floats of row l", lambda l: (l, 0), 4),
            "vector",
        ),
        Case(
            "vec64_contiguous",
            "64-bit: lane l reads floats 2l, 2l+1",
            SmemTile("fp32", Layout.row_major(32, 2)),
            lane_vectors("lane l: 2 floats of row l", lambda l: (l, 0), 2),
            "vector",
        ),
        Case(
            "vec64_strided",
            "64-bit: lane l reads floats 4l, 4l+1 (16-byte stride)",
            SmemTile("fp32", Layout.row_major(32, 4)),
            lane_vectors("lane l: 2 floats of row l", lambda l: (l, 0), 2),
            "vector",
        ),
        *_tma_cases(),
        Case(
            "mma_a",
            "16x64 bf16 row-major (128-byte rows), mma.sync A fragment",
            SmemTile("bf16", mma_tile),
            mma_a_fragment(),
            "mma",
        ),
        Case(
            "mma_a_swizzled",
            "the same tile with the TMA 128B swizzle",
            SmemTile("bf16", mma_tile, TMA_SWIZZLES["128B"], "bytes"),
            mma_a_fragment(),
            "mma",
        ),
    ]
    return cases


_CASES: list[Case] | None = None


def cases() -> list[Case]:
    """The cases (built once)."""
    global _CASES
    if _CASES is None:
        _CASES = build_cases()
    return _CASES


def case(name: str) -> Case:
    for c in cases():
        if c.name == name:
            return c
    raise KeyError(f"no case {name!r}; known: {[c.name for c in cases()]}")
