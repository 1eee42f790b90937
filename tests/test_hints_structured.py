"""Hints chosen from structure (issue 40, items 1 and 5): a hazard's hint comes from its kind
or its structured cause (course.execute.hazards.Cause), never from the words of its sentence;
a static PTX rule's hint from the rule and which of its requirements broke, with the PTX ISA's
text it rests on. Each hint named something else once: a store that always reads staging
buffer 0 was told about commit and wait, an accumulator overwritten at every k-tile was blamed
on the scale factors."""

import types

import pytest

from course.cute import ptx_protocol as pp
from course.execute import hazards, tcgen05, tma, wgmma
from course.exercises import executor_checks as ec
from course.exercises.check import check
from course.exercises.learner_code import LearnerCode
from course.exercises.verdicts import WRONG

H = hazards


def _hint(kind, cause=None, detail="some words the executor chose today") -> str:
    return ec._hazard_finding(H.Hazard(kind, detail, cause=cause)).hint


def _hint_line(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("hint:"))


# ---------------------------------------------------------------- the tables, by cause


@pytest.mark.parametrize("what", sorted(ec.WGMMA_HINTS))
def test_a_wgmma_stage_hint_follows_its_cause_not_its_sentence(what):
    """The same cause under two sentences (one with another state's old key words): one hint."""
    cause = H.Cause(what, "sA[0, 0, 1] (stage 1)", expected=4, unit=H.UNIT_WGMMA)
    plain = _hint(H.STAGE_OVERWRITE, cause)
    misleading = _hint(H.STAGE_OVERWRITE, cause, "no commit_group; the k-tile just issued")
    assert plain == misleading == ec.WGMMA_HINTS[what]


def test_the_wgmma_states_get_four_different_hints():
    states = (H.UNCOMMITTED, H.NEWEST_GROUP, H.NEVER_WAITED, H.NOT_RETIRED)
    hints = {
        _hint(H.STAGE_OVERWRITE, H.Cause(what, "sA", expected=4, unit=H.UNIT_WGMMA))
        for what in states
    }
    assert len(hints) == 4


def test_a_refill_after_a_release_before_the_wait_is_told_released_too_early_only_for_wgmma():
    """The same what, RELEASED_EARLY: a wgmma's retired reads (unit) or a thread's (none)."""
    by_wgmma = H.Cause(H.RELEASED_EARLY, "sA", expected=4, observed=0, unit=H.UNIT_WGMMA)
    by_threads = H.Cause(H.RELEASED_EARLY, "sA", expected=4, observed=0)
    assert "released too early" in _hint(H.STAGE_OVERWRITE, by_wgmma)
    assert _hint(H.STAGE_OVERWRITE, by_threads) == ec.HAZARD_HINTS[H.STAGE_OVERWRITE]


def test_an_accumulator_in_flight_is_told_commit_only_when_its_group_was_never_committed():
    def acc(what):
        return _hint(wgmma.ACC_IN_FLIGHT, H.Cause(what, "acc", expected=4, unit=H.UNIT_WGMMA))

    assert "commit_group()" in acc(H.UNCOMMITTED)
    assert acc(H.NOT_RETIRED) == ec.HAZARD_HINTS[wgmma.ACC_IN_FLIGHT]


@pytest.mark.parametrize("what", sorted(ec.TMA_STORE_HINTS))
def test_a_tma_store_hint_follows_its_cause(what):
    """One warp (reader and writer alike): the table's hint, whatever the sentence says."""
    cause = H.Cause(what, "sC[0, 0, 0] (stage 0)", expected=4, observed=4, unit=H.UNIT_TMA_STORE)
    assert _hint(H.STAGE_OVERWRITE, cause) == ec.TMA_STORE_HINTS[what]
    assert (
        _hint(H.STAGE_OVERWRITE, cause, "two unordered stores; no fence.proxy.async")
        == (ec.TMA_STORE_HINTS[what])
    )


def test_a_buffer_a_store_of_another_warp_still_reads_is_told_the_barrier_after_the_wait():
    cause = H.Cause(H.NOT_RETIRED, "sC", expected=4, observed=5, unit=H.UNIT_TMA_STORE)
    assert _hint(H.STAGE_OVERWRITE, cause) == ec.TMA_STORE_REUSED_BY_ANOTHER_WARP
    again = H.Cause(H.STORED_AGAIN, "sC", expected=4, observed=5, unit=H.UNIT_TMA_STORE)
    assert _hint(H.STAGE_OVERWRITE, again) == ec.TMA_STORE_HINTS[H.STORED_AGAIN]


