"""The Blackwell kernels' own code on the CPU executor: values and hazards, no GPU.

Notebook 14's tcgen05 GEMM (and notebook 15's CTA-pair kernels, where the executor models
them) run their own device code -- TMEM allocation, tcgen05.mma from shared-memory
descriptors into TMEM, tcgen05.commit on NVIDIA's own pipelines, tcgen05.ld, the TMA
store -- on numpy at small ragged shapes, against float64 torch within the course's
tolerance. The synchronisation mistakes tests/test_ptx_protocol.py plants in the PTX are
planted here in the kernels (one call made a no-op) and named by the executor.
"""

from types import SimpleNamespace

import cutlass
import cutlass.cute as cute
import pytest

from course.execute import api, blackwell_runs, planted, tcgen05, tmem
from kernels import sm100_parts
from tests import plants

RAGGED = (129, 136, 72)  # M, N, K: a partial tile in every dimension (K, N multiples of 8)


def _first_cta():
    """The CTA a TMEM space belongs to, as tmem.Tmem reads it: its block index only."""
    return SimpleNamespace(block=(0, 0, 0))


class _Warp:
    """A warp as TMEM's reader checks see it: its index and its happens-before state (a
    class, not a namespace: happens_before keys what a warp knows by the warp itself)."""

    def __init__(self, index: int):
        self.index, self.clock, self.barriers, self.knows = index, 0, 0, {}


def _ok(run):
    assert run.hazard is None, run.hazard
    assert run.ok, run.summary()


def _named(run, kind: str, *words: str):
    """The run stopped on a hazard of `kind` whose message says each of `words`."""
    assert run.hazard is not None and run.hazard.kind == kind, run.summary()
    for word in words:
        assert word in str(run.hazard), run.hazard
    return run.hazard


@pytest.mark.parametrize(
    "name,dtype,tile_n",
    blackwell_runs.CONFIGS,
    ids=[f"{n}-{str(d)[6:]}-{t}" for n, d, t in blackwell_runs.CONFIGS],
)
def test_every_configuration_computes_a_ragged_gemm(name, dtype, tile_n):
    _ok(blackwell_runs.run_gemm(name, *RAGGED, dtype=dtype, tile_n=tile_n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clc_hands_out_every_tile_once_in_varied_orders(seed):
    run = blackwell_runs.run_gemm("cta_pair_clc_gemm", 300, 264, 72, seed=seed)
    _ok(run)  # a tile computed by nobody, or twice from a wrong answer, fails the values
    cancelled = run.cancelled
    assert cancelled and len(set(cancelled)) == len(cancelled)  # each cluster taken once
    assert any("Cluster Launch Control" in line for line in run.observed)
    # kept per launch: a second run reports its own, not the first's too
    again = blackwell_runs.run_gemm("cta_pair_clc_gemm", 300, 264, 72, seed=seed)
    assert again.cancelled == cancelled


def test_a_run_without_clc_reports_no_cancelled_cluster():
    blackwell_runs.run_gemm("cta_pair_clc_gemm", 256, 256, 64)  # cancels some
    run = blackwell_runs.run_gemm("cta_pair_gemm", 256, 256, 64)
    assert run.cancelled == []
    assert not any("Cluster Launch Control" in line for line in run.observed)


@pytest.mark.parametrize("name", blackwell_runs.KERNELS)
def test_a_256x256x128_gemm_within_a_minute(name):
    run = blackwell_runs.run_gemm(name, 256, 256, 128)
    _ok(run)
    assert run.seconds < 60, run.summary()


def test_tcgen05_gemm_under_another_interleaving():
    _ok(blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED, seed=3))


# ---------------------------------------------------------------- planted mistakes


def _planted(name: str, kind: str, *words: str):
    """The kernel run with course.execute.planted's mistake `name` in force: the hazard of
    `kind` it must raise."""
    with planted.planted(name) as plant:
        return _named(blackwell_runs.run_gemm(plant.kernel, *RAGGED), kind, *words)


def test_registers_used_before_wait_ld_are_a_note_not_a_hazard(monkeypatch, launch_notes):
    """The PTX ISA observes tcgen05.ld's completion through wait::ld but does not call the
    registers undefined before it (NVIDIA's tutorials never wait): a note on the run."""
    notes = launch_notes
    plants.no_op(monkeypatch, api.arch, "fence_view_async_tmem_load")
    _ok(blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED))
    assert notes and notes[0].kind == tcgen05.WAIT_LD and "wait::ld" in str(notes[0]), notes


