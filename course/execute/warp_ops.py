"""What a warp's lanes compute without touching memory, beyond arithmetic: shuffles and votes
(the lanes exchange registers: warp-wide, every lane of the member mask there), and
`cute.arch`'s float helpers (fmax, fmin, rcp_approx), with `cute.ReductionOp` for
TensorSSA.reduce (course.execute.tensor). Its `NAMES` table is built into the stand-ins by
course.execute.api, after the SIMT core's.

Shuffles follow the PTX ISA's shfl.sync: from lane j, where j is the lane the mode names
(idx, up, down, bfly) within the segment `mask_and_clamp` packs, or the lane's own value
where j falls past the clamp. A shuffle reached by part of the warp (a branch on the lane,
elect_one) is a COLLECTIVE hazard, as ldmatrix's is; a member mask other than the whole
warp is not modelled.
"""

from __future__ import annotations

import numpy as np

from course.execute import hazards, machine
from course.execute.hazards import Hazard, Unmodelled
from course.execute.lanes import Lanes, lanes
from course.execute.numeric import Float32, Int32
from course.execute.tensor import ReductionOp, TensorSSA

FULL_MASK = 0xFFFFFFFF
UP, DOWN, BFLY, IDX = "up", "down", "bfly", "idx"


def _per_lane(x, width: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(x.v if isinstance(x, Lanes) else x), (width,))


def _source_lanes(kind: str, offset, mask_and_clamp, width: int) -> np.ndarray:
    """shfl.sync's source lane for each lane of the warp (its own where out of range)."""
    lane = np.arange(width, dtype=np.int64)
    b = _per_lane(offset, width).astype(np.int64) & 0x1F
    c = _per_lane(mask_and_clamp, width).astype(np.int64)
    clamp, segmask = c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask)
    min_lane = lane & segmask
    if kind == UP:
        j = lane - b
        ok = j >= max_lane
    elif kind == DOWN:
        j = lane + b
        ok = j <= max_lane
    elif kind == BFLY:
        j = lane ^ b
        ok = j <= max_lane
    else:
        j = min_lane | (b & ~segmask)
        ok = j <= max_lane
    return np.where(ok, j, lane)


def _shuffle(kind: str):
    default_clamp = 0 if kind == UP else 31

    def shuffle(value, offset, mask=FULL_MASK, mask_and_clamp=default_clamp, **_):
        site = hazards.site(2)
        if int(mask) & FULL_MASK != FULL_MASK:
            raise Unmodelled("shfl.sync with a member mask other than the whole warp")
        w = machine.collective(f"shfl.sync.{kind}", site)
        src = _source_lanes(kind, offset, mask_and_clamp, machine.WARP)
        if (src >= w.width).any():
            raise Unmodelled("shfl.sync from a lane past the last thread of a partial warp")
        if isinstance(value, TensorSSA):
            if value.dtype.width * value.values.shape[-1] != 32:
                raise Unmodelled(f"shfl.sync of a {value} (CuTe DSL shuffles 32 bits)")
            rows = np.broadcast_to(value.values, (w.width, value.values.shape[-1]))
            return TensorSSA(rows[src], value.shape, value.dtype)
        if not isinstance(value, Lanes):
            return value  # every lane holds it: every source lane gives it back
        return lanes(value.v[src])

    shuffle.__name__ = {IDX: "shuffle_sync"}.get(kind, f"shuffle_sync_{kind}")
    return shuffle


def _vote(kind: str):
    def vote(pred, mask=FULL_MASK, **_):
        site = hazards.site(2)
        if int(mask) & FULL_MASK != FULL_MASK:
            raise Unmodelled("vote.sync with a member mask other than the whole warp")
        w = machine.collective(f"vote.sync.{kind}", site)
        p = _per_lane(pred, w.width).astype(bool)
        if kind == "any":
            return bool(p.any())
        if kind == "all":
            return bool(p.all())
        if kind == "uni":
            return bool(p.all() or not p.any())
        bits = int(np.sum(p.astype(np.int64) << (w.tids % machine.WARP)))
        return Int32(bits)  # ballot: the lanes' predicates as one 32-bit value

    vote.__name__ = f"vote_{kind}_sync"
    return vote


def _float_pair(fn):
    def pair(a, b, *, abs=False, nan=False, ftz=False, **_):  # noqa: A002 -- CuTe DSL's name
        if abs or ftz:
            raise Unmodelled(f"cute.arch.{fn.__name__} with abs= or ftz=")
        av, bv = _f32(a), _f32(b)
        # maximumNumber (NaN-quiet, PTX max.f32) by default; IEEE maximum with nan=True
        out = (np.maximum if fn is np.fmax else np.minimum)(av, bv) if nan else fn(av, bv)
        return _float_result(out)

    pair.__name__ = {np.fmax: "fmax", np.fmin: "fmin"}[fn]
    return pair


def _f32(x):
    return x.v.astype(np.float32) if isinstance(x, Lanes) else np.float32(x)


