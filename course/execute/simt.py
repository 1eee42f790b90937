"""Branches that differ between the lanes of a warp: both sides run, each under a mask.

course.execute.branches rewrites a kernel's `if`, `a if c else b`, `and`, `or`, `not` and
`while` into calls of this module (bound as `__simt__` in the kernel's globals):

    if c: body          ->   k = __simt__.branch(c)
    else: other              if k is True: body          # every lane agrees: as written
                             elif k is False: other
                             else:                        # lanes disagree
                                 with __simt__.masked(k): body
                                 with __simt__.masked(~k): other
                                 ... each local either side assigned, merged lane by lane

Under a mask only the active lanes read and write memory (course.execute.tensor asks
`active()`); a barrier or warp-wide instruction reached with some lanes inactive is a
hazard. A loop whose condition differs between lanes (a `while`, or a `for` over a `range`
whose bounds differ, such as a grid-stride loop) runs while any lane's condition holds, each
trip masked to the lanes still in it (`Loop`, `Counter`). A `return`, `break` or `continue`
inside a divergent branch or loop is not modelled: the check says so.
"""

from __future__ import annotations

import contextlib

import numpy as np

from course.execute import machine
from course.execute.lanes import Divergent, Lanes
from course.execute.hazards import Unmodelled
from course.execute.unspecified import floordiv, mod  # noqa: F401 -- kernel code's `//`, `%`

NAME = "__simt__"  # what kernel code calls this module


class _Undefined:
    """A local that one side of a divergent branch never set."""

    def __repr__(self) -> str:
        return "<not set on every lane>"

    def __getattr__(self, name):
        raise Unmodelled(
            "a variable set on some lanes of a warp only (in one side of a "
            "branch the threads take differently)"
        )


UNDEF = _Undefined()


def ir_value(x, **options):
    """Kernel code's `x.ir_value(loc=, ip=)`: the MLIR value a CuTe DSL value wraps, which
    inline MLIR takes (Hopper fmha's own mbarrier wait: `Int32(phase).ir_value()`). On the
    executor a value is its own: a number or bool that `Int32(...)`/`Boolean(...)` made has
    no such method, so it is itself; any other value answers with its own `ir_value` (or
    says it has none)."""
    if isinstance(x, (bool, int, float, np.generic)) and not hasattr(type(x), "ir_value"):
        return x
    return x.ir_value(**options)


def active():
    """The current warp's active lanes (a bool vector), or None when all are."""
    warp = machine.current_warp()
    return None if warp is None else warp.mask


def branch(cond):
    """True or False when every active lane agrees, else the lanes' condition (Lanes)."""
    if not isinstance(cond, Lanes):
        return bool(cond)
    v = cond.v.astype(bool)
    mask = active()
    live = v if mask is None else v[mask]
    if live.size == 0 or live.all():
        return True
    if not live.any():
        return False
    return Lanes(v)


@contextlib.contextmanager
def masked(cond: Lanes):
    warp = machine.warp()
    saved = warp.mask
    v = cond.v.astype(bool)
    warp.mask = v if saved is None else (saved & v)
    try:
        yield
    finally:
        warp.mask = saved


def negate(cond: Lanes) -> Lanes:
    return Lanes(~cond.v.astype(bool))


def save(values: dict, names: tuple) -> tuple:
    return tuple(values.get(n, UNDEF) for n in names)


def merge(cond: Lanes, then: tuple, other: tuple) -> tuple:
    """Each local as the lanes that took each side left it."""
    return tuple(_merge_one(cond, a, b) for a, b in zip(then, other))


def _merge_one(cond: Lanes, a, b):
    if a is b:
        return a
    if a is UNDEF or b is UNDEF:
        return a if b is UNDEF else b
    if _numeric(a) and _numeric(b):
        va = a.v if isinstance(a, Lanes) else a
        vb = b.v if isinstance(b, Lanes) else b
        return Lanes(np.where(cond.v.astype(bool), va, vb))
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(_merge_one(cond, x, y) for x, y in zip(a, b))
    try:
        if a == b:
            return a
    except Exception:  # noqa: BLE001 -- objects that do not compare: not the same
        pass
    raise Unmodelled(
        "a variable that holds different objects on different lanes of a warp "
        "after a branch the threads take differently"
    )


