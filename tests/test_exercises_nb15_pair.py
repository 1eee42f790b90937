"""Notebook 15's pair exercises asked anew (issue 42) and its pair-only planted mistake, and
notebook 01's saxpy skeleton: nothing answered on the page, every correct spelling accepted,
each known slip told what it counted, the pair's dealloc without its wait named by the CPU
executor (the PTX check's side: tests/test_planted_agreement.py, which runs every plant)."""

import json
import math
import re
import types

import pytest

from course import ROOT
from course.exercises import nb15
from course.exercises.check import REGISTRY, check
from course.exercises.verdicts import RIGHT, UNANSWERED, WRONG


def _cells(stem: str) -> list:
    return json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())["cells"]


def _text(cell) -> str:
    out = "".join(cell["source"])
    for o in cell.get("outputs", []):
        out += "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
    return out


def _above_check(stem: str, id: str) -> str:
    cells = _cells(stem)
    at = next(i for i, c in enumerate(cells) if f'check("{id}"' in "".join(c["source"]))
    return "\n".join(_text(c) for c in cells[:at])


# ---------------------------------------------------------------- 15.tiles


def test_the_tile_count_is_the_kernels_grid_over_its_clusters():
    """The answer is the kernel's own launch (kernels.cta_pair_gemm: 2 * ceil(M / 256) by
    ceil(N / 128) CTAs, one cluster per pair): its clusters for the asked C."""
    from kernels import cta_pair_clc_gemm as step

    tile = step.GEMM.kernel_object().tile
    m, n = nb15.ASKED_C
    assert m % tile.mma_m and n % tile.n  # both sides ragged: ceil-division is the point
    ctas = tile.ctas * math.ceil(m / tile.mma_m) * math.ceil(n / tile.n)
    expected, _ = nb15.tile_slips()
    assert expected * tile.ctas == ctas
    assert check("15.tiles", expected, quiet=True).status == RIGHT
    assert check("15.tiles", float(expected), quiet=True).status == RIGHT
    assert f"= {expected} pair tiles" in REGISTRY["15.tiles"].solution


def test_each_known_tile_slip_is_told_what_it_counted():
    expected, slips = nb15.tile_slips()
    assert len(slips) == 6 and expected not in slips  # every slip its own number
    for value, said in slips.items():
        verdict = check("15.tiles", value, quiet=True)
        assert verdict.status == WRONG and said in verdict.message, (value, verdict)
    assert "counts CTAs" in check("15.tiles", 2 * expected, quiet=True).message
    assert "rounds both sides down" in check("15.tiles", min(slips), quiet=True).message
    other = check("15.tiles", expected + 1, quiet=True)
    assert other.status == WRONG and "too high" in other.message
    assert check("15.tiles", "many", quiet=True).status == WRONG  # a word, not a traceback


def test_the_tile_hints_worked_example_is_the_one_section_8_prints():
    """The hint sends the learner to section 8's 600 x 392 run to try the method: its printed
    grid is the kernel's (2 * ceil(600 / 256)) x ceil(392 / 128)."""
    from kernels import cta_pair_clc_gemm as step

    tile = step.GEMM.kernel_object().tile
    hint = REGISTRY["15.tiles"].hint
    assert "600 x 392" in hint and "Section 8" in hint
    grid = f"grid {tile.ctas * math.ceil(600 / tile.mma_m)}x{math.ceil(392 / tile.n)}x1"
    shown = [_text(c) for c in _cells("15_cta_pair_clc_gemm") if "run_executed" in _text(c)]
    assert shown and "m=600, n=392" in shown[0] and grid in shown[0]


def test_the_tile_count_is_not_on_the_page():
    expected, _ = nb15.tile_slips()
    above = _above_check("15_cta_pair_clc_gemm", "15.tiles")
    assert not re.search(rf"\b{expected}\b", above)
    ex = REGISTRY["15.tiles"]
    assert str(expected) not in ex.prompt + ex.hint
    assert "4096" not in ex.prompt  # the old question, whose tiles divide C evenly


# ---------------------------------------------------------------- 15.mma_issuer


