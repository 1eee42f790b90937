"""Notebook 15's exercises: the CTA-pair CLC GEMM's budgets."""

from __future__ import annotations

from course.exercises.check import exercise, number, number_or_known_slip, pair


# The notebook prints the footprint of the kernel as it is built (tile_n = 128: 256 TMEM
# columns, 49,152 bytes per full barrier); the exercises ask for the other tile width the
# kernel takes, so the answers are worked out, not read off section 1.
ASKED_TILE_N = 256


def _asked_footprint() -> dict:
    import torch

    from kernels import cta_pair_clc_gemm as step

    return step.footprint(torch.bfloat16, step.Config(tile_n=ASKED_TILE_N))


@exercise(
    "15.tmem_columns",
    f"The CLC kernel built with tile_n = {ASKED_TILE_N} instead of 128: how many TMEM columns "
    "must each CTA allocate for its two fp32 accumulator slots?",
    "what does one slot of a CTA's 128 rows by tile_n columns occupy in TMEM, and which "
    "requests does tcgen05.alloc accept (notebook 14, section 2)?",
    f"each slot is 128 lanes x {ASKED_TILE_N} columns; two slots: 512 columns, already a "
    "power of two, and all of the SM's TMEM.",
)
def _tmem(answer):
    said = {
        256: "256 is section 1's answer for tile_n = 128 (or one slot of tile_n = 256): "
        "two slots of 256 columns each are asked for",
        128: "128 columns is one slot of the tile_n = 128 kernel",
    }
    return number_or_known_slip(answer, _asked_footprint()["tmem_columns"], said, unit="columns")


@exercise(
    "15.barrier_bytes",
    f"The CLC kernel built with tile_n = {ASKED_TILE_N} (bf16, 64-wide k-tiles): how many "
    "bytes must the leader's full barrier expect per stage?",
    "which rows of A and of B does each CTA's TMA load into a stage (section 2's partition), "
    "and whose bytes does the leader's barrier count (section 3)?",
    f"per CTA: its 128 rows of A and half of B's {ASKED_TILE_N} rows, 64 wide, 2 bytes each: "
    "(128 + 128) * 64 * 2 = 32,768; the leader counts both CTAs: 65,536.",
)
def _bytes(answer):
    expected = _asked_footprint()["full_barrier_bytes"]
    said = {
        expected // 2: "that is one CTA's stage: the leader's barrier counts the bytes of "
        "both CTAs' copies",
        49152: "49,152 is section 1's answer for tile_n = 128; with tile_n = 256 each CTA "
        "loads more of B",
        98304: "each CTA loads only its half of B, not all of it",
    }
    return number_or_known_slip(answer, expected, said, unit="bytes")


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
    "which role issues MMAs (section 4), and which CTA of the pair issues the paired one "
    "(section 2)?",
    "(5, 0): the MMA warp of the leader CTA.",
)
def _issuer(answer):
    warp, rank = pair(answer, "answer with a pair (warp, cta_rank)")
    return (warp, rank) == (5, 0), ""


from course.exercises import nb15_clc_kernel  # noqa: E402,F401  registers 15.read_next_tile
