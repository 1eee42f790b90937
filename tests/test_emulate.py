"""The CPU emulators of the Blackwell GEMMs, and the hardware models they are built from."""

import numpy as np
import pytest
import torch

from course.emulate import (
    EmulatedDeadlock,
    RingCorruption,
    cta_pair_clc_gemm_shape,
    cta_pair_gemm_shape,
    emulate_cta_pair_clc_gemm,
    emulate_cta_pair_gemm,
    emulate_tcgen05_gemm,
    random_operands,
)
from course.emulate import blackwell_gemm as emu
from course.emulate.clc import ClcHardware, DuplicateTile, SkipTile
from course.emulate.blackwell_memory import (
    Tmem,
    TmemError,
    round_to,
    tma_load,
    tma_store,
    tmem_alloc_columns,
)
from course.emulate.warp_scheduler import NamedBarrier, Scheduler, wait_barrier
from course.models.mbarrier import MBarrier, MBarrierError, PipelineState
from course.models.tmem_ownership import (
    epilogue_tmem_pairs,
    pair_tile_pairs,
    warp_lanes,
    warp_of_lane,
)
from tests import plants

# ---------------------------------------------------------------- the hardware models


def test_a_fresh_mbarrier_is_in_phase_zero():
    bar = MBarrier(2, "b")
    assert bar.try_wait(1) and not bar.try_wait(0)  # the producer's first wait passes
    bar.arrive()
    assert not bar.try_wait(0)
    bar.arrive()
    assert bar.try_wait(0) and not bar.try_wait(1) and bar.phase == 1


def test_mbarrier_waits_for_bytes_even_when_they_land_first():
    bar = MBarrier(1, "full")
    bar.complete_tx(100)  # the peer's copy lands before the leader arms the barrier
    assert not bar.try_wait(0)
    bar.arrive(tx=300)
    assert not bar.try_wait(0)  # 200 bytes still missing
    bar.complete_tx(200)
    assert bar.try_wait(0)


def test_mbarrier_refuses_extra_arrivals():
    bar = MBarrier(1, "b")
    with pytest.raises(MBarrierError, match="2 arrival"):
        bar.arrive(2)


def test_pipeline_state_flips_phase_on_wrap():
    p, c = PipelineState.producer(4), PipelineState.consumer(4)
    assert (p.phase, c.phase) == (1, 0)
    for _ in range(4):
        p.advance()
    assert (p.index, p.phase, p.count) == (0, 0, 4)


def test_named_barrier_releases_on_the_last_arrival():
    bar = NamedBarrier("n", 3)
    gens = [bar.arrive() for _ in range(2)]
    assert not bar.passed(gens[0])
    bar.arrive()
    assert all(bar.passed(g) for g in gens)


def test_scheduler_reports_a_deadlock_with_who_waits_on_what():
    bar = MBarrier(1, "never")

    def stuck():
        yield wait_barrier(bar, 0)

    sched = Scheduler()
    sched.spawn("warp7", stuck())
    with pytest.raises(EmulatedDeadlock, match="warp7 waits on never parity 0"):
        sched.run()


def test_scheduler_interleaves_two_warps():
    log, bar = [], MBarrier(1, "b")

    def producer():
        log.append("p")
        bar.arrive()
        yield None

    def consumer():
        yield wait_barrier(bar, 0)
        log.append("c")

    for seed in (None, 0, 1, 2):
        log.clear()
        bar = MBarrier(1, "b")
        sched = Scheduler(seed=seed)
        sched.spawn("c", consumer())
        sched.spawn("p", producer())
        sched.run()
        assert log == ["p", "c"]