def test_the_issuers_follow_the_kernels_leader_test_and_the_isas_pairs():
    """The leader test of kernels.cta_pair_gemm (coordinate 0 of the cluster divided by the
    MMA's CTAs) over the PTX ISA's pairs (ranks differing in the last bit): the even rank of
    each pair, CTA 0 of the notebook's one-pair cluster (section 2 prints it), and only the
    ranks the executor lets issue a cta_group::2 MMA (course.execute.tcgen05)."""
    assert nb15.issuing_ranks((2, 1, 1)) == (0,)
    assert "CTA 0 (leader)" in _above_check("15_cta_pair_clc_gemm", "15.mma_issuer")
    asked = nb15.issuing_ranks()
    size = math.prod(nb15.ASKED_CLUSTER)
    assert size == 4 and asked == tuple(r for r in range(size) if r % 2 == 0)
    assert all({r, r ^ 1} & set(asked) == {r & ~1} for r in range(size))  # one per pair


@pytest.mark.parametrize("spelled", [(0, 2), (2, 0), [0, 2], {0, 2}, frozenset({2, 0})])
def test_every_spelling_of_the_issuers_is_right(spelled):
    verdict = check("15.mma_issuer", spelled, quiet=True)
    assert verdict.status == RIGHT, verdict


@pytest.mark.parametrize(
    "answer, said",
    [
        ((0, 1), "ranks 0 and 1 form one pair"),
        ((1, 3), "followers"),
        ((0, 1, 2, 3), "only one CTA of each pair issues"),
        (0, "only one issuer"),
        ((2,), "only one issuer"),
        ((0, 3), "rank 3 follows in its pair"),
        ((2, 3), "the pair {0, 1} has no issuer here"),
        ((5, 0), "a warp number?"),  # the old answer, (warp, cta_rank)
        ("leader", "a tuple of cluster ranks"),
        ((0.5, 2), "whole number"),
    ],
)
def test_a_wrong_set_of_issuers_is_told_what_it_shows(answer, said):
    verdict = check("15.mma_issuer", answer, quiet=True)
    assert verdict.status == WRONG and said in verdict.message, verdict


def test_the_issuers_are_not_on_the_page():
    """No text above the check names the issuing ranks of a two-pair cluster (the outputs'
    tile coordinates, such as (0, 2), are tiles, not ranks)."""
    cells = _cells("15_cta_pair_clc_gemm")
    at = next(i for i, c in enumerate(cells) if 'check("15.mma_issuer"' in "".join(c["source"]))
    above = "\n".join("".join(c["source"]) for c in cells[:at])
    ex = REGISTRY["15.mma_issuer"]
    for said in (above, ex.prompt, ex.hint):
        assert not re.search(r"\(0, 2\)|\b0 and 2\b|ranks? 0, 2|\{2, 3\}", said)
    assert "4 CTAs" not in above.split("## Exercises")[0]  # no two-pair cluster shown above
    assert "(warp, cta_rank)" not in ex.prompt


def test_the_shipped_number_cells_are_not_answered_and_never_raise():
    cells = _cells("15_cta_pair_clc_gemm")
    for id in ("15.tiles", "15.mma_issuer"):
        (cell,) = [c for c in cells if f'check("{id}", ...)' in "".join(c["source"])]
        assert "not answered yet" in _text(cell)
        assert check(id, quiet=True).status == UNANSWERED


# ---------------------------------------------------------------- the pair's planted mistake


def test_the_pairs_planted_dealloc_is_named_by_the_executor_and_undone():
    from course.execute import blackwell_runs, planted, tmem

    plant = planted.PLANTS["pair_dealloc_synced"]
    assert plant.within == "cutlass.memory.TmemAllocator.free"
    assert blackwell_runs.kernel_object(plant.kernel, *_BF16_128).ctas == 2  # a pair kernel
    with planted.planted("pair_dealloc_synced"):
        runs = [blackwell_runs.run_gemm(k, 129, 136, 72, seed=s) for k, s in _PAIR_RUNS]
    for run in runs:
        assert run.hazard is not None and run.hazard.kind == tmem.TMEM, run.summary()
        assert "handshake" in str(run.hazard) and "cta_group::2" in str(run.hazard)
    assert blackwell_runs.run_gemm(plant.kernel, 129, 136, 72).ok  # undone after the block


