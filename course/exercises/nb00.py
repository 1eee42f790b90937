"""Notebook 00's exercises: counting the GEMM.

Each asks about a problem or a tile other than the ones the notebook prints (4096^3, 128x128
tiles), so the answer has to be worked out, not read off the page. The expected answers come
from course.models.gemm_model, never typed in here.
"""

from __future__ import annotations

from course.exercises.check import exercise, number, pair
from course.models.gemm_model import Gemm

TILES = Gemm(8192, 6144, 4096)  # 00.tiles: a C that is not square, tiles that are not
TILE_M, TILE_N = 256, 128
KSTEPS = Gemm(8192, 8192, 8192)  # 00.ksteps: one CTA's 128x128 tile walking K = 8192 ...
K_CHUNK = 64  # ... in 64-wide chunks,
MMA_SYNC = (16, 8, 16)  # ... with mma.sync m16n8k16: a 16x8 block of C over 16 of K
INTENSITY = Gemm(8192, 8192, 1024)  # 00.intensity: a short K
RIDGE = 246  # 00.bound: the H100's measured ridge point (FLOP/B), from section 2


@exercise(
    "00.tiles",
    f"How many {TILE_M}x{TILE_N} tiles ({TILE_M} rows by {TILE_N} columns) "
    f"cover a C of {TILES.m} rows and {TILES.n} columns?",
    "tiles down (rows / tile rows) times tiles across (columns / tile columns).",
    f"({TILES.m}/{TILE_M}) * ({TILES.n}/{TILE_N}) = {TILES.m // TILE_M} * "
    f"{TILES.n // TILE_N} = {TILES.tiles(TILE_M, TILE_N)} CTAs.",
)
def _tiles(answer):
    return number(answer, TILES.tiles(TILE_M, TILE_N))