def test_tmem_allocates_powers_of_two_and_guards_lanes():
    assert [tmem_alloc_columns(n) for n in (1, 32, 33, 128, 129, 512)] == [
        32,
        32,
        64,
        128,
        256,
        512,
    ]
    with pytest.raises(TmemError):
        tmem_alloc_columns(513)
    tmem = Tmem()
    assert tmem.alloc(128) == 0 and tmem.alloc(32) == 128 and tmem.alloc(256) == 256
    assert tmem.alloc(64) == 192  # first naturally aligned gap
    with pytest.raises(TmemError, match="no 128 free"):
        tmem.alloc(128)
    with pytest.raises(TmemError, match="power of two"):
        tmem.alloc(96)
    tmem.write(0, np.ones((128, 128), np.float32), accumulate=False)
    assert tmem.read(warp=1, lane0=32, col0=0, ncols=32).shape == (32, 32)
    with pytest.raises(TmemError, match="warp 1 may access lanes 32..63"):
        tmem.read(warp=1, lane0=0, col0=0, ncols=32)
    with pytest.raises(TmemError, match="not allocated"):
        tmem.read(warp=0, lane0=0, col0=160, ncols=32)
    tmem.relinquish()
    with pytest.raises(TmemError, match="relinquish"):
        tmem.alloc(32)
    tmem.dealloc(0, 128)
    with pytest.raises(TmemError):
        tmem.dealloc(0, 128)


def test_tma_boxes_zero_fill_and_clip():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    box = tma_load(src, 2, 2, 2, 4)
    assert box.tolist() == [[10, 11, 0, 0], [0, 0, 0, 0]]
    assert tma_load(src, 5, 0, 2, 2).sum() == 0  # a box entirely outside: all zeros
    dst, writes = np.zeros((3, 4), np.float32), np.zeros((3, 4), np.int64)
    tma_store(dst, writes, 2, 3, np.ones((2, 2), np.float32))
    assert writes.sum() == 1 and dst[2, 3] == 1


@pytest.mark.parametrize(
    "dtype,torch_dtype", [("bfloat16", torch.bfloat16), ("float16", torch.float16)]
)
def test_rounding_matches_torch(dtype, torch_dtype):
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32) * 100
    x[:4] = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 65504.0]  # ties to even, large
    expected = torch.from_numpy(x).to(torch_dtype).float().numpy()
    assert np.array_equal(round_to(x, dtype), expected)


