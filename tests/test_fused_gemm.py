"""Notebook 13: the SOL kernel with bias (+ GELU) fused into its epilogue (kernels.fused_gemm)
-- compiled for sm_90a, run on the CPU executor against torch, its inputs refused before a
launch; on a Hopper GPU, run against torch over ragged shapes."""

import pytest
import torch

from course.execute import ladder_runs
from kernels import fused_gemm
from kernels.host import KernelInputError
from kernels.selftest import TOLERANCE, relative_error

from .helpers import capture_launches, refuse_launch

COMPILED = [
    ("bias_gelu bf16", fused_gemm.PRESETS["bias_gelu"], torch.bfloat16),
    ("bias fp16", fused_gemm.PRESETS["bias"], torch.float16),
    ("bias_gelu pingpong", fused_gemm.PRESETS["bias_gelu_pingpong"], torch.bfloat16),
]


@pytest.mark.compile
@pytest.mark.parametrize("label, cfg, dtype", COMPILED, ids=[c[0] for c in COMPILED])
def test_the_operator_is_applied_in_registers(label, cfg, dtype):
    """The fused kernel is the SOL kernel plus the operator: the same wgmmas, one load of
    the bias per column a thread holds, GELU's tanh (tanh.approx) per element, nothing
    spilled."""
    art = fused_gemm.artifacts("sm_90a", dtype, cfg)
    assert art.count_ptx(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.tile_n}k16") > 0
    tanh = art.count_ptx(r"tanh\.approx\.f32")
    per_thread = 128 * cfg.tile_n // (128 if cfg.pingpong else 256)  # accumulator elements
    if cfg.epilogue == "bias_gelu":
        assert tanh == per_thread
    else:
        assert tanh == 0
    assert 0 < art.count_ptx(r"ld\.global") <= per_thread
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0, res


def test_config_rules():
    with pytest.raises(ValueError, match="epilogue must be one of"):
        fused_gemm.Config(epilogue="relu")


@pytest.mark.parametrize("preset", fused_gemm.PRESETS)
def test_the_executor_runs_the_fused_kernel_against_torch(preset):
    """A ragged problem (a partial tile in M and N, K of one and a half k-tiles) on the CPU
    executor: bias (and GELU) applied per column, C within bf16's tolerance of torch."""
    run = ladder_runs.run_fused_gemm(fused_gemm.PRESETS[preset], 129, 264, 96)
    assert run.ok, run.summary()
    assert run.written_past == 0


def test_a_bias_taken_by_row_would_be_seen():
    """The executor's check is strict enough: the same run judged against a reference whose
    bias is indexed by the row fails."""
    run = ladder_runs.run_fused_gemm(fused_gemm.PRESETS["bias"], 129, 264, 96)
    rows = torch.arange(129).clamp(max=263)
    g = torch.Generator().manual_seed(ladder_runs.SEED)
    a, b = (
        torch.randn(129, 96, generator=g).bfloat16(),
        torch.randn(264, 96, generator=g).bfloat16(),
    )
    bias = 4 * torch.randn(264, generator=g)
    wrong = a.double() @ b.double().t() + bias.double()[rows][:, None]
    assert relative_error(run.output, wrong) > TOLERANCE[torch.bfloat16]
    assert relative_error(run.output, run.reference) <= TOLERANCE[torch.bfloat16]


@pytest.fixture
def no_launch(monkeypatch):
    refuse_launch(monkeypatch, fused_gemm.GEMM)


def _refused(match, *args, **kwargs):
    with pytest.raises(KernelInputError, match=match):
        fused_gemm.run(*args, **kwargs)


def test_bias_is_refused_before_a_launch(no_launch):
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(96, 64).bfloat16()
    bias = torch.randn(96)
    _refused("bias has dtype", a, b, bias.bfloat16())
    _refused(r"bias must have shape \(96,\)", a, b, torch.randn(64))
    _refused("bias must be 1-D", a, b, bias.view(1, 96))
    _refused("bias must be a torch.Tensor", a, b, 1.0)
    _refused("contiguous", a, b, torch.randn(96, 2)[:, 0])
    _refused("bias is on meta", a, b, bias.to("meta"))
    _refused("same K", a, torch.randn(96, 32).bfloat16(), bias)


def test_valid_inputs_reach_the_launch_with_the_bias(monkeypatch):
    launched = capture_launches(monkeypatch, fused_gemm.GEMM)
    a, b = torch.randn(100, 64).bfloat16(), torch.randn(200, 64).bfloat16()
    out = fused_gemm.run(a, b, torch.randn(200))
    assert out.dtype == torch.bfloat16 and out.shape == (100, 200)
    (args,) = launched
    assert len(args) == 3 + 3 + 1 + 1  # A, B, C, m, n, k, max_clusters, bias


# ---------------------------------------------------------------- on a Hopper GPU

RAGGED_SHAPES = [(129, 264, 400), (1000, 1016, 520), (1, 8, 8), (3000, 2056, 1000), (4096,) * 3]


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize("label", [c[0] for c in COMPILED])
@pytest.mark.parametrize("mnk", RAGGED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fused_gemm_matches_torch(mnk, label):
    _, cfg, dtype = next(c for c in COMPILED if c[0] == label)
    m, n, k = mnk
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    bias = 4 * torch.randn(n, device="cuda")
    out = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
    fused_gemm.run(a, b, bias, out, cfg)
    want = fused_gemm.reference(a, b, bias, cfg.epilogue)
    assert relative_error(out, want) <= TOLERANCE[dtype]
