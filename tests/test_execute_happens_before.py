"""The executor's one happens-before model (course.execute.happens_before) judges every
shared-memory race: a hand-off between threads is ordered by whatever synchronisation the
PTX memory model says orders it (an mbarrier phase, a named barrier among its warps,
sync_threads), and by nothing else.

Before the model was one, threads' accesses were ordered by barrier epochs only: NVIDIA's
pattern of a warp writing shared memory, arriving on an mbarrier, and another warp reading
after its wait (mbarrier.arrive releases, the wait acquires: PTX ISA, "Memory Consistency
Model", mbarrier operations) was refused as a race; and any named barrier ordered every
thread of the CTA, its own or not.
"""

import pytest
import torch

from course.execute import Hazard, hazards, pointer, run
from tests import happens_before_kernels as k

EXPECTED = (torch.arange(32, dtype=torch.float32).roll(-1)) * 2


@pytest.mark.parametrize("order, reader", [("mbarrier", 0), ("named", 0), ("sync", 0), ("sync", 2)])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_hand_off_ordered_by_its_synchronisation_runs_clean(order, reader, seed):
    out = torch.full((32,), float("nan"))
    switches = {"order": order, "reader_warp": reader}
    run(k.hand_off, pointer(out), None, seed=seed, kwargs=switches)
    assert torch.equal(out, EXPECTED)


@pytest.mark.parametrize(
    "order, reader", [("none", 0), ("named", 2)], ids=["no sync", "outside the named barrier"]
)
def test_a_hand_off_nothing_orders_is_a_race_naming_both_lines(order, reader):
    out = torch.full((32,), float("nan"))
    with pytest.raises(Hazard) as found:
        run(k.hand_off, pointer(out), None, kwargs={"order": order, "reader_warp": reader})
    h = found.value
    write, read = "buf[lane] = cutlass.Float32(lane) * 2.0", "gOut[lane] = buf[(lane + 1) % 32]"
    if h.kind == hazards.RACE:  # the write ran first: the read is named, with the write's line
        assert f"warp {reader}" in h.detail and "which thread 33 (warp 1, lane 1) wrote" in h.detail
        assert write in h.detail and h.site.text() == read
    else:  # the read ran first (warp 0 need not wait for anything): the write over it is named
        assert h.kind == hazards.STAGE_OVERWRITE and order == "none"
        assert (
            "thread 32 (warp 1, lane 0) writes buf[0], which thread 31 (warp 0, lane 31) read"
            in (h.detail)
        )
        assert read in h.detail
        assert h.site.text() == write


def test_lanes_of_one_warp_are_ordered_by_a_barrier_only():
    out = torch.full((32,), float("nan"))
    run(k.lanes, pointer(out), None, kwargs={"barrier_between": True})
    assert torch.equal(out, torch.arange(32, dtype=torch.float32).roll(-1))
    with pytest.raises(Hazard) as found:
        run(k.lanes, pointer(torch.zeros(32)), None, kwargs={"barrier_between": False})
    assert found.value.kind == hazards.RACE
    assert "thread 0 (warp 0, lane 0) reads buf[1], which thread 1 (warp 0, lane 1)" in (
        found.value.detail
    )


def test_there_is_one_model_of_order():
    """No barrier epoch is left beside the warps' clocks."""
    import inspect

    from course.execute import machine, memory

    assert "epoch" not in inspect.getsource(memory.SharedMemory)
    assert "epoch" not in inspect.getsource(machine.Cta)
