"""NVIDIA's Blackwell tutorial GEMMs (cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_*.py),
unmodified, on the CPU executor: through their own host function, with the tensors their
`run_dense_gemm` makes (integer-valued, -2..1, made on the CPU), exact against torch, with
no hazard; and planted mistakes in copies of their source named by kind and line.

Tile sizes are the examples' module constants (128x256 for fp16_gemm_0, a 256-row CTA pair
for the rest); the shapes are one to four tiles, with clusters and persistent schedulers
(max_active_clusters=1: one cluster walks every tile) where the example has them.
"""

from __future__ import annotations


import pytest
import torch

from course.execute import host, tcgen05, tmem
from course.execute.hazards import Hazard
from tests import nvidia_examples

pytestmark = nvidia_examples.needs_examples()

FOLDER = "cute/blackwell/tutorial/tutorial_gemm"


def _operands(m: int, n: int, k: int):
    """A (M x K), B (N x K) and C (M x N) as run_dense_gemm makes them, on the CPU."""
    torch.manual_seed(1111)

    def make(mn, kk):
        return torch.empty(mn, kk, dtype=torch.int32).random_(-2, 2).to(torch.float16)

    return make(m, k), make(n, k), make(m, n)


def _marked(t: torch.Tensor, divisibility: int):
    from cutlass.cute.runtime import from_dlpack

    return (
        from_dlpack(t, assumed_align=32)
        .mark_layout_dynamic(leading_dim=1)
        .mark_compact_shape_dynamic(mode=1, divisibility=divisibility)
    )


def _gemm(example, mnk, *extra):
    """example.host_function(a, b, c, *extra, no_cache=True) on the executor: C, the
    reference (fp32 einsum rounded to fp16, as run_dense_gemm checks) and the session."""
    m, n, k = mnk
    a, b, c = _operands(m, n, k)
    with host.interpreting() as session:
        example.host_function(_marked(a, k), _marked(b, k), _marked(c, n), *extra, no_cache=True)
    ref = torch.einsum("mk,nk->mn", a.float(), b.float()).to(torch.float16)
    return c, ref, session


# (example, shape, the host function's extra arguments: max_active_clusters and the like)
CASES = [
    ("fp16_gemm_1", (256, 256, 128), ()),
    ("fp16_gemm_1", (512, 512, 192), ()),
    ("fp16_gemm_2", (256, 256, 256), ()),
    ("fp16_gemm_2", (512, 256, 128), ()),
    ("fp16_gemm_3", (512, 256, 128), (1,)),
    ("fp16_gemm_3", (256, 512, 448), (2,)),  # 7 k-tiles over 6 stages: the ring wraps
    ("fp16_gemm_3_1", (512, 256, 128), (1,)),
    ("fp16_gemm_3_1", (256, 512, 192), (2,)),
    ("fp16_gemm_4", (256, 1024, 128), (1, 1)),  # a 2x4 preferred cluster, 2x1 fallback
    ("fp16_gemm_5", (512, 256, 128), (1,)),  # 2x2 clusters of 256x64 tiles, TMA prefetch
]


