"""Notebook 07's tensor-core GEMM: compiled everywhere, checked on a GPU."""

import pytest
import torch

from course.bench.gemm_bench import GemmProblem, check_gemm
from kernels import sm80_gemm
from kernels.host import KernelInputError

from .helpers import pretend_gpu


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compiles_to_the_sm80_instructions(arch):
    art = sm80_gemm.artifacts(arch, torch.bfloat16)
    assert art.count_ptx(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16") > 0
    assert art.count_ptx(r"ldmatrix\.sync\.aligned\.m8n8\.x4") > 0
    assert art.count_ptx(r"cp\.async\.cg\.shared\.global.*16") > 0  # 16-byte async copies
    assert art.count_ptx(r"st\.global\.v4") > 0  # coalesced 16-byte stores of C
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0, "registers spilled to local memory"


@pytest.mark.compile
def test_fp16_compiles_and_sass_uses_hmma():
    art = sm80_gemm.artifacts("sm_90a", torch.float16)
    sass = art.sass()
    assert "HMMA.16816.F32" in sass and "LDSM" in sass and "LDGSTS" in sass


def test_config_validation():
    with pytest.raises(ValueError, match="stages"):
        sm80_gemm.Config(stages=1)
    with pytest.raises(ValueError, match="tile_k"):
        sm80_gemm.Config(tile_k=48)


@pytest.mark.compile
def test_shared_memory_is_checked_for_the_target_gpu():
    """4 stages of 128x64 + 256x64 bf16 tiles are 192 KB: they fit an H100's 227 KB but not
    an A100's 163 KB; the refusal comes before compiling, with the numbers."""
    deep = sm80_gemm.Config(stages=4)
    with pytest.raises(KernelInputError, match="196608 bytes of shared memory.*sm_80 has 166912"):
        sm80_gemm.artifacts("sm_80", torch.bfloat16, deep)
    assert sm80_gemm.artifacts("sm_90a", torch.bfloat16, deep).count_ptx(r"cp\.async") > 0
    with pytest.raises(KernelInputError, match="sm_90a has 232448"):
        sm80_gemm.artifacts(
            "sm_90a", torch.bfloat16, sm80_gemm.Config(tile_m=256, tile_n=256, stages=8)
        )


def test_input_validation(monkeypatch):
    pretend_gpu(monkeypatch)
    a, b = torch.zeros(64, 64, dtype=torch.bfloat16), torch.zeros(64, 64, dtype=torch.bfloat16)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        sm80_gemm.run(a, b)
    pretend_gpu(monkeypatch, accept_cpu_tensors=True)  # the operand rules, on CPU tensors
    with pytest.raises(KernelInputError, match="multiple of 8"):
        sm80_gemm.run(
            torch.zeros(64, 60, dtype=torch.bfloat16), torch.zeros(64, 60, dtype=torch.bfloat16)
        )
    with pytest.raises(KernelInputError, match="same K"):
        sm80_gemm.run(a, torch.zeros(64, 32, dtype=torch.bfloat16))
    with pytest.raises(KernelInputError, match="not packed"):
        sm80_gemm.run(torch.zeros(64, 128, dtype=torch.bfloat16)[:, :64], b)
    with pytest.raises(KernelInputError, match="K-major"):
        sm80_gemm.run(torch.zeros(64, 64, dtype=torch.bfloat16).t(), b)


SHAPES = [
    (128, 128, 64),
    (256, 512, 1024),
    (1000, 1016, 520),
    (1, 8, 8),
    (129, 136, 72),
    (4096, 4096, 4096),
    (3000, 2056, 1000),
    (64, 4096, 8),
]


@pytest.mark.gpu(needs="sm_80+")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_torch(mnk, dtype):
    problem = GemmProblem(*mnk, dtype)
    verdict = check_gemm(lambda a, b, c: sm80_gemm.run(a, b, c), problem)
    assert verdict.ok, verdict


@pytest.mark.gpu(needs="sm_80+")
@pytest.mark.parametrize(
    "config",
    [
        sm80_gemm.Config(tile_k=32, stages=3),
        sm80_gemm.Config(tile_n=128, warps_n=2, stages=4),
        sm80_gemm.Config(stages=2),
    ],
    ids=str,
)
def test_configs_match_torch(config):
    problem = GemmProblem(1000, 1016, 776, torch.bfloat16)
    verdict = check_gemm(lambda a, b, c: sm80_gemm.run(a, b, c, config), problem)
    assert verdict.ok, verdict
