"""Notebook 14's kernel: compiled for sm_100a here (no GPU), checked live only on a B200-class GPU.

No Blackwell GPU is available to this project: the gpu(needs="sm_100a") tests are
skipped everywhere else, with the reason, and are never reported as passes.
"""

import re

import pytest
import torch

from course.bench import compare
from course.bench.gemm_bench import GemmProblem, check_gemm, prepare
from course.runtime.hardware import machine
from course.models.instruction_descriptor import InstructionDescriptor
from kernels import sm100_parts, tcgen05_gemm
from kernels.host import KernelInputError, UnsupportedGPU

from .blackwell_helpers import (
    assert_refused,
    check_recorded_launch,
    fake_b200_host,
    last_operand_value,
    sass_mnemonics,
    validation_cases,
)
from .helpers import pretend_gpu


@pytest.fixture(scope="module")
def art():
    return tcgen05_gemm.artifacts("sm_100a", torch.bfloat16)


@pytest.fixture(scope="module")
def sass(art):
    return art.sass()


# ---------------------------------------------------------------- what the compiler produced

# ---------------------------------------------------------------- the epilogue's staging buffers


def _store_ring_conflicts(buffer_of, subtiles: int, tiles: int, epi_stages: int) -> list:
    """Play a CTA's epilogue TMA stores the way PipelineTmaStore runs them: each store writes
    a staging buffer, commits its bulk group, and producer_acquire then waits until at most
    epi_stages - 1 stores are still reading theirs. Returns the (tile, sub-tile) of every
    store that wrote a buffer an earlier store in flight was still reading."""
    in_flight, conflicts, store = [], [], 0
    for tile in range(tiles):
        for sub in range(subtiles):
            buffer = buffer_of(store, sub)
            if buffer in in_flight:
                conflicts.append((tile, sub))
            in_flight.append(buffer)
            del in_flight[: max(0, len(in_flight) - (epi_stages - 1))]
            store += 1
    return conflicts


@pytest.mark.parametrize("epi_stages", (2, 3, 4))
@pytest.mark.parametrize("subtiles", range(1, 10))
def test_staging_buffers_are_never_written_while_a_store_reads_them(subtiles, epi_stages):
    """The kernel's rule (a count of stores that runs on across tiles), for any number of
    sub-tiles per tile, over three tiles of a persistent CTA."""

    def kernel_rule(store, sub):
        return sm100_parts.staging_buffer(store, epi_stages)

    assert _store_ring_conflicts(kernel_rule, subtiles, 3, epi_stages) == []


def test_restarting_the_count_on_every_tile_overwrites_a_store_in_flight():
    """The rule the epilogue used before (buffer = sub % stages, from 0 on each tile) is
    right only when a tile's sub-tiles are a multiple of the stages: 4 or 8 sub-tiles of 32
    columns pass, an odd count overwrites the buffer of the previous tile's last store."""

    def per_tile(store, sub):
        return sub % 2

    assert _store_ring_conflicts(per_tile, 4, 3, 2) == []
    assert _store_ring_conflicts(per_tile, 3, 3, 2) == [(1, 0), (2, 0)]


