"""`cutlass`, `cutlass.cute` and `cuda.bindings.driver` as kernel code sees them on the executor.

Each stand-in is a `Namespace`: the names the executor models, and for any other name
`Unmodelled("cute.foo")` -- "the CPU executor does not model `cute.foo`; this check needs a
GPU" -- never a made-up value. course.execute.translate binds these in place of the real
modules when it rebuilds a kernel's functions.

Static layout algebra goes to CuTe DSL itself (course.execute.oracle); per-thread work
(indices, element access, slicing, copies, MMAs, barriers) is the executor's.
"""

from __future__ import annotations

import builtins
import enum
import math as _math

import numpy as np

from course.execute import atoms, basis, blackwell, dispatch, hazards, hopper, launches, machine
from course.execute import oracle
from course.execute import scaled_mma, smem_struct, standins, tma, warp_ops, wgmma
from course.execute import cp_async_arrive, dsmem_stores, inline_ptx, mlir_dialects, tmem_store

# the stand-in module lives below every architecture module (course.execute.standins);
# importable from here, as before
from course.execute.standins import AddressSpace, Namespace  # noqa: F401
from course.execute.dynamic import DynamicInt
from course.execute.lanes import Lanes, lanes
from course.execute.static_layout import ComposedLayout, Layout, Swizzle, as_layout, product
from course.execute import numeric
from course.execute.numeric import TYPES, DType, of_value
from course.execute.oracle import Recipe
from course.execute.hazards import Unmodelled
from course.execute.tensor import (
    Pointer,
    Tensor,
    TensorSSA,
    identity_tensor,
    make_tensor as _make_tensor,
    register_tensor,
)


# ---------------------------------------------------------------- cute: layouts


def make_layout(shape, stride=None) -> Layout:
    if isinstance(shape, Layout):
        return shape
    return Layout(_static(shape), None if stride is None else _static(stride))


def _static(x):
    if isinstance(x, (list, tuple)):
        return tuple(_static(e) for e in x)
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, DynamicInt):  # an extent the GPU's build holds dynamic: kept so
        return x
    if isinstance(x, numeric.Integer):  # a cutlass.Int32 value (a jit argument, made in
        return DynamicInt(x)  # kernel code): CuTe DSL holds it dynamic in a layout
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, basis.Basis):  # a stride E(m) * v: the layout maps to coordinates
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    raise Unmodelled(f"a layout with {type(x).__name__} {x!r} in its shape or stride")


def make_swizzle(bits, base, shift) -> Swizzle:
    return Swizzle(bits, base, shift)


def make_composed_layout(inner, offset, outer) -> ComposedLayout:
    if not isinstance(inner, (Swizzle, Layout)):
        raise Unmodelled(f"make_composed_layout with a {type(inner).__name__} inner")
    return ComposedLayout(inner, int(offset), as_layout(outer))


def _algebra(name: str):
    """A layout-algebra function: on a tensor, asked of CuTe on a counting tensor over its
    layout; on layouts and shapes, asked of CuTe directly."""

    def fn(*args, **kwargs):
        if not args:  # all by keyword (make_ordered_layout(shape=..., order=...))
            args, kwargs = _first_by_keyword(name, kwargs)
        first, *args = args
        if isinstance(first, Tensor):
            delta, layout = oracle.on_tensor(name, first.domain_layout, *args, **kwargs)
            return first.moved(delta, layout)
        return oracle.call(name, first, *args, **kwargs)

    fn.__name__ = name
    return fn


def _first_by_keyword(name: str, kwargs: dict) -> tuple[tuple, dict]:
    """A call of cute.<name> with its first argument given by keyword: that argument
    moved to the front, by the name CuTe DSL's own function gives its first parameter."""
    import inspect

    import cutlass.cute as cute

    first = next(iter(inspect.signature(getattr(cute, name)).parameters))
    if first not in kwargs:
        raise TypeError(f"{name}() missing 1 required positional argument: {first!r}")
    rest = dict(kwargs)
    return (rest.pop(first),), rest


