"""PTX's approximate math instructions that kernels write as inline PTX (`llvm.inline_asm`):
the forms course.execute.inline_ptx runs.

The PTX ISA bounds each one's error rather than fixing its bits; the executor gives the
float32 result numpy computes (within an ulp), which lies inside that bound. A GPU may be
off by up to the bound: a check that passes here holds there as far as its tolerance
covers it.
"""

from __future__ import annotations

import numpy as np

from course.execute.lanes import Lanes


def _f32(x):
    return np.asarray(x.v if isinstance(x, Lanes) else x, dtype=np.float32)


def _like(x, values):
    return Lanes(values) if isinstance(x, Lanes) else np.float32(values)


def tanh_approx_f32(x):
    """tanh.approx.f32 $0, $1: "maximum relative error ... 2^-10.987" (PTX ISA, tanh);
    here float32's tanh (Ampere hstu_attention's fast SiLU)."""
    return _like(x, np.tanh(_f32(x)))


FORMS = {"tanh.approx.f32 $0, $1;": tanh_approx_f32}
