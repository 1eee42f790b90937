"""Notebooks 10-11: the WGMMA GEMM and the Hopper speed-of-light GEMM."""

import re

import pytest
import torch

from course.bench.gemm_bench import GemmProblem, check_gemm
from kernels import hopper_gemm, wgmma_gemm
from kernels.host import KernelInputError

from .helpers import pretend_gpu


@pytest.mark.compile
def test_wgmma_gemm_uses_tma_mbarriers_and_wgmma():
    art = wgmma_gemm.artifacts("sm_90a", torch.bfloat16)
    assert art.count_ptx(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16") > 0
    assert art.count_ptx(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global.*complete_tx") > 0
    assert art.count_ptx(r"mbarrier\.try_wait\.parity") > 0
    assert art.count_ptx(r"mbarrier\.arrive\.expect_tx") > 0
    assert art.count_ptx(r"wgmma\.wait_group\.sync\.aligned\s+1;") > 0  # one wgmma left in flight
    sass = art.sass()
    assert "HGMMA.64x256x16.F32.BF16" in sass and "UTMALDG" in sass
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0


@pytest.mark.compile
@pytest.mark.parametrize("preset", sorted(hopper_gemm.PRESETS))
def test_hopper_presets_compile_to_what_they_claim(preset):
    cfg = hopper_gemm.PRESETS[preset]
    art = hopper_gemm.artifacts("sm_90a", torch.bfloat16, cfg)
    assert art.count_ptx(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40;") == 1
    assert art.count_ptx(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;") == 1
    assert art.count_ptx(r"wgmma\.mma_async") > 0
    # each operand is loaded either multicast (shared along the cluster) or plain
    loads = r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\.tile\.mbarrier\S*"
    kinds = {("multicast" in line) for line in re.findall(loads, art.ptx)}
    shared = {cfg.cluster_n > 1, cfg.cluster_m > 1}  # A, B multicast?
    assert kinds == shared
    assert art.count_ptx(r"stmatrix") > 0  # the epilogue stages C through shared memory
    assert (art.count_ptx(r"st\.global\.v4") > 0) == (not cfg.tma_store)
    assert (art.count_ptx(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta") > 0) == cfg.tma_store
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0


@pytest.mark.compile
def test_pdl_waits_for_the_previous_grid_before_touching_memory():
    """pdl=True: griddepcontrol.launch_dependents and griddepcontrol.wait once each, before
    the roles split (so before any TMA load or store); without it, neither."""
    art = hopper_gemm.artifacts("sm_90a", torch.bfloat16, hopper_gemm.Config(pdl=True))
    assert art.count_ptx(r"griddepcontrol\.wait;") == 1
    assert art.count_ptx(r"griddepcontrol\.launch_dependents;") == 1
    wait = art.ptx.index("griddepcontrol.wait;")
    assert wait < art.ptx.index("cp.async.bulk.tensor") and wait < art.ptx.index("setmaxnreg")
    plain = hopper_gemm.artifacts("sm_90a", torch.bfloat16, hopper_gemm.Config())
    assert plain.count_ptx(r"griddepcontrol") == 0


def test_hopper_config_rules():
    assert hopper_gemm.Config().ring_stages(2) == 4  # 128x256 tiles + 4 TMA-store buffers
    assert hopper_gemm.Config(stages=3).ring_stages(2) == 3
    with pytest.raises(KernelInputError, match="do not fit"):  # refused, never clamped to 4
        hopper_gemm.Config(stages=5).ring_stages(2)
    with pytest.raises(KernelInputError, match="do not fit"):
        hopper_gemm.artifacts("sm_90a", torch.bfloat16, hopper_gemm.Config(stages=5))
    with pytest.raises(TypeError):  # the tile has 128 rows: not a knob
        hopper_gemm.Config(tile_m=64)
    with pytest.raises(ValueError):
        hopper_gemm.Config(stages=1)
    with pytest.raises(ValueError):
        hopper_gemm.Config(cluster_m=3)
    with pytest.raises(ValueError, match="at most 4"):
        hopper_gemm.Config(cluster_m=4, cluster_n=2)
    with pytest.raises(ValueError):
        wgmma_gemm.Config(tile_m=96)


def test_validation_before_launch(monkeypatch):
    for module in (wgmma_gemm, hopper_gemm):
        pretend_gpu(monkeypatch)
        a = torch.zeros(64, 64, dtype=torch.bfloat16)
        with pytest.raises(KernelInputError, match="move it to the GPU"):
            module.run(a, a)


SHAPES = [
    (128, 256, 64),
    (4096, 4096, 4096),
    (1000, 1016, 520),
    (1, 8, 8),
    (129, 264, 72),
    (3000, 2056, 1000),
    (64, 4096, 8),
    (8192, 256, 128),
]


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma_gemm_matches_torch(mnk, dtype):
    verdict = check_gemm(lambda a, b, c: wgmma_gemm.run(a, b, c), GemmProblem(*mnk, dtype))
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize("preset", sorted(hopper_gemm.PRESETS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_hopper_gemm_matches_torch(mnk, dtype, preset):
    cfg = hopper_gemm.PRESETS[preset]
    verdict = check_gemm(lambda a, b, c: hopper_gemm.run(a, b, c, cfg), GemmProblem(*mnk, dtype))
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_90a")
def test_pdl_chain_reads_each_layers_output():
    """Four GEMMs back to back with PDL, each reading the one before's C (two buffers in
    turn, so a layer also overwrites what the layer before it read): as torch's chain."""
    size, cfg = 1024, hopper_gemm.Config(pdl=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(size, size, device="cuda", generator=g).bfloat16()
    ws = [(torch.randn(size, size, device="cuda", generator=g) / 32).bfloat16() for _ in range(4)]
    outs = [torch.full_like(x, float("nan")) for _ in "ab"]
    want, got = x, x
    for i, w in enumerate(ws):
        hopper_gemm.run(got, w, outs[i % 2], cfg)
        got = outs[i % 2]
        want = (want.float() @ w.float().t()).bfloat16()
    torch.cuda.synchronize()
    err = ((got.float() - want.float()).norm() / want.float().norm()).item()
    assert err < 2e-2, err
