"""What a wrong output looks like, said before any guess at its cause.

A kernel exercise's run compares the learner's output with a torch reference. When they
differ, the learner first needs what was observed -- which outputs are wrong and how: never
written, written past the end, only at the ragged edge, off by a constant factor,
transposed, the first block repeated, or equal to a known wrong formula -- and only then a
hint. `observe(out, ref, ...)` returns that observation as one sentence and the name of the
pattern it matched, so an exercise can pick the hint that fits what happened instead of the
nearest known mistake.

Everything runs on torch tensors on any device (CPU tensors too), in float64.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tiles:
    """Which of a kernel's output tiles hold wrong outputs, full tiles and partial ones (at the
    ragged edge) counted apart: what "only the edge is wrong" is decided from, so it is never
    said of a shape with no full tile."""

    tile: tuple
    shape: tuple
    full: int  # tiles wholly inside the output
    partial: int  # tiles cut by the output's end
    wrong_full: int
    wrong_partial: int

    @property
    def edge_only(self) -> bool:
        """Wrong outputs in partial tiles only, with full tiles there to be right."""
        return self.full > 0 and self.wrong_full == 0 and self.wrong_partial > 0

    def describe(self) -> str:
        """The tiles holding wrong outputs, as true of this shape: a shape smaller than one
        tile has only partial tiles, and says so."""
        if self.full == 0:
            short = ", ".join(
                f"{s} {what} < {t}"
                for s, t, what in zip(self.shape, self.tile, ("rows", "columns", "elements"))
                if s < t
            )
            return (
                f"in {self.wrong_partial} of {self.partial} {self.tile} tiles, every one of "
                f"them partial ({short}: no full tile)"
            )
        return (
            f"in {self.wrong_full} of {self.full} full {self.tile} tiles and "
            f"{self.wrong_partial} of {self.partial} partial ones"
        )


@dataclass(frozen=True)
class Observation:
    pattern: str  # "unwritten", "edge", "scaled", "transposed", "zero", "repeats", a candidate's
    #               name, or "values" (wrong, no simpler pattern)
    sentence: str
    wrong: int = 0  # outputs wrong (or never written), of `total`
    total: int = 0
    tiles: Tiles | None = None  # where `tile` was given: which tiles hold them


def _close(a, b, tol: float) -> bool:
    import torch

    if a.shape != b.shape:
        return False
    a, b = a.double(), b.double()
    return bool(torch.all((a - b).abs() <= tol * b.abs().clamp_min(1.0)))


def _where(mask) -> str:
    """Where a boolean mask of outputs is set: a range for 1-D, rows and columns for 2-D."""
    idx = mask.nonzero()
    if mask.dim() == 1:
        lo, hi = int(idx[:, 0].min()), int(idx[:, 0].max())
        span = "every one of indices" if int(mask.sum()) == hi - lo + 1 else "indices within"
        return f"{span} {lo}..{hi}" if lo != hi else f"index {lo}"
    rows = (int(idx[:, 0].min()), int(idx[:, 0].max()))
    cols = (int(idx[:, 1].min()), int(idx[:, 1].max()))
    return f"rows {rows[0]}..{rows[1]}, columns {cols[0]}..{cols[1]}"


def _percent(k: int, n: int) -> str:
    """k of n as a share a reader can weigh: never 0% or 100% unless it is."""
    pct = 100 * k / n
    if k in (0, n):
        return f"{pct:.0f}%"
    if pct < 0.1 or pct > 99.9:
        return f"{pct:.2f}%"
    return f"{pct:.1f}%" if pct < 10 or pct > 90 else f"{pct:.0f}%"


def _first(mask, out, ref) -> str:
    i = tuple(int(v) for v in mask.nonzero()[0])
    at = i[0] if len(i) == 1 else i
    return f"the first at {at}: got {float(out[i]):.4g}, expected {float(ref[i]):.4g}"


def observe(
    out,
    ref,
    tol: float,
    *,
    tile: tuple | None = None,
    period: int | None = None,
    candidates: tuple = (),
) -> Observation:
    """How `out` differs from `ref` (assumed to differ beyond `tol`). `tile` is the kernel's
    output tile (so "only the ragged edge is wrong" can be told); `period` a block of outputs
    that a kernel missing its block index would repeat; `candidates` (name, tensor) pairs of
    known wrong formulas on the same inputs."""
    import torch

    o, r = out.double(), ref.double()
    n = o.numel()
    unwritten = torch.isnan(o)
    if unwritten.any():
        k = int(unwritten.sum())
        return Observation(
            "unwritten",
            f"{k} of {n} outputs were never written ({_where(unwritten)}"
            f"{'' if k == n else '; the others were'})",
            k,
            n,
        )
    for name, cand in candidates:
        if _close(o, cand, tol):
            return Observation(name, f"every output equals {name}")
    bad = (o - r).abs() > tol * r.abs().clamp_min(1.0)
    k = int(bad.sum())
    share = f"{k} of {n} outputs ({_percent(k, n)}) wrong"
    if period and o.dim() == 1 and n > period:
        idx = torch.arange(n, device=o.device) % period
        if _close(o, r[idx], tol):
            return Observation(
                "repeats",
                f"{share}: output i holds the value of output "
                f"i mod {period}, as if every block of {period} "
                f"computed the first block's elements",
            )
    if bool(torch.all(o == 0)):
        return Observation("zero", "every output is 0")
    nonzero = r.abs() > 1e-6
    ratio = o[nonzero] / r[nonzero]
    if ratio.numel():
        c = float(ratio.median())
        if abs(c - 1) > 10 * tol and bool(
            torch.all((ratio - c).abs() <= 10 * tol * max(abs(c), 1))
        ):
            return Observation("scaled", f"every output is {c:.4g} times the right value")
    if o.dim() == 2 and o.shape[0] == o.shape[1] and _close(o, r.t(), tol):
        return Observation("transposed", "the output is the reference transposed")
    tiles = _tiles(bad, tile) if tile and o.dim() == len(tile) else None
    swapped = _swapped_tiles(bad, o, r, tile, tol) if tiles is not None and o.dim() == 2 else []
    if swapped:
        pairs = ", ".join(f"tile {q}'s at {p}" for p, q in swapped[:3])
        more = f" and {len(swapped) - 3} more" if len(swapped) > 3 else ""
        return Observation(
            "tiles swapped",
            f"{share}, all in tiles off the diagonal ({_where(bad)}): the outputs of tile "
            f"(i, j) were found at tile (j, i) ({pairs}{more}; {tile} tiles, counted from "
            f"(0, 0)), as if each tile's row and column coordinates were swapped",
            k,
            n,
            tiles,
        )
    if tiles is not None and tiles.edge_only:
        right = "tile is" if tiles.full == 1 else "tiles are"
        return Observation(
            "edge",
            f"{share}, all in the last partial tiles ({_where(bad)}; the {tiles.full} full "
            f"{tile} {right} right): {_first(bad, o, r)}",
            k,
            n,
            tiles,
        )
    where = _where(bad) + (f"; {tiles.describe()}" if tiles is not None else "")
    return Observation("values", f"{share} ({where}); {_first(bad, o, r)}", k, n, tiles)


def _tiles(bad, tile: tuple) -> Tiles:
    """Count the output tiles of shape `tile` over the mask `bad`: full and partial, and of
    each how many hold a wrong output."""
    import itertools

    shape = tuple(bad.shape)
    counts = {True: [0, 0], False: [0, 0]}  # full? -> [tiles, wrong tiles]
    starts = [range(0, s, t) for s, t in zip(shape, tile)]
    for corner in itertools.product(*starts):
        part = bad[tuple(slice(c, c + t) for c, t in zip(corner, tile))]
        whole = all(c + t <= s for c, t, s in zip(corner, tile, shape))
        counts[whole][0] += 1
        counts[whole][1] += int(bool(part.any()))
    return Tiles(tile, shape, counts[True][0], counts[False][0], counts[True][1], counts[False][1])


def _swapped_tiles(bad, o, r, tile: tuple, tol: float) -> list:
    """[(at, of)] when every wrong output lies in a tile `at` = (j, i) off the diagonal that
    holds what the reference has in tile `of` = (i, j), compared where both tiles lie inside
    the output (a ragged edge cuts them differently); [] when any wrong tile does not."""
    tm, tn = tile
    found = []
    for p in sorted({(int(i) // tm, int(j) // tn) for i, j in bad.nonzero().tolist()}):
        q = (p[1], p[0])
        rows = min(o.shape[0] - p[0] * tm, r.shape[0] - q[0] * tm, tm)
        cols = min(o.shape[1] - p[1] * tn, r.shape[1] - q[1] * tn, tn)
        if p == q or rows <= 0 or cols <= 0:
            return []
        got = o[p[0] * tm : p[0] * tm + rows, p[1] * tn : p[1] * tn + cols]
        want = r[q[0] * tm : q[0] * tm + rows, q[1] * tn : q[1] * tn + cols]
        if not _close(got, want, tol):
            return []
        found.append((p, q))
    return found
