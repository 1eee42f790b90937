"""Notebook 02's layouts: operations run through CuTe DSL and checked against the course's
model, a layout beside its complement, a matrix painted by tile, and a fresh sample of the
model's agreement with CuTe.

  same_offsets       each operation's result printed, and whether it keeps the offsets
  with_complement    (L, complement(L, cotarget)) as one CuTe layout
  painted_by_tile    a zipped_divide of a column-major matrix as an ownership map of tiles
  check_agreement    random layouts and operations: CuTe DSL against course.models.layout
"""

from __future__ import annotations

from course.models import layout as pl
from course.models.ownership import Ownership


def same_offsets(requests) -> list[bool]:
    """Run (op, layout text, *operands) requests through CuTe DSL in one trace; print each
    result and whether its offsets equal the input layout's (the same function)."""
    from course.cute.algebra import apply_many

    same = []
    for (op, text, *profile), r in zip(requests, apply_many(requests)):
        same.append(bool((r.layout.offsets() == pl.parse_layout(text).offsets()).all()))
        print(f"{r.expression:42s} = {r.printed:14s} same offsets: {same[-1]}")
    return same


def with_complement(shape: int = 4, stride: int = 2, cotarget: int = 24):
    """The layout shape:stride side by side with its complement up to `cotarget`, built by
    CuTe DSL on this machine."""
    import cutlass.cute as cute

    from course.cute.trace import on_cpu

    def build():
        L = cute.make_layout(shape, stride=stride)
        C = cute.complement(L, cotarget)
        return cute.make_layout((L.shape, C.shape), stride=(L.stride, C.stride))

    return on_cpu(build)


def painted_by_tile(zipped, matrix_shape, title: str = "") -> Ownership:
    """A zipped_divide ((element), (tile)) -> offset of a column-major matrix, read as
    (tile, element) -> cell: each cell of the matrix labelled by its tile and its index in it."""
    tile_major = pl.Layout((zipped.shape[1], zipped.shape[0]), (zipped.stride[1], zipped.stride[0]))
    return Ownership.from_tv_layout(
        tile_major,
        matrix_shape,
        title=title or f"the {matrix_shape[0]}x{matrix_shape[1]} matrix, painted by tile",
        thread_label="tile",
    )


def check_agreement(n_per_op: int = 6, seed: int = 2026) -> dict:
    """A fresh random sample of layouts and operations through CuTe DSL and
    course.models.layout; prints the counts and raises if any result differs."""
    from course.cute.layout_agreement import agreement

    a = agreement(n_per_op=n_per_op, seed=seed)
    print(
        f"{a['cases']} random cases: CuTe accepted {a['cute_valid']}, course.models.layout gave "
        f"the identical layout for {a['identical']}; both refused {a['both_refused']}; "
        f"mismatches: {len(a['mismatches'])}"
    )
    if a["mismatches"]:
        raise AssertionError(f"course.models.layout differs from CuTe DSL: {a['mismatches'][:5]}")
    return a