@pytest.mark.compile
def test_ptx_has_the_tcgen05_instructions(art):
    assert ".target sm_100a" in art.ptx
    # TMEM lifecycle: allocate (all 128 lanes), give up the permit, free
    assert art.count_ptx(r"tcgen05\.alloc\.cta_group::1\.sync\.aligned") == 1
    assert art.count_ptx(r"tcgen05\.dealloc\.cta_group::1") == 1
    assert art.count_ptx(r"tcgen05\.relinquish_alloc_permit\.cta_group::1") == 1
    # one 64-wide K-block = 4 MMAs of K=16, operands from smem descriptors, D in TMEM
    assert art.count_ptx(r"tcgen05\.mma\.cta_group::1\.kind::f16") == 4
    # commits: the stage's empty barrier, and the accumulator's full barrier
    assert art.count_ptx(r"tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one") == 2
    # epilogue: TMEM -> registers, 32 lanes x 32 columns per warp, then wait for it
    assert art.count_ptx(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x32\.b32") == 1
    assert art.count_ptx(r"tcgen05\.wait::ld") == 1
    # TMA: A and B loads into shared memory, C stored from shared memory
    assert art.count_ptx(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.tile\.mbarrier") == 2
    assert art.count_ptx(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta") == 1
    assert art.count_ptx(r"mbarrier\.try_wait\.parity") >= 3
    # none of notebook 15's ideas yet
    for absent in (
        r"cta_group::2",
        r"multicast::cluster",
        r"clusterlaunchcontrol",
        r"barrier\.cluster\.arrive",
    ):
        assert art.count_ptx(absent) == 0, absent


@pytest.mark.compile
def test_the_constants_that_matter(art):
    plan = tcgen05_gemm.footprint()
    # TMEM: one 128 x 128 fp32 accumulator = 128 columns (a power of two, >= 32)
    assert last_operand_value(art.ptx, r"tcgen05\.alloc\.") == plan["tmem_columns"] == 128
    assert last_operand_value(art.ptx, r"tcgen05\.dealloc\.") == 128
    # each stage's full barrier expects 128x64 of A + 128x64 of B, 2 bytes each
    assert (
        last_operand_value(art.ptx, r"mbarrier\.arrive\.expect_tx")
        == plan["full_barrier_bytes"]
        == 32768
    )


@pytest.mark.compile
@pytest.mark.parametrize("dtype,tile_n", [(torch.bfloat16, 128), (torch.float16, 256)])
def test_the_instruction_descriptor_is_the_one_built_by_hand(dtype, tile_n):
    art = tcgen05_gemm.artifacts("sm_100a", dtype, tcgen05_gemm.Config(tile_n))
    name = str(dtype).replace("torch.", "")
    idesc = InstructionDescriptor(m=128, n=tile_n, a=name, b=name, d="float32").encode()
    assert re.search(rf"\b{idesc}\b", art.ptx), f"{idesc:#x} not in the PTX"


@pytest.mark.compile
def test_sass_shows_blackwell_tensor_core_and_tma_opcodes(sass):
    ops = sass_mnemonics(sass)
    assert ops["UTCHMMA"] == 4  # tcgen05.mma kind::f16
    assert ops["UTCBAR"] == 2  # tcgen05.commit
    assert ops["LDTM"] >= 1  # tcgen05.ld
    assert ops["UTCATOMSWS"] >= 2  # tcgen05.alloc / dealloc
    assert ops["UTMALDG"] == 2 and ops["UTMASTG"] >= 1  # TMA load / store
    assert ops["UGETNEXTWORKID"] == 0  # no CLC in this kernel


@pytest.mark.compile
def test_resources(art):
    (res,) = art.resource_usage().values()
    assert 0 < res["registers"] <= 128 and res["stack_frame_bytes"] == 0


@pytest.mark.compile
@pytest.mark.parametrize(
    "dtype,out_dtype,tile_n", [(torch.float16, None, 128), (torch.bfloat16, torch.float16, 256)]
)
def test_other_configurations_compile(dtype, out_dtype, tile_n):
    art = tcgen05_gemm.artifacts("sm_100a", dtype, tcgen05_gemm.Config(tile_n), out_dtype=out_dtype)
    assert art.count_ptx(r"tcgen05\.mma\.cta_group::1\.kind::f16") == 4
    assert art.count_ptx(r"tcgen05\.alloc") == 1


@pytest.mark.compile
def test_each_configuration_compiles_once(art):
    assert tcgen05_gemm.artifacts("sm_100a", torch.bfloat16) is art


def test_config_is_validated():
    with pytest.raises(ValueError):
        tcgen05_gemm.Config(tile_n=96)
    with pytest.raises(ValueError):
        tcgen05_gemm.Config(stages=1)


# ---------------------------------------------------------------- validation before launch


@pytest.mark.parametrize(
    "what,kwargs,message", validation_cases(), ids=[c[0] for c in validation_cases()]
)
def test_inputs_are_validated_before_launch(monkeypatch, what, kwargs, message):
    pretend_gpu(monkeypatch, (10, 0), accept_cpu_tensors=True)
    assert_refused(tcgen05_gemm, kwargs, message)


def test_cpu_tensors_are_refused(monkeypatch):
    pretend_gpu(monkeypatch, (10, 0))
    a = torch.zeros(64, 64, dtype=torch.bfloat16)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        tcgen05_gemm.run(a, a)


@pytest.mark.skipif(machine().can("sm_100a"), reason="checks the refusal off Blackwell")
def test_off_blackwell_run_refuses_and_says_why():
    a = torch.zeros(64, 64, dtype=torch.bfloat16)
    with pytest.raises(UnsupportedGPU, match="sm_100a.*compile-only"):
        tcgen05_gemm.run(a, a)


def test_prepare_refuses_what_the_kernel_cannot_do():
    with pytest.raises(KernelInputError, match="K-major"):
        tcgen05_gemm.prepare(GemmProblem(128, 128, 128, a_major="m"))
    with pytest.raises(KernelInputError, match="bf16/fp16"):
        tcgen05_gemm.prepare(GemmProblem(128, 128, 128, torch.float32))


# ---------------------------------------------------------------- the live path, up to launch


@pytest.mark.compile
def test_run_reaches_the_launch_on_a_fake_b200(monkeypatch):
    recorder = fake_b200_host(monkeypatch, tcgen05_gemm)
    a = torch.randn(300, 200).to(torch.bfloat16)
    b = torch.randn(136, 200).to(torch.bfloat16)
    out = tcgen05_gemm.run(a, b)
    assert out.shape == (300, 136) and out.dtype == torch.bfloat16
    check_recorded_launch(recorder, tcgen05_gemm, a, b, out)


@pytest.mark.compile
def test_prepare_goes_through_the_ladder_on_a_fake_b200(monkeypatch):
    recorder = fake_b200_host(monkeypatch, tcgen05_gemm)
    problem = GemmProblem(256, 128, 64, torch.float16)
    gemm = prepare("tcgen05_gemm", problem)
    a, b = problem.operands(device="cpu")
    c = torch.empty(256, 128, dtype=torch.float16)
    gemm(a, b, c)
    check_recorded_launch(recorder, tcgen05_gemm, a, b, c)


def test_degenerate_shapes_never_launch(monkeypatch):
    recorder = fake_b200_host(monkeypatch, tcgen05_gemm)
    bf = torch.bfloat16
    out = tcgen05_gemm.run(torch.zeros(0, 64, dtype=bf), torch.zeros(64, 64, dtype=bf))
    assert out.shape == (0, 64)
    out = tcgen05_gemm.run(torch.zeros(16, 0, dtype=bf), torch.zeros(8, 0, dtype=bf))
    assert (out == 0).all() and out.shape == (16, 8)  # K = 0: C = 0 without a launch
    assert recorder.calls == []


# ---------------------------------------------------------------- live, on sm_100 only

SHAPES = [
    (128, 128, 64),
    (256, 256, 256),
    (1, 8, 8),
    (129, 136, 72),
    (300, 264, 200),
    (1000, 520, 1032),
    (2048, 2048, 2048),
]


@pytest.mark.gpu(needs="sm_100a")
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("dtype", tcgen05_gemm.DTYPES)
def test_matches_torch(m, n, k, dtype):
    verdict = check_gemm(lambda a, b, c: tcgen05_gemm.run(a, b, c), GemmProblem(m, n, k, dtype))
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_100a")
@pytest.mark.parametrize("m,n,k", [(256, 256, 256), (300, 264, 200)])
def test_wide_tiles_and_fp16_output_match_torch(m, n, k):
    config = tcgen05_gemm.Config(tile_n=256)
    problem = GemmProblem(m, n, k, torch.bfloat16, out_dtype=torch.float16)
    verdict = check_gemm(lambda a, b, c: tcgen05_gemm.run(a, b, c, config), problem)
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_100a")
def test_ladder_entry_matches_torch():
    problem = GemmProblem(512, 384, 320)
    verdict = check_gemm(prepare("tcgen05_gemm", problem), problem)
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_100a")
def test_gpu_validation_and_fresh_outputs():
    a = torch.randn(256, 128, device="cuda").to(torch.bfloat16)
    b = torch.randn(128, 128, device="cuda").to(torch.bfloat16)
    with pytest.raises(KernelInputError, match="aligned"):
        tcgen05_gemm.run(a.view(-1)[1:].view(-1)[: 255 * 128].view(255, 128), b)
    first = tcgen05_gemm.run(a, b)
    second = tcgen05_gemm.run(a, b)  # a new output each call, same numbers
    assert first.data_ptr() != second.data_ptr()
    assert compare(first, a.double() @ b.double().t()).ok
    assert torch.equal(first, second)


def test_cpu_traces_target_sm100a_even_where_cute_detects_a_hopper_gpu():
    """On an H100, CuTe DSL targets sm_90a by default and tcgen05 ops refuse to trace;
    notebook 14's CPU-side layout evaluation must name sm_100a itself."""
    import os
    import subprocess
    import sys

    code = (
        "from course.cute import kernel_traces as p; "
        "print(len(p.epilogue_tmem_ownership(128, threads=(0,))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "CUTE_DSL_ARCH": "sm_90a"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "128"