ALGEBRA = (
    "composition",
    "complement",
    "coalesce",
    "right_inverse",
    "left_inverse",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "make_ordered_layout",
    "make_layout_tv",
    "filter_zeros",
    "filter",
    "select",
    "group_modes",
    "append",
    "prepend",
    "flatten",
    "recast_layout",
    "max_common_layout",
    "max_common_vector",
    "make_identity_layout",
    "get",
    "dice",
    "append_ones",
    "prepend_ones",
    "make_layout_like",
    "shape_div",
    "ceil_div",
    "round_up",
    "nullspace",
    "make_layout_image_mask",
    "get_nonswizzle_portion",
    "get_swizzle_portion",
    "size_in_bytes",
    "product_each",
)


def repeat_like(x, target):
    """`x` at every leaf of `target`'s tuple nesting, as CuTe DSL's own (pure Python)
    repeat_like: anything that is not a tuple (an int, a scalar, a value) is a leaf."""
    if not isinstance(target, tuple):
        return x
    return tuple(repeat_like(x, part) for part in target)


zipped_divide = _algebra("zipped_divide")


def size(x, mode=None) -> int:
    if isinstance(x, (atoms.TiledMma, atoms.TiledCopy)):
        if mode:
            raise Unmodelled("size of a tiled op's mode")
        return x.size
    shape = _shape_of(x)
    for m in mode or []:
        if not isinstance(shape, tuple):
            if m != 0:
                raise IndexError(f"mode {m} of a rank-1 shape")
            continue
        shape = shape[m]
    return product(shape)


def _shape_of(x):
    if isinstance(x, (Tensor, Layout, ComposedLayout, TensorSSA)):
        return x.shape
    if isinstance(x, (tuple, list, int, np.integer)):
        return _static(x)
    raise Unmodelled(f"cute.size of {type(x).__name__}")


def cosize(x, mode=None) -> int:
    lay = x.layout if isinstance(x, Tensor) else x
    if isinstance(lay, ComposedLayout):
        lay = lay.outer
    for m in mode or []:
        lay = lay.mode(m)
    return lay.cosize


def rank(x, mode=None) -> int:
    shape = _shape_of(x)
    for m in mode or []:
        shape = shape[m]
    return len(shape) if isinstance(shape, tuple) else 1


def depth(x) -> int:
    from course.models.layout import depth_of

    return depth_of(_shape_of(x))


def shape(x, mode=None):
    s = _shape_of(x)
    for m in mode or []:
        s = s[m]
    return s


def crd2idx(coord, layout):
    """cute.crd2idx: the layout at coord; a shape (tuple or int) is its compact layout."""
    lay = layout.layout if isinstance(layout, Tensor) else layout
    if isinstance(lay, (tuple, list, int, np.integer)):
        lay = make_layout(lay)
    return lay(coord)


def idx2crd(idx, shape_):
    """cute.idx2crd for an int, per-lane or tuple index (course.execute.static_layout)."""
    from course.execute.static_layout import idx2crd as i2c

    return i2c(idx, _static(shape_))


