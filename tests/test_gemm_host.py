"""kernels.gemm_host: one set of operand rules, the same refusal from every GEMM step.

Everything here runs on a CPU: `pretend_gpu` makes the kernels' host side see a GPU of the
step's tier and accept CPU tensors, so each rule is reached and each refusal happens
before anything would be compiled or launched.
"""
import pytest
import torch

from kernels import (cta_pair_clc_gemm, cta_pair_gemm, hopper_gemm, naive_gemm, sm80_gemm,
                     tcgen05_gemm, tma_gemm, wgmma_gemm)
from kernels.gemm_host import Operands, validate_gemm
from kernels.host import KernelInputError

from .blackwell_helpers import assert_refused, validation_cases
from .helpers import pretend_gpu

# every K-major ("TN") GEMM step and a compute capability that can run it
TN_STEPS = {"sm80_gemm": (sm80_gemm, (8, 0)), "tma_gemm": (tma_gemm, (9, 0)),
            "wgmma_gemm": (wgmma_gemm, (9, 0)), "hopper_gemm": (hopper_gemm, (9, 0)),
            "tcgen05_gemm": (tcgen05_gemm, (10, 0)), "cta_pair_gemm": (cta_pair_gemm, (10, 0)),
            "cta_pair_clc_gemm": (cta_pair_clc_gemm, (10, 0))}


@pytest.mark.parametrize("step", sorted(TN_STEPS))
@pytest.mark.parametrize("what,kwargs,message", validation_cases(),
                         ids=[c[0] for c in validation_cases()])
def test_every_tn_step_refuses_the_same_inputs(monkeypatch, step, what, kwargs, message):
    module, cc = TN_STEPS[step]
    pretend_gpu(monkeypatch, cc, accept_cpu_tensors=True)
    assert_refused(module, kwargs, message)


@pytest.mark.parametrize("step", sorted(TN_STEPS))
def test_empty_problems_return_without_compiling(monkeypatch, step):
    """M or N = 0: nothing to do; K = 0: C = 0 (no k-tile would ever write the
    accumulators). Neither compiles nor launches, on every step."""
    module, cc = TN_STEPS[step]
    pretend_gpu(monkeypatch, cc, accept_cpu_tensors=True)
    monkeypatch.setattr(module.GEMM, "compile", lambda *a, **k: pytest.fail("compiled"))
    bf = torch.bfloat16
    assert module.run(torch.zeros(0, 64, dtype=bf), torch.zeros(64, 64, dtype=bf)).shape == (0, 64)
    out = module.run(torch.ones(16, 0, dtype=bf), torch.ones(8, 0, dtype=bf))
    assert out.shape == (16, 8) and bool((out == 0).all())


def test_the_naive_step_takes_what_its_element_wise_loads_can(monkeypatch):
    """Either major, any K and N, fp32, element-aligned views; C in A's type."""
    pretend_gpu(monkeypatch, accept_cpu_tensors=True)
    rules = naive_gemm.GEMM.operands
    a = torch.zeros(7, 5).t().contiguous().t()  # M-major (7, 5) with stride (1, 7)
    b = torch.zeros(3, 5)  # K-major
    out, a_major, b_major = validate_gemm(a, b, None, kernel="naive_gemm", operands=rules)
    assert (a_major, b_major) == ("m", "k") and out.shape == (7, 3)
    assert out.dtype == torch.float32
    with pytest.raises(KernelInputError, match="out has dtype bfloat16; this kernel takes float32"):
        validate_gemm(a, b, torch.zeros(7, 3, dtype=torch.bfloat16), kernel="naive_gemm",
                      operands=rules)


def test_out_dtype_rules():
    same = Operands()
    assert same.out_dtype(torch.bfloat16) == torch.bfloat16
    with pytest.raises(KernelInputError, match="stores C in"):
        same.out_dtype(torch.bfloat16, torch.float16)
    either = Operands(out_dtypes=(torch.bfloat16, torch.float16))
    assert either.out_dtype(torch.bfloat16, torch.float16) == torch.float16


def test_32_bit_sizes_are_refused_before_launch(monkeypatch):
    """M = 2^31 (meta tensors: shapes without memory) is refused by every step's rules."""
    import kernels.host

    monkeypatch.setattr(kernels.host, "EXPECTED_DEVICE", "meta")
    big = torch.empty(2**31, 8, dtype=torch.bfloat16, device="meta")
    b = torch.empty(8, 8, dtype=torch.bfloat16, device="meta")
    with pytest.raises(KernelInputError, match="32-bit"):
        validate_gemm(big, b, None, kernel="x", operands=Operands())
