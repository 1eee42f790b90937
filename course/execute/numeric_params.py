"""A `@cute.jit` / `@cute.kernel` function's scalar arguments made the numeric types its
parameters are annotated with, as CuTe DSL makes them.

CuTe DSL reads a jit or kernel function's signature: a Python `float` passed for
`alpha: cutlass.Float32` arrives as a `Float32` value (with its methods: `alpha.to(dtype)`,
as NVIDIA's dense_gemm_alpha_beta_persistent calls it), an `int` for `n: cutlass.Int32` as
an `Int32`. The executor's translated functions lose their annotations
(course.execute.branches strips them), so course.execute.translate wraps a jit or kernel
function whose parameters name numeric types with `converting`: each scalar argument is
converted on entry by the executor's type of that name (course.execute.numeric). Anything
that is not a scalar (a tensor, a per-lane value already typed) passes as it is, as do
parameters annotated otherwise or not at all.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from course.execute.numeric import DType, by_name


def numeric_parameters(raw) -> dict[str, DType]:
    """{parameter name: the executor's type} for `raw`'s parameters annotated with one of
    CuTe DSL's numeric types; a postponed annotation (a string) is evaluated as CuTe DSL
    evaluates it, in the function's globals and the names it closes over; one that cannot
    be evaluated is no numeric type."""
    try:
        import cutlass

        signature = inspect.signature(raw)
        scope = dict(inspect.getclosurevars(raw).nonlocals)
    except (ImportError, TypeError, ValueError):
        return {}
    found = {}
    for p in signature.parameters.values():
        kind = p.annotation
        if isinstance(kind, str):
            try:
                kind = eval(kind, raw.__globals__, scope)  # noqa: S307 -- as CuTe DSL reads it
            except Exception:  # noqa: BLE001 -- an annotation CuTe DSL could not read either
                continue
        if isinstance(kind, type) and issubclass(kind, cutlass.Numeric):
            try:
                found[p.name] = by_name(kind.__name__)
            except KeyError:
                continue  # a type the executor lacks: the value is left as given
    return found


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, np.generic))


def converting(new, raw):
    """`new` (the translated `raw`), converting its numeric-annotated scalar arguments on
    entry; `new` itself where no parameter is so annotated."""
    typed = numeric_parameters(raw)
    if not typed:
        return new
    signature = inspect.signature(raw)

    @functools.wraps(new)
    def call(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        for name, dtype in typed.items():
            if name in bound.arguments and _is_scalar(bound.arguments[name]):
                bound.arguments[name] = dtype(bound.arguments[name])
        return new(*bound.args, **bound.kwargs)

    return call