def elem_less(a, b):
    """CuTe's elem_less: every component of a below b's (per lane where they differ)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        a_ = a if isinstance(a, tuple) else (a,)
        b_ = b if isinstance(b, tuple) else (b,)
        if len(a_) != len(b_):
            raise ValueError(f"elem_less of {a} and {b}: different ranks")
        result = True
        for x, y in zip(a_, b_):
            less = elem_less(x, y)
            if isinstance(less, Lanes) or isinstance(result, Lanes):
                result = Lanes(np.logical_and(_truth(result), _truth(less)))
            else:
                result = result and less
        return lanes(result.v) if isinstance(result, Lanes) else result
    less = a < b
    return less if isinstance(less, Lanes) else bool(less)


def _truth(x):
    return x.v.astype(bool) if isinstance(x, Lanes) else bool(x)


def _lane_min(*args):
    if any(isinstance(a, Lanes) for a in args):
        vals = [a.v if isinstance(a, Lanes) else a for a in args]
        return lanes(np.minimum.reduce(np.broadcast_arrays(*vals)))
    return builtins.min(*args)


def _lane_max(*args):
    if any(isinstance(a, Lanes) for a in args):
        vals = [a.v if isinstance(a, Lanes) else a for a in args]
        return lanes(np.maximum.reduce(np.broadcast_arrays(*vals)))
    return builtins.max(*args)


def assume(x, divby=None, **_):
    return x


# ---------------------------------------------------------------- cute: tensors


def make_tensor(iterator, layout) -> Tensor:
    if isinstance(layout, (tuple, int)):
        layout = make_layout(layout)
    return _make_tensor(iterator, layout)


def make_identity_tensor(shape_) -> Tensor:
    return identity_tensor(_static(shape_))


def make_rmem_tensor(layout_or_shape, dtype) -> Tensor:
    _check_type(dtype)
    lay = (
        layout_or_shape
        if isinstance(layout_or_shape, (Layout, ComposedLayout))
        else make_layout(layout_or_shape)
    )
    return register_tensor(lay, dtype)


def _check_type(dtype) -> None:
    if not isinstance(dtype, DType):
        raise Unmodelled(f"a tensor of {dtype!r}")


def make_fragment_like(src, dtype=None):
    if isinstance(src, (Layout, ComposedLayout)):
        lay = oracle.call("make_fragment_like", src)
        return lay if dtype is None else register_tensor(lay, dtype)
    return make_rmem_tensor_like(src, dtype)


def make_rmem_tensor_like(src, dtype=None) -> Tensor:
    if isinstance(src, TensorSSA):
        return register_tensor(make_layout(src.shape), dtype or src.dtype)
    if isinstance(src, Layout) or (isinstance(src, Tensor) and src.is_coordinates):
        # a layout (or a coordinate tensor's shape): CuTe's make_layout_like of it, with
        # the dtype the caller must give
        if dtype is None:
            raise ValueError("dtype must be provided when src is a layout or coordinate tensor")
        like = src if isinstance(src, Layout) else make_layout(src.shape)
        return register_tensor(oracle.call("make_layout_like", like), dtype)
    if not isinstance(src, Tensor) or not isinstance(src.iterator, Pointer):
        raise Unmodelled(f"make_rmem_tensor_like of {type(src).__name__}")
    extra = (dtype,) if dtype is not None else ()
    layout, made = oracle.fragment(
        None,
        "make_rmem_tensor_like",
        src.iterator.memory.space,
        src.element_type,
        src.layout,
        *extra,
    )
    return register_tensor(layout, made or dtype or src.element_type)


def local_tile(tensor: Tensor, tiler, coord, proj=None) -> Tensor:
    """zipped_divide by the (projected) tiler, then the tile at the (projected) coordinate:
    CuTe's definition; the divide is asked of CuTe, the slice is the executor's."""
    if proj is not None:
        # CuTe dices the first len(proj) modes and keeps any beyond them (a batch mode's
        # coordinate after an (M, N, K) projection: dense_gemm's (m, n, None, l))
        keep = [p is not None for p in proj]
        tiler = tuple(t for t, k in zip(tiler, keep) if k) + tuple(tiler[len(proj) :])
        coord = tuple(c for c, k in zip(coord, keep) if k) + tuple(coord[len(proj) :])
    divided = zipped_divide(tensor, tiler)
    tile_modes = divided.shape[0]
    tile_crd = tuple(None for _ in tile_modes) if isinstance(tile_modes, tuple) else None
    rest = coord if isinstance(coord, tuple) else (coord,)
    if isinstance(divided.shape[1], tuple) and len(rest) != len(divided.shape[1]):
        raise Unmodelled(f"local_tile with coordinate {coord} for tiles {divided.shape[1]}")
    return divided.slice((tile_crd, rest if isinstance(divided.shape[1], tuple) else rest[0]))


def local_partition(tensor: Tensor, tiler, index, proj=1) -> Tensor:
    delta, layout = oracle.on_tensor(
        "local_partition", tensor.domain_layout, tiler, int(index), proj=proj
    )
    return tensor.moved(delta, layout)


def domain_offset(coord, tensor: Tensor) -> Tensor:
    if isinstance(tensor, tma.TmaView):
        return tensor.domain_offset(coord)
    return tensor.moved(tensor.domain_layout(coord), tensor.domain_layout)


def recast_ptr(ptr, swizzle_=None, dtype=None) -> Pointer:
    if not isinstance(ptr, Pointer):
        raise Unmodelled(f"recast_ptr of {type(ptr).__name__}")
    if swizzle_ is not None and not isinstance(swizzle_, Swizzle):
        raise Unmodelled("recast_ptr with a non-swizzle layout")
    return Pointer(
        ptr.memory,
        ptr.byte_offset,
        dtype or ptr.dtype,
        swizzle_ if swizzle_ is not None else ptr.swizzle,
        ptr.alignment,
    )


def recast_tensor(src: Tensor, dtype) -> Tensor:
    if not isinstance(src.iterator, Pointer) or isinstance(src.layout, ComposedLayout):
        raise Unmodelled("recast_tensor of this tensor")
    layout = oracle.call("recast_layout", dtype.width, src.element_type.width, src.layout)
    return Tensor(recast_ptr(src.iterator, dtype=dtype), layout)


def printf(fmt, *args, **_):
    text = fmt.format(*args) if isinstance(fmt, str) else " ".join(map(str, (fmt,) + args))
    builtins.print(text)


def print_tensor(t, **_):
    if isinstance(t, Tensor) and isinstance(t.iterator, Pointer):
        builtins.print(f"{t}\n{t.values()}")
    elif isinstance(t, TensorSSA):  # its values, as CuTe prints them (not its type)
        builtins.print(f"{t}\n{t.values}")
    else:
        builtins.print(t)


def pretty_str(x) -> str:
    return str(x)


def where(cond, a, b):
    c = cond.values if isinstance(cond, TensorSSA) else cond
    av = a.values if isinstance(a, TensorSSA) else a
    bv = b.values if isinstance(b, TensorSSA) else b
    ref = next(x for x in (a, b, cond) if isinstance(x, TensorSSA))
    dtype = (
        a.dtype
        if isinstance(a, TensorSSA)
        else b.dtype
        if isinstance(b, TensorSSA)
        else of_value(a)
    )
    return TensorSSA(np.where(c, av, bv), ref.shape, dtype)


def full(shape_, fill_value, dtype):
    return TensorSSA(np.full(product(_static(shape_)), fill_value), _static(shape_), dtype)


def full_like(a, fill_value, dtype=None):
    return TensorSSA(np.full(product(a.shape), fill_value), a.shape, dtype or a.dtype)


def zeros_like(a, dtype=None):
    return full_like(a, 0, dtype)


def ones_like(a, dtype=None):
    return full_like(a, 1, dtype)


def _ssa_math(fn):
    def apply(x, *args, **kwargs):
        if isinstance(x, TensorSSA):
            return TensorSSA(fn(x.values.astype(np.float32)), x.shape, x.dtype)
        if isinstance(x, Lanes):  # a scalar that differs between the lanes of a warp
            return Lanes(fn(x.v.astype(np.float32)).astype(np.float32))
        return np.float32(fn(np.float32(x)))

    return apply


MATH = {
    name: _ssa_math(fn)
    for name, fn in {
        **mlir_dialects.FUNCTIONS,
        "erf": lambda v: np.vectorize(_math.erf)(v),
    }.items()
}


# ---------------------------------------------------------------- cute: atoms


make_copy_atom = atoms.make_copy_atom


def _tiled_copy_maker(name: str):
    def make(atom, *args, **kwargs) -> atoms.TiledCopy:
        if not isinstance(atom, atoms.CopyAtom):
            raise Unmodelled(f"{name} of {type(atom).__name__}")
        base = atom.atom if isinstance(atom, atoms.TiledCopy) else atom
        return atoms.TiledCopy(Recipe(f"cute.{name}", (atom,) + args, kwargs), base)

    make.__name__ = name
    return make


def make_mma_atom(op, **kwargs) -> atoms.TiledMma:
    return atoms.TiledMma(Recipe("cute.make_mma_atom", (op,), kwargs), op)


def make_tiled_mma(
    op_or_atom, atom_layout_mnk=(1, 1, 1), permutation_mnk=None, **kwargs
) -> atoms.TiledMma:
    op = op_or_atom.op if isinstance(op_or_atom, atoms.TiledMma) else op_or_atom
    if not isinstance(op, Recipe):
        raise Unmodelled(f"make_tiled_mma of {type(op).__name__}")
    if isinstance(atom_layout_mnk, tuple):
        atom_layout_mnk = make_layout(atom_layout_mnk)
    kw = dict(kwargs)
    if permutation_mnk is not None:
        kw["permutation_mnk"] = permutation_mnk
    return atoms.TiledMma(Recipe("cute.make_tiled_mma", (op_or_atom, atom_layout_mnk), kw), op)


def basic_copy(src, dst):
    atoms.autovec_copy(src, dst)


def basic_copy_if(pred, src, dst):
    atoms.copy_if(pred, src, dst)


# ---------------------------------------------------------------- cute.arch


def _warp():
    return machine.warp()


def thread_idx():
    return _warp().thread_idx()


def block_idx():
    return _warp().cta.block


def block_dim():
    return _warp().cta.dim


def grid_dim():
    return _warp().cta.launch.grid


def lane_idx():
    return lanes(_warp().tids % machine.WARP)


def warp_idx():
    return _warp().index


def sync_threads():
    machine.barrier(hazards.site(2))


def barrier(barrier_id=0, number_of_threads=None, **_):
    w = _warp()
    if int(barrier_id) != 0 or (
        number_of_threads is not None and int(number_of_threads) != w.cta.threads
    ):
        raise Unmodelled("cute.arch.barrier with a barrier id or thread count (named barriers)")
    machine.barrier(hazards.site(2))


FULL_MASK = 0xFFFFFFFF


def sync_warp(mask=FULL_MASK, **_):
    """bar.warp.sync: the executor runs a warp's lanes together and orders a warp's own
    accesses by program order, so reached by the whole warp it changes nothing here; reached
    by part of it (inside elect_one, behind a branch on the lane) with the full mask, the
    lanes it names that never come make it a COLLECTIVE hazard (machine.collective)."""
    if int(mask) & FULL_MASK != FULL_MASK:
        raise Unmodelled("cute.arch.sync_warp with a mask of part of the warp")
    machine.collective("cute.arch.sync_warp (bar.warp.sync with the full mask)", hazards.site(2))


def cp_async_commit_group():
    atoms.commit_group()


def cp_async_wait_group(n):
    atoms.wait_group(int(n))


def cp_async_wait_all():
    atoms.commit_group()
    atoms.wait_group(0)


ARCH = dict(
    thread_idx=thread_idx,
    block_idx=block_idx,
    block_dim=block_dim,
    grid_dim=grid_dim,
    lane_idx=lane_idx,
    warp_idx=warp_idx,
    sync_threads=sync_threads,
    barrier=barrier,
    sync_warp=sync_warp,
    cp_async_commit_group=cp_async_commit_group,
    cp_async_wait_group=cp_async_wait_group,
    cp_async_wait_all=cp_async_wait_all,
    make_warp_uniform=lambda x: x,
    WARP_SIZE=32,
)


# ---------------------------------------------------------------- cute.nvgpu

CPASYNC = standins.ops_names(
    "cute.nvgpu.cpasync",
    "CopyG2SOp",
    enums={"LoadCacheMode": ("ALWAYS", "GLOBAL", "STREAMING", "LAST_USE", "NONE")},
)
WARP_OPS = standins.ops_names(
    "cute.nvgpu.warp",
    "LdMatrix8x8x16bOp",
    "LdMatrix16x16x8bOp",
    "LdMatrix8x16x8bOp",
    "StMatrix8x8x16bOp",
    "StMatrix16x8x8bOp",
    "MmaF16BF16Op",
    "MmaF8Op",
    "MmaFP8Op",
)
NVGPU = standins.ops_names(
    "cute.nvgpu",
    "CopyUniversalOp",
    "MmaUniversalOp",
    # a weak ld/st.global between registers and global memory (its cache hints change no
    # value; a memory_order other than WEAK is not modelled: MemoryOrder is not a name here)
    "CopyG2ROp",
    "CopyR2GOp",
    enums={
        "LoadCacheMode": ("ALWAYS", "GLOBAL", "STREAMING", "LAST_USE", "NONE"),
        "CacheEvictionPriority": (
            "EVICT_NORMAL",
            "EVICT_FIRST",
            "EVICT_LAST",
            "EVICT_UNCHANGED",
            "NO_ALLOCATE",
        ),
        "StoreCacheMode": ("WRITE_BACK", "GLOBAL", "STREAMING", "WRITE_THROUGH", "NONE"),
    },
)


# ---------------------------------------------------------------- decorators and launch


class KernelFunction:
    """A @cute.kernel function on the executor: calling it gives something to .launch()."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        return KernelCall(self.fn, args, kwargs)

    def set_name_prefix(self, prefix: str) -> None:
        """CuTe DSL names the compiled kernel with it; the executor only keeps it."""
        self.name_prefix = prefix

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        import types

        return types.MethodType(self, obj)


