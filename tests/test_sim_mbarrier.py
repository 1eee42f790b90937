"""The mbarrier model: phases, parity waits, transaction bytes, and the errors."""

import pytest

from course.models.mbarrier import (
    CONSUMER,
    PRODUCER,
    MBarrier,
    MBarrierError,
    PipelineState,
    make_pipeline_state,
)


def test_fresh_barrier_parity_waits():
    b = MBarrier(1, "b")
    assert b.phase == 0 and b.parity == 0 and b.arrived == 0
    assert not b.try_wait(0)  # phase 0 has not completed: block
    assert b.try_wait(1)  # "phase -1" counts as complete: pass at once
    assert b.completed(-1) and not b.completed(0)


def test_phase_completes_on_the_last_arrival_and_flips_parity():
    b = MBarrier(3, "b")
    assert not b.arrive() and not b.arrive()
    assert b.arrived == 2 and not b.try_wait(0)
    assert b.arrive()  # the third arrival completes phase 0
    assert b.phase == 1 and b.parity == 1 and b.arrived == 0 and b.pending == 3
    assert b.try_wait(0) and not b.try_wait(1)
    assert b.arrive(count=3)  # one arrive can carry several arrivals
    assert b.phase == 2 and b.try_wait(1) and not b.try_wait(0)


def test_parity_keeps_one_bit_of_history():
    """Two phases later, parity 0 names the current phase again: a waiter that fell two
    phases behind would block although 'its' phase completed long ago."""
    b = MBarrier(1, "b")
    b.arrive()
    b.arrive()
    assert b.phase == 2 and b.completed(0) and not b.try_wait(0)


def test_expect_tx_waits_for_the_bytes():
    b = MBarrier(1, "full")
    assert not b.arrive(tx=32768)  # arrive.expect_tx: arrivals done, bytes pending
    assert b.pending == 0 and b.tx == 32768 and not b.try_wait(0)
    assert not b.complete_tx(16384)  # the A tile lands
    assert b.complete_tx(16384)  # the B tile lands: phase 0 completes
    assert b.phase == 1 and b.tx == 0 and b.pending == 1


def test_bytes_may_land_before_their_expect_tx():
    b = MBarrier(1, "full")
    assert not b.complete_tx(100)  # a copy landed first: tx-count dips below zero
    assert b.tx == -100 and b.phase == 0
    assert b.arrive(tx=100)  # the expect_tx catches up: phase completes
    assert b.phase == 1


def test_every_byte_landing_before_the_arm_completes_on_the_arrive():
    """A CTA pair's leader barrier (the emulator's): both CTAs' copies land before the
    leader's arrive.expect_tx announces them; the arrive itself completes the phase."""
    b = MBarrier(1, "ab_full[0]")
    assert not b.complete_tx(300) and not b.complete_tx(300)
    assert b.tx == -600 and b.pending == 1 and not b.try_wait(0)
    assert b.arrive(tx=600)
    assert b.phase == 1 and b.tx == 0 and b.try_wait(0)


def test_separate_expect_tx():
    b = MBarrier(2, "b")
    b.expect_tx(64)
    b.arrive()
    assert not b.arrive()
    assert b.complete_tx(64) and b.phase == 1


def test_tx_underflow_is_an_error():
    b = MBarrier(1, "full")
    b.arrive(tx=100)
    with pytest.raises(MBarrierError, match="tx underflow.*50 more bytes"):
        b.complete_tx(150)


def test_over_arrival_is_an_error():
    b = MBarrier(1, "full")
    b.arrive(tx=100)  # complete on arrivals, waiting for bytes
    with pytest.raises(MBarrierError, match="over-arrival in phase 0"):
        b.arrive()
    c = MBarrier(2, "c")
    with pytest.raises(MBarrierError, match="3 arrival") as err:
        c.arrive(count=3)
    assert "waits only for" not in str(err.value)  # arrivals were still pending


def test_bad_arguments():
    with pytest.raises(MBarrierError, match="count >= 1"):
        MBarrier(0)
    b = MBarrier(1)
    with pytest.raises(MBarrierError, match="0 or 1"):
        b.try_wait(2)
    with pytest.raises(MBarrierError):
        b.arrive(count=0)
    with pytest.raises(MBarrierError):
        b.complete_tx(-1)
    with pytest.raises(MBarrierError):
        b.expect_tx(-1)


def test_describe_names_the_state():
    b = MBarrier(2, "ab.full[1]")
    b.arrive(tx=10)
    assert b.describe() == (
        "ab.full[1] is in phase 0 (parity 0) with 1/2 arrivals, waiting for 10 more bytes"
    )


def test_pipeline_state_wraps_and_flips():
    st = PipelineState(3)
    seen = []
    for _ in range(7):
        seen.append((st.index, st.phase, st.round))
        st.advance()
    assert seen == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 1), (1, 1, 1), (2, 1, 1), (0, 0, 2)]
    assert st.count == 7
    clone = st.clone()
    clone.advance()
    assert st.count == 7 and clone.count == 8


def test_producer_starts_on_the_opposite_parity():
    prod, cons = make_pipeline_state(PRODUCER, 4), make_pipeline_state(CONSUMER, 4)
    assert (prod.index, prod.phase, prod.count) == (0, 1, 0)
    assert (cons.index, cons.phase, cons.count) == (0, 0, 0)
    empty, full = MBarrier(1), MBarrier(1)
    assert empty.try_wait(prod.phase)  # the producer's first acquire passes
    assert not full.try_wait(cons.phase)  # the consumer's first wait blocks
    with pytest.raises(ValueError):
        make_pipeline_state("both", 4)
    with pytest.raises(ValueError):
        make_pipeline_state(PRODUCER, 0)


def test_role_constructors_are_make_pipeline_state():
    assert PipelineState.producer(3) == make_pipeline_state(PRODUCER, 3) == PipelineState(3, 0, 1)
    assert PipelineState.consumer(3) == make_pipeline_state(CONSUMER, 3) == PipelineState(3)
    with pytest.raises(ValueError, match="at least 1 stage"):
        PipelineState.consumer(0)


def test_one_stage_ring_by_hand():
    """A producer and a consumer alternate on one stage for three rounds, using only
    the PipelineState parities: every wait they expect to pass passes, and no other."""
    full, empty = MBarrier(1, "full"), MBarrier(1, "empty")
    p, c = make_pipeline_state(PRODUCER, 1), make_pipeline_state(CONSUMER, 1)
    for _ in range(3):
        assert not full.try_wait(c.phase)  # nothing to read yet
        assert empty.try_wait(p.phase)  # stage free
        full.arrive(tx=8)
        assert not full.try_wait(c.phase)  # bytes still in flight
        full.complete_tx(8)
        assert full.try_wait(c.phase)  # data landed
        p.advance()
        assert not empty.try_wait(p.phase)  # cannot refill before the release
        empty.arrive()
        c.advance()
    assert full.phase == empty.phase == 3
