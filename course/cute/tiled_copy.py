"""Who copies what: the (thread, value) -> (row, col) map of a CuTe TiledCopy, from CuTe DSL.

The seed tutorial's TiledCopy moves a 16x8 column-major float tile with one warp:
32 threads laid out (4,8) column-major, each moving 4 contiguous floats (one 128-bit
access) along mode 0. So T00 owns rows 0-3 of column 0, T01 rows 4-7 of column 0,
T04 rows 0-3 of column 1. The tutorial writes the value layout as (1,1) with the
atom's 4 floats implied; CuTe DSL's `make_tiled_copy_tv` counts values in elements,
so the same copy is thr (4,8):(1,4), val (4,1).

`tiled_copy_map(...)` builds the TiledCopy in CuTe DSL on the CPU and evaluates its
TV layout for every (thread, value); the pairs feed course.models.ownership (OwnershipMap)
and the bank model (course.models.smem_access).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class TiledCopyMap:
    """A TiledCopy's ownership of its tile, as CuTe DSL computed it."""

    shape: tuple[int, int]  # (rows, cols) of the tile it covers (its tiler)
    pairs: tuple[tuple[tuple[int, int], tuple[int, int]], ...]  # ((thread, value), (row, col))
    tv_layout: str  # CuTe's printout of the TV layout: (thread, value) -> tile index
    threads: int
    values: int
    description: str

    def owner(self, row: int, col: int) -> list[tuple[int, int]]:
        """Every (thread, value) that holds (row, col)."""
        return [tv for tv, rc in self.pairs if rc == (row, col)]

    def cells_of(self, thread: int) -> list[tuple[int, int]]:
        """The (row, col) cells of one thread, in value order."""
        return [rc for (t, v), rc in sorted(self.pairs) if t == thread]

    def grid(self):
        """(rows, cols) array of the owning thread of each cell (-1 where nobody)."""
        import numpy as np

        g = np.full(self.shape, -1, dtype=np.int64)
        for (t, _), (r, c) in self.pairs:
            if g[r, c] < 0 or t < g[r, c]:
                g[r, c] = t
        return g


@functools.lru_cache(maxsize=None)
def tiled_copy_map(thr_shape: tuple[int, int], thr_stride: tuple[int, int],
                   val_shape: tuple[int, int], val_stride: tuple[int, int],
                   bits_per_copy: int = 128, dtype: str = "fp32") -> TiledCopyMap:
    """Build make_tiled_copy_tv(atom, thr, val) in CuTe DSL and evaluate its TV layout."""
    import cutlass
    import cutlass.cute as cute

    from course.cute.algebra import on_cpu

    element = {"fp32": cutlass.Float32, "bf16": cutlass.BFloat16, "fp16": cutlass.Float16}[dtype]

    def job():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), element,
                                   num_bits_per_copy=bits_per_copy)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(thr_shape, stride=thr_stride),
                                        cute.make_layout(val_shape, stride=val_stride))
        tv = tiled.layout_tv_tiled
        rows, cols = (int(cute.size(mode)) for mode in tiled.tiler_mn)
        threads, values = int(cute.size(tv, mode=[0])), int(cute.size(tv, mode=[1]))
        pairs = []
        for t in range(threads):
            for v in range(values):
                idx = int(tv((t, v)))
                pairs.append(((t, v), (idx % rows, idx // rows)))  # tile index is column-major
        return (rows, cols), tuple(pairs), str(tv), threads, values

    shape, pairs, tv_text, threads, values = on_cpu(job)
    desc = (f"make_tiled_copy_tv({bits_per_copy}-bit {dtype} copy, thr {thr_shape}:{thr_stride}, "
            f"val {val_shape}:{val_stride})")
    return TiledCopyMap(shape, pairs, tv_text, threads, values, desc)


def seed_tiled_copy() -> TiledCopyMap:
    """The seed tutorial's 16x8 TiledCopy: 32 threads (4,8) column-major, 4 floats each."""
    return tiled_copy_map((4, 8), (1, 4), (4, 1), (1, 4))


def ownership_pairs() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """((thread, value), (row, col)) pairs of the seed's TiledCopy, for course.models.ownership."""
    return list(seed_tiled_copy().pairs)
