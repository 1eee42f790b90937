"""notebook 00's kernel: compiled without a GPU everywhere, run and checked on a GPU."""

import pytest
import torch

from course.bench import compare, poison_
from kernels import vector_add
from kernels.host import KernelInputError, UnsupportedGPU

from .helpers import pretend_gpu


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a"])
def test_compiles_for_every_tier_without_a_gpu(arch):
    art = vector_add.artifacts(arch, torch.bfloat16)
    assert f".target {arch}" in art.ptx
    assert art.count_ptx(r"ld\.global\.b16") == 2 and art.count_ptx(r"st\.global\.b16") == 1
    assert art.count_ptx(r"setp\.") == 1  # the bounds check
    (res,) = art.resource_usage().values()
    assert 0 < res["registers"] < 32 and res["stack_frame_bytes"] == 0


@pytest.mark.compile
def test_sass_shows_the_loads_and_the_store():
    sass = vector_add.artifacts("sm_90a", torch.float32).sass()
    assert "LDG.E" in sass and "STG.E" in sass and "FADD" in sass


@pytest.mark.compile
def test_each_configuration_compiles_once():
    first = vector_add.artifacts("sm_90a", torch.float16, vector_add.Config(128))
    assert vector_add.artifacts("sm_90a", torch.float16, vector_add.Config(128)) is first


def test_config_is_validated():
    with pytest.raises(ValueError):
        vector_add.Config(100)


def test_validation_messages(monkeypatch):
    pretend_gpu(monkeypatch)
    a = torch.zeros(8)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        vector_add.run(a, a)
    with pytest.raises(KernelInputError, match="dtype int64"):
        vector_add.run(torch.zeros(8, dtype=torch.int64), a)
    with pytest.raises(KernelInputError, match="1-D"):
        vector_add.run(torch.zeros(2, 4), a)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_without_a_gpu_the_error_says_why():
    with pytest.raises(UnsupportedGPU, match="compile-only"):
        vector_add.run(torch.zeros(4), torch.zeros(4))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", vector_add.DTYPES)
@pytest.mark.parametrize("n", [1, 31, 256, 257, 100_003, 2**22 + 1])
def test_matches_torch(n, dtype):
    a, b = (torch.randn(n, device="cuda").to(dtype) for _ in range(2))
    out = poison_(torch.empty_like(a))
    vector_add.run(a, b, out)
    torch.cuda.synchronize()
    verdict = compare(out, a.double() + b.double())
    assert verdict.ok, verdict


@pytest.mark.gpu
def test_gpu_validation():
    a = torch.zeros(64, device="cuda")
    with pytest.raises(KernelInputError, match="dtype"):
        vector_add.run(a, a.half())
    with pytest.raises(KernelInputError, match="must match"):
        vector_add.run(a, a[:32].clone())
    with pytest.raises(KernelInputError, match="aligned"):
        vector_add.run(a[1:], a[1:])
    with pytest.raises(KernelInputError, match="contiguous"):
        vector_add.run(a[::2], a[::2])
    assert vector_add.run(a[:0], a[:0]).numel() == 0
