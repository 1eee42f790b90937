"""CuTe DSL's own layout algebra, called from plain Python on a CPU.

`apply("zipped_divide", "(8,8):(1,8)", "(2,4)")` asks CuTe DSL (one trace through
course.cute.trace.on_cpu) for an operation on course layouts and returns its result as
a `course.models.layout` object with CuTe's own printout. Everything the course prints
as "what CuTe says" about a layout comes through here; `course.models.layout` only
draws and is tested against it.

    from course.cute.algebra import apply
    apply("zipped_divide", "(8,8):(1,8)", "(2,4)").printed   # '((2,4),(4,2)):((1,8),(2,32))'

Each call is one trace, so batch many questions with `apply_many`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from course.cute.trace import on_cpu, to_python
from course.models import layout as pl


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
    layout: Any  # course.models.layout.Layout / ComposedLayout, or None when CuTe refused
    printed: str  # CuTe DSL's own printout of the result (or its error message)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _expression(op: str, operands: tuple) -> str:
    text = ", ".join(pl.format_tiler(o) for o in operands)
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

    return [
        Result(_expression(op, operands), value, printed, error)
        for (op, operands), (value, printed, error) in zip(coerced, on_cpu(job))
    ]


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


# Operations whose tiler CuTe DSL only takes as a Layout: a bare shape (3,4) means (3,4):(1,3).
NEEDS_LAYOUT_TILER = {
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
}
NO_OPERAND = {"none", "right_inverse", "left_inverse"}


def explore(layout, op: str = "none", operand=None, swizzle=None) -> Result:
    """What the layout explorer shows: `op` applied by CuTe DSL (optionally followed by a
    swizzle, swizzle o 0 o result), in one trace. Strings are parsed; errors are reported
    in the Result, never raised."""
    try:
        lay = pl.parse_layout(layout) if isinstance(layout, str) else layout
        args: tuple = ()
        if op not in NO_OPERAND:
            if operand is None or (isinstance(operand, str) and not operand.strip()):
                if op not in ("coalesce", "complement"):
                    raise pl.LayoutError(f"{op} needs an operand (a tiler or a layout)")
            else:
                opnd = pl.parse_tiler(operand) if isinstance(operand, str) else operand
                if (
                    op in NEEDS_LAYOUT_TILER
                    and isinstance(opnd, (int, tuple))
                    and pl._is_int_tuple(opnd)
                ):
                    opnd = pl.Layout(opnd)
                args = (opnd,)
        swz = None
        if swizzle is not None and not (isinstance(swizzle, str) and not swizzle.strip()):
            swz = pl.parse_swizzle(swizzle) if isinstance(swizzle, str) else swizzle
    except (pl.LayoutError, TypeError) as exc:
        return Result(f"{op}({layout}, {operand})", None, str(exc), f"input: {exc}")
    name = "identity" if op == "none" else op
    expression = _expression(name, (lay, *args)) if name != "identity" else str(lay)
    if swz is not None:
        expression = f"{swz.cute_str} o 0 o {expression}"

    def job():
        import cutlass.cute as cute

        try:
            value = to_cute(lay) if name == "identity" else cute_call(name, lay, *args)
            if swz is not None:
                value = cute.make_composed_layout(to_cute(swz), 0, value)
            return to_python(value), str(value), None
        except Exception as exc:  # CuTe refused: report, never crash
            msg = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
            return None, msg[:400], f"{type(exc).__name__}: {msg[:400]}"

    value, printed, error = on_cpu(job)
    if value is not None and not isinstance(value, (pl.Layout, pl.ComposedLayout)):
        return Result(expression, None, printed, "the result is not a static integer layout")
    return Result(expression, value, printed, error)
