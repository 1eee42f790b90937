"""Every static rule read off PTX holds NVIDIA's own Blackwell tutorial GEMMs to be right.

A rule of course.cute.ptx_protocol (and the PTX rules of exercises 14 and 15) may refuse a
kernel only for what the PTX ISA forbids; NVIDIA's CuTe DSL tutorial GEMMs
(fp16_gemm_0 ... fp16_gemm_6, compiled unmodified for sm_100a on this CPU by
course.tools.upstream_mix) do the same things as the course's kernels, so none of their PTX
may be refused. A rule that refuses one is a bug in the rule. Notes (what the ISA describes
but does not forbid) are allowed and must name NVIDIA's way as such, never as wrong.
"""

from types import SimpleNamespace

import pytest

from course.cute import ptx_protocol as pp
from tests.test_exercises_nb14 import CUTLASS  # the one setting: NVIDIA's examples, unmodified

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(not CUTLASS.is_dir(), reason=f"no CUTLASS examples at {CUTLASS}"),
]


@pytest.fixture(scope="module")
def tutorial_ptx():
    """name -> (the module's PTX, the GEMM kernel's PTX), each tutorial compiled once."""
    from course.tools import upstream_mix as um

    compiled = {}

    def ptx(name: str) -> tuple[str, str]:
        if name not in compiled:
            _, art = um.tutorial_artifacts(CUTLASS, name)
            kernels = um.ptx_kernels(art.ptx)
            compiled[name] = (art.ptx, kernels[um.gemm_kernel(kernels, r"tcgen05\.mma")])
        return compiled[name]

    return ptx


def _tutorials():
    from course.tools import upstream_mix as um

    return um.TUTORIALS


def _compiled(ptx: str):
    """What an exercise's PTX rules read: the PTX and its instruction lines."""
    return SimpleNamespace(ptx=ptx, instructions=pp.instructions(ptx))


@pytest.mark.parametrize("name", _tutorials())
def test_no_rule_of_the_ptx_protocol_refuses_nvidia_s_tutorial(tutorial_ptx, name):
    """Every rule that applies, on the GEMM kernel and on the whole module (fp16_gemm_6 holds
    a dequantisation kernel too; fp16_gemm_4 its body twice, for two cluster shapes)."""
    for ptx in tutorial_ptx(name):
        applied = [rule for rule in pp.RULES if pp.applies(rule, ptx)]
        assert {"barriers_ready", "tmem_freed", "tmem_load_waited"} <= set(applied)
        assert pp.refusals(ptx) == [], [str(v) for v in pp.refusals(ptx)]


@pytest.mark.parametrize("name", ["fp16_gemm_1", "fp16_gemm_4"])
def test_barriers_published_nvidia_s_way_are_ready(tutorial_ptx, name):
    """fp16_gemm_1: the TMEM allocator's barrier is fenced and published by a CTA barrier,
    after the pipelines' barriers were published by cluster barriers; fp16_gemm_4: every
    group of inits twice over. The ISA's fence orders the thread's prior inits, a thread
    synchronisation after it publishes them: both hold."""
    _, ptx = tutorial_ptx(name)
    assert pp.barriers_ready(pp.instructions(ptx)) == []


def test_a_tmem_load_nvidia_s_way_is_a_note_that_does_not_call_it_wrong(tutorial_ptx):
    """CuTe DSL 4.8.1 emits no tcgen05.wait::ld for the tutorials: the ISA observes a load's
    completion through wait::ld but does not make the registers undefined before it."""
    _, ptx = tutorial_ptx("fp16_gemm_0")
    found = pp.tmem_load_waited(pp.instructions(ptx))
    assert found and all(v.note for v in found)
    said = found[0].detail
    assert "NVIDIA's tutorial GEMMs do" in said and "does not call the registers undefined" in said
    assert "wrong" not in said


@pytest.mark.parametrize("name", _tutorials())
def test_no_ptx_rule_of_exercise_14_refuses_nvidia_s_tutorial(tutorial_ptx, name):
    from course.exercises import nb14_epilogue_kernel as ex

    c = _compiled(tutorial_ptx(name)[1])
    for rule in (ex.all_warps_done_before_free, ex.waits_for_the_accumulator):
        finding = rule(c)
        assert finding.status == "pass", (rule.__name__, finding)
    assert all(f.status == "pass" for f in ex.keeps_the_protocol(c))


@pytest.mark.parametrize("name", ["fp16_gemm_3_1", "fp16_gemm_4", "fp16_gemm_5", "fp16_gemm_6"])
def test_no_ptx_rule_of_exercise_15_refuses_nvidia_s_clc_tutorial(tutorial_ptx, name):
    """NVIDIA's scheduler asks is_canceled, fences, releases the response buffer, and only
    then asks get_first_ctaid of the registers it already loaded: one read, released once."""
    from course.exercises import nb15_clc_kernel as ex

    c = _compiled(tutorial_ptx(name)[1])
    for rule in (ex.waits_before_decoding, ex.releases_each_answer, ex.fences_before_release):
        finding = rule(c)
        assert finding.status == "pass", (rule.__name__, finding)
