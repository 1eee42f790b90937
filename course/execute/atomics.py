"""Atomic read-modify-writes (`cute.arch.atomic_add`, `atomic_cas`, `atomic_fmax`) on the
executor.

The PTX ISA's atom.add / atom.cas / atom.max / atom.min: each thread's operation on its
address is indivisible, and the threads of a warp that target one address are performed one
after another in some order. The executor performs them in lane order, over the memory's
own bytes, and answers each lane with the value it found. Atomics are never races: they
take no part in the race watch. An atomic whose lanes target different addresses is not
modelled yet (the course's kernels use atomics on one flag: a watchdog's report).
"""

from __future__ import annotations

import numpy as np

from course.execute import current
from course.execute.hazards import Unmodelled
from course.execute.lanes import Lanes


def _cell(ptr) -> np.ndarray:
    """The one element `ptr` points at, as a writable numpy view of its memory."""
    offset = ptr.byte_offset
    if isinstance(offset, Lanes):
        try:
            offset = offset.uniform()
        except Exception:  # noqa: BLE001 -- lanes that target different addresses
            raise Unmodelled("an atomic whose lanes target different addresses") from None
    size = ptr.dtype.storage.itemsize
    return ptr.memory.data[int(offset) : int(offset) + size].view(ptr.dtype.storage)


def _per_lane(value, n: int) -> list:
    if isinstance(value, Lanes):
        return list(value.v[:n])
    return [value] * n


def _apply(ptr, step) -> "Lanes | object":
    """`step(old, lane)` -> new, performed lane by lane over the active lanes; the old
    value each lane saw (one value if they all saw the same)."""
    cell = _cell(ptr)
    w = current.warp()
    lanes = [int(t) % 32 for t in w.active_tids()]
    seen = np.zeros(32, dtype=cell.dtype)
    for lane in lanes:
        seen[lane] = cell[0]
        cell[0] = step(cell[0], lane)
    values = seen[lanes]
    if (values == values[0]).all():
        return values[0].item()
    return Lanes(seen)


def atomic_add(ptr, val, *, sem=None, scope=None, **_):
    adds = _per_lane(val, 32)
    return _apply(ptr, lambda old, lane: old + adds[lane])


def atomic_fmax(ptr, val, *, sign_bit=None, sem=None, scope=None, **_):
    """cute.arch.atomic_fmax as CuTe DSL builds it from integer atomics on the float's
    bits: where val's sign bit is set an unsigned atom.min, else a signed atom.max (each
    orders floats of that sign as fmax wants, -inf and +inf included). `sign_bit`, when
    given, picks the branch instead of val's own sign, right or wrong, as on the GPU."""
    if ptr.dtype.name != "Float32":
        raise Unmodelled(f"atomic_fmax on a {ptr.dtype} pointer (CuTe DSL's is Float32)")
    vals = _per_lane(val, 32)

    def step(old, lane):
        new = np.float32(vals[lane]).view(np.uint32)
        bits = np.float32(old).view(np.uint32)
        negative = bool(new >> 31) if sign_bit is None else bool(sign_bit)
        if negative:
            kept = min(int(bits), int(new))
        else:
            kept = max(int(bits.view(np.int32)), int(new.view(np.int32))) & 0xFFFFFFFF
        return np.uint32(kept).view(np.float32)

    return _apply(ptr, step)


def atomic_cas(ptr, *, cmp, val, sem=None, scope=None, **_):
    cmps, vals = _per_lane(cmp, 32), _per_lane(val, 32)
    return _apply(ptr, lambda old, lane: vals[lane] if old == cmps[lane] else old)
