"""Who reads which TMEM cell in the kernels' epilogue, as plain data.

The epilogue of both Blackwell GEMMs drains the accumulator with tcgen05.ld 32x32b.x32:
each of the 128 epilogue threads reads one TMEM lane (= one row of the CTA's 128-row
tile) and 32 consecutive columns per instruction, sub-tile after sub-tile. A warp may
only touch its own quarter of the lanes: warp w (w = warp index % 4) gets lanes
32w .. 32w+31. These functions return the map in the shape course.models.ownership's
`Ownership.from_pairs` takes: ((thread, value), (row, column)) pairs.

course.cute.kernel_traces.epilogue_tmem_ownership derives the same map from CuTe DSL's own
layouts of the kernel's tiled copy; the tests check the two agree.
"""

from __future__ import annotations

LANES = 128
LANES_PER_WARP = 32
EPI_COLS = 32


def epilogue_tmem_pairs(tile_n: int = 128, epi_cols: int = EPI_COLS):
    """((thread, value), (lane, column)) for one CTA: thread t reads lane t; its value v is
    column v (sub-tile v // epi_cols, column v % epi_cols of that sub-tile)."""
    if tile_n % epi_cols:
        raise ValueError("tile_n must be a multiple of the sub-tile width")
    return [((t, v), (t, v)) for t in range(LANES) for v in range(tile_n)]


def pair_tile_pairs(tile_n: int = 128, epi_cols: int = EPI_COLS):
    """The same for a CTA pair's 256 x N tile: thread 128r + t is thread t of CTA r
    (r = 0 leader, 1 follower); its row in the 256-row tile is 128r + t."""
    return [
        ((LANES * r + t, v), (LANES * r + lane, col))
        for r in (0, 1)
        for (t, v), (lane, col) in epilogue_tmem_pairs(tile_n, epi_cols)
    ]


def warp_of_lane(lane: int) -> int:
    """The only epilogue warp (0-3) allowed to read this TMEM lane."""
    if not 0 <= lane < LANES:
        raise ValueError(f"TMEM has lanes 0..{LANES - 1}")
    return lane // LANES_PER_WARP


def warp_lanes(warp: int) -> range:
    """Lanes warp `warp` may access (its sub-partition: warp index modulo 4)."""
    q = warp % 4
    return range(LANES_PER_WARP * q, LANES_PER_WARP * (q + 1))
