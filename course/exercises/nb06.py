"""Notebook 06's exercises: the SM80 kernel's budget and bookkeeping."""
from __future__ import annotations

from course.exercises.check import Wrong, exercise, number


@exercise("06.smem", "How many bytes of shared memory does the ring of Config(tile_m=128, "
          "tile_n=256, tile_k=64, stages=3) take for bf16 operands?",
          "each stage holds a tile_m x tile_k tile of A and a tile_n x tile_k tile of B.",
          "(128 + 256) * 64 * 2 bytes * 3 stages = 147,456 bytes.")
def _smem(answer):
    return number(answer, (128 + 256) * 64 * 2 * 3, unit="bytes")


@exercise("06.stages_fit", "With 227 KB (232,448 bytes) of shared memory, how many stages of "
          "128 x 256 x 64 bf16 tiles fit at most?",
          "divide the budget by one stage's bytes and round down.",
          "232448 // ((128 + 256) * 64 * 2) = 232448 // 49152 = 4.")
def _fit(answer):
    return number(answer, 232448 // ((128 + 256) * 64 * 2))


@exercise("06.stage_of", "With a 4-stage ring, which shared-memory stage does k-tile 10 land in?",
          "the ring is filled in order and wraps around.", "10 % 4 = 2.")
def _stage(answer):
    return number(answer, 10 % 4)


@exercise("06.order", "With 16 x 16 tiles of C and groups of 8 tile rows, which tile "
          "(tile_m, tile_n) does the CTA with linear id 11 compute?",
          "groups of 8 rows are walked column by column: id 11 is in the second column.",
          "(3, 1): ids 0-7 are column 0 of rows 0-7, ids 8-15 column 1.")
def _order(answer):
    from course.models.tile_order import grouped_tile

    try:
        m, n = answer
    except (TypeError, ValueError):
        raise Wrong("answer with a pair (tile_m, tile_n)")
    return (m, n) == grouped_tile(11, 16, 16, 8), ""
