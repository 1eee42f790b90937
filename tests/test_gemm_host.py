"""kernels.gemm_host: one set of operand rules, the same refusal from every GEMM step.

Everything here runs on a CPU: `pretend_gpu` makes the kernels' host side see a GPU of the
step's tier and accept CPU tensors, so each rule is reached and each refusal happens
before anything would be compiled or launched.
"""

import pytest
import torch

from kernels import (
    cta_pair_clc_gemm,
    cta_pair_gemm,
    hopper_gemm,
    naive_gemm,
    sm80_gemm,
    tcgen05_gemm,
    tma_gemm,
    wgmma_gemm,
)
from kernels.gemm_host import Operands, validate_gemm
from kernels.host import KernelInputError

from .blackwell_helpers import assert_refused, validation_cases
from .helpers import pretend_gpu

# every K-major ("TN") GEMM step and a compute capability that can run it
TN_STEPS = {
    "sm80_gemm": (sm80_gemm, (8, 0)),
    "tma_gemm": (tma_gemm, (9, 0)),
    "wgmma_gemm": (wgmma_gemm, (9, 0)),
    "hopper_gemm": (hopper_gemm, (9, 0)),
    "tcgen05_gemm": (tcgen05_gemm, (10, 0)),
    "cta_pair_gemm": (cta_pair_gemm, (10, 0)),
    "cta_pair_clc_gemm": (cta_pair_clc_gemm, (10, 0)),
}


@pytest.mark.parametrize("step", sorted(TN_STEPS))
@pytest.mark.parametrize(
    "what,kwargs,message", validation_cases(), ids=[c[0] for c in validation_cases()]
)
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
        validate_gemm(
            a, b, torch.zeros(7, 3, dtype=torch.bfloat16), kernel="naive_gemm", operands=rules
        )


def test_out_dtype_rules():
    same = Operands()
    assert same.out_dtype(torch.bfloat16) == torch.bfloat16
    with pytest.raises(KernelInputError, match="stores C in"):
        same.out_dtype(torch.bfloat16, torch.float16)
    either = Operands(c_dtypes=(torch.bfloat16, torch.float16))
    assert either.out_dtype(torch.bfloat16, torch.float16) == torch.float16


def test_32_bit_sizes_are_refused_before_launch(monkeypatch):
    """M = 2^31 (meta tensors: shapes without memory) is refused by every step's rules."""
    import kernels.host

    monkeypatch.setattr(kernels.host, "EXPECTED_DEVICE", "meta")
    big = torch.empty(2**31, 8, dtype=torch.bfloat16, device="meta")
    b = torch.empty(8, 8, dtype=torch.bfloat16, device="meta")
    with pytest.raises(KernelInputError, match="32-bit"):
        validate_gemm(big, b, None, kernel="x", operands=Operands())


# ---------------------------------------------------------------- a float8 GEMM, declared

E4M3 = torch.float8_e4m3fn


def float8_hopper_gemm():
    """notebook 11's kernel declared for e4m3/e5m2 operands, fp32 accumulators and C in
    bf16 (what an FP8 GEMM stores): the configuration the low-precision step starts from."""
    from kernels.gemm_host import FLOAT8_TYPES, GemmHost

    return GemmHost(
        "hopper_gemm_fp8",
        hopper_gemm.NEEDS,
        lambda types, config, arch, a_major, b_major: hopper_gemm.HopperGemm(types, config, arch),
        hopper_gemm.Config,
        Operands(ab_dtypes=FLOAT8_TYPES, c_dtypes=(torch.bfloat16,)),
        extra=hopper_gemm.GEMM.extra,
        default_dtype=E4M3,
    )


def test_a_float8_gemm_takes_e4m3_operands_with_16_byte_rows(monkeypatch):
    pretend_gpu(monkeypatch, (9, 0), accept_cpu_tensors=True)
    fp8 = float8_hopper_gemm()
    a, b = torch.zeros(64, 16, dtype=E4M3), torch.zeros(32, 16, dtype=E4M3)  # 16-byte rows
    out, a_major, b_major = validate_gemm(a, b, None, kernel=fp8.name, operands=fp8.operands)
    assert (out.shape, out.dtype, a_major, b_major) == ((64, 32), torch.bfloat16, "k", "k")
    types = fp8.operands.types(E4M3, out.dtype)
    assert (types.ab.width, types.acc.width, types.c.width) == (8, 32, 16)
    from kernels.gemm_host import mma_k, tile_k

    assert (tile_k(types.ab.width), mma_k(types.ab.width)) == (128, 32)  # vs 64 and 16 (bf16)


def test_a_float8_gemm_refuses_8_byte_rows_saying_why(monkeypatch):
    pretend_gpu(monkeypatch, (9, 0), accept_cpu_tensors=True)
    fp8 = float8_hopper_gemm()
    a, b = torch.zeros(64, 8, dtype=E4M3), torch.zeros(32, 8, dtype=E4M3)  # 8 bytes a row
    with pytest.raises(KernelInputError) as refusal:
        validate_gemm(a, b, None, kernel=fp8.name, operands=fp8.operands)
    message = str(refusal.value)
    assert "K = 8 is not a multiple of 16" in message and "8 bytes" in message
    assert "16 float8_e4m3fn" in message
    # 8 bf16 are 16 bytes: the same K is fine for a 16-bit GEMM
    bf = torch.bfloat16
    validate_gemm(a.to(bf), b.to(bf), None, kernel="x", operands=Operands())
    with pytest.raises(KernelInputError, match="takes e4m3/e5m2, not bfloat16"):
        fp8.operands.check(fp8.name, bf, None, "k", "k")


@pytest.mark.compile
def test_the_float8_hopper_gemm_compiles_to_fp8_wgmma():
    """Not run anywhere yet: compiled for sm_90a, its k-tile is one 128-byte swizzle row of
    e4m3 (128 elements), multiplied by four wgmma of K = 32 into fp32, stored as bf16."""
    art = float8_hopper_gemm().artifacts("sm_90a", E4M3, out_dtype=torch.bfloat16)
    assert art.count_ptx(r"wgmma\.mma_async\.sync\.aligned\.m64n256k32\.f32\.e4m3\.e4m3") == 4
    assert art.count_ptx(r"wgmma\.mma_async") == 4
    assert art.count_ptx(r"stmatrix") > 0 and art.count_ptx(r"cvt\.rn\.bf16x2\.f32") > 0