def _numeric(x) -> bool:
    return isinstance(x, (Lanes, bool, int, float, np.number, np.bool_))


def ifexp(cond, then, other):
    k = branch(cond)
    if k is True:
        return then()
    if k is False:
        return other()
    with masked(k):
        a = then()
    with masked(negate(k)):
        b = other()
    return _merge_one(k, a, b)


def and_(*operands):
    """`x and y and ...`: Python's answer where lanes agree, per lane where they do not."""
    value = operands[0]()
    for op in operands[1:]:
        k = branch(value) if isinstance(value, Lanes) else None
        if k is None:
            if not value:
                return value
            value = op()
            continue
        if k is False:
            return value
        if k is True:
            value = op()
            continue
        with masked(k):
            nxt = op()
        value = Lanes(k.v & _truth(nxt))
    return value


def or_(*operands):
    value = operands[0]()
    for op in operands[1:]:
        k = branch(value) if isinstance(value, Lanes) else None
        if k is None:
            if value:
                return value
            value = op()
            continue
        if k is True:
            return value
        if k is False:
            value = op()
            continue
        with masked(negate(k)):
            nxt = op()
        value = Lanes(k.v | _truth(nxt))
    return value


def _truth(x) -> np.ndarray:
    if isinstance(x, Lanes):
        return x.v.astype(bool)
    return np.bool_(bool(x))


def not_(x):
    if isinstance(x, Lanes):
        return Lanes(~x.v.astype(bool))
    return not x


class Loop:
    """A loop whose condition may differ between lanes: it runs while the condition holds on
    any lane still in it, each trip masked to those lanes; a lane whose condition failed has
    left for good (as it would have on the GPU)."""

    def __init__(self):
        self.live = None  # None: every lane that entered is still in the loop

    def go(self, cond) -> bool:
        """Evaluate `cond()` on the lanes still in the loop: another trip?"""
        with masked(Lanes(self.live)) if self.live is not None else contextlib.nullcontext():
            k = branch(cond())
        if isinstance(k, Lanes):
            self.live = k.v.astype(bool) if self.live is None else (self.live & k.v.astype(bool))
            return True
        return k

    @property
    def uniform(self) -> bool:
        return self.live is None

    def body(self):
        """The mask of one trip: the lanes still in the loop."""
        return masked(Lanes(self.live)) if self.live is not None else contextlib.nullcontext()

    def merge(self, after: tuple, before: tuple) -> tuple:
        """Each local as the trip left it on the lanes in it, as before elsewhere."""
        return after if self.live is None else merge(Lanes(self.live), after, before)


class Counter:
    """The counter of `for i in range(start, stop, step)`, each bound one value or one per
    lane: `uniform` when every bound is one value (the loop then runs as written)."""

    def __init__(self, *bounds):
        start, stop, step = (
            (0, bounds[0], 1)
            if len(bounds) == 1
            else (bounds[0], bounds[1], 1)
            if len(bounds) == 2
            else bounds
        )
        self.start, self.stop, self.step = start, stop, step
        self.uniform = not any(
            isinstance(b, Lanes) and not _same_on_all(b) for b in (start, stop, step)
        )
        self.i = start

    def python_range(self) -> range:
        return range(int(self.start), int(self.stop), int(self.step))

    def more(self):
        step = self.step.uniform() if isinstance(self.step, Lanes) else int(self.step)
        if step == 0:
            raise Unmodelled("a range whose step is 0")
        return self.i < self.stop if step > 0 else self.i > self.stop

    def take(self):
        """The counter's value for this trip; the next trip's is one step on."""
        value, self.i = self.i, self.i + self.step
        return value


def _same_on_all(x: Lanes) -> bool:
    return x.v.size == 0 or bool((x.v == x.v.flat[0]).all())


def loop_test(cond) -> bool:
    k = branch(cond)
    if isinstance(k, Lanes):
        raise Unmodelled("a while loop whose condition differs between the threads of a warp")
    return k


def divergent_exit(what: str):
    raise Unmodelled(f"a {what} inside a branch the threads of a warp take differently")


__all__ = [
    "branch",
    "masked",
    "negate",
    "save",
    "merge",
    "ifexp",
    "and_",
    "or_",
    "not_",
    "loop_test",
    "divergent_exit",
    "Loop",
    "Counter",
    "UNDEF",
    "Divergent",
]