@pytest.mark.parametrize("name,mnk,extra", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_tutorial_gemm_is_exact_with_no_hazard(name, mnk, extra):
    example = nvidia_examples.load(f"{FOLDER}/{name}.py")
    c, ref, session = _gemm(example, mnk, *extra)
    assert torch.equal(c, ref), (c.float() - ref.float()).abs().max()
    # the tutorials read tcgen05.ld's registers with no wait::ld: said, never refused
    notes = session.results[-1].notes
    assert notes and {n.kind for n in notes} == {tcgen05.WAIT_LD}, notes
    assert "does not call the registers undefined" in notes[0].detail


def test_fp16_gemm_0_on_two_ctas_is_exact_and_its_missing_tail_a_note():
    """fp16_gemm_0 on two CTAs: the TiledMma is a by-value kernel parameter, so CTA 1's first
    MMA overwrites (the ACCUMULATE CTA 0 set is CTA 0's own copy), and C is exact. It has no
    ab_producer.tail(): its last commits arrive on its own CTA's barriers with nobody
    waiting, which the PTX ISA does not forbid: a note (tcgen05.at_exit), not a hazard."""
    example = nvidia_examples.load(f"{FOLDER}/fp16_gemm_0.py")
    c, ref, session = _gemm(example, (256, 256, 320))
    assert torch.equal(c, ref)
    kinds = {n.kind for n in session.results[-1].notes}
    assert kinds == {tcgen05.WAIT_LD, tcgen05.COMMIT_NOT_WAITED}, kinds


def test_fp16_gemm_6_dequantizes_then_multiplies_under_pdl():
    """Two launches, the second with use_pdl (griddepcontrol.wait before B is read), made
    through cute.compile as run_dense_gemm does; the call leaves out the Constexpr."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    example = nvidia_examples.load(f"{FOLDER}/fp16_gemm_6.py")
    m, n, k = 256, 256, 128
    a, _, c = _operands(m, n, k)
    b_quantized = torch.empty(n, k, dtype=torch.int32).random_(-2, 2).to(torch.int8)
    b_dequantized = torch.zeros(n, k, dtype=torch.float16)

    def args():
        return (
            from_dlpack(a).mark_layout_dynamic(),
            _marked(b_quantized, k),
            _marked(b_dequantized, k),
            from_dlpack(c).mark_layout_dynamic(),
        )

    # by position, as run_dense_gemm passes them: the Constexpr between the others
    scale_factor, max_active_clusters, stream = 2.33, 1, None
    with host.interpreting() as session:
        compiled = cute.compile(
            example.host_function, *args(), scale_factor, max_active_clusters, stream
        )
        compiled(*args(), scale_factor, stream)
    expected_b = (b_quantized.float() * scale_factor).to(torch.float16)
    assert torch.equal(b_dequantized, expected_b)
    ref = torch.einsum("mk,nk->mn", a.float(), expected_b.float()).to(torch.float16)
    assert torch.equal(c, ref)
    assert len(session.results[-1].launches) == 2


# ---------------------------------------------------------------- planted mistakes


def _planted(tmp_path, name: str, old: str, new: str):
    """A copy of the example with one textual edit (tests.nvidia_examples.planted): the
    module and the copy's text."""
    module, text, _ = nvidia_examples.planted(f"{FOLDER}/{name}.py", old, new, tmp_path)
    return module, text


def _hazard_of(example, mnk, *extra) -> Hazard:
    with pytest.raises(Hazard) as caught:
        _gemm(example, mnk, *extra)
    return caught.value


def test_the_epilogue_reading_tmem_before_the_accumulator_wait_is_named(tmp_path):
    """fp16_gemm_1 with the accumulator pipeline's wait skipped (a try_wait token that says
    "ready"): the tcgen05.ld reads TMEM no waited-for commit wrote."""
    c, ref, _ = _gemm(nvidia_examples.load(f"{FOLDER}/fp16_gemm_1.py"), (256, 256, 128))
    assert torch.equal(c, ref)  # the control: the example as NVIDIA wrote it
    example, source = _planted(
        tmp_path,
        "fp16_gemm_1",
        "acc_full = acc_consumer.wait_and_advance()",
        "acc_full = acc_consumer.wait_and_advance(try_wait_token=True)",
    )
    hazard = _hazard_of(example, (256, 256, 128))
    assert hazard.kind == tmem.TMEM, hazard
    assert hazard.site.lineno == nvidia_examples.line_of(
        source, "cute.copy(tmem_tiled_copy, tDtC"
    ), hazard


def test_tmem_never_freed_is_named(tmp_path):
    example, _ = _planted(tmp_path, "fp16_gemm_3", "        tmem.free(tmem_ptr)\n", "")
    hazard = _hazard_of(example, (512, 256, 128), 1)
    assert hazard.kind == tmem.TMEM and "still allocated" in str(hazard), hazard


def test_a_dropped_producer_tail_is_named(tmp_path):
    """fp16_gemm_3_1 without ab_producer.tail(): the last stages' releases (tcgen05.commit)
    are never waited on when the CTA exits."""
    example, source = _planted(tmp_path, "fp16_gemm_3_1", "        ab_producer.tail()\n", "")
    hazard = _hazard_of(example, (512, 256, 128), 1)
    assert hazard.kind == tcgen05.COMMIT_NOT_WAITED, hazard
    assert "release" in hazard.site.text(), hazard
