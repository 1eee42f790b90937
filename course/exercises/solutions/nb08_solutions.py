"""Notebook 08's kernel exercise: arm an mbarrier and hand a box to TMA."""

import cutlass
import cutlass.cute as cute


@cute.jit
def arm_and_load(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load__no_expect_tx(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bar)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load__half_the_bytes(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes // 2)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load__every_lane_arms(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load_expect_then_arrive(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    """expect_tx and the arrival as two instructions, both from the one elected lane."""
    with cute.arch.elect_one():
        cute.arch.mbarrier_expect_tx(bar, tx_bytes)
        cute.arch.mbarrier_arrive(bar)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load_lane_zero(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    """Lane 0 arms the barrier instead of an elected lane."""
    if cute.arch.lane_idx() == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load_copy_then_arm(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    """The copy issued first, the barrier armed after it. Legal: the phase cannot complete
    before its one arrival, and the PTX ISA lets tx-count go below zero (bytes that landed
    before they were announced) until arrive.expect_tx brings it back."""
    cute.copy(tma, src, dst, tma_bar_ptr=bar)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes)


@cute.jit
def arm_and_load__copy_inside_elect(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    """The copy moved inside elect_one with the arming: CuTe DSL issues a TMA copy from one
    lane it elects itself (elect.sync), and an elect.sync reached by one lane waits for the
    other 31 forever. An H100 hangs."""
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes)
        cute.copy(tma, src, dst, tma_bar_ptr=bar)


@cute.jit
def arm_and_load_bytes_from_dst(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    """The byte count worked out from the destination partition itself (its element type
    and layout) instead of the tx_bytes the kernel passes in."""
    nbytes = cute.size_in_bytes(dst.element_type, dst.layout)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


REFERENCE = {"08.arm_and_load": arm_and_load}
WRONG = {
    "08.arm_and_load": {
        arm_and_load__no_expect_tx: ("missing expect_tx", "cpu"),
        arm_and_load__half_the_bytes: ("exactly the bytes", "cpu"),
        arm_and_load__every_lane_arms: ("one lane arms", "cpu"),
        arm_and_load__copy_inside_elect: ("whole warp", "gpu"),
    }
}
ALTERNATIVES = {
    "08.arm_and_load": [
        arm_and_load_expect_then_arrive,
        arm_and_load_lane_zero,
        arm_and_load_copy_then_arm,
        arm_and_load_bytes_from_dst,
    ]
}
