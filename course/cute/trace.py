"""The one way the course runs CuTe DSL on a CPU: `on_cpu(job)`.

A `@cute.jit` function that launches no kernel needs no GPU: CuTe DSL traces it, and
every static layout, partition and copy atom it builds is computed by CuTe's algebra
while it traces. `on_cpu(job)` calls `job()` inside such a trace and hands back what
it returned, converted to plain Python (CuTe layouts become `course.models.layout`
objects), because CuTe values die with the trace. Every CPU look at CuTe in the course
(course.cute.algebra, course.cute.partition_ownership, course.cute.kernel_traces, the
notebooks) goes through here.

    from course.cute.trace import on_cpu
    on_cpu(lambda: cute.zipped_divide(cute.make_layout((8, 8)), (2, 4)))   # a Layout
    on_cpu(make_tcgen05_view, arch="sm_100a")   # trace as if compiling for a B200

The trace is a dry run: CuTe DSL builds the IR and stops, so nothing is compiled or
executed, and the target is whatever CuTe DSL would pick (the GPU it finds, sm_100a
without one) unless `arch` names it. Ops that exist on one architecture only (wgmma:
sm_90a, tcgen05: sm_100a) refuse to trace for another, so their callers pass `arch`.
A trace costs milliseconds plus whatever `job` asks CuTe to evaluate: batch many
questions into one job.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

from course.models import layout as pl

MAX_POINTERS = 3


def on_cpu(job: Callable[..., Any], *, arch: str | None = None, pointers: tuple = ()) -> Any:
    """Run `job()` inside a CuTe DSL trace on the CPU and return its result as Python.

    arch: the target to trace for ("sm_80", "sm_90a", "sm_100a"); None: CuTe DSL's own
    choice. pointers: up to three CuTe numeric types (e.g. (cutlass.Float32,) * 3); the
    job is then called as job(p0, p1, ...) with 16-byte-aligned global-memory pointers at
    address 0, so it can build tensors the way a kernel's host code does. Nothing is
    dereferenced, compiled or launched.
    """
    if len(pointers) > MAX_POINTERS:
        raise ValueError(f"on_cpu passes at most {MAX_POINTERS} pointers")
    from course.cute import _trampoline  # imports CuTe DSL (~1 s): only on first use

    box: list = []
    with _dry_run_for(arch):
        if not pointers:
            _trampoline.run_traced(lambda: to_python(job()), box)
        else:
            ptrs = _null_pointers(pointers)
            n = len(pointers)
            _trampoline.run_traced_with_pointers(lambda *p: to_python(job(*p[:n])), box, *ptrs)
    return box[0]


@contextlib.contextmanager
def _dry_run_for(arch: str | None):
    """CuTe DSL's settings for one trace: stop after building the IR, target `arch`.

    CuTe DSL reads its target from CUTE_DSL_ARCH or the GPU it detects (compile options
    override both only inside cute.compile); both settings are put back afterwards.
    """
    from cutlass.cutlass_dsl import CuTeDSL

    env = CuTeDSL._get_dsl().envar
    saved_arch, saved_dryrun = (env.arch if arch else None), env.dryrun
    env.dryrun = True
    if arch:
        env.arch = arch
    try:
        yield
    finally:
        env.dryrun = saved_dryrun
        if arch:
            env.arch = saved_arch


def dry_run(arch: str | None):
    """Inside this context a @cute.jit call traces (and checks) its code for `arch` but
    compiles and launches nothing: what a re-tracing call costs on the host."""
    return _dry_run_for(arch)


def _null_pointers(dtypes: tuple) -> list:
    """Global-memory pointers at address 0, padded to the trampoline's three."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    ptrs = [make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=16) for dtype in dtypes]
    return ptrs + [ptrs[0]] * (MAX_POINTERS - len(ptrs))


def to_python(x: Any) -> Any:
    """Convert CuTe DSL values (valid only inside a trace) into plain Python values."""
    import cutlass.cute as cute

    if isinstance(x, cute.ComposedLayout):
        inner = x.inner
        if isinstance(inner, cute.Swizzle):
            return pl.ComposedLayout(to_python(inner), int(x.offset), to_python(x.outer))
        return str(x)
    if isinstance(x, cute.Layout):
        try:
            return pl.Layout(x.shape, x.stride)
        except TypeError:  # dynamic or basis strides: keep CuTe's own words
            return str(x)
    if isinstance(x, cute.Swizzle):
        return pl.Swizzle(x.num_bits, x.num_base, x.num_shift)
    if isinstance(x, cute.ScaledBasis):
        return Basis(int(x.value), tuple(x.mode))
    if isinstance(x, (list, tuple)):
        return type(x)(to_python(e) for e in x)
    if isinstance(x, dict):
        return {k: to_python(v) for k, v in x.items()}
    module = type(x).__module__ or ""
    if module.startswith(("cutlass", "_mlir", "mlir")):  # other CuTe values: CuTe's own words
        return str(x)
    return x  # plain Python (and numpy) values pass through


@dataclass(frozen=True)
class Basis:
    """A CuTe ScaledBasis value@mode (e.g. 64@1: 64 steps along mode 1 of a coordinate)."""

    value: int
    mode: tuple

    def __str__(self) -> str:
        return f"{self.value}@{','.join(map(str, self.mode))}"
