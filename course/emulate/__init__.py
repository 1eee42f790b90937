"""CPU emulators of the Blackwell kernels: what runs where no sm_100 GPU is available.

    course.emulate.blackwell_gemm      the 1-CTA tcgen05 GEMM and the CTA-pair CLC GEMM, by warp
    course.emulate.warp_scheduler      the warp scheduler and named barriers (bar.sync)
    course.models.mbarrier   the mbarriers and pipeline states the warps wait on
    course.emulate.blackwell_memory    TMEM (lanes x columns, power-of-two allocation), TMA boxes
    course.emulate.clc       Cluster Launch Control's launch queue (and broken variants)
    course.models.tmem_ownership  which epilogue thread reads which TMEM lane and column

Pure Python and numpy: no GPU, no CuTe DSL needed.

Beside the CPU executor. course.execute runs the kernels' own code (course.execute.blackwell_runs)
and computes the same C, bit for bit (tests/test_emulate.py), the same TMEM rules for one CTA
(execute.tmem), the same mbarriers (execute.mbarriers, over the same course.models.mbarrier) and
the same CLC hand-out over the clusters not yet started (execute.launch_control). What these
emulators are for that the executor is not: they re-implement the design apart from the code
(they import nothing from kernels/ or CuTe DSL, so they run where CuTe DSL is not installed,
and check the decomposition, not the code); they count what the executor does not record
(stores per element of C, the tiles each cluster took in which order, whether the next tile's
MMA began before the previous tile's last store, with two TMEM slots or one); they run broken
hardware on purpose (a CLC queue that hands a tile out twice or loses one), where the executor
models only the hardware as specified; and one SM's TMEM shared by several CTAs' requests, where
the executor gives each CTA its own.
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
