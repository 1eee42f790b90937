"""Notebook 15's kernels, the CTA pair (kernels.cta_pair_gemm) and the CTA pair under Cluster
Launch Control (kernels.cta_pair_clc_gemm): compiled for sm_100a here (no GPU), checked live
only on a B200-class GPU.

No Blackwell GPU is available to this project: the gpu(needs="sm_100a") tests are
skipped everywhere else, with the reason, and are never reported as passes.
"""

import re

import pytest
import torch

from course.bench.gemm_bench import GemmProblem, check_gemm, prepare
from course.runtime.hardware import machine
from course.models.instruction_descriptor import InstructionDescriptor
from course.emulate.blackwell_gemm import cta_pair_clc_gemm_shape
from course.cute import kernel_traces
from kernels import cta_pair_clc_gemm as pair
from kernels import cta_pair_gemm
from kernels.host import UnsupportedGPU

from .blackwell_helpers import (
    assert_refused,
    check_recorded_launch,
    fake_b200_host,
    last_operand_value,
    sass_mnemonics,
    validation_cases,
)
from .helpers import pretend_gpu


# (module, accumulator slots in TMEM): the CTA pair alone, then with CLC and ping-pong
KERNELS = {"cta_pair_gemm": (cta_pair_gemm, 1), "cta_pair_clc_gemm": (pair, 2)}


@pytest.fixture(scope="module", params=sorted(KERNELS))
def kernel(request):
    module, slots = KERNELS[request.param]
    return module, slots, module.artifacts("sm_100a", torch.bfloat16)


@pytest.fixture(scope="module")
def art():
    return pair.artifacts("sm_100a", torch.bfloat16)


@pytest.fixture(scope="module")
def sass(kernel):
    return kernel[2].sass()


# ---------------------------------------------------------------- what the compiler produced