def test_tmem_not_freed_is_named():
    _planted("tmem_freed", tmem.TMEM, "still allocated")


def test_accumulator_read_before_the_mma_completed_is_named(monkeypatch):
    import cutlass.pipeline as pipeline

    plants.no_op(monkeypatch, pipeline.PipelineUmmaAsync, "consumer_wait")
    _named(blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED), tmem.TMEM, "tcgen05.commit")


def test_an_mma_issued_before_its_stage_landed_is_named(monkeypatch):
    import cutlass.pipeline as pipeline

    from course.execute import hazards

    plants.no_op(monkeypatch, pipeline.PipelineTmaUmma, "consumer_wait")
    _named(blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED), hazards.IN_FLIGHT, "tcgen05.mma")


def _release_at_once(self, state, *args, **kwargs):
    """A stage released when its MMAs are issued (an mbarrier arrive), not when they have
    run (tcgen05.commit)."""
    from course.execute import mbarriers

    mbarriers.arrive_once(self.sync_object_empty.get_barrier(state.index))


def test_a_stage_released_before_its_mmas_ran_is_named(monkeypatch):
    import cutlass.pipeline as pipeline

    from course.execute import hazards

    plants.replaced(monkeypatch, pipeline.PipelineTmaUmma, "consumer_release", _release_at_once)
    run = blackwell_runs.run_gemm("tcgen05_gemm", 128, 128, 512)  # more k-blocks than stages
    _named(run, hazards.STAGE_OVERWRITE, "tcgen05.mma")


def test_a_warp_reading_another_warps_tmem_lanes_is_named(monkeypatch):
    from kernels import sm100_parts

    real = sm100_parts.make_epilogue_tmem_load

    def shifted(acc_subtile):
        """Thread t takes thread t+32's slice: warp w reads warp w+1's TMEM lanes."""
        tiled = real(acc_subtile)
        slice_of = tiled.get_slice
        tiled.get_slice = lambda tidx: slice_of((tidx + 32) % 128)
        return tiled

    plants.replaced(monkeypatch, sm100_parts, "make_epilogue_tmem_load", shifted)
    _named(blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED), tmem.TMEM, "reaches only lanes 0-31")


def test_missing_mbarrier_init_fence_is_named():
    from course.execute.mbarriers import MBARRIER

    _planted("barriers_ready", MBARRIER, "mbarrier_init_fence")


def test_staging_buffer_not_fenced_for_the_tma_store_is_named():
    from course.execute.tma import PROXY_FENCE

    _planted("staging_visible_to_tma", PROXY_FENCE)


def test_pair_dealloc_without_the_peer_handshake_is_named(monkeypatch):
    plants.no_op(monkeypatch, tmem.TmemAllocator, "handshake")
    _named(blackwell_runs.run_gemm("cta_pair_gemm", *RAGGED), tmem.TMEM, "handshake")


def test_clc_response_read_before_its_barrier_is_named():
    from course.execute import hazards

    _planted("clc_response_waited", hazards.IN_FLIGHT, "CLC query")


def test_clc_answer_rewritten_without_the_readers_fence_is_named(monkeypatch):
    from course.execute.tma import PROXY_FENCE

    plants.no_op(monkeypatch, api.arch, "fence_proxy")
    _named(blackwell_runs.run_gemm("cta_pair_clc_gemm", *RAGGED), PROXY_FENCE, "CLC answer")


