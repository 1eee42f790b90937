"""Notebook 05's exercises: mma.sync fragments."""
from __future__ import annotations

from course.exercises.check import Wrong, exercise, number


@exercise("05.owner", "Which lane (0-31) holds C[13][6] of the mma.sync m16n8k16 accumulator?",
          "row r belongs to lanes 4*(r % 8) .. 4*(r % 8) + 3; column c to lane % 4 == c // 2.",
          "row 13 -> 13 % 8 = 5 -> lanes 20-23; column 6 -> lane % 4 = 3: lane 23.")
def _owner(answer):
    from course.cute.kernel_traces import mma_atom_pairs

    truth = next(t for (t, v), rc in mma_atom_pairs("C") if rc == (13, 6))
    return number(answer, truth)


@exercise("05.a_values", "How many A values does each thread hold for one m16n8k16 instruction?",
          "16 x 16 values over 32 threads.", "256 / 32 = 8.")
def _a(answer):
    return number(answer, 16 * 16 // 32)


@exercise("05.tile", "A TiledMMA of 2 x 4 warps (M x N) of m16n8k16 atoms covers a C tile of "
          "what shape (rows, cols)?", "each warp covers 16 x 8.", "(32, 32).")
def _tile(answer):
    try:
        rows, cols = answer
    except (TypeError, ValueError):
        raise Wrong("answer with a pair (rows, cols)")
    return (rows, cols) == (32, 32), ""
