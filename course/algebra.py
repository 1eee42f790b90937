"""CuTe DSL's own layout algebra, called from plain Python on a CPU.

A `@cute.jit` function that launches no kernel can be called on a machine without a
GPU: CuTe DSL traces it, and every static layout it builds is computed by CuTe's
algebra at trace time. `on_cpu(job)` runs `job()` inside such a trace and hands back
what it returned, with CuTe layouts converted to `course.layout` objects (so they
outlive the trace and can be drawn). Everything the course prints as "what CuTe
says" comes through here; `course.layout` only draws and is tested against it.

    from course.algebra import on_cpu, apply
    on_cpu(lambda: cute.zipped_divide(cute.make_layout((8, 8)), (2, 4)))
    apply("zipped_divide", "(8,8):(1,8)", "(2,4)").printed   # '((2,4),(4,2)):((1,8),(2,32))'

Each call is one trace: about 0.1-0.2 s, so batch many questions into one job.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import layout as pl

_RUNNER = None


def _runner():
    """The @cute.jit trampoline (built on first use: importing CuTe DSL takes ~1 s)."""
    global _RUNNER
    if _RUNNER is None:
        from . import _cute_trace

        _RUNNER = _cute_trace.run_traced
    return _RUNNER


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
    if isinstance(x, (int, float, str, bool, type(None), pl.Layout, pl.ComposedLayout,
                      pl.Swizzle, Basis)):
        return x
    return str(x)


@dataclass(frozen=True)
class Basis:
    """A CuTe ScaledBasis value@mode (e.g. 64@1: 64 steps along mode 1 of a coordinate)."""

    value: int
    mode: tuple

    def __str__(self) -> str:
        return f"{self.value}@{','.join(map(str, self.mode))}"


def on_cpu(job: Callable[[], Any]) -> Any:
    """Run `job()` inside a CuTe DSL trace on the CPU and return its result as Python."""
    box: list = []
    _runner()(lambda: to_python(job()), box)
    return box[0]


def to_cute(x: Any):
    """A course Layout / tiler / swizzle as the CuTe DSL value (call inside a trace)."""
    import cutlass.cute as cute

    if isinstance(x, pl.Layout):
        return cute.make_layout(x.shape, stride=x.stride)
    if isinstance(x, pl.ComposedLayout):
        return cute.make_composed_layout(to_cute(x.swizzle), x.offset, to_cute(x.layout))
    if isinstance(x, pl.Swizzle):
        return cute.make_swizzle(x.bits, x.base, x.shift)
    if isinstance(x, tuple):
        return tuple(to_cute(e) for e in x)
    return x


def cute_call(op: str, *operands) -> Any:
    """cute.<op>(*operands) on course values (call inside a trace); extra keyword forms
    are handled here so every operation takes (layout, operand)."""
    import cutlass.cute as cute

    args = [to_cute(o) for o in operands]
    if op == "coalesce" and len(args) == 2:
        return cute.coalesce(args[0], target_profile=args[1])
    if op == "complement" and len(args) == 1:
        args.append(operands[0].cosize)
    return getattr(cute, op)(*args)


@dataclass(frozen=True)
class Result:
    """One operation as CuTe DSL computed it."""

    expression: str  # e.g. "zipped_divide((8,8):(1,8), (2,4))"
    layout: Any  # course.layout.Layout / ComposedLayout, or None when CuTe refused
    printed: str  # CuTe DSL's own printout of the result (or its error message)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _expression(op: str, operands: tuple) -> str:
    text = ", ".join(pl.format_tiler(o) if not isinstance(o, (pl.Swizzle, pl.ComposedLayout))
                     else str(o) for o in operands)
    return f"{op}({text})"


def _coerce(op: str, operands: tuple) -> tuple:
    """Strings to course values: the first operand is a layout, the second a tiler."""
    out = []
    for i, o in enumerate(operands):
        if isinstance(o, str):
            o = pl.parse_layout(o) if i == 0 else pl.parse_tiler(o)
        out.append(o)
    return tuple(out)


def apply_many(requests: list[tuple]) -> list[Result]:
    """Several `apply` requests, (op, *operands) each, in ONE trace."""
    coerced = []
    for req in requests:
        op, *operands = req
        coerced.append((op, _coerce(op, tuple(operands))))

    def job():
        out = []
        for op, operands in coerced:
            try:
                value = operands[0] if op == "identity" else cute_call(op, *operands)
                out.append((to_python(value), str(value), None))
            except Exception as exc:  # CuTe refused: report its words, never crash
                msg = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
                msg = (msg or type(exc).__name__)[:400]
                out.append((None, msg, f"{type(exc).__name__}: {msg}"))
        return out

    return [Result(_expression(op, operands), value, printed, error)
            for (op, operands), (value, printed, error) in zip(coerced, on_cpu(job))]


def apply(op: str, *operands) -> Result:
    """cute.<op>(*operands) computed by CuTe DSL; operands may be strings like
    '(8,8):(1,8)' (a layout) and '(2,4)' (a tiler). op='identity' just builds the layout."""
    return apply_many([(op, *operands)])[0]


def swizzled(layout, swizzle) -> Result:
    """CuTe's composed layout swizzle o 0 o layout."""
    lay = pl.parse_layout(layout) if isinstance(layout, str) else layout
    swz = pl.parse_swizzle(swizzle) if isinstance(swizzle, str) else swizzle
    return apply("identity", pl.ComposedLayout(swz, 0, lay))


def evaluate(layout, indices=None) -> list[int]:
    """layout(i) for each i (default: all), evaluated by CuTe DSL itself (slow: ~75 us each)."""
    lay = pl.as_layout(layout)
    idx = list(range(lay.size)) if indices is None else list(indices)

    def job():
        L = to_cute(lay)
        return [int(L(i)) for i in idx]

    return on_cpu(job)
