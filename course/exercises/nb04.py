"""Notebook 04's exercises: banks, swizzles and the TMA modes."""
from __future__ import annotations

from course.exercises.check import Wrong, exercise, number
from course.models.smem_access import SmemTile, ldmatrix_x4_down_m, rows
from course.models.layout import Layout, Swizzle
from course.models.swizzle import TMA_SWIZZLES


@exercise("04.bank", "In the 8x8 float tile (8,8):(1,8) composed with Swizzle<3,2,3>, which bank "
          "holds element (1, 5)?",
          "offset = 1 + 8*5 = 41 = 0b101001; XOR bits 5-7 (shifted down by 3) into bits 2-4; "
          "the bank is the swizzled offset mod 32.",
          "13: 41 ^ ((41 & 0b11100000) >> 3) = 41 ^ 4 = 45, and 45 % 32 = 13.")
def _bank(answer):
    tile = SmemTile("fp32", Layout.col_major(8, 8), Swizzle(3, 2, 3))
    return number(answer, int(tile.bank_map()[1, 5]))


@exercise("04.transpose", "A warp reads one row of a 32x32 float tile stored column-major, "
          "(32,32):(1,32). How many wavefronts does that request take?",
          "all 32 elements of a row are 32 floats (128 bytes) apart: which banks are they in?",
          "32: every element of row r is in bank r, each a different word, so the bank serves "
          "them one per wavefront (a 32-way conflict).")
def _transpose(answer):
    tile = SmemTile("fp32", Layout.col_major(32, 32))
    return number(answer, rows((32, 32)).predict(tile).analyses[0].wavefronts)


@exercise("04.padding", "Which leading dimension (column stride) makes row reads of a column-major "
          "32x32 float tile conflict-free with the smallest padding?",
          "try 33: where do the 32 elements of a row land now?",
          "33: element (r, c) is at r + 33c, bank (r + c) % 32: a row's 32 elements hit 32 "
          "different banks. Padding costs 32 floats of shared memory; a Swizzle<5,0,5> costs none.")
def _padding(answer):
    try:
        ld = int(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a number (the stride of mode 1)")
    if ld < 32:
        raise Wrong("the columns would overlap: the stride must be at least 32")
    tile = SmemTile("fp32", Layout.col_major(32, 32, ld=ld))
    conflicts = rows((32, 32)).predict(tile).conflicts
    if conflicts:
        return False, f"with stride {ld} the row reads still have {conflicts} conflicts."
    if ld != 33:
        return False, f"{ld} works, but a smaller padding does too."
    return True, "33: one extra float per column spreads every row over all 32 banks."


@exercise("04.tma_mode", "A K-major bf16 tile has 64-byte rows (32 elements per row, 32 rows). "
          "ldmatrix reads the first 16 bytes of each row, 8 rows per phase. What is the smallest "
          "TMA swizzle mode ('none', '32B', '64B' or '128B') that makes it conflict-free?",
          "rows are 64 bytes, so rows r and r+2 start in the same bank; which mode XORs enough "
          "row bits into the 16-byte chunk index? Try them in the BankConflictExplorer.",
          "'64B' (Swizzle<2,4,3> on byte addresses): it XORs (row // 2) % 4 into the chunk "
          "index, spreading 8 rows over 8 different groups of 4 banks; 32B leaves a 2-way conflict.")
def _tma_mode(answer):
    if not isinstance(answer, str) or answer.strip() not in TMA_SWIZZLES:
        raise Wrong("answer with one of 'none', '32B', '64B', '128B'")
    smallest = next(mode for mode in TMA_SWIZZLES if _free(mode))
    if answer.strip() == smallest:
        return True, f"{smallest} is the smallest conflict-free mode for 64-byte rows."
    if _free(answer.strip()):
        return False, "that one works, but a smaller mode does too."
    return False, f"with {answer.strip()} the reads still conflict."


def _free(mode: str) -> bool:
    tile = SmemTile("bf16", Layout.row_major(32, 32), TMA_SWIZZLES[mode], "bytes")
    return ldmatrix_x4_down_m().predict(tile).conflicts == 0
