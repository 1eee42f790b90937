"""Notebook 10's exercises: warpgroups, descriptors and the accumulator."""
from __future__ import annotations

from course.exercises.check import exercise, number


@exercise("10.owner", "In a 64x64 wgmma accumulator, which thread (0-127) holds C[17][10]?",
          "warp = row // 16; within the warp, lane // 4 is the row mod 8 and lane % 4 picks "
          "the column pair (columns 16j + 2(lane%4) + {0,1,8,9}).",
          "row 17: warp 1, row 1 of its 8-row group -> lane // 4 = 1; column 10 = 8 + 2: "
          "2*(lane%4) = 2 -> lane % 4 = 1; lane = 5; thread 32 + 5 = 37.")
def _owner(answer):
    from course.cute.kernel_traces import wgmma_accumulator_pairs

    truth = next(t for (t, v), rc in wgmma_accumulator_pairs(64) if rc == (17, 10))
    return number(answer, truth)


@exercise("10.acc_regs", "How many fp32 accumulator registers does each of a warpgroup's 128 "
          "threads need for one m64n256 tile?", "64 * 256 values over 128 threads.",
          "64 * 256 / 128 = 128 registers (of 255).")
def _regs(answer):
    return number(answer, 64 * 256 // 128)


@exercise("10.sbo", "What is the stride byte offset (SBO) of a K-major bf16 operand tile "
          "stored with the 128-byte swizzle?",
          "SBO is the distance between consecutive 8-row groups of core matrices; one row is "
          "128 bytes.", "8 rows x 128 bytes = 1024.")
def _sbo(answer):
    return number(answer, 1024, unit="bytes")


from course.exercises import nb10_mainloop_kernel  # noqa: E402,F401  registers 10.wgmma_mainloop