# ---------------------------------------------------------------- TMEM rules


def test_tmem_allocations_are_powers_of_two_of_columns():
    space = tmem.Tmem(_first_cta())
    from course.execute.hazards import UNKNOWN, Hazard

    assert space.alloc(128, UNKNOWN) == 0
    assert space.alloc(256, UNKNOWN) == 256
    with pytest.raises(Hazard, match="power of two"):
        space.alloc(96, UNKNOWN)
    with pytest.raises(Hazard, match="wait for ever"):
        space.alloc(256, UNKNOWN)
    space.dealloc(0, 128, UNKNOWN)
    with pytest.raises(Hazard, match="use after free"):
        space.read(tmem_addresses(lane=3, column=5), "reads", UNKNOWN, "")
    with pytest.raises(Hazard, match="not allocated"):
        space.dealloc(160, 32, UNKNOWN)
    space.relinquished = UNKNOWN  # relinquish_alloc_permit
    with pytest.raises(Hazard, match="after relinquish_alloc_permit"):
        space.alloc(32, UNKNOWN)


def tmem_addresses(lane: int, column: int):
    import numpy as np

    return np.array([lane << tmem.LANE_SHIFT | column])


# ---------------------------------------------------------------- at the free and at the exit


def _epilogue_variant(fn, seed: int = 0, **helpers):
    """Tcgen05Gemm with `fn` as its epilogue_role (notebook 14's exercise), run."""
    from course.exercises.nb14_epilogue_kernel import epilogue_class

    cls = epilogue_class(fn, **helpers)
    return blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED, seed=seed, cls=cls)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tma_stores_in_flight_when_the_cta_exits_are_no_hazard(seed):
    """The PTX ISA leaves them defined (tests/test_execute_blackwell_fixes.py: the note):
    in every interleaving the GEMM is right and nothing stops it."""
    from course.exercises.solutions import nb14_solutions as solutions

    run = _epilogue_variant(solutions.epilogue_role_no_tail, seed)
    assert run.ok and run.hazard is None, run.summary()


@pytest.mark.parametrize(
    "fn,seed",
    [
        ("epilogue_role", 2),
        ("epilogue_role_drain_first", 2),
        ("epilogue_role_as_the_tutorial", 1),
        ("epilogue_role_free_then_drain", 1),
        ("epilogue_role_meet_then_drain", 1),
    ],
)
def test_the_epilogue_references_leave_nothing_behind(fn, seed):
    """The reference and every legal teardown order. `epilogue_role_as_the_tutorial` (no
    barrier of its own before tmem.free, as NVIDIA's tutorial GEMMs) was once taught as a
    mistake by a static rule the PTX ISA does not have: epilogue_tile's own epi_barrier after
    the last sub-tile's tcgen05.ld (and wait::ld) orders every warp's reads before warp 0's
    free, so the happens-before check rightly lets it pass; and the TMA stores read shared
    memory, not TMEM, so they may drain after the free."""
    from course.exercises.solutions import nb14_solutions as solutions

    _ok(_epilogue_variant(getattr(solutions, fn), seed=seed))


@cute.jit
def _reread(tidx, accumulator, gC, epi_tile):
    """One more tcgen05.ld of the accumulator's first sub-tile (a planted late reader)."""
    acc_epi = cute.flat_divide(accumulator, epi_tile)
    tmem_load = sm100_parts.make_epilogue_tmem_load(acc_epi[(None, None, 0, 0)])
    thr_load = tmem_load.get_slice(tidx)
    src = thr_load.partition_S(acc_epi)[(None, None, None, 0, 0)]
    dst = thr_load.partition_D(cute.flat_divide(gC, epi_tile))[(None, None, None, 0, 0)]
    regs = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(tmem_load, src, regs)
    cute.arch.fence_view_async_tmem_load()


