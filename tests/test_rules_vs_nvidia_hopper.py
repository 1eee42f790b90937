"""Every static rule read off PTX holds NVIDIA's own Hopper GEMMs to be right.

The Blackwell side of this is tests/test_rules_vs_nvidia.py. Here NVIDIA's `dense_gemm`
and `dense_gemm_persistent` (TMA loads, mbarrier rings, WGMMA, TMA stores, clusters with
multicast), compiled unmodified for sm_90a on this CPU, meet every rule of
course.cute.ptx_protocol that applies to them: none may refuse them, since the course's
own Hopper kernels do the same things and the rules may refuse only what the PTX ISA
forbids.
"""

import pytest

from course.cute import ptx_protocol as pp
from tests.nvidia_examples import load, needs_examples
from tests.test_nvidia_hopper_examples import DENSE, PERSISTENT, operand

pytestmark = [pytest.mark.compile, needs_examples()]


def _ptx(relative: str, cluster) -> str:
    """The example's GEMM compiled for sm_90a by CuTe DSL (no GPU needed): its PTX."""
    import cuda.bindings.driver as cuda
    import cutlass

    from kernels.artifacts import compile_artifacts

    module = load(relative)
    _, mA = operand(1, 256, 128, seed=1)
    _, mB = operand(1, 256, 128, seed=2)
    _, mC = operand(1, 256, 256, seed=3)
    stream = cuda.CUstream(0)
    if relative == PERSISTENT:
        gemm = module.HopperWgmmaGemmPersistentKernel(cutlass.Float32, (128, 128), cluster, 1, True)
        args = (mA, mB, mC, 2, stream)
    else:
        gemm = module.HopperWgmmaGemmKernel(cutlass.Float32, (128, 128), cluster)
        args = (mA, mB, mC, stream)
    key = ("upstream-hopper", relative, cluster)
    return compile_artifacts(key, "sm_90a", gemm, *args).ptx


@pytest.mark.parametrize("relative", [DENSE, PERSISTENT])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1)])
def test_no_rule_of_the_ptx_protocol_refuses_nvidias_hopper_gemm(relative, cluster):
    ptx = _ptx(relative, cluster)
    applied = [rule for rule in pp.RULES if pp.applies(rule, ptx)]
    assert "barriers_ready" in applied, applied  # the rings' mbarriers are held to it
    assert pp.refusals(ptx) == [], [str(v) for v in pp.refusals(ptx)]