def mma_sync_per_step(
    tile_m: int = 128, tile_n: int = 128, k_chunk: int = K_CHUNK, atom=MMA_SYNC
) -> int:
    """mma.sync instructions one CTA issues per K step: atoms across the tile, times the
    atom's K steps in the chunk."""
    m, n, k = atom
    return (tile_m // m) * (tile_n // n) * (k_chunk // k)


@exercise(
    "00.ksteps",
    f"One CTA computes a 128x128 tile of C in an {KSTEPS.m}^3 GEMM, walking "
    f"K in {K_CHUNK}-wide chunks. How many K-loop iterations does it run, and how many "
    f"mma.sync m16n8k16 instructions (each: a 16x8 block of C over 16 of K) does the "
    f"CTA issue per iteration? Answer (iterations, instructions).",
    "iterations: K over the chunk width. Instructions: how many 16x8 blocks tile "
    "128x128, times how many 16-wide steps fit in one chunk.",
    f"({KSTEPS.k_steps(K_CHUNK)}, {mma_sync_per_step()}): {KSTEPS.k} / {K_CHUNK} "
    f"iterations; (128/16) * (128/8) * ({K_CHUNK}/16) = 8 * 16 * 4 instructions (spread "
    f"over the CTA's warps). A Hopper WGMMA of 64x128x16 covers as much as 64 of them.",
)
def _ksteps(answer):
    iters, mmas = pair(
        answer, "answer with a pair: (iterations, mma.sync instructions per iteration)"
    )
    ok_iters, _ = number(iters, KSTEPS.k_steps(K_CHUNK))
    ok_mmas, _ = number(mmas, mma_sync_per_step())
    if ok_iters and ok_mmas:
        return True, (
            f"{KSTEPS.k_steps(K_CHUNK)} iterations of {mma_sync_per_step()} mma.sync each."
        )
    hints = []
    if not ok_iters:
        hints.append(f"the iteration count is K / chunk = {KSTEPS.k} / {K_CHUNK}.")
    if not ok_mmas:
        if mmas == K_CHUNK // MMA_SYNC[2]:
            hints.append(
                "that is one 16x8 block's K steps; the 128x128 tile holds "
                "(128/16) * (128/8) such blocks."
            )
        else:
            hints.append(
                "count the 16x8 blocks that tile 128x128, then the 16-wide K steps in one chunk."
            )
    return False, " ".join(hints)


@exercise(
    "00.intensity",
    f"What is the ideal arithmetic intensity (FLOP per byte) of an "
    f"{INTENSITY.m} x {INTENSITY.n} x {INTENSITY.k} (M x N x K) bf16 GEMM that reads A "
    f"and B once and writes C once in bf16?",
    "2*M*N*K FLOP over (M*K + N*K + M*N) * 2 bytes.",
    f"2*{INTENSITY.m}*{INTENSITY.n}*{INTENSITY.k} / ((2*{INTENSITY.m}*{INTENSITY.k} + "
    f"{INTENSITY.m}*{INTENSITY.n}) * 2) = {INTENSITY.intensity():.1f} FLOP/B: with a "
    "short K, writing C costs more than reading A and B.",
)
def _intensity(answer):
    return number(answer, INTENSITY.intensity(), rel=0.02, unit="FLOP/B")


def smallest_compute_bound_tile(g: Gemm = Gemm(4096, 4096, 4096), ridge: float = RIDGE) -> int:
    """The smallest power-of-two square tile whose intensity (no L2 reuse) reaches `ridge`."""
    t = 1
    while g.intensity(t, t) < ridge:
        t *= 2
    return t


BOUND = Gemm(4096, 4096, 4096)
# What a CTA could hold at most: an H100 SM's 256 KiB of registers (65,536 32-bit ones)
ON_CHIP_BYTES = 65_536 * 4


def _unbuildable(side: int) -> str:
    """Why a side x side tile cannot be built: its fp32 accumulators alone, against an SM."""
    acc = side * side * 4
    return (
        f"a {side}x{side} tile is the model's answer, not a tile anyone can build: its fp32 "
        f"accumulators alone are {acc / 2**20:g} MiB, against an H100 SM's "
        f"{ON_CHIP_BYTES // 1024} KiB of registers (and 228 KiB of shared memory)"
    )


@exercise(
    "00.bound",
    f"Without any reuse through L2 (every CTA reads its own bands of A and B, "
    f"as in section 1's table), what is the smallest square tile, a power of two, that "
    f"makes a 4096^3 bf16 GEMM compute-bound on a GPU whose ridge point is {RIDGE} FLOP/B? "
    f"Answer its side (e.g. 64 for 64x64). The model's answer is asked for, whether or not "
    f"a CTA could hold such a tile.",
    "a tile of side t brings in two bands of t x K elements for its t x t cells of C: work "
    "out how its intensity grows with t (section 1's table shows the trend up to 256), then "
    "double t until it reaches the ridge point.",
    f"{smallest_compute_bound_tile()}: 512x512 tiles reach only "
    f"{BOUND.intensity(512, 512):.1f} FLOP/B, 2% short of {RIDGE} (a ridge point measured "
    "2% lower would make 512 enough); and {_unbuildable(smallest_compute_bound_tile())}. "
    "So without reuse through L2 no tile a CTA can hold is compute-bound, which is why reuse "
    "through L2 and clusters matters (notebook 11).",
)
def _bound(answer):
    truth = smallest_compute_bound_tile()
    if answer == truth // 2:
        return False, (
            f"{answer}x{answer} tiles reach {BOUND.intensity(answer, answer):.1f} FLOP/B, "
            f"just under {RIDGE}"
        )
    ok, message = number(answer, truth)
    if ok:
        half = BOUND.intensity(truth // 2, truth // 2)
        message += (
            f" Two things to notice: the answer turns on {half:.1f} FLOP/B against {RIDGE} (a "
            f"ridge point measured {100 * (1 - half / RIDGE):.0f}% lower would make "
            f"{truth // 2} enough), and {_unbuildable(truth)}. Without reuse through L2, no "
            "tile a CTA can hold is compute-bound."
        )
    return ok, message
