"""Notebook 02's exercises: who owns what, and which thread layouts coalesce.

Expected answers come from the naive GEMM's own partitioning and from CuTe DSL's
TiledCopy, computed on a CPU when the answer is checked.
"""
from __future__ import annotations

import functools

from course.models import layout as pl
from course.exercises.check import Wrong, exercise
from course.exercises.nb01 import read_layout


@functools.cache
def _c_ownership():
    from course.cute import kernel_traces

    return kernel_traces.c_ownership()


def _pair(answer) -> tuple[int, int]:
    try:
        t, v = answer
        return int(t), int(v)
    except (TypeError, ValueError):
        raise Wrong("answer with a pair: (thread, value index)")


@exercise("02.owner",
          "In the naive GEMM (its default configuration), which thread of block (0,0) holds "
          "C[65, 3], and in which of its 64 accumulators (value index)? Answer "
          "(thread, value).",
          "rows and columns come in runs of 4 per thread, repeated every 64; thread = "
          "16 * (atom row) + (atom column); value = i + 4*gm + 8*j + 32*gn for row "
          "i + 4*(atom row) + 64*gm and column j + 4*(atom column) + 64*gn.",
          "(0, 29): row 65 = 1 + 4*0 + 64*1 (i=1, atom row 0, gm=1); column 3 = "
          "3 + 4*0 + 64*0 (j=3, atom column 0, gn=0); thread 16*0 + 0 = 0, value "
          "1 + 4*1 + 8*3 + 0 = 29. Likewise C[70, 100] is (25, 38).")
def _owner(answer):
    t, v = _pair(answer)
    own = _c_ownership()
    (want_t, want_v), = own.owners(65, 3)
    if (t, v) == (want_t, want_v):
        return True, f"T{t}, accumulator {v}. {own.describe_thread(t, limit=4)}"
    if t == want_t:
        held = f"C[{own.cells_of(t)[v][0]}, {own.cells_of(t)[v][1]}]" if 0 <= v < 64 else "nothing"
        return False, f"right thread; its accumulators are numbered like tCrC " \
                      f"(1,(4,2),(4,2)):(0,(1,4),(8,32)): value {v} holds {held}"
    if 0 <= t < 256:
        cells = own.cells_of(t)
        rows = sorted({r for r, _, _ in cells})
        cols = sorted({c for _, c, _ in cells})
        return False, f"T{t} holds rows {rows} and columns {cols} -- not C[65, 3]"
    raise Wrong("a CTA has 256 threads: 0..255")


@exercise("02.tCgC",
          "Change the permutation to (16,2):(2,1) (naive_gemm.Config(group=2)). Predict "
          "tCgC for thread 0 of the traced problem (M=256, N=128, K=32) as CuTe prints it, "
          "then check it with kernel_traces.thread_trace(config=...).",
          "each thread now owns runs of 2 rows and 2 columns, repeated every 32: 4 groups "
          "of 2 per mode; C is row-major with 128 columns.",
          "(1,(2,4),(2,4)):(0,(128,4096),(1,32)): rows i + 32*g (stride 128 per row, 32*128 "
          "per group), columns j + 32*g.")
def _tcgc(answer):
    from course.cute import kernel_traces
    from kernels import naive_gemm

    lay = read_layout(answer)
    want = pl.parse_layout(kernel_traces.thread_trace(config=naive_gemm.Config(group=2))["tCgC"])
    if lay == want:
        return True, f"{want}: 64 values in 16 blocks of 2x2."
    if lay.shape != want.shape:
        raise Wrong(f"the shape is (V, M-part, N-part) = {pl._fmt(want.shape)}: runs of 2, "
                    f"4 of them, per mode")
    return False, "the shape is right; a row of C is 128 elements, a group is 32 rows/columns"


def copy_sectors(thread_layout, tile=(32, 32), row_major: bool = True) -> tuple[int, list]:
    """32-byte sectors a warp touches when each of 32 threads loads its first float of
    a fp32 tile through CuTe's make_tiled_copy_tv(thread_layout, (1,1)); and where
    threads 0..31 read. Computed by CuTe DSL (course.cute.tiled_copy)."""
    from course.cute.tiled_copy import tiled_copy_map

    thr = read_layout(thread_layout) if not isinstance(thread_layout, pl.Layout) else thread_layout
    copy = tiled_copy_map(thr.shape, thr.stride, (1, 1), (1, 1), bits_per_copy=32)
    cells = [rc for (t, v), rc in copy.pairs if v == 0 and t < 32]
    addr = [(r * tile[1] + c) if row_major else (r + c * tile[0]) for r, c in cells]
    return len({a * 4 // 32 for a in addr}), cells


@exercise("02.coalesced",
          "A 32x32 fp32 tile is stored ROW-major, (32,32):(32,1). A TiledCopy with one float per "
          "thread per step (val layout (1,1)) and 32 threads: pick the thread layout "
          "(shape:stride, 32 threads, (rows, cols) of threads) so that one warp-wide load "
          "touches as few 32-byte sectors as possible (coalesced: 4 sectors = 128 bytes).",
          "consecutive thread ids must walk along the contiguous mode, which for row-major "
          "data is mode 1 (the columns).",
          "(1,32) -- or (4,8):(8,1): thread t reads row t // 8, column t % 8, whole 32-byte "
          "sectors. The column-major default (32,1) touches 32 sectors, 8x the traffic.")
def _coalesced(answer):
    thr = read_layout(answer)
    if thr.size != 32:
        raise Wrong(f"{thr} has {thr.size} threads; a warp is 32")
    if sorted(thr.offsets().tolist()) != list(range(32)):
        raise Wrong(f"{thr} does not number the threads 0..31 once each")
    sectors, cells = copy_sectors(thr)
    if sectors == 4:
        return True, f"{thr}: threads 0..31 read {cells[:4]}... = 4 sectors, 128 bytes."
    return False, f"{thr}: the warp touches {sectors} sectors (4 is ideal); threads 0-3 read " \
                  f"{cells[:4]} -- make consecutive threads read consecutive columns"
