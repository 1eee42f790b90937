"""The grouped tile order the course's GEMMs use, in plain Python.

`kernels.sm80_gemm.grouped_tile` is the same function written for CuTe DSL; tests
check that the two agree. Groups of `group` tile rows are walked column by column,
so consecutive CTAs share B panels (same column) and a few A panels (the group's rows).
"""

from __future__ import annotations


def grouped_tile(tile: int, tiles_m: int, tiles_n: int, group: int) -> tuple[int, int]:
    """Linear tile id -> (tile_m, tile_n)."""
    per_group = group * tiles_n
    first_m = (tile // per_group) * group
    rows = min(tiles_m - first_m, group)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


def visit_order(tiles_m: int, tiles_n: int, group: int) -> list[list[int]]:
    """order[m][n] = when tile (m, n) is visited."""
    order = [[0] * tiles_n for _ in range(tiles_m)]
    for t in range(tiles_m * tiles_n):
        m, n = grouped_tile(t, tiles_m, tiles_n, group)
        order[m][n] = t
    return order


def wave_panels(tiles_m: int, tiles_n: int, group: int, wave: int) -> list[int]:
    """Distinct A + B panels touched by each wave of `wave` consecutive tiles."""
    out = []
    total = tiles_m * tiles_n
    for start in range(0, total, wave):
        tiles = [
            grouped_tile(t, tiles_m, tiles_n, group) for t in range(start, min(start + wave, total))
        ]
        out.append(len({m for m, _ in tiles}) + len({n for _, n in tiles}))
    return out
