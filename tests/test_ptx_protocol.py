"""The Blackwell kernels' synchronisation, read from the PTX they compile to (no GPU).

Every configuration of the three tcgen05 kernels keeps every rule of
course.cute.ptx_protocol; a kernel changed to break a rule (compiled with one of its
synchronisation calls removed) or PTX with one instruction removed is caught, each by the
rule that names the mistake.
"""

import re

import cutlass.cute as cute
import pytest
import torch

from course.cute import ptx_protocol as pp
from kernels import cta_pair_clc_gemm, cta_pair_gemm, tcgen05_gemm
from kernels.artifacts import compile_artifacts
from tests import plants

KERNELS = {
    "tcgen05_gemm": tcgen05_gemm,
    "cta_pair_gemm": cta_pair_gemm,
    "cta_pair_clc_gemm": cta_pair_clc_gemm,
}
CASES = [
    (name, dtype, tile_n)
    for name in KERNELS
    for dtype in (torch.bfloat16, torch.float16)
    for tile_n in (128, 256)
]


def _ptx(name, dtype=torch.bfloat16, tile_n=128):
    mod = KERNELS[name]
    return mod.artifacts("sm_100a", dtype, mod.Config(tile_n=tile_n)).ptx


@pytest.mark.compile
@pytest.mark.parametrize(
    "name,dtype,tile_n", CASES, ids=[f"{n}-{str(d)[6:]}-{t}" for n, d, t in CASES]
)
def test_every_configuration_keeps_the_protocol(name, dtype, tile_n):
    assert pp.check(_ptx(name, dtype, tile_n)) == []


def _without(ptx: str, pattern: str, which: int | None = -1) -> str:
    """The PTX with the instruction matching `pattern` removed: the `which`-th of them
    (default the last), or all of them with which=None."""
    lines = ptx.splitlines()
    hits = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert hits, f"no {pattern!r} in the PTX"
    for i in sorted(hits if which is None else [hits[which]], reverse=True):
        del lines[i]
    return "\n".join(lines)


MUTANTS = [  # (kernel, instruction removed, which one, the rule that must catch it)
    ("tcgen05_gemm", r"tcgen05\.dealloc", -1, "tmem_freed"),
    ("tcgen05_gemm", r"tcgen05\.relinquish_alloc_permit", 0, "tmem_freed"),
    ("tcgen05_gemm", r"fence\.mbarrier_init", 0, "barriers_ready"),
    ("cta_pair_gemm", r"barrier\.cluster\.wait", None, "barriers_ready"),
    ("tcgen05_gemm", r"tcgen05\.wait::ld", 0, "tmem_load_waited"),
    ("cta_pair_clc_gemm", r"cp\.async\.bulk\.wait_group\.read\s+0;", -1, "tma_stores_drained"),
    ("cta_pair_gemm", r"mbarrier\.try_wait", -1, "pair_dealloc_synced"),
    ("cta_pair_clc_gemm", r"mbarrier\.arrive\.\S*shared::cluster", -1, "pair_dealloc_synced"),
]


@pytest.mark.compile
@pytest.mark.parametrize(
    "name,pattern,which,rule", MUTANTS, ids=[f"{m[0]}-{m[3]}-{i}" for i, m in enumerate(MUTANTS)]
)
def test_one_missing_instruction_is_caught_by_its_rule(name, pattern, which, rule):
    found = pp.check(_without(_ptx(name), pattern, which))
    assert rule in {v.rule for v in found}, found


@pytest.mark.compile
def test_a_clc_response_read_before_its_wait_is_caught():
    ptx = _ptx("cta_pair_clc_gemm")
    code = pp.instructions(ptx)
    barrier = re.findall(r"\[([^\]]+)\]", next(l for l in code if "try_cancel" in l))[-1]
    broken = _without(ptx, rf"mbarrier\.try_wait\S* P1, \[{re.escape(barrier)}\]", 0)
    assert "clc_response_waited" in {v.rule for v in pp.check(broken)}


def _compiled_without(monkeypatch, call: str, key: str) -> str:
    """The 1-CTA kernel compiled for sm_100a with `cute.arch.<call>` made a no-op: a real
    kernel change, compiled by CuTe DSL like any other."""
    plants.no_op(monkeypatch, cute.arch, call)
    art = compile_artifacts(
        ("protocol-mutant", key),
        "sm_100a",
        *tcgen05_gemm.GEMM.build(
            "sm_100a", torch.bfloat16, torch.bfloat16, tcgen05_gemm.Config(), "k", "k"
        ),
    )
    return art.ptx


@pytest.mark.compile
@pytest.mark.parametrize(
    "call,rule",
    [
        ("fence_view_async_tmem_load", "tmem_load_waited"),
        ("fence_view_async_shared", "staging_visible_to_tma"),
    ],
)
def test_a_kernel_missing_a_fence_fails_the_protocol(monkeypatch, call, rule):
    found = pp.check(_compiled_without(monkeypatch, call, call))
    assert rule in {v.rule for v in found}, found


@pytest.mark.parametrize(
    "operand,base,offset",
    [
        ("[%r15]", "%r15", 0),
        ("[%r15+128]", "%r15", 128),  # the form LLVM folds a constant TMEM column into
        ("[%rd3+-8]", "%rd3", -8),  # LLVM's negative offset
        ("[%rd3-8]", "%rd3", -8),
        ("[%r14+0x40]", "%r14", 64),
        ("[%r1 + 4]", "%r1", 4),
        ("[smem_buffer]", "smem_buffer", 0),
        ("[smem_buffer+16]", "smem_buffer", 16),
        ("[0x100]", None, 256),
        ("[%rd1, {%r2, %r3}]", "%rd1", 0),  # a tensor map and its coordinates
    ],
)
def test_every_address_form_of_the_ptx_isa_is_read(operand, base, offset):
    """[var], [reg], [reg+immOff], [var+immOff], [immAddr]: one reader for every check."""
    assert pp.addresses(f"tcgen05.cp.cta_group::1.32x128b.warpx4 {operand}, %rd28;") == [
        pp.Address(base, offset)
    ]


def _moved(ptx: str, pattern: str, after: str) -> str:
    """The PTX with the last instruction matching `pattern` moved to just after the last
    one matching `after`."""
    lines = ptx.splitlines()
    line = lines.pop([i for i, text in enumerate(lines) if re.search(pattern, text)][-1])
    lines.insert([i for i, text in enumerate(lines) if re.search(after, text)][-1] + 1, line)
    return "\n".join(lines)


@pytest.mark.compile
def test_the_stores_may_drain_after_tmem_is_freed_and_after_the_exit_it_is_a_note():
    """As NVIDIA's block-scaled GEMM ends (free, then drain): a bulk store reads shared
    memory, never TMEM, so no rule orders its drain with the dealloc. A kernel that exits
    with its stores in flight (as NVIDIA's TMA tutorials do) hears a note, never a refusal:
    the PTX ISA leaves that defined for the CTA's own shared memory."""
    ptx = _ptx("tcgen05_gemm")
    drain = r"cp\.async\.bulk\.wait_group\.read\s+0;"
    assert pp.check(_moved(ptx, drain, r"tcgen05\.dealloc")) == []
    late = _moved(ptx, drain, r"^\s*ret;")
    assert [v for v in pp.check(late) if v.rule == "tma_stores_drained" and v.note]
    assert pp.refusals(late) == []