@pytest.mark.parametrize("key", sorted(ec.BLACKWELL_HINTS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_a_blackwell_hint_follows_its_cause(key):
    unit, what = key
    kind = H.STAGE_OVERWRITE if what == H.NOT_RETIRED else "TMEM"
    cause = H.Cause(what, "tmem", unit=unit or H.UNIT_MMA)  # an entry for any unit: any one
    assert (
        _hint(kind, cause, "which no tcgen05.mma has written; still allocated")
        == (ec.BLACKWELL_HINTS[key])
    )


def test_tmem_nothing_wrote_is_a_missing_wait_for_a_load_and_a_missing_overwrite_for_an_mma():
    """One what, two units: tcgen05.ld read the accumulator too early; the first MMA of a tile
    accumulated into TMEM no MMA had written (ACCUMULATE left on), no wait is missing."""
    load = _hint("TMEM", H.Cause(H.UNWRITTEN, "acc", unit=H.UNIT_TMEM_LOAD))
    mma = _hint("TMEM", H.Cause(H.UNWRITTEN, "acc", unit=H.UNIT_MMA))
    assert "consumer_wait" in load and "ACCUMULATE, False" in mma and load != mma


def test_the_old_key_words_without_a_cause_choose_no_specific_hint():
    """A sentence with every key word the tables once matched, and no cause: no table hint."""
    words = (
        "which no tcgen05.mma has written; still allocated; tcgen05.dealloc) while warp; "
        "no tcgen05.cp; CLC query (clusterlaunchcontrol.try_cancel) to it; TMA store; "
        "no fence.proxy.async; before a wait_group retired; two unordered stores; "
        "no commit_group; wait on mbarrier bars.clc"
    )
    tables = (
        set(ec.WGMMA_HINTS.values())
        | set(ec.TMA_STORE_HINTS.values())
        | set(ec.BLACKWELL_HINTS.values())
        | {ec.CLC_DEADLOCK_HINT, ec.MBARRIER_DEADLOCK_HINT, ec.TMA_STORE_REUSED_BY_ANOTHER_WARP}
    )
    for kind in ("TMEM", H.STAGE_OVERWRITE, H.IN_FLIGHT, H.RACE, H.DEADLOCK):
        assert _hint(kind, None, words) not in tables, kind


@pytest.mark.parametrize(
    "kind", [tcgen05.COMMIT_NOT_WAITED, tma.NOT_DRAINED, tcgen05.WAIT_LD], ids=str
)
def test_a_kind_that_names_what_happened_gets_its_hint_whatever_the_sentence(kind):
    assert _hint(kind) == _hint(kind, detail="reworded") == ec.KIND_HINTS[kind]


def test_a_deadlock_hint_follows_the_barriers_the_warps_wait_on():
    def blocked(*barriers):
        return _hint(H.DEADLOCK, H.Cause(H.BLOCKED, "CTAs (0, 0, 0)", expected=barriers))

    assert blocked("bars.clc[1]") == ec.CLC_DEADLOCK_HINT
    assert blocked("bars.full[0]", "bars.empty[2]") == ec.MBARRIER_DEADLOCK_HINT
    assert blocked() == ec.HAZARD_HINTS[H.DEADLOCK]  # sync_threads, no mbarrier


def test_an_mma_operand_never_written_is_a_load_and_its_accumulator_a_clear():
    def unset(operand):
        return _hint(H.UNINITIALISED, H.Cause(H.NEVER_WRITTEN, operand))

    assert unset("A") == unset("B") == ec.OPERAND_NOT_LOADED
    assert unset("C") == ec.HAZARD_HINTS[H.UNINITIALISED]


# ---------------------------------------------------------------- the executor sets the causes


def _executor(exercise: str, fn) -> list:
    return ec.EXECUTOR_CHECKS[exercise](LearnerCode.from_function(fn).load(), True)


def _failed(exercise: str, fn):
    failed = [f for f in _executor(exercise, fn) if f.status == "fail"]
    assert failed, f"{exercise}: the executor found nothing"
    return failed[0]


@pytest.mark.parametrize(
    "variant,key",
    [
        ("store_chunk__no_fence", H.UNFENCED),
        ("store_chunk__every_thread_stores", H.TWO_STORES),
        ("store_chunk__stores_buffer_0_always", H.STORED_AGAIN),
    ],
)
def test_the_tma_store_hazards_of_a_run_carry_their_causes(variant, key):
    from course.exercises.solutions import nb11_solutions as s11

    assert _failed("11.tma_store", getattr(s11, variant)).hint == ec.TMA_STORE_HINTS[key]


@pytest.mark.parametrize(
    "variant,key",
    [
        ("mainloop__no_wait", H.NEVER_WAITED),
        ("mainloop__release_before_wait", H.RELEASED_EARLY),
    ],
)
def test_the_wgmma_hazards_of_a_run_carry_their_causes(variant, key):
    from course.exercises.solutions import nb10_solutions as s10

    assert _failed("10.wgmma_mainloop", getattr(s10, variant)).hint == ec.WGMMA_HINTS[key]


def test_a_release_of_the_stage_just_issued_is_told_so_first():
    """The stage handed back is the k-tile just issued: the verdict's first hint says the
    wrong stage went back (the wgmma loop model sees the release); the executor's finding,
    where another warp of the warpgroup has already seen that wgmma complete and nothing
    orders its completion before the refill, says the stage was released too early: both
    are what happened, the first is the mistake."""
    from course.exercises.check import check
    from course.exercises.solutions import nb10_solutions as s10

    fn = s10.mainloop__releases_stage_in_use
    verdict = check("10.wgmma_mainloop", fn, quiet=True, gpu=False)
    first_hint = next(x for x in verdict.message.splitlines() if x.startswith("hint: "))
    assert first_hint.startswith("hint: wrong stage"), verdict.message
    executor_hint = _failed("10.wgmma_mainloop", fn).hint
    assert executor_hint in (ec.WGMMA_HINTS[H.NEWEST_GROUP], ec.WGMMA_HINTS[H.RELEASED_EARLY])


@pytest.mark.parametrize(
    "exercise,variant,key",
    [
        ("14.epilogue_role", "epilogue_role__no_wait", (H.UNIT_TMEM_LOAD, H.UNWRITTEN)),
        ("15.read_next_tile", "read_next_tile__decoded_before_the_wait",
         (H.UNIT_CLC_QUERY, H.READ_IN_FLIGHT)),
        ("15.read_next_tile", "read_next_tile__no_fence", (H.UNIT_CLC_QUERY, H.UNFENCED)),
        ("16.sf_copy_and_mma", "mma_k_loop__no_sf_copies", ("", H.SF_NOT_COPIED)),
    ],
)  # fmt: skip
def test_the_blackwell_hazards_of_a_run_carry_their_causes(exercise, variant, key):
    import importlib

    solutions = importlib.import_module(f"course.exercises.solutions.nb{exercise[:2]}_solutions")
    assert _failed(exercise, getattr(solutions, variant)).hint == ec.BLACKWELL_HINTS[key]


# ---------------------------------------------------------------- the mis-named hints, fixed


def test_a_store_that_always_reads_buffer_0_is_told_its_source_not_commit_and_wait():
    """Commit and wait are right; the store reads staging buffer 0 for every chunk, so the
    store still reading buffer 0 when chunk 4 writes it is one of a chunk that was written to
    another buffer: the hint names the store's source."""
    from course.exercises.solutions import nb11_solutions as s11

    verdict = check("11.tma_store", s11.store_chunk__stores_buffer_0_always, quiet=True, gpu=False)
    assert verdict.status == WRONG, verdict.message
    hint = _hint_line(verdict.message)
    assert "epi.bSG_sC[None, buf]" in hint and "already stored" in hint, hint
    assert "producer_commit" not in hint and "commit and wait are not what is wrong" in hint, hint


def test_an_accumulator_overwritten_at_every_k_tile_is_not_blamed_on_the_sfs():
    """ACCUMULATE set False at each k-tile's start: C is the last k-tile's product, its SFs
    right; the hint says so, not "rows' values off by their SF"."""
    from course.exercises import nb16_sf_kernel as nb16
    from course.exercises.solutions import nb16_solutions as s16

    fn = s16.mma_k_loop__accumulate_reset_every_k_tile
    verdict = check("16.sf_copy_and_mma", fn, quiet=True, gpu=False)
    assert verdict.status == WRONG, verdict.message
    hint = _hint_line(verdict.message)
    assert nb16.HINTS["last k-tile only"] in hint and nb16.VALUES_HINT not in hint, hint
    assert "the last k-tile's product alone" in verdict.message, verdict.message


def test_the_last_k_tile_candidate_is_exactly_that_product():
    import torch

    from course.exercises import nb16_sf_kernel as nb16

    x = nb16.inputs(129, 132, 384, 0, device="cpu")
    a, b, sa, sb = nb16._blocks(x)
    last = slice(256, 384)  # k-tile 2 of 3: SF blocks 8-11
    sfa = sa[:, 8:12].repeat_interleave(32, dim=1)
    sfb = sb[:, 8:12].repeat_interleave(32, dim=1)
    want = (a[:, last] * sfa) @ (b[:, last] * sfb).T
    assert torch.allclose(nb16._last_k_tile_only(x), want)


# ---------------------------------------------------------------- static rules: the ISA's text


TMEM_PTX = """
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;
    ret;
"""


def test_a_kept_allocation_permit_is_a_note_quoting_the_isa_not_a_refusal():
    """The PTX ISA does not ask for tcgen05.relinquish_alloc_permit: a note, never wrong."""
    found = [v for v in pp.check(TMEM_PTX) if v.rule == "tmem_freed"]
    assert [v.what for v in found] == [pp.PERMIT_KEPT] and found[0].note, found
    assert "it is illegal for a CTA to perform tcgen05.alloc after" in found[0].detail
    assert not [v for v in pp.refusals(TMEM_PTX) if v.rule == "tmem_freed"]


def _protocol_finding(ptx: str, rule: str):
    from course.exercises import nb14_epilogue_kernel as nb14

    c = types.SimpleNamespace(ptx=ptx, instructions=pp.instructions(ptx))
    return next(f for f in nb14.keeps_the_protocol(c) if f.check == f"protocol: {rule}")


def test_tmem_freed_is_told_which_requirement_broke_with_the_isa_text():
    group = TMEM_PTX.replace("dealloc.cta_group::1", "dealloc.cta_group::2")
    missing = TMEM_PTX.replace("    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;\n", "")
    said = {
        name: _protocol_finding(ptx, "tmem_freed").hint
        for name, ptx in (("group", group), ("missing", missing))
    }
    assert "different cta_group" in said["group"] and "never freed" in said["missing"], said
    assert all("must be explicitly deallocated using tcgen05.dealloc" in h for h in said.values())
    assert _protocol_finding(TMEM_PTX, "tmem_freed").status == "pass"  # the note only


@pytest.mark.parametrize(
    "rule,isa",
    [
        ("tmem_freed", pp.TMEM_FREED_ISA),
        ("staging_visible_to_tma", pp.STAGING_ISA),
        ("pair_dealloc_synced", pp.PAIR_DEALLOC_ISA),
        ("clc_response_waited", pp.CLC_WAIT_ISA),
    ],
)
def test_each_protocol_rule_hint_quotes_the_isa(rule, isa):
    from course.exercises import nb14_epilogue_kernel as nb14

    assert isa in nb14.PROTOCOL_HINTS[rule] and isa.startswith("the PTX ISA (")
    assert isa.count('"') >= 2  # a quote, not a paraphrase


def test_the_exercises_own_rules_quote_the_isa():
    from course.exercises import nb11_tma_store_kernel as nb11
    from course.exercises import nb15_clc_kernel as nb15

    for wait in (nb11.ReuseWait(3, None, (), 3), nb11.ReuseWait(3, 5, (4,), 3)):
        assert pp.BULK_WAIT_READ_ISA in wait.hint(), wait
    assert pp.CLC_FENCE_ISA in nb15.FENCE_HINT and pp.CLC_FENCE_ISA in nb15.FENCE_LATE_HINT
    ptx = """
        clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r1], [%r2];
        ld.shared.v2.b64 {%rd1, %rd2}, [%r1];
        clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p1, %rq;
    """  # noqa: E501
    c = types.SimpleNamespace(ptx=ptx, instructions=pp.instructions(ptx))
    finding = nb15.waits_before_decoding(c)
    assert finding.status == "fail" and pp.CLC_WAIT_ISA in finding.hint, finding


def test_a_clc_answer_never_released_deadlocks_on_the_clc_barriers_and_is_told_so():
    """The executor names the mbarriers the blocked warps wait on (Cause.expected): the CLC
    pipeline's, so the hint is the release, not a count or parity of some barrier."""
    from course.exercises.solutions import nb15_solutions as s15

    finding = _failed("15.read_next_tile", s15.read_next_tile__never_released)
    assert finding.check.endswith(H.DEADLOCK) and finding.hint == ec.CLC_DEADLOCK_HINT, finding