def _float_result(out):
    if np.ndim(out):
        return lanes(np.asarray(out, dtype=np.float32))
    return Float32(out)


def rcp_approx(a, **_):
    """rcp.approx.f32: 1/a (the GPU's approximation is within 1 ulp; the executor's exact)."""
    with np.errstate(divide="ignore"):
        return _float_result(np.float32(1) / _f32(a))


_BFLY = _shuffle(BFLY)

# redux.sync's operations: (numpy's reduction, whether it is of floats); max/min of an
# unsigned type are CuTe DSL's umax/umin
_REDUX = {"add": (np.sum, False), "and": (np.bitwise_and.reduce, False),
          "or": (np.bitwise_or.reduce, False), "xor": (np.bitwise_xor.reduce, False),
          "max": (np.max, False), "min": (np.min, False), "umax": (np.max, False),
          "umin": (np.min, False), "fmax": (np.fmax.reduce, True),
          "fmin": (np.fmin.reduce, True)}  # fmt: skip


def warp_redux_sync(value, kind, mask_and_clamp=FULL_MASK, *, abs=None, nan=None, **_):  # noqa: A002
    """cute.arch.warp_redux_sync (redux.sync): every lane of the warp gets `kind` of the
    lanes' values. .f32 max/min ignore NaN inputs (maxNum) unless `nan` (.NaN: a NaN in,
    NaN out); `abs` takes each value's magnitude first. Integer kinds reduce in 32 bits."""
    site = hazards.site(2)
    if int(mask_and_clamp) & FULL_MASK != FULL_MASK:
        raise Unmodelled("redux.sync with a member mask other than the whole warp")
    w = machine.collective(f"redux.sync.{kind}", site)
    v = _per_lane(value, w.width)
    is_float = v.dtype.kind == "f"
    if is_float and kind in ("max", "min"):
        kind = "f" + kind
    fn, of_floats = _REDUX[kind]
    if of_floats != is_float or (abs or nan) and not of_floats:
        raise Hazard(hazards.CRASH, f"redux.sync.{kind} of {value!r}", site)
    if of_floats:
        v = np.abs(v.astype(np.float32)) if abs else v.astype(np.float32)
        out = np.float32(fn(v))
        if nan and np.isnan(v).any():
            out = np.float32("nan")
        return Float32(out)
    bits = v.astype(np.int64) & FULL_MASK
    if kind in ("max", "min"):  # signed
        bits = np.where(bits >> 31, bits - (1 << 32), bits)
    out = int(fn(bits)) & FULL_MASK
    return Int32(out - (1 << 32) if out >> 31 else out)  # the 32 bits, as CuTe DSL's Int32


def warp_reduction(val, op, *, threads_in_group: int = 32, **_):
    """cute.arch.warp_reduction: `val` folded with `op` over each group of
    `threads_in_group` lanes by butterfly shuffles, offsets threads_in_group/2 down to 1,
    as CuTe DSL writes it (every lane ends with its group's result)."""
    offset = int(threads_in_group) // 2
    while offset > 0:
        val = op(val, _BFLY(val, offset=offset, mask=-1, mask_and_clamp=31))
        offset //= 2
    return val


_FMAX = _float_pair(np.fmax)


def _is_float(x) -> bool:
    v = x.v if isinstance(x, Lanes) else np.asarray(x)
    return v.dtype.kind == "f"


def _reduction_max(x, y):
    """warp_reduction_max's op, as CuTe DSL's: fmax (max.f32, NaN-quiet) for a float,
    the larger integer otherwise."""
    if _is_float(x):
        return _FMAX(x, y)
    xv, yv = (a.v if isinstance(a, Lanes) else a for a in (x, y))
    out = np.maximum(xv, yv)
    return Lanes(out) if isinstance(x, Lanes) or isinstance(y, Lanes) else out


def warp_reduction_max(val, *, threads_in_group: int = 32, **_):
    return warp_reduction(val, _reduction_max, threads_in_group=threads_in_group)


def warp_reduction_sum(val, *, threads_in_group: int = 32, **_):
    return warp_reduction(val, lambda x, y: x + y, threads_in_group=threads_in_group)


NAMES = {
    "cutlass.cute.arch": {
        "warp_reduction": warp_reduction,
        "warp_reduction_max": warp_reduction_max,
        "warp_reduction_sum": warp_reduction_sum,
        "shuffle_sync": _shuffle(IDX),
        "shuffle_sync_up": _shuffle(UP),
        "shuffle_sync_down": _shuffle(DOWN),
        "shuffle_sync_bfly": _shuffle(BFLY),
        "vote_any_sync": _vote("any"),
        "vote_all_sync": _vote("all"),
        "vote_uni_sync": _vote("uni"),
        "vote_ballot_sync": _vote("ballot"),
        "warp_redux_sync": warp_redux_sync,
        "fmax": _float_pair(np.fmax),
        "fmin": _float_pair(np.fmin),
        "rcp_approx": rcp_approx,
    },
    "cutlass.cute": {"ReductionOp": ReductionOp},
}
