"""MLIR dialect ops that kernel code calls on CuTe DSL values directly (NVIDIA's amax GEMM:
`math.absf(acc.ir_value())`, wrapped back with `type(acc)(value, acc.shape, acc.dtype)`).

On the executor the MLIR value of a TensorSSA is its numpy values (`TensorSSA.ir_value`), so
a dialect op here is the same elementwise function on them, in the operand's own type, as
the op's result has it. Its `NAMES` table is built into the stand-ins by course.execute.api;
a dialect op not in it stops the run as not modelled.
"""

from __future__ import annotations

import numpy as np

from course.execute.hazards import Unmodelled
from course.execute.lanes import Lanes

# math dialect ops (elementwise on floats): numpy's function of the same meaning (also
# cute.math's, course.execute.api.MATH)
FUNCTIONS = {
    "absf": np.abs,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "sqrt": np.sqrt,
    "rsqrt": lambda v: 1 / np.sqrt(v),
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
}


def _op(name: str, fn):
    def op(operand, *, fastmath=None, results=None, **_):
        if results is not None:
            raise Unmodelled(f"math.{name} with results= (a result type of its own)")
        if isinstance(operand, Lanes):  # a scalar that differs between lanes: per lane
            return Lanes(op(operand.v, fastmath=fastmath))
        values = np.asarray(operand)
        if values.dtype.kind != "f":
            raise Unmodelled(f"math.{name} of a {values.dtype} value (not an executor float)")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(fn(values), dtype=values.dtype)

    op.__name__ = name
    return op


NAMES = {"cutlass._mlir.dialects.math": {name: _op(name, fn) for name, fn in FUNCTIONS.items()}}