def _bf16_128():
    import torch

    return torch.bfloat16, 128


_BF16_128 = _bf16_128()
_PAIR_RUNS = [("cta_pair_gemm", 0), ("cta_pair_gemm", 3), ("cta_pair_clc_gemm", 1)]


def test_the_plant_leaves_mbarrier_wait_alone_outside_free(monkeypatch):
    """Only the warp inside TmemAllocator.free loses its wait: cute.arch.mbarrier_wait is
    the same call everywhere else, in CuTe DSL and on the executor (a wait elsewhere in the
    kernel still waits)."""
    import cutlass.cute as cute

    from course.execute import api, mbarriers, planted

    calls = []
    monkeypatch.setattr(cute.arch, "mbarrier_wait", lambda *a, **k: calls.append("cute"))
    monkeypatch.setattr(mbarriers, "wait", lambda *a, **k: calls.append("executor"))
    with planted.planted("pair_dealloc_synced"):
        cute.arch.mbarrier_wait("barrier", 0)
        api.arch.mbarrier_wait("barrier", 0)
    assert calls == ["cute", "executor"]


def test_a_dealloc_the_peer_reached_first_but_unordered_is_still_named():
    """The executor asks happens-before, not the order this run took: a peer that entered
    free() first, with nothing ordering that before this CTA's dealloc, is a hazard too."""
    from course.execute import hazards, tmem
    from course.execute.hazards import Hazard

    class Warp:  # what happens_before reads of a warp (hashable by identity, as the real one)
        def __init__(self, clock, block):
            self.knows, self.clock, self.barriers = {}, clock, 0
            self.cta = types.SimpleNamespace(block=block)

    peer_warp, me = Warp(3, (1, 0, 0)), Warp(5, (0, 0, 0))
    peer = types.SimpleNamespace(
        reached_free=(peer_warp, 4), cta=types.SimpleNamespace(block=(1, 0, 0))
    )
    with pytest.raises(Hazard) as raised:
        tmem._peer_done_before(me, peer, hazards.UNKNOWN)
    assert "reached its own dealloc, but nothing orders that" in str(raised.value)
    me.knows[peer_warp] = 4  # the handshake's arrive and wait hand over that knowledge
    tmem._peer_done_before(me, peer, hazards.UNKNOWN)


def test_notebook_15_shows_the_pair_plant_in_its_tmem_rules():
    cells = _cells("15_cta_pair_clc_gemm")
    rules = next(i for i, c in enumerate(cells) if "**Tensor memory in a pair.**" in _text(c))
    section_4 = next(i for i, c in enumerate(cells) if "## 4 · " in "".join(c["source"]))
    (at,) = [
        i
        for i, c in enumerate(cells)
        if 'planted_mistakes(["pair_dealloc_synced"])' in "".join(c["source"])
    ]
    assert rules < at < section_4 and cells[at - 1]["cell_type"] == "markdown"
    assert "only a pair can make" in "".join(cells[at - 1]["source"])
    shown = _text(cells[at])
    assert "tensor memory misuse" in shown and "handshake is missing" in shown
    assert "PASSED" not in shown and "`" not in shown.split("\n", 1)[1]  # no kernel line quoted


# ---------------------------------------------------------------- 01.saxpy


def test_the_saxpy_skeleton_names_what_to_do_not_the_lines():
    from course.exercises import kernel_exercises

    cells = _cells("01_dsl_basics")
    (skeleton,) = [
        "".join(c["source"])
        for c in cells
        if "exercise-kernel" in c.get("metadata", {}).get("tags", [])
    ]
    ex = kernel_exercises.lookup("01.saxpy")
    for line in ("alpha * gX", "gOut[i] =", "block_idx * block_dim", "bid *", "if i < n"):
        for said in (skeleton, ex.prompt, ex.hint):
            assert line not in said, (line, said[:80])
    assert "...  # your code here" in skeleton and "saxpy" in skeleton
    shown = _text(next(c for c in cells if 'check("01.saxpy", saxpy_kernel)' in _text(c)))
    assert "not solved yet" in shown and "block_idx * block_dim" not in shown
