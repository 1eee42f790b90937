"""Notebook 12's kernel exercise: the promotion of the FP8 GEMM with block scales.

`after_k_tile` is a method of kernels.fp8_gemm.Fp8Gemm, called by the consumer warpgroups
after k-tile kt's wgmmas were issued into `tmp` (and k-tile kt-1's stage released);
`place.inputs` holds the scales, a_scale (M, KB) and b_scale (ceil(N/128), KB);
`self.coordinates(place)` the (m, n) of C of each accumulator element. The wrong variants are
the reference with one edit each.
"""

import cutlass
import cutlass.cute as cute
from cutlass import Float32

from course.exercises.learner_code import edited


@cute.jit
def after_k_tile(self, acc, tmp, kt, k_tiles, place):
    mSA, mSB = place.inputs
    rows, blocks = mSA.shape[0], mSB.shape[0]
    tCcC = self.coordinates(place)  # (m, n) of each element of acc
    scales = []  # loaded now, while k-tile kt's wgmmas still run
    for i in cutlass.range_constexpr(cute.size(acc)):
        row, col = tCcC[i]
        # past C's edge: zeros that are never stored, so any existing scale will do
        sa = mSA[cutlass.min(row, rows - 1), kt]
        sb = mSB[cutlass.min(col // 128, blocks - 1), kt]
        scales.append(sa * sb)
    cute.nvgpu.warpgroup.wait_group(0)  # k-tile kt's wgmmas have written tmp
    for i in cutlass.range_constexpr(cute.size(acc)):
        acc[i] = acc[i] + tmp[i] * scales[i]
    tmp.fill(0.0)  # the next k-tile's wgmmas start from zero


WAIT = "    cute.nvgpu.warpgroup.wait_group(0)  # k-tile kt's wgmmas have written tmp\n"
CLEAR = "    tmp.fill(0.0)  # the next k-tile's wgmmas start from zero\n"

after_k_tile__tmp_never_cleared = edited(
    after_k_tile, "after_k_tile__tmp_never_cleared", (CLEAR, "")
)
after_k_tile__no_wait = edited(after_k_tile, "after_k_tile__no_wait", (WAIT, ""))
after_k_tile__waits_for_one = edited(  # the main loop's wait, copied: k-tile kt still runs
    after_k_tile, "after_k_tile__waits_for_one", ("wait_group(0)", "wait_group(1)")
)
after_k_tile__scales_of_k_tile_0 = edited(
    after_k_tile,
    "after_k_tile__scales_of_k_tile_0",
    ("rows - 1), kt]", "rows - 1), 0]"),
    ("blocks - 1), kt]", "blocks - 1), 0]"),
)
after_k_tile__b_block_from_row = edited(
    after_k_tile, "after_k_tile__b_block_from_row", ("min(col // 128", "min(row // 128")
)
after_k_tile__a_scale_only = edited(
    after_k_tile, "after_k_tile__a_scale_only", ("scales.append(sa * sb)", "scales.append(sa)")
)
after_k_tile__acc_overwritten = edited(
    after_k_tile, "after_k_tile__acc_overwritten", ("acc[i] = acc[i] + tmp", "acc[i] = tmp")
)


@cute.jit
def after_k_tile__calls_promote(self, acc, tmp, kt, k_tiles, place):
    """The kernel's own promotion called instead of written: not reachable from the exercise."""
    cute.nvgpu.warpgroup.wait_group(0)
    self.promote(acc, tmp, kt, place)


@cute.jit
def after_k_tile__scales_read_after_the_wait(self, acc, tmp, kt, k_tiles, place):
    """Right numbers, but every scale read from global memory after wait_group(0), element
    by element: the promote that notebook 12 (section 5) says ran at 34% to 47% of cuBLAS."""
    cute.nvgpu.warpgroup.wait_group(0)
    mSA, mSB = place.inputs
    rows, blocks = mSA.shape[0], mSB.shape[0]
    tCcC = self.coordinates(place)
    for i in cutlass.range_constexpr(cute.size(acc)):
        row, col = tCcC[i]
        sa = mSA[cutlass.min(row, rows - 1), kt]
        sb = mSB[cutlass.min(col // 128, blocks - 1), kt]
        acc[i] = acc[i] + tmp[i] * (sa * sb)
    tmp.fill(0.0)


# correct, written otherwise --------------------------------------------------------------


@cute.jit
def after_k_tile_whole_fragment(self, acc, tmp, kt, k_tiles, place):
    """The scales gathered into a fragment shaped like acc before the wait, then one
    TensorSSA expression for the whole fragment; tmp cleared by storing zeros."""
    mSA, mSB = place.inputs
    m, n = place.shape
    coords = self.coordinates(place)
    scale = cute.make_rmem_tensor(acc.shape, Float32)
    for i in cutlass.range_constexpr(cute.size(scale)):
        row, col = coords[i]
        scale[i] = mSA[cutlass.min(row, m - 1), kt] * mSB[cutlass.min(col, n - 1) // 128, kt]
    cute.nvgpu.warpgroup.wait_group(0)
    acc.store(acc.load() + tmp.load() * scale.load())
    tmp.store(cute.zeros_like(tmp.load()))


@cute.jit
def after_k_tile_b_scale_hoisted(self, acc, tmp, kt, k_tiles, place):
    """A 128-wide tile lies in one block of B: its scale read once per k-tile (as
    DeepGEMM does), A's per element, all before the wait; only the rows inside C are
    promoted, the others are left alone."""
    mSA, mSB = place.inputs
    sb = mSB[place.tile_col, kt]  # tile_n = 128: tile column c is block c of B
    last = place.shape[0] - 1
    tCcC = self.coordinates(place)
    sa = [mSA[cutlass.min(tCcC[i][0], last), kt] for i in range(cute.size(acc))]
    cute.nvgpu.warpgroup.wait_group(0)
    for i in cutlass.range_constexpr(cute.size(acc)):
        if tCcC[i][0] <= last:
            acc[i] += tmp[i] * sa[i] * sb
    tmp.fill(0.0)


@cute.jit
def after_k_tile_own_coordinates(self, acc, tmp, kt, k_tiles, place):
    """The coordinates built from the MMA's partition of an identity tensor, and tmp
    cleared element by element in the same loop."""
    a_scale, b_scale = place.inputs
    tile = cute.local_tile(
        cute.make_identity_tensor(place.shape), self.tile, (place.tile_row, place.tile_col)
    )
    where = place.thr_mma.partition_C(tile)
    last_row, last_block = a_scale.shape[0] - 1, b_scale.shape[0] - 1
    s = []
    for i in cutlass.range_constexpr(cute.size(tmp)):
        m, n = where[i]
        s.append(
            a_scale[cutlass.min(m, last_row), kt] * b_scale[cutlass.min(n // 128, last_block), kt]
        )
    cute.nvgpu.warpgroup.wait_group(0)
    for i in cutlass.range_constexpr(cute.size(tmp)):
        acc[i] = acc[i] + s[i] * tmp[i]
        tmp[i] = 0.0


@cute.jit
def after_k_tile_unrolled_elem_less(self, acc, tmp, kt, k_tiles, place):
    """The calls around the promotion spelled as NVIDIA's Hopper examples spell theirs: the
    element loops as cutlass.range(..., unroll_full=True), the edge as cute.elem_less of the
    coordinate against C's shape (elements past it are left alone and never stored), the
    scales (clamped to existing ones) into a fragment before the wait, tmp cleared through
    TensorSSA."""
    mSA, mSB = place.inputs
    m, n = place.shape
    tCcC = self.coordinates(place)
    scale = cute.make_rmem_tensor(acc.shape, Float32)
    for i in cutlass.range(cute.size(acc), unroll_full=True):
        row, col = tCcC[i]
        scale[i] = mSA[cutlass.min(row, m - 1), kt] * mSB[cutlass.min(col, n - 1) // 128, kt]
    cute.nvgpu.warpgroup.wait_group(0)
    for i in cutlass.range(cute.size(acc), unroll_full=True):
        if cute.elem_less(tCcC[i], place.shape):
            acc[i] = acc[i] + tmp[i] * scale[i]
    tmp.store(cute.zeros_like(tmp.load()))


# ---------------------------------------------------------------- 12.overlap


@cute.jit
def promote_group(self, steps, tmps, group):
    k_tiles = [steps.issue(tmps[0])]
    for j in cutlass.range_constexpr(group):
        if cutlass.const_expr(j + 1 < group):
            k_tiles.append(steps.issue(tmps[(j + 1) % 2]))  # k-tile j + 1 into the other tmp
        scales = steps.scales(k_tiles[j])  # loads under way
        cute.nvgpu.warpgroup.wait_group(1 if j + 1 < group else 0)  # k-tile j retired
        steps.promote(tmps[j % 2], scales)


NEXT_FIRST = "            k_tiles.append(steps.issue(tmps[(j + 1) % 2]))  # k-tile j + 1 into the other tmp\n"

promote_group__one_tmp = edited(
    promote_group,
    "promote_group__one_tmp",
    ("tmps[(j + 1) % 2]", "tmps[0]"),
    ("tmps[j % 2]", "tmps[0]"),
)
promote_group__waits_for_one_at_the_end = edited(
    promote_group, "promote_group__waits_for_one_at_the_end", ("1 if j + 1 < group else 0", "1")
)
promote_group__next_k_tiles_scales = edited(  # the newest k-tile's scales: k-tile j + 1's
    promote_group,
    "promote_group__next_k_tiles_scales",
    ("steps.scales(k_tiles[j])", "steps.scales(k_tiles[-1])"),
)
promote_group_clears_tmp = edited(  # correct: the clear is redundant (issue overwrites tmp)
    promote_group,
    "promote_group_clears_tmp",
    (
        "        steps.promote(tmps[j % 2], scales)\n",
        "        steps.promote(tmps[j % 2], scales)\n        tmps[j % 2].fill(0.0)\n",
    ),
)


@cute.jit
def promote_group__one_at_a_time(self, steps, tmps, group):
    """Right values, no overlap: each k-tile issued, waited for and promoted before the next
    one is issued (the first exercise's order)."""
    for j in cutlass.range_constexpr(group):
        k_tile = steps.issue(tmps[j % 2])
        scales = steps.scales(k_tile)
        cute.nvgpu.warpgroup.wait_group(0)
        steps.promote(tmps[j % 2], scales)


@cute.jit
def promote_group__scales_after_the_wait(self, steps, tmps, group):
    """Overlapped, but each promotion's scales read only once its k-tile retired."""
    k_tiles = [steps.issue(tmps[0])]
    for j in cutlass.range_constexpr(group):
        if cutlass.const_expr(j + 1 < group):
            k_tiles.append(steps.issue(tmps[(j + 1) % 2]))
        cute.nvgpu.warpgroup.wait_group(1 if j + 1 < group else 0)
        steps.promote(tmps[j % 2], steps.scales(k_tiles[j]))


@cute.jit
def promote_group__calls_the_kernels(self, steps, tmps, group):
    """The kernel's own promote_group called instead of written."""
    from kernels.fp8_gemm import Fp8Gemm

    Fp8Gemm.promote_group(self, steps, tmps, group)


# correct, written otherwise


@cute.jit
def promote_group_last_peeled(self, steps, tmps, group):
    """The group's last k-tile taken out of the loop: every k-tile in the loop has a next
    one, waited for with one group in flight; the last with none."""
    current = steps.issue(tmps[0])
    for j in cutlass.range_constexpr(group - 1):
        following = steps.issue(tmps[(j + 1) % 2])
        scales = steps.scales(current)
        cute.nvgpu.warpgroup.wait_group(1)
        steps.promote(tmps[j % 2], scales)
        current = following
    scales = steps.scales(current)
    cute.nvgpu.warpgroup.wait_group(0)
    steps.promote(tmps[(group - 1) % 2], scales)


@cute.jit
def promote_group_swapped_names(self, steps, tmps, group):
    """The two accumulators as two names swapped after each k-tile, the scales asked for
    as soon as their k-tile is issued, the wait's count from what is still to come."""
    now, later = tmps[0], tmps[1]
    k_tile = steps.issue(now)
    scales = steps.scales(k_tile)
    for j in cutlass.range_constexpr(group):
        more = j + 1 < group
        if cutlass.const_expr(more):
            next_k_tile = steps.issue(later)
        cute.nvgpu.warpgroup.wait_group(min(1, group - 1 - j))
        steps.promote(now, scales)
        if cutlass.const_expr(more):
            scales = steps.scales(next_k_tile)
            now, later = later, now


REFERENCE = {"12.promotion": after_k_tile, "12.overlap": promote_group}
ALTERNATIVES = {
    "12.promotion": [
        after_k_tile_whole_fragment,
        after_k_tile_b_scale_hoisted,
        after_k_tile_own_coordinates,
        after_k_tile_unrolled_elem_less,
    ],
    "12.overlap": [
        promote_group_last_peeled,
        promote_group_swapped_names,
        promote_group_clears_tmp,
    ],
}
WRONG = {
    "12.promotion": {
        after_k_tile__no_wait: ("wait_group(0)", "cpu"),
        after_k_tile__waits_for_one: ("wait_group(0)", "cpu"),
        after_k_tile__tmp_never_cleared: ("never cleared", "gpu"),
        after_k_tile__scales_of_k_tile_0: ("k-tile 0's scales", "gpu"),
        after_k_tile__b_block_from_row: ("taken from the row", "gpu"),
        after_k_tile__a_scale_only: ("B's scale is missing", "gpu"),
        after_k_tile__acc_overwritten: ("instead of adding", "gpu"),
        after_k_tile__calls_promote: ("write the promotion in", "cpu"),
        after_k_tile__scales_read_after_the_wait: ("after wait_group(0)", "cpu"),
    },
    "12.overlap": {
        promote_group__one_at_a_time: ("none of your warpgroup's wgmmas", "cpu"),
        promote_group__scales_after_the_wait: ("scales are read after the wait", "cpu"),
        promote_group__calls_the_kernels: ("own promote_group", "cpu"),
        promote_group__waits_for_one_at_the_end: ("serialized", "cpu"),
        promote_group__one_tmp: ("serialized", "cpu"),
        promote_group__next_k_tiles_scales: ("next k-tile's scales", "gpu"),
    },
}