def test_tmem_map_keeps_each_warp_in_its_quarter():
    pairs = epilogue_tmem_pairs(128)
    assert len(pairs) == 128 * 128
    assert all(warp_of_lane(lane) == thread // 32 for (thread, _), (lane, _) in pairs)
    assert list(warp_lanes(5)) == list(range(32, 64))  # warp 5 would be quarter 1
    pair = pair_tile_pairs(128)
    assert len(pair) == 256 * 128 and max(r for _, (r, _) in pair) == 255
    cells = {cell for _, cell in pair}
    assert len(cells) == 256 * 128  # every cell of the 256 x 128 tile read exactly once


@pytest.mark.compile
@pytest.mark.parametrize("tile_n,ctas", [(128, 1), (256, 2)])
def test_tmem_map_matches_cute_dsl(tile_n, ctas):
    from course.cute.kernel_traces import epilogue_tmem_ownership

    threads = (0, 1, 31, 32, 63, 64, 97, 127)
    from_cute = epilogue_tmem_ownership(tile_n, ctas, threads=threads)
    mine = [p for p in epilogue_tmem_pairs(tile_n) if p[0][0] in threads]
    assert sorted(from_cute) == sorted(mine)


# ---------------------------------------------------------------- the emulated kernels

SHAPES = [
    (128, 128, 64),
    (256, 256, 256),
    (1, 8, 8),
    (129, 136, 72),
    (300, 264, 200),
    (520, 392, 136),
]


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_tcgen05_gemm_emulation(m, n, k):
    a, b = random_operands(m, n, k, seed=m + n + k)
    run = emulate_tcgen05_gemm(a, b)
    verdict = run.check(a, b)
    assert verdict.ok, verdict
    assert len(run.tiles) == run.grid_tiles[0] * run.grid_tiles[1]
    assert all(t.source == "home" and t.acc_slot == 0 for t in run.tiles)


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("seed", [None, 3])
def test_cta_pair_gemm_emulation(m, n, k, seed):
    """The CTA pair without CLC: every cluster computes its own tile, in one slot."""
    a, b = random_operands(m, n, k, seed=m * n + k)
    run = emulate_cta_pair_gemm(a, b, seed=seed)
    verdict = run.check(a, b)
    assert verdict.ok, verdict
    assert len(run.tiles) == run.grid_tiles[0] * run.grid_tiles[1]
    assert all(t.source == "home" and t.acc_slot == 0 for t in run.tiles)


def test_the_pair_kernels_shapes_match_their_kernels():
    from kernels import cta_pair_clc_gemm, cta_pair_gemm

    for shape, module in (
        (cta_pair_gemm_shape(), cta_pair_gemm),
        (cta_pair_clc_gemm_shape(), cta_pair_clc_gemm),
    ):
        plan = module.footprint()
        assert plan["accumulator_slots"] == shape.acc_slots
        assert plan["tmem_columns"] == shape.tmem_columns
        assert plan["stage_bytes"] == shape.stage_bytes
        assert plan["ctas_per_mma"] == shape.ctas


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("seed", [None, 3])
def test_cta_pair_clc_gemm_emulation(m, n, k, seed):
    a, b = random_operands(m, n, k, seed=m * n + k)
    run = emulate_cta_pair_clc_gemm(a, b, resident_clusters=2, seed=seed)
    verdict = run.check(a, b)
    assert verdict.ok, verdict
    assert run.exactly_once and not verdict.duplicate_tiles and not verdict.missing_tiles


def test_fp16_output_and_wide_tiles():
    a, b = random_operands(384, 512, 128, dtype="float16")
    for run in (
        emulate_cta_pair_clc_gemm(a, b, tile_n=256, out_dtype="float16"),
        emulate_tcgen05_gemm(a, b, tile_n=256, out_dtype="float16"),
    ):
        verdict = run.check(a, b)
        assert verdict.ok and verdict.tol == 1e-3, verdict


def test_clc_hands_out_every_waiting_cluster_once():
    a, b = random_operands(1024, 640, 64)  # 4 x 5 = 20 pair tiles
    run = emulate_cta_pair_clc_gemm(a, b, resident_clusters=3, seed=7)
    assert run.clusters == 3
    answers = [r.response for r in run.clc_log]
    stolen = [
        (x // 2, y)
        for ok, x, y in ((r.cancelled, r.first_ctaid_x, r.first_ctaid_y) for r in answers)
        if ok
    ]
    assert len(stolen) == 20 - 3 and len(set(stolen)) == len(stolen)
    assert sum(not r.cancelled for r in answers) == 3  # one "no more work" per cluster
    homes = [t.tile for t in run.tiles if t.source == "home"]
    assert sorted(homes) == [(0, 0), (1, 0), (2, 0)]  # launch order: along M first
    assert sorted(homes + stolen) == sorted(t.tile for t in run.tiles)


def test_ring_and_slots_carry_across_tiles():
    a, b = random_operands(1024, 256, 320)  # 5 K-blocks per tile: not a multiple of 4
    run = emulate_cta_pair_clc_gemm(a, b, resident_clusters=1)
    assert run.check(a, b).ok
    entries = [e for e in run.ring if e.cluster == 0]
    for i, e in enumerate(entries):  # one continuous ring across all 8 tiles
        assert (e.stage, e.phase) == (i % 4, 1 ^ ((i // 4) & 1))
    tiles = sorted((t for t in run.tiles if t.cluster == 0), key=lambda t: t.order)
    assert [t.acc_slot for t in tiles] == [0, 1] * 4  # TMEM ping-pong
    assert tiles[1].first_stage == 5 % 4  # the second tile starts mid-ring


def test_two_slots_let_the_epilogue_overlap_the_next_mma():
    from dataclasses import replace

    from course.emulate import cta_pair_clc_gemm_shape, emulate_gemm

    a, b = random_operands(1024, 128, 256)
    two = emulate_cta_pair_clc_gemm(a, b, resident_clusters=1)
    assert len(two.overlaps()) == 3  # every seam of the cluster's 4 tiles
    one = emulate_gemm(a, b, replace(cta_pair_clc_gemm_shape(), acc_slots=1), resident_clusters=1)
    assert one.check(a, b).ok and one.overlaps() == []
    kinds = {e.what for e in two.events}
    assert kinds == {"load", "mma", "commit", "store", "release", "request"}
    assert all(e.clock <= f.clock for e, f in zip(two.events, two.events[1:]))


# ---------------------------------------------------------------- broken on purpose


def test_a_tile_handed_out_twice_is_caught():
    a, b = random_operands(768, 256, 64)
    run = emulate_cta_pair_clc_gemm(a, b, resident_clusters=2, clc=DuplicateTile)
    verdict = run.check(a, b)
    assert not verdict.ok and not verdict.exactly_once
    assert verdict.overwritten == 256 * 128 and verdict.duplicate_tiles == [(2, 0)]


def test_a_skipped_tile_is_caught():
    a, b = random_operands(768, 256, 64)
    run = emulate_cta_pair_clc_gemm(a, b, resident_clusters=2, clc=SkipTile)
    verdict = run.check(a, b)
    assert not verdict.ok and verdict.unwritten == 256 * 128
    assert verdict.missing_tiles == [(2, 0)] and "never computed" in str(verdict)


def test_a_producer_starting_in_the_wrong_phase_deadlocks(monkeypatch):
    wrong_phase = classmethod(lambda cls, s: cls(s, 0, 0, 0))
    plants.replaced(monkeypatch, PipelineState, "producer", wrong_phase)
    a, b = random_operands(256, 128, 64)
    with pytest.raises(EmulatedDeadlock, match="ab_empty"):
        emulate_cta_pair_clc_gemm(a, b)


def test_arming_the_leader_with_only_its_own_bytes_is_caught(monkeypatch):
    # forgetting that barrier aliasing brings the follower's bytes to the leader's barrier:
    # the extra bytes overdraw the leader's full barrier (a tx underflow, which the mbarrier
    # model refuses), or an MMA reads a stage before the follower's half has landed
    plants.replaced(monkeypatch, emu, "full_barrier_bytes", lambda shape: shape.stage_bytes)
    a, b = random_operands(256, 128, 512)
    with pytest.raises((MBarrierError, RingCorruption, EmulatedDeadlock)):
        for seed in range(5):
            emulate_cta_pair_clc_gemm(a, b, seed=seed)


def test_an_epilogue_reading_the_wrong_slot_is_caught(monkeypatch):
    original = PipelineState.consumer

    def one_slot_consumer(cls, stages):
        state = original(stages)
        if stages == 2:  # the accumulator slots: pretend the epilogue never advances
            state.advance = lambda: None
        return state

    plants.replaced(monkeypatch, PipelineState, "consumer", classmethod(one_slot_consumer))
    a, b = random_operands(1024, 128, 64)
    with pytest.raises((RingCorruption, EmulatedDeadlock)):
        emulate_cta_pair_clc_gemm(a, b, resident_clusters=1)


def test_launch_queue_models():
    ids = [(0, 0), (2, 0), (4, 0)]
    hw = ClcHardware(ids, resident=1)
    assert hw.launched == [(0, 0)]
    assert [hw.try_cancel(0).cancelled for _ in range(3)] == [True, True, False]
    with pytest.raises(ValueError):
        ClcHardware(ids, resident=0)


def test_instruction_descriptor_round_trip():
    from course.models.instruction_descriptor import InstructionDescriptor

    d = InstructionDescriptor(m=256, n=200, a="float16", b="float16", b_mn_major=True)
    assert InstructionDescriptor.decode(d.encode()) == d
    assert InstructionDescriptor().encode() == 0x08200490  # M128 N128 bf16 x bf16 -> f32
    with pytest.raises(ValueError):
        InstructionDescriptor(n=12)


@pytest.mark.parametrize("name", ["tcgen05_gemm", "cta_pair_gemm", "cta_pair_clc_gemm"])
def test_the_emulator_gives_the_executors_output_bit_for_bit(name):
    """The emulator (the design, re-implemented) and the CPU executor (the kernel's own code)
    on the same ragged inputs: the same bf16 C, element for element."""
    from course.execute import blackwell_runs

    emulate = {
        "tcgen05_gemm": emulate_tcgen05_gemm,
        "cta_pair_gemm": emulate_cta_pair_gemm,
        "cta_pair_clc_gemm": emulate_cta_pair_clc_gemm,
    }[name]
    a, b = random_operands(129, 136, 72, seed=5)
    run = blackwell_runs.run_gemm(
        name, 129, 136, 72, operands=(torch.from_numpy(a), torch.from_numpy(b))
    )
    assert run.ok, run.summary()
    np.testing.assert_array_equal(run.output.float().numpy(), emulate(a, b).c)
