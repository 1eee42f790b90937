"""CuTe DSL's persistent tile schedulers on the executor.

NVIDIA's `cutlass.utils.static_persistent_tile_scheduler` (PersistentTileSchedulerParams,
StaticPersistentTileScheduler, WorkTileInfo) is pure Python over CuTe calls: it runs
translated (course.execute.translate's TRANSLATED_LIBRARIES), so the tiles a persistent
kernel visits are the ones NVIDIA's own code computes. What it needs from CuTe DSL beyond
layouts is `cute.fast_divmod_create_divisor`, whose divisor divides by `divmod`, `//` and
`%` (the GPU's fast division by a precomputed multiplier gives the quotient and remainder
of an ordinary integer division for the non-negative 32-bit dividends it is made for).
"""

from __future__ import annotations

from course.execute.hazards import Standin
from course.execute.unspecified import floordiv, mod


class FastDivmodDivisor(Standin):
    """cute.FastDivmodDivisor: a divisor that `divmod(x, d)`, `x // d` and `x % d` use."""

    REAL = ("cutlass.cute.core:FastDivmodDivisor",)
    __slots__ = ("divisor",)

    def __init__(self, divisor):
        self.divisor = int(divisor)

    def __rdivmod__(self, dividend):
        return floordiv(dividend, self.divisor), mod(dividend, self.divisor)

    def __rfloordiv__(self, dividend):
        return floordiv(dividend, self.divisor)

    def __rmod__(self, dividend):
        return mod(dividend, self.divisor)

    def __repr__(self) -> str:
        return f"FastDivmodDivisor({self.divisor})"


def fast_divmod_create_divisor(divisor, **_):
    return FastDivmodDivisor(divisor)


# the CuTe DSL modules of the schedulers, run translated
LIBRARIES = (
    "cutlass.utils.static_persistent_tile_scheduler",
    "cutlass.utils.mixed_cluster_params",
    # ClcDynamicPersistentTileScheduler: its queries and answers are cute.arch's CLC calls
    # (course.execute.launch_control)
    "cutlass.utils.dynamic_persistent_tile_scheduler",
)