class KernelCall:
    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def launch(
        self, grid=(1, 1, 1), block=(1, 1, 1), smem=None, stream=None, cluster=None, **kwargs
    ):
        # smem_merge_branch_allocs: a compiler hint (the branches' shared memory shared)
        # use_pdl: a dependent launch may start early, where griddepcontrol.wait holds it
        # until this stream's earlier grid is done; the executor runs launches one after
        # the other, one legal schedule (griddepcontrol_pdl)
        hints = {"min_blocks_per_mp", "smem_merge_branch_allocs", "fallback_cluster", "use_pdl"}
        unknown = {k for k, v in kwargs.items() if v is not None} - hints
        if unknown:
            raise Unmodelled(f"launch with {', '.join(sorted(unknown))}")
        cluster = _preferred_cluster(grid, cluster or (1, 1, 1), kwargs.get("fallback_cluster"))
        launches.launch(lambda *a: self.fn(*self.args, **self.kwargs), grid, block, cluster)


def griddepcontrol_wait(**_) -> None:
    """griddepcontrol.wait: the prerequisite grids have completed and their memory is
    visible. The executor runs a launch only after the one before it ended, so it holds at
    once (a dependent grid started early -- PDL's overlap -- is not modelled)."""


def griddepcontrol_launch_dependents(**_) -> None:
    """griddepcontrol.launch_dependents: dependents may be scheduled early; a hint."""