@pytest.mark.parametrize(
    "seed,words",
    [(0, "warp 1's tcgen05.ld reads column 0"), (2, "warp 0 of CTA"), (3, "warp 0 of CTA")],
)
def test_tmem_freed_while_another_warp_reads_it_is_named_at_every_seed(seed, words):
    """Warps 1-3 read TMEM again after the last barrier while warp 0 frees it: whichever
    goes first, a hazard -- the free is unordered after the reads (happens-before: seeds
    where a reader runs first), or the reads come after the free (use after free)."""
    from course.exercises import executor_checks

    from course.exercises.learner_code import edited
    from course.exercises.solutions import nb14_solutions as solutions

    late_reader = edited(
        solutions.epilogue_role,
        "epilogue_role__late_reader",
        (
            "    tmem.free(tmem_ptr)\n",
            "    if warp_idx != 0:\n"
            "        self.reread(tidx, accumulators[((None, None), 0, 0, acc_state.index)],\n"
            "                    tCgC[((None, None), 0, 0, tile_row, tile_col)], epi_tile)\n"
            "    tmem.free(tmem_ptr)\n",
        ),
    )
    run = _epilogue_variant(late_reader, seed, reread=_reread)
    assert run.hazard is not None and run.hazard.kind == tmem.TMEM, run.summary()
    text = str(run.hazard)
    assert words in text and "_reread line" in text and "tmem.free(tmem_ptr)" in text, text
    assert ("use after free" if seed == 0 else "may still be reading") in text, text
    assert "tmem.free" in executor_checks._hazard_finding(run.hazard).hint


def test_tmem_free_must_follow_every_readers_load():
    """At tcgen05.dealloc another warp's tcgen05.ld of the columns must happen before: a
    barrier both passed since, or an mbarrier arrival of the reader the freer waited for."""
    from course.execute import happens_before
    from course.execute.hazards import UNKNOWN, Hazard

    space = tmem.Tmem(_first_cta())
    freer, reader = _Warp(0), _Warp(1)
    space.alloc(128, UNKNOWN)
    space.note_read(reader, tmem_addresses(lane=40, column=7), UNKNOWN)
    space.check_readers_done(freer, 128, 32, UNKNOWN)  # other columns: no matter
    with pytest.raises(Hazard, match="warp 1 may still be reading columns 7-7"):
        space.check_readers_done(freer, 0, 128, UNKNOWN)
    happens_before.join([reader, freer])  # e.g. epi_barrier.arrive_and_wait()
    space.check_readers_done(freer, 0, 128, UNKNOWN)
    space.note_read(reader, tmem_addresses(lane=40, column=9), UNKNOWN)
    with pytest.raises(Hazard, match="may still be reading"):
        space.check_readers_done(freer, 0, 128, UNKNOWN)
    phase: dict = {}
    happens_before.arrived(reader, phase)  # the reader arrives on an mbarrier...
    happens_before.merge(freer.knows, phase)  # ... whose phase the freer waited for
    space.check_readers_done(freer, 0, 128, UNKNOWN)


def test_another_ctas_commit_never_waited_on_at_exit_is_named(monkeypatch):
    """The CTA pair's TMA warp skips ring.producer_tail: the leader's last tcgen05.commits
    (multicast releases) arrive on the peer's barriers with nobody waiting, maybe after the
    peer exited: distributed shared memory of an exited block (a hazard)."""
    import cutlass.pipeline as pipeline

    from course.exercises import executor_checks

    plants.no_op(monkeypatch, pipeline.PipelineTmaUmma, "producer_tail")
    run = blackwell_runs.run_gemm("cta_pair_gemm", *RAGGED)
    hazard = _named(run, tcgen05.COMMIT_NOT_WAITED, "tcgen05.commit", "never waited on")
    assert "another CTA's" in hazard.detail
    assert "producer_tail" in executor_checks._hazard_finding(hazard).hint


