"""Who copies what: the (thread, value) -> (row, col) map of a CuTe TiledCopy, from CuTe DSL.

Notebook 04's TiledCopy moves a 16x8 column-major float tile with one warp: 32 threads
laid out (4,8) column-major, each moving 4 contiguous floats (one 128-bit access) along
mode 0. So T00 owns rows 0-3 of column 0, T01 rows 4-7 of column 0, T04 rows 0-3 of
column 1. The value layout counts elements, as in CuTe's C++ `make_tiled_copy` (its
sgemm_sm80 tutorial pairs a 128-bit atom with a (4,1) value layout) and CuTe DSL's
`make_tiled_copy_tv`: the copy is thr (4,8):(1,4), val (4,1).

`tiled_copy_map(...)` builds a TiledCopy in CuTe DSL on the CPU and partitions a
coordinate tensor of its tile with its TV layout (course.cute.partition_ownership).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from course.models.ownership import Ownership


@dataclass(frozen=True)
class TiledCopyMap:
    """A TiledCopy's ownership of its tile, as CuTe DSL computed it."""

    shape: tuple[int, int]  # (rows, cols) of the tile it covers (its tiler)
    pairs: tuple[tuple[tuple[int, int], tuple[int, int]], ...]  # ((thread, value), (row, col))
    tv_layout: str  # CuTe's printout of the TV layout: (thread, value) -> tile index
    threads: int
    values: int
    description: str
    ownership: Ownership = field(repr=False, compare=False)

    def owner(self, row: int, col: int) -> list[tuple[int, int]]:
        """Every (thread, value) that holds (row, col)."""
        return self.ownership.owners(row, col)

    def cells_of(self, thread: int) -> list[tuple[int, int]]:
        """The (row, col) cells of one thread, in value order."""
        return [(r, c) for r, c, _ in self.ownership.cells_of(thread)]

    def grid(self):
        """(rows, cols) array of the owning thread of each cell (-1 where nobody)."""
        return self.ownership.thread


ELEMENTS = {"fp32": "Float32", "bf16": "BFloat16", "fp16": "Float16"}


@functools.lru_cache(maxsize=None)
def tiled_copy_map(
    thr_shape, thr_stride, val_shape, val_stride, bits_per_copy: int = 128, dtype: str = "fp32"
) -> TiledCopyMap:
    """Build make_tiled_copy_tv(atom, thr, val) in CuTe DSL and read who copies each cell."""
    import cutlass
    import cutlass.cute as cute

    from course.cute.partition_ownership import owner_pairs, tv_partitions
    from course.cute.trace import on_cpu

    element = getattr(cutlass, ELEMENTS[dtype])

    def make():
        atom = cute.make_copy_atom(
            cute.nvgpu.CopyUniversalOp(), element, num_bits_per_copy=bits_per_copy
        )
        return cute.make_tiled_copy_tv(
            atom,
            cute.make_layout(thr_shape, stride=thr_stride),
            cute.make_layout(val_shape, stride=val_stride),
        )

    def describe():
        tiled = make()
        tv = tiled.layout_tv_tiled
        return (
            tuple(int(cute.size(mode)) for mode in tiled.tiler_mn),
            str(tv),
            int(cute.size(tv, mode=[0])),
            int(cute.size(tv, mode=[1])),
        )

    def views():
        tiled = make()
        return tv_partitions(
            cute.make_identity_tensor(shape), tiled.layout_tv_tiled, tiled.tiler_mn
        )

    shape, tv_text, threads, values = on_cpu(describe)
    pairs = tuple(owner_pairs(views))
    desc = (
        f"make_tiled_copy_tv({bits_per_copy}-bit {dtype} copy, thr {thr_shape}:{thr_stride}, "
        f"val {val_shape}:{val_stride})"
    )
    return TiledCopyMap(
        shape, pairs, tv_text, threads, values, desc, Ownership.from_pairs(shape, pairs, title=desc)
    )


def tiled_copy_16x8() -> TiledCopyMap:
    """Notebook 04's TiledCopy of a 16x8 column-major fp32 tile: 32 threads (4,8)
    column-major, 4 contiguous floats (one 128-bit access) each."""
    return tiled_copy_map((4, 8), (1, 4), (4, 1), (1, 4))