ARCH.update(
    griddepcontrol_wait=griddepcontrol_wait,
    griddepcontrol_launch_dependents=griddepcontrol_launch_dependents,
)


def _preferred_cluster(grid, preferred, fallback):
    """launch(cluster=preferred, fallback_cluster=fallback) (sm_100's preferred clusters):
    the GPU launches a cluster of the preferred shape wherever one fits and of the fallback
    shape elsewhere; launching every cluster at the preferred shape is one legal outcome,
    and the one the executor runs. CUDA's rules for the two shapes are checked."""
    if fallback is None:
        return preferred
    preferred, fallback = (tuple(int(x) for x in c) for c in (preferred, fallback))
    grid = tuple(int(x) for x in grid)
    rules = {
        "the fallback cluster's depth (z) equals the preferred's": preferred[2] == fallback[2],
        "the fallback cluster divides the preferred": all(
            p % f == 0 for p, f in zip(preferred, fallback)
        ),
        "the preferred cluster divides the grid": all(g % p == 0 for g, p in zip(grid, preferred)),
    }
    broken = [rule for rule, ok in rules.items() if not ok]
    if broken:
        raise hazards.Hazard(
            hazards.CRASH,
            f"a launch with cluster={preferred}, fallback_cluster={fallback} and grid={grid}: "
            + "; ".join(f"CUDA requires that {rule}" for rule in broken),
        )
    return preferred