@pytest.mark.compile
def test_ptx_has_the_pair_mma_and_its_tmem(kernel):
    _, slots, art = kernel
    assert ".target sm_100a" in art.ptx
    # TMEM, allocated for the pair: slots x 128 columns, one alloc and one free per CTA
    assert art.count_ptx(r"tcgen05\.alloc\.cta_group::2\.sync\.aligned") == 1
    assert art.count_ptx(r"tcgen05\.dealloc\.cta_group::2") == 1
    assert art.count_ptx(r"tcgen05\.relinquish_alloc_permit\.cta_group::2") == 1
    assert last_operand_value(art.ptx, r"tcgen05\.alloc\.") == 128 * slots
    assert last_operand_value(art.ptx, r"tcgen05\.dealloc\.") == 128 * slots
    # the paired 256 x 128 x 16 MMA, 4 per 64-wide K-block; no 1-CTA MMA anywhere
    assert art.count_ptx(r"tcgen05\.mma\.cta_group::2\.kind::f16") == 4
    assert art.count_ptx(r"cta_group::1") == 0
    # commits go to both CTAs of the pair (multicast): stage release and slot full
    assert (
        art.count_ptx(
            r"tcgen05\.commit\.cta_group::2\.mbarrier::arrive::one\.shared::cluster"
            r"\.multicast::cluster"
        )
        == 2
    )
    assert art.count_ptx(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x32") == 1
    assert art.count_ptx(r"tcgen05\.wait::ld") == 1


@pytest.mark.compile
def test_ptx_has_the_multicast_loads_and_barrier_aliasing(kernel):
    art = kernel[2]
    loads = art.ptx_lines(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global")
    assert len(loads) == 2  # A and B
    assert all(".multicast::cluster" in ln and ".cta_group::2" in ln for ln in loads)
    # both loads signal the same barrier register: this CTA's barrier address with the
    # peer bit masked off, i.e. the LEADER's barrier (mask 0xFEFFFFF8 = -16777224)
    barrier_regs = {ln.split("[")[-1].split("]")[0] for ln in loads}
    assert len(barrier_regs) == 1
    (reg,) = barrier_regs
    assert any(
        f"and.b32 \t{reg}," in ln or f"and.b32 {reg}," in ln
        for ln in art.ptx_lines(r"and\.b32.*-16777224")
    )
    # the leader's full barrier expects both CTAs' bytes: 2 x (128x64 A + 64x64 B) x 2 B
    assert last_operand_value(art.ptx, r"mbarrier\.arrive\.expect_tx\.shared\.b64") == 49152
    assert cta_pair_clc_gemm_shape().stage_bytes * 2 == 49152  # the emulator agrees
    assert art.count_ptx(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta") == 1  # C


@pytest.mark.compile
def test_only_the_clc_kernel_asks_for_more_tiles(kernel):
    module, _, art = kernel
    clc = module is pair
    assert (art.count_ptx(r"clusterlaunchcontrol") > 0) == clc
    # both allocate TMEM between two cluster barriers (NVIDIA/cutlass#3316, #3435)
    assert art.count_ptx(r"barrier\.cluster\.arrive") == 2
    assert art.count_ptx(r"barrier\.cluster\.wait") == 2


@pytest.mark.compile
def test_ptx_has_cluster_launch_control(art):
    assert (
        art.count_ptx(
            r"clusterlaunchcontrol\.try_cancel\.async\.shared::cta\.mbarrier::"
            r"complete_tx::bytes\.multicast::cluster::all\.b128"
        )
        == 1
    )
    # each role (TMA, MMA, epilogue) decodes every answer; the MMA warp only needs "is
    # there a tile?" (it reads its A/B from the ring), so the compiler dropped its ctaid
    assert art.count_ptx(r"clusterlaunchcontrol\.query_cancel\.is_canceled") == 3
    assert art.count_ptx(r"clusterlaunchcontrol\.query_cancel\.get_first_ctaid::x") == 2
    assert art.count_ptx(r"mbarrier\.try_wait\.parity") >= 6
    # two cluster barriers around the 2-CTA TMEM allocation (NVIDIA/cutlass#3316, #3435)
    assert art.count_ptx(r"barrier\.cluster\.arrive") == 2
    assert art.count_ptx(r"barrier\.cluster\.wait") == 2
    lines = art.ptx.splitlines()
    alloc = next(i for i, ln in enumerate(lines) if "tcgen05.alloc" in ln)
    waits = [i for i, ln in enumerate(lines) if "barrier.cluster.wait" in ln]
    assert waits[0] < alloc < waits[1]


@pytest.mark.compile
def test_footprint_and_descriptor_match_the_compiled_kernel(kernel):
    module, slots, art = kernel
    plan = module.footprint()
    assert plan["accumulator_slots"] == slots
    assert last_operand_value(art.ptx, r"tcgen05\.alloc\.") == plan["tmem_columns"]
    assert (
        last_operand_value(art.ptx, r"mbarrier\.arrive\.expect_tx\.shared\.b64")
        == plan["full_barrier_bytes"]
    )
    idesc = InstructionDescriptor(m=256, n=128).encode()  # M = 256: the pair's MMA
    assert re.search(rf"\b{idesc}\b", art.ptx), f"{idesc:#x} not in the PTX"


@pytest.mark.compile
def test_sass_shows_the_blackwell_opcodes(kernel, sass):
    ops = sass_mnemonics(sass)
    clc = kernel[0] is pair
    assert ops["UTCHMMA"] == 4
    assert ops["UTCBAR"] == 2
    assert ops["LDTM"] >= 1
    assert ops["UTCATOMSWS"] >= 2
    assert ops["UTMALDG"] == 2 and ops["UTMASTG"] >= 1
    assert ops["UGETNEXTWORKID"] == (1 if clc else 0)  # clusterlaunchcontrol.try_cancel
    assert ops["UCGABAR_ARV"] == 2 and ops["UCGABAR_WAIT"] == 2  # barrier.cluster


@pytest.mark.compile
def test_resources(kernel):
    (res,) = kernel[2].resource_usage().values()
    assert 0 < res["registers"] <= 128 and res["stack_frame_bytes"] == 0


@pytest.mark.compile
def test_wide_tiles_use_all_of_tmem():
    art = pair.artifacts("sm_100a", torch.float16, pair.Config(tile_n=256))
    assert last_operand_value(art.ptx, r"tcgen05\.alloc\.") == 512  # 2 slots x 256 columns
    assert art.count_ptx(r"tcgen05\.mma\.cta_group::2\.kind::f16") == 4


@pytest.mark.compile
@pytest.mark.parametrize("tile_n", [128, 256])
def test_each_cta_holds_the_half_the_emulator_assumes(tile_n):
    shape = cta_pair_clc_gemm_shape(tile_n)
    rows = kernel_traces.pair_operand_rows(tile_n)
    for v in (0, 1):
        assert rows[v]["A"] == (v * shape.cta_m, (v + 1) * shape.cta_m - 1)
        assert rows[v]["C"] == rows[v]["A"]
        assert rows[v]["B"] == (v * shape.b_rows_per_cta, (v + 1) * shape.b_rows_per_cta - 1)


def test_config_is_validated():
    with pytest.raises(ValueError):
        pair.Config(tile_n=64)


# ---------------------------------------------------------------- validation before launch


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize(
    "what,kwargs,message", validation_cases(), ids=[c[0] for c in validation_cases()]
)
def test_inputs_are_validated_before_launch(monkeypatch, name, what, kwargs, message):
    pretend_gpu(monkeypatch, (10, 0), accept_cpu_tensors=True)
    assert_refused(KERNELS[name][0], kwargs, message)


@pytest.mark.skipif(machine().can("sm_100a"), reason="checks the refusal off Blackwell")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_off_blackwell_run_refuses_and_says_why(name):
    a = torch.zeros(256, 64, dtype=torch.bfloat16)
    with pytest.raises(UnsupportedGPU, match="sm_100a.*compile-only"):
        KERNELS[name][0].run(a, a)


# ---------------------------------------------------------------- the live path, up to launch


@pytest.mark.compile
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_run_reaches_the_launch_on_a_fake_b200(monkeypatch, name):
    module = KERNELS[name][0]
    recorder = fake_b200_host(monkeypatch, module)
    a = torch.randn(300, 72).to(torch.bfloat16)  # ragged: 2 pair tiles, the 2nd mostly empty
    b = torch.randn(264, 72).to(torch.bfloat16)
    out = module.run(a, b)
    check_recorded_launch(recorder, module, a, b, out)


@pytest.mark.compile
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_prepare_goes_through_the_ladder_on_a_fake_b200(monkeypatch, name):
    module = KERNELS[name][0]
    recorder = fake_b200_host(monkeypatch, module)
    problem = GemmProblem(512, 256, 128)
    gemm = prepare(name, problem)
    a, b = problem.operands(device="cpu")
    c = torch.empty(512, 256, dtype=torch.bfloat16)
    gemm(a, b, c)
    check_recorded_launch(recorder, module, a, b, c)


# ---------------------------------------------------------------- live, on sm_100 only

SHAPES = [
    (256, 128, 64),
    (256, 256, 256),
    (1, 8, 8),
    (129, 136, 72),
    (300, 264, 200),
    (1000, 520, 1032),
    (4096, 4096, 4096),
    (8192, 1024, 512),
]


@pytest.mark.gpu(needs="sm_100a")
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("dtype", pair.DTYPES)
def test_matches_torch(name, m, n, k, dtype):
    module = KERNELS[name][0]
    verdict = check_gemm(lambda a, b, c: module.run(a, b, c), GemmProblem(m, n, k, dtype))
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_100a")
@pytest.mark.parametrize("m,n,k", [(512, 512, 256), (300, 264, 200)])
def test_wide_tiles_match_torch(m, n, k):
    config = pair.Config(tile_n=256)
    verdict = check_gemm(lambda a, b, c: pair.run(a, b, c, config), GemmProblem(m, n, k))
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_100a")
def test_many_more_tiles_than_sms_are_all_computed():
    # ~1000 pair tiles on ~74 resident clusters: CLC must hand out every one exactly once
    problem = GemmProblem(8192, 8192, 256)
    verdict = check_gemm(prepare("cta_pair_clc_gemm", problem), problem)
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_100a")
def test_repeated_runs_are_identical():
    a = torch.randn(1024, 512, device="cuda").to(torch.bfloat16)
    b = torch.randn(768, 512, device="cuda").to(torch.bfloat16)
    assert torch.equal(pair.run(a, b), pair.run(a, b))
