"""Notebook 10's exercises: warpgroups, descriptors and the accumulator."""

from __future__ import annotations

from course.exercises.check import exercise, number


# The element, shape and swizzle asked about are not the ones the notebook prints above
# (thread 37 and C[17][10], m64n256, the 128B swizzle): the learner works the rule out.
OWNER_OF = (42, 27)


@exercise(
    "10.owner",
    "In a 64x64 wgmma accumulator, which thread (0-127) holds C[42][27]?",
    "warp = row // 16; within the warp, lane // 4 is the row mod 8 and lane % 4 picks "
    "the column pair (columns 16j + 2(lane%4) + {0,1,8,9}).",
    "row 42: warp 2, and 42 - 32 = 10 = 8 + 2 -> lane // 4 = 2 (the '+8' row); column "
    "27 = 16 + 11 = 16 + 2 + 9 -> lane % 4 = 1; lane = 9; thread 64 + 9 = 73.",
)
def _owner(answer):
    from course.cute.kernel_traces import wgmma_accumulator_pairs

    truth = next(t for (t, v), rc in wgmma_accumulator_pairs(64) if rc == OWNER_OF)
    return number(answer, truth)


@exercise(
    "10.acc_regs",
    "How many fp32 accumulator registers does each of a warpgroup's 128 "
    "threads need for one m64n160 tile?",
    "64 x N values over 128 threads.",
    "64 * 160 / 128 = 80 registers.",
)
def _regs(answer):
    return number(answer, 64 * 160 // 128)


@exercise(
    "10.sbo",
    "A K-major bf16 operand tile 32 elements wide (64-byte rows, stored one "
    "after another) is written with the 64-byte swizzle. What is its stride byte offset "
    "(SBO) in the wgmma descriptor?",
    "SBO is the distance between consecutive 8-row groups of core matrices.",
    "8 rows x 64 bytes = 512.",
)
def _sbo(answer):
    return number(answer, 8 * 64, unit="bytes")


from course.exercises import nb10_mainloop_kernel  # noqa: E402,F401  registers 10.wgmma_mainloop
