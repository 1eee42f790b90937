"""Waves: how a persistent GEMM's work items fill the GPU, and the tail they leave.

A persistent kernel launches as many clusters as fit at once (one CTA per SM) and each takes
work items c, c + clusters, c + 2 clusters, ... A work item is a cluster's block of tiles
(notebook 11's kernel: a 2 x 1 cluster of 128 x 256 tiles). Every cluster takes
ceil(work / clusters) items or one fewer, so the run lasts ceil(work / clusters) *waves*,
the last one only partly full: its idle clusters are the **tail**. A problem one tile
column wider than a whole number of waves costs a whole wave more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Waves:
    """The work of one GEMM launch on `clusters` resident clusters."""

    work: int  # work items: blocks of cluster_m x cluster_n tiles
    clusters: int

    @property
    def waves(self) -> int:
        """Rounds of work items the busiest cluster runs (the run's length, in items)."""
        return math.ceil(self.work / self.clusters)

    @property
    def fraction(self) -> float:
        """Work items over clusters: 3.88 waves is 3 full waves and 88% of a fourth."""
        return self.work / self.clusters

    @property
    def busy(self) -> float:
        """The share of cluster time spent on work: work / (waves x clusters); 1 - busy is
        the tail's idle share."""
        return self.work / (self.waves * self.clusters)


def work_items(
    m: int, n: int, tile_m: int = 128, tile_n: int = 256, cluster_m: int = 2, cluster_n: int = 1
) -> int:
    """Work items of an M x N problem: ceil'd tiles, grouped into cluster blocks (a block at
    the edge counts whole: its CTAs run even where their tiles are empty)."""
    tiles_m, tiles_n = math.ceil(m / tile_m), math.ceil(n / tile_n)
    return math.ceil(tiles_m / cluster_m) * math.ceil(tiles_n / cluster_n)


def of_problem(m: int, n: int, sms: int, **tiling) -> Waves:
    """The waves of an M x N problem with the SOL kernel's tiling (overridable), on a GPU of
    `sms` SMs: sms // cluster size clusters, one CTA per SM."""
    cluster = tiling.get("cluster_m", 2) * tiling.get("cluster_n", 1)
    return Waves(work_items(m, n, **tiling), sms // cluster)


def wave_edges(m: int, ns, sms: int, **tiling) -> list[int]:
    """The N of `ns` where the wave count steps up (the first N of each new count)."""
    edges, last = [], None
    for n in ns:
        w = of_problem(m, n, sms, **tiling).waves
        if last is not None and w > last:
            edges.append(n)
        last = w
    return edges


def fit_per_wave(ns, ms, m: int, sms: int, **tiling) -> tuple[float, float]:
    """Least-squares time = start + per_wave x waves over measured (N, ms): (start, per_wave)
    in ms. A step model: it cannot follow anything but the wave count."""
    xs = [of_problem(m, n, sms, **tiling).waves for n in ns]
    mean_x, mean_y = sum(xs) / len(xs), sum(ms) / len(ms)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    per = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ms)) / sxx
    return mean_y - per * mean_x, per


def split_tail_length(m: int, n: int, sms: int, split: int = 2, tile_m: int = 128,
                      tile_n: int = 256) -> float:  # fmt: skip
    """The length of a run, in times of one whole tile, when the full waves run whole tiles
    (one per CTA, sms CTAs) and the tiles left over are each split `split` ways over a
    cluster of `split` CTAs (sms // split clusters): the tail costs rounds of 1/split."""
    tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n)
    whole = tiles // sms
    left = tiles - whole * sms
    return whole + math.ceil(left / (sms // split)) / split