def jit(fn=None, **_):
    if fn is None:
        return lambda f: f
    return fn


def kernel(fn=None, **_):
    if fn is None:
        return lambda f: KernelFunction(f)
    return KernelFunction(fn)


def _compile(*args, **kwargs):
    raise Unmodelled("cute.compile (the executor runs the @cute.jit function itself)")


def get_smem_capacity_in_bytes(compute_capability=None) -> int:
    """cutlass.memory.get_smem_capacity_in_bytes (and its deprecated cutlass.utils name):
    CuTe DSL's own table, for the GPU the run is told it has (CUTE_DSL_ARCH) where the
    kernel names none -- a host-side number, the same as on that GPU."""
    import os
    import warnings

    import cutlass.memory as real

    if compute_capability is None:
        digits = "".join(c for c in os.environ.get("CUTE_DSL_ARCH", "sm_90a")[3:] if c.isdigit())
        compute_capability = f"sm_{digits}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return int(real.get_smem_capacity_in_bytes(compute_capability))


class SmemAllocator:
    """cutlass.memory.smem.SmemAllocator: each thread allocates the same bytes in order."""

    def __init__(self, *args, **kwargs):
        self.offset = 0

    def _take(self, nbytes: int, align: int) -> int:
        start = -(-self.offset // align) * align
        if start + nbytes > machine.SMEM_CAPACITY:
            raise hazards.Hazard(
                hazards.OUT_OF_BOUNDS,
                f"shared memory of {start + nbytes} "
                f"bytes: more than the "
                f"{machine.SMEM_CAPACITY} a CTA has",
                hazards.site(3),
            )
        self.offset = start + nbytes
        return start

    def allocate_tensor(self, element_type, layout, byte_alignment=1, swizzle=None):
        _check_type(element_type)
        if swizzle is not None and not isinstance(swizzle, Swizzle):
            raise Unmodelled(f"allocate_tensor(..., swizzle={swizzle!r})")
        lay = layout if isinstance(layout, (Layout, ComposedLayout)) else make_layout(layout)
        offsets = np.asarray(lay.offsets)
        elems = int(offsets.max()) + 1 if offsets.size else 0
        nbytes = elems * element_type.itemsize
        if element_type.width < 8:  # 4-bit: two elements a byte
            nbytes = -(-elems * element_type.width // 8)
        start = self._take(nbytes, max(int(byte_alignment), element_type.itemsize))
        smem = machine.warp().cta.smem
        if not any(a.start == start for a in smem.allocations):
            smem.allocate(start, nbytes, element_type, lay, hazards.site(2))
        ptr = Pointer(smem, start, element_type, swizzle, align=int(byte_alignment))
        return Tensor(ptr, lay)

    # SmemAllocator.allocate(struct): course.execute.smem_struct's
    allocate = smem_struct.allocate

    def allocate_array(self, element_type, num_elems=1, byte_alignment=1):
        """A pointer to num_elems elements, as CuTe DSL's allocate_array returns."""
        tensor = self.allocate_tensor(element_type, make_layout(int(num_elems)), byte_alignment)
        return tensor.iterator


# ---------------------------------------------------------------- the namespaces


def _cute_names() -> dict:
    names = {name: _algebra(name) for name in ALGEBRA}
    names.update(
        make_layout=make_layout,
        E=basis.E,
        ScaledBasis=basis.Basis,
        make_swizzle=make_swizzle,
        make_composed_layout=make_composed_layout,
        size=size,
        cosize=cosize,
        rank=rank,
        depth=depth,
        shape=shape,
        crd2idx=crd2idx,
        idx2crd=idx2crd,
        elem_less=elem_less,
        repeat_like=repeat_like,
        assume=assume,
        make_tensor=make_tensor,
        make_identity_tensor=make_identity_tensor,
        make_rmem_tensor=make_rmem_tensor,
        make_fragment=make_rmem_tensor,
        make_fragment_like=make_fragment_like,
        make_rmem_tensor_like=make_rmem_tensor_like,
        local_tile=local_tile,
        local_partition=local_partition,
        domain_offset=domain_offset,
        recast_ptr=recast_ptr,
        recast_tensor=recast_tensor,
        printf=printf,
        print_tensor=print_tensor,
        pretty_str=pretty_str,
        where=where,
        full=full,
        full_like=full_like,
        zeros_like=zeros_like,
        ones_like=ones_like,
        make_copy_atom=make_copy_atom,
        make_mma_atom=make_mma_atom,
        make_tiled_mma=make_tiled_mma,
        copy=dispatch.copy,
        autovec_copy=atoms.autovec_copy,
        basic_copy=basic_copy,
        basic_copy_if=basic_copy_if,
        gemm=dispatch.gemm,
        AddressSpace=AddressSpace,
        jit=jit,
        kernel=kernel,
        compile=_compile,
        Tensor=Tensor,
        Layout=Layout,
        ComposedLayout=ComposedLayout,
        Swizzle=Swizzle,
        Pointer=Pointer,
        TensorSSA=TensorSSA,
        TiledCopy=atoms.TiledCopy,
        TiledMma=atoms.TiledMma,
        CopyAtom=atoms.CopyAtom,
        MmaAtom=atoms.TiledMma,
        ThrCopy=atoms.ThrCopy,
        ThrMma=atoms.ThrMma,
        Shape=tuple,
        Coord=tuple,
        Tile=tuple,
        IntTuple=tuple,
        Stride=tuple,
        Tiler=tuple,
        Numeric=DType,
        XTuple=tuple,
    )
    for name in (
        "make_tiled_copy_tv",
        "make_tiled_copy",
        "make_tiled_copy_A",
        "make_tiled_copy_B",
        "make_tiled_copy_C",
        "make_tiled_copy_S",
        "make_tiled_copy_D",
        "make_cotiled_copy",
        "make_tiled_copy_C_atom",
    ):
        names[name] = _tiled_copy_maker(name)
    return names


def _range(*args, **_unroll):
    return builtins.range(*(int(a) for a in args))


def _const_expr(x):
    return x


class _Constexpr:
    """cutlass.Constexpr: only ever an annotation."""


def _load_dsmem(ptr, dtype):
    """kernels.dsmem.load: one value from another CTA's shared memory (a mapa'd pointer:
    the same memory model as the CTA's own)."""
    return cute.make_tensor(ptr, cute.make_layout(1))[0]


class _StreamFlags(enum.IntEnum):
    """The driver's CUstream_flags (cuda.h's values): host code names one in a jit
    function's default `stream=cuda.CUstream(cuda.CUstream_flags.CU_STREAM_DEFAULT)`."""

    CU_STREAM_DEFAULT = 0
    CU_STREAM_NON_BLOCKING = 1


def _target_version(*args, **kwargs) -> bool:
    """cutlass.target_version: a compile-time question about the CUDA toolkit CuTe DSL was
    built with (NVIDIA's code picks an instruction by it), answered by the installed DSL
    itself -- the answer a GPU build with it gets."""
    import cutlass

    return cutlass.target_version(*args, **kwargs)


# the SIMT core's names, by the real module's name (parents before their modules)
CORE = {
    "cutlass": dict(
        Constexpr=_Constexpr,
        const_expr=_const_expr,
        range_constexpr=_range,
        range=_range,
        min=_lane_min,
        max=_lane_max,
        dynamic_expr=_const_expr,
        dsl_user_op=lambda f: f,
        target_version=_target_version,
        Numeric=DType,
        Integer=DType,
        Float=DType,
        **TYPES,
    ),
    # CuTe DSL re-exports its math functions and numeric types at the top (`cute.erf` is
    # `cute.math.erf`, `cute.Float32` is `cutlass.Float32`)
    "cutlass.cute": {**_cute_names(), **MATH, **TYPES},
    "cutlass.cute.arch": ARCH,
    "cutlass.cute.nvgpu": NVGPU,
    "cutlass.cute.nvgpu.cpasync": CPASYNC,
    "cutlass.cute.nvgpu.warp": WARP_OPS,
    "cutlass.cute.math": MATH,
    "cutlass.memory": {
        "SmemAllocator": SmemAllocator,
        "get_smem_capacity_in_bytes": get_smem_capacity_in_bytes,
    },
    "cutlass.memory.smem": {"SmemAllocator": SmemAllocator},
    "cutlass.utils": {"get_smem_capacity_in_bytes": get_smem_capacity_in_bytes},
    "cuda": {},
    "cuda.bindings": {},
    "cuda.bindings.driver": {"CUstream": lambda *a, **k: None, "CUstream_flags": _StreamFlags},
    # the course's own wrappers of what the executor cannot translate (an LLVM load, an
    # MLIR enum)
    "kernels.dsmem": {
        "load": _load_dsmem,
        "arrive": lambda mbar, rank: arch.mbarrier_arrive(mbar, rank),
    },
}

# every modelled name, once: the SIMT core's, then each architecture module's table
# (course.execute.standins.build refuses a name two tables give without saying so)
TABLES = [
    ("course.execute.api", CORE),
    ("course.execute.warp_ops", warp_ops.NAMES),
    ("course.execute.mlir_dialects", mlir_dialects.NAMES),
    ("course.execute.cp_async_arrive", cp_async_arrive.NAMES),
    ("course.execute.dsmem_stores", dsmem_stores.NAMES),
    ("course.execute.inline_ptx", inline_ptx.NAMES),
    ("course.execute.hopper", hopper.NAMES),
    ("course.execute.wgmma", wgmma.NAMES),
    ("course.execute.blackwell", blackwell.NAMES),
    ("course.execute.scaled_mma", scaled_mma.NAMES),
    ("course.execute.tmem_store", tmem_store.NAMES),
]
# real module name -> its stand-in (course.execute.translate binds these); OWNERS:
# (module, name) -> the table that gave it
MODULES, OWNERS = standins.build(TABLES, hopper.LOCATION_FREE)
standins.MODULES.update(MODULES)

cutlass = MODULES["cutlass"]
cute = MODULES["cutlass.cute"]
arch = MODULES["cutlass.cute.arch"]
nvgpu = MODULES["cutlass.cute.nvgpu"]
cpasync = MODULES["cutlass.cute.nvgpu.cpasync"]
warp = MODULES["cutlass.cute.nvgpu.warp"]
math = MODULES["cutlass.cute.math"]
memory = MODULES["cutlass.memory"]
smem_module = MODULES["cutlass.memory.smem"]
cuda = MODULES["cuda"]
driver = MODULES["cuda.bindings.driver"]