def test_an_own_ctas_commit_never_waited_on_at_exit_is_a_note(monkeypatch):
    """One CTA without producer_tail (as NVIDIA's fp16_gemm_0 ends): its last commits
    arrive on its own barriers; the PTX ISA says nothing of that, so a note, not a hazard."""
    import cutlass.pipeline as pipeline

    from course.execute import hazards

    plants.no_op(monkeypatch, pipeline.PipelineTmaUmma, "producer_tail")
    noted = []
    real_note = hazards.Note
    monkeypatch.setattr(
        hazards, "Note", lambda *a, **k: noted.append(real_note(*a, **k)) or noted[-1]
    )
    run = blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED)
    assert run.ok, run.summary()
    assert any(n.kind == tcgen05.COMMIT_NOT_WAITED for n in noted), noted


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_an_accumulator_read_without_its_wait_is_named_at_every_seed(seed):
    """Exercise 14's epilogue without the accumulator barrier's wait: under seeds other than
    0 the commit may land before the tcgen05.ld, and still nobody waited for it."""
    from course.exercises.solutions import nb14_solutions as solutions

    _named(_epilogue_variant(solutions.epilogue_role__no_wait, seed), tmem.TMEM, "tcgen05.commit")


def test_a_commits_arrival_is_reported_at_the_commit(monkeypatch):
    """tcgen05.commit arrives from the scheduler: its site is the commit's line, not the
    host's .launch(...)."""
    from course.execute import machine, mbarriers

    sites = []
    real = mbarriers._arrive_on

    def spy(slot, count, tx, site):
        if machine.current_warp() is None:
            sites.append(site.describe())
        real(slot, count, tx, site)

    monkeypatch.setattr(mbarriers, "_arrive_on", spy)
    _ok(blackwell_runs.run_gemm("tcgen05_gemm", *RAGGED))
    assert sites and not any("launch(" in s for s in sites), sites[:3]
    assert any("acc_pipeline.producer_commit" in s for s in sites), sites[:3]  # the kernel's


def test_a_tma_load_nobody_waited_for_is_named_at_the_exit():
    from course.execute import tma
    from course.execute.hazards import UNKNOWN, Hazard

    slot = SimpleNamespace(name="the full barrier")
    load = SimpleNamespace(tensor="A", site=UNKNOWN)
    cta = SimpleNamespace(block=(0, 0, 0), warps=[], tma_loads=[(slot, 0, load)])
    with pytest.raises(Hazard, match="TMA load of A issued at .* still in flight: no mbarrier"):
        tma.finish(cta)
    slot.seen = 0  # a wait saw phase 0 complete
    tma.finish(cta)


def test_a_landed_commit_nobody_waited_for_orders_no_tcgen05_ld():
    """The MMAs ran (their commit landed, as under seeds other than 0 it may early), but the
    reader never waited on the barrier it arrived on: the read is still a hazard."""
    import numpy as np

    from course.execute import happens_before
    from course.execute.hazards import UNKNOWN, Hazard

    class Warp:  # a warp as happens_before sees it (hashable)
        def __init__(self, index):
            self.index, self.cta, self.clock, self.knows = index, cta, 0, {}

    cta = SimpleNamespace(block=(0, 0, 0))
    mma_warp, reader = Warp(1), Warp(4)
    phase: dict = {}
    happens_before.arrived(mma_warp, phase)  # the commit: the MMA warp's clock ticks
    clocks = np.zeros(tmem.COLUMNS, np.int64)
    clocks[:128] = mma_warp.clock  # what the landed MMAs wrote
    space = SimpleNamespace(name="TMEM of CTA (0, 0, 0)", mma_clocks={mma_warp: clocks})
    with pytest.raises(Hazard, match="no mbarrier wait that saw its tcgen05.commit"):
        tcgen05._check_commit_seen(reader, space, tmem_addresses(lane=0, column=3), UNKNOWN)
    tcgen05._check_commit_seen(reader, space, tmem_addresses(lane=0, column=200), UNKNOWN)
    happens_before.merge(reader.knows, phase)  # the accumulator barrier's wait
    tcgen05._check_commit_seen(reader, space, tmem_addresses(lane=0, column=3), UNKNOWN)
