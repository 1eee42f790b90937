"""CPU emulators of the Blackwell kernels: what runs where no sm_100 GPU is available.

    course.emulate.blackwell_gemm      the 1-CTA tcgen05 GEMM and the CTA-pair CLC GEMM, by warp
    course.emulate.warp_scheduler      the warp scheduler and named barriers (bar.sync)
    course.models.mbarrier   the mbarriers and pipeline states the warps wait on
    course.emulate.blackwell_memory    TMEM (lanes x columns, power-of-two allocation), TMA boxes
    course.emulate.clc       Cluster Launch Control's launch queue (and broken variants)
    course.models.tmem_ownership  which epilogue thread reads which TMEM lane and column

Pure Python and numpy: no GPU, no CuTe DSL needed.
"""

from course.emulate.blackwell_gemm import (
    Emulation,
    EmulationCheck,
    Event,
    KernelShape,
    RingCorruption,
    cta_pair_clc_gemm_shape,
    cta_pair_gemm_shape,
    emulate_cta_pair_clc_gemm,
    emulate_cta_pair_gemm,
    emulate_gemm,
    emulate_tcgen05_gemm,
    random_operands,
    tcgen05_gemm_shape,
)
from course.emulate.warp_scheduler import EmulatedDeadlock

__all__ = [
    "Emulation",
    "EmulationCheck",
    "Event",
    "KernelShape",
    "RingCorruption",
    "EmulatedDeadlock",
    "cta_pair_clc_gemm_shape",
    "cta_pair_gemm_shape",
    "emulate_cta_pair_clc_gemm",
    "emulate_cta_pair_gemm",
    "emulate_gemm",
    "emulate_tcgen05_gemm",
    "random_operands",
    "tcgen05_gemm_shape",
]
