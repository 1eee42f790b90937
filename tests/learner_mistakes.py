"""Plausible slips of a learner new to CuTe DSL (not the exercises' own wrong variants): the
checker must name each from what it observed."""

import cutlass
import cutlass.cute as cute


def make_vector_copy__value_int(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(1))


def make_vector_copy__bare_int(threads):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), 4)


@cute.kernel
def saxpy__tuple_index(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid = cute.arch.thread_idx()
    bid = cute.arch.block_idx()
    i = bid * 256 + tid
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy__early_return(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * 256 + tid
    if i >= n:
        return
    gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy__constexpr_range(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    for i in cutlass.range_constexpr(n):
        gOut[i] = alpha * gX[i] + gY[i]


@cute.kernel
def saxpy__float_index(
    gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = (bid * 256 + tid) / 1
    if i < n:
        gOut[i] = alpha * gX[i] + gY[i]


# -- slips only a run shows: on a CPU the executor runs them (tests/test_verdict_hints.py)
def _executor_slips():
    from course.exercises.learner_code import edited
    from course.exercises.solutions import nb01_solutions as s01
    from course.exercises.solutions import nb07_solutions as s07

    return [
        (
            "01.saxpy",
            edited(s01.saxpy_kernel, "saxpy__guard_one_too_far", ("if i < n:", "if i <= n:")),
            "outside its",
            "predicate",
        ),
        (
            "07.mainloop",
            edited(
                s07.mainloop,
                "mainloop__a_without_its_predicate",
                ("tAsA[None, None, None, write], pred=pA", "tAsA[None, None, None, write]"),
            ),
            "outside its",
            "predicate",
        ),
        (
            "07.mainloop",
            edited(
                s07.mainloop,
                "mainloop__prefetches_the_same_k_block",
                (
                    "f.tXsA[None, None, kb + 1, read], f.tXrA[None, None, kb + 1]",
                    "f.tXsA[None, None, kb, read], f.tXrA[None, None, kb]",
                ),
            ),
            "A was never loaded",
            "operand never loaded",
        ),
    ]


EXECUTOR_SLIPS = _executor_slips()


def _never_stored():
    from course.exercises.learner_code import edited
    from course.exercises.solutions import nb06_solutions as s06

    return edited(
        s06.mma_tile_kernel,
        "mma_tile_kernel__never_stored",
        ("    cute.autovec_copy(tCrC, tCgC)\n", ""),
    )


mma_tile_kernel__never_stored = _never_stored()


def _layout_slips():
    from course.exercises.learner_code import edited
    from course.exercises.solutions import nb03_solutions as s03
    from course.exercises.solutions import nb05_solutions as s05

    padded_by_two = edited(
        s05.transpose_tile_layout,
        "transpose_tile_layout__padded_by_two",
        (
            "    tile = cute.make_layout((64, 64), stride=(64, 1))"
            "  # a row starts at offset bit 6\n"
            "    return cute.make_composed_layout(cute.make_swizzle(5, 0, 6), 0, tile)",
            "    return cute.make_layout((64, 64), stride=(66, 1))",
        ),
    )
    c_with_partition_a = edited(
        s03.gemm_partitions,
        "gemm_partitions__c_with_partition_a",
        ("thr.partition_C(gC)", "thr.partition_A(gC)"),
    )
    return padded_by_two, c_with_partition_a


transpose_tile_layout__padded_by_two, gemm_partitions__c_with_partition_a = _layout_slips()
