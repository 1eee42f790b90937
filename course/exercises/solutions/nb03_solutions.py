"""Notebook 03's kernel exercise: the naive GEMM's partitioning, CTA tiles then threads."""

import cutlass.cute as cute

from course.exercises.learner_code import edited


def gemm_partitions(tiled_mma, tid, mA, mB, mC, tiler, bm, bn):
    coord = (bm, bn, None)  # this CTA's tile along M and N, every tile along K
    gA = cute.local_tile(mA, tiler=tiler, coord=coord, proj=(1, None, 1))  # (BM, BK, k)
    gB = cute.local_tile(mB, tiler=tiler, coord=coord, proj=(None, 1, 1))  # (BN, BK, k)
    gC = cute.local_tile(mC, tiler=tiler, coord=coord, proj=(1, 1, None))  # (BM, BN)
    thr = tiled_mma.get_slice(tid)
    return thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gC)


gemm_partitions__blocks_swapped = edited(
    gemm_partitions,
    "gemm_partitions__blocks_swapped",
    ("coord = (bm, bn, None)", "coord = (bn, bm, None)"),
)
gemm_partitions__a_projected_like_b = edited(
    gemm_partitions,
    "gemm_partitions__a_projected_like_b",
    (
        "gA = cute.local_tile(mA, tiler=tiler, coord=coord, proj=(1, None, 1))",
        "gA = cute.local_tile(mA, tiler=tiler, coord=coord, proj=(None, 1, 1))",
    ),
)
gemm_partitions__b_with_partition_a = edited(
    gemm_partitions,
    "gemm_partitions__b_with_partition_a",
    ("thr.partition_B(gB)", "thr.partition_A(gB)"),
)


def gemm_partitions_selected_tilers(tiled_mma, tid, mA, mB, mC, tiler, bm, bn):
    """Each operand's own 2-D tiler picked out of (BM, BN, BK) with cute.select."""
    gA = cute.local_tile(mA, cute.select(tiler, mode=[0, 2]), (bm, None))  # (BM, BK, k)
    gB = cute.local_tile(mB, cute.select(tiler, mode=[1, 2]), (bn, None))  # (BN, BK, k)
    gC = cute.local_tile(mC, cute.select(tiler, mode=[0, 1]), (bm, bn))  # (BM, BN)
    thr = tiled_mma.get_slice(tid)
    return thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gC)


def gemm_partitions_every_tile_then_slice(tiled_mma, tid, mA, mB, mC, tiler, bm, bn):
    """NVIDIA's persistent-GEMM spelling (Hopper dense_gemm_persistent): every tile of each
    operand by local_tile with the operand's tiler cut out by cute.slice_, then the CTA's
    tile picked out of the rest modes."""
    gA_mk = cute.local_tile(mA, cute.slice_(tiler, (None, 0, None)), (None, None))
    gB_nk = cute.local_tile(mB, cute.slice_(tiler, (0, None, None)), (None, None))
    gC_mn = cute.local_tile(mC, cute.slice_(tiler, (None, None, 0)), (None, None))
    gA = gA_mk[None, None, bm, None]  # (BM, BK, k)
    gB = gB_nk[None, None, bn, None]  # (BN, BK, k)
    gC = gC_mn[None, None, bm, bn]  # (BM, BN)
    thr_mma = tiled_mma.get_slice(tid)
    return thr_mma.partition_A(gA), thr_mma.partition_B(gB), thr_mma.partition_C(gC)


def gemm_partitions_flat_divide(tiled_mma, tid, mA, mB, mC, tiler, bm, bn):
    """What local_tile is made of: flat_divide by the operand's 2-D tile, then the CTA's
    tile by its coordinates in the rest modes."""
    bM, bN, bK = tiler
    gA = cute.flat_divide(mA, (bM, bK))[None, None, bm, None]  # (BM, BK, k)
    gB = cute.flat_divide(mB, (bN, bK))[None, None, bn, None]  # (BN, BK, k)
    gC = cute.flat_divide(mC, (bM, bN))[None, None, bm, bn]  # (BM, BN)
    thr = tiled_mma.get_slice(tid)
    return thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gC)


REFERENCE = {"03.partition": gemm_partitions}
WRONG = {
    "03.partition": {
        gemm_partitions__blocks_swapped: ("swapped block coordinates", "cpu"),
        gemm_partitions__a_projected_like_b: ("wrong projection", "cpu"),
        gemm_partitions__b_with_partition_a: ("wrong partition mode", "cpu"),
    }
}
ALTERNATIVES = {
    "03.partition": [
        gemm_partitions_selected_tilers,
        gemm_partitions_every_tile_then_slice,
        gemm_partitions_flat_divide,
    ]
}
