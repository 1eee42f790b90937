"""Notebook 15's exercises: the CTA-pair CLC GEMM's budgets."""

from __future__ import annotations

from course.exercises.check import exercise, number, pair


@exercise(
    "15.tmem_columns",
    "How many TMEM columns do two 128-column fp32 accumulator slots "
    "take (the allocator hands out powers of two, at least 32)?",
    "two slots of 128 columns each; 256 is already a power of two.",
    "256.",
)
def _tmem(answer):
    return number(answer, 256)


@exercise(
    "15.barrier_bytes",
    "How many bytes does the leader's full barrier expect per stage "
    "(bf16, a 256x128 pair tile, 64-wide K-blocks)?",
    "each CTA loads its 128 rows of A and half of B's 128 rows, all 64 wide; the leader "
    "counts both CTAs' bytes.",
    "per CTA (128 + 64) * 64 * 2 = 24,576; both CTAs: 49,152.",
)
def _bytes(answer):
    from kernels.cta_pair_clc_gemm import footprint

    return number(answer, footprint()["full_barrier_bytes"], unit="bytes")


@exercise(
    "15.tiles",
    "How many 256x128 pair tiles cover a 4096x4096 C?",
    "tiles down times tiles across.",
    "(4096/256) * (4096/128) = 16 * 32 = 512.",
)
def _tiles(answer):
    return number(answer, (4096 // 256) * (4096 // 128))


@exercise(
    "15.mma_issuer",
    "Which warp of which CTA issues the paired MMA? Answer (warp, cta_rank).",
    "warps 0-3 are the epilogue, 4 the TMA warp; the leader is rank 0.",
    "(5, 0): the MMA warp of the leader CTA.",
)
def _issuer(answer):
    warp, rank = pair(answer, "answer with a pair (warp, cta_rank)")
    return (warp, rank) == (5, 0), ""


from course.exercises import nb15_clc_kernel  # noqa: E402,F401  registers 15.read_next_tile
