"""Ask CuTe DSL: the layout algebra and the TV partitions, computed by CuTe itself.

Everything static a kernel builds -- a zipped_divide, a tile_to_shape, a TiledMMA's
partition of a tile for each thread, a fragment's register layout, a retile -- is the
answer CuTe DSL gives in a CPU trace (course.cute.trace.on_cpu) to the same call on the
same static layouts, converted back into course.execute.static_layout objects and kept: the
executor asks each question once per process.

Tensor operations are asked on counting tensors (`cute.make_tensor(0, layout)`): every
one of them (tiling, partitioning, slicing) composes the layout on the right and offsets
the iterator, so the layout CuTe returns and the integer it moves the iterator by apply to
any tensor with that layout. CuTe's objects that are not layouts (copy and MMA atoms,
TiledCopy, TiledMMA) are kept as `Recipe`s, the calls that make them, replayed in the trace.
"""

from __future__ import annotations

from typing import Any

from course.execute import static_layout
from course.execute.basis import Basis
from course.execute.dynamic import DynamicInt
from course.execute.dynamic_answers import UNKNOWN, ComposedRead, Read, asks_dynamic, merge
from course.execute.static_layout import ComposedLayout, Layout, Swizzle
from course.execute.numeric import TYPES, DType
from course.execute.hazards import Unmodelled, UnmodelledAttribute

ARCH = "sm_90a"  # mma.sync, cp.async and ldmatrix all trace for it
_CACHE: dict = {}


class Recipe:
    """A CuTe DSL object as the call that makes it: `path(*args, **kwargs)` on the real
    package, replayed inside a trace (args may hold recipes, layouts and types)."""

    __slots__ = ("path", "args", "kwargs", "key")

    def __init__(self, path: str, args: tuple = (), kwargs: dict | None = None):
        self.path, self.args, self.kwargs = path, tuple(args), dict(kwargs or {})
        self.key = ("R", path, key_of(self.args), key_of(self.kwargs))

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def names(self, suffix: str) -> bool:
        """Whether an argument of this call is the recipe whose path ends in `suffix`
        (an op made with tcgen05.CtaGroup.TWO: names("CtaGroup.TWO"))."""
        given = (*self.args, *self.kwargs.values())
        return any(isinstance(a, Recipe) and a.path.endswith(suffix) for a in given)

    def __getattr__(self, name: str):
        """An attribute of the object this recipe makes (`tiled_mma.op.a_dtype`): where it is
        plain data (a type, a number, a layout: course.execute.oracle.from_real's values), the
        real object's own, made on the CPU; other names CuTe DSL's class has are the
        executor's gap (this needs a GPU), never the kernel's AttributeError; a name the
        real class lacks too is the kernel's own mistake."""
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            made = resolve(self.path)
        except AttributeError:
            made = None
        known = made is not None and (
            hasattr(made, name) or (isinstance(made, type) and name in _instance_fields(made))
        )
        if not known:
            raise AttributeError(f"{self.name!r} object has no attribute {name!r}")
        try:  # plain data of the real object (a_dtype, shape_mnk), made and asked on the CPU
            return attribute(self, name)
        except (Unmodelled, CuteError):  # an MLIR value, a method: the executor's gap
            raise UnmodelledAttribute(f"{self.path}(...).{name}") from None

    def real(self):
        target = resolve(self.path)
        if not self.args and not self.kwargs and not callable(target):
            return target
        return target(*to_real(self.args), **to_real(self.kwargs))

    def __repr__(self) -> str:
        return f"{self.path}(...)"


def _instance_fields(cls: type) -> set:
    """The names an instance of CuTe DSL's class `cls` has that the class itself lacks:
    its dataclass fields and annotated attributes (an MMA op's shape_mnk, a_dtype), set
    per instance by its constructor."""
    names: set = set()
    for klass in cls.__mro__:
        names.update(getattr(klass, "__dataclass_fields__", {}))
        names.update(vars(klass).get("__annotations__", {}))
    return names


def resolve(path: str):
    """'cute.nvgpu.cpasync.CopyG2SOp' -> the real object."""
    import cutlass
    import cutlass.cute as cute

    root, *rest = path.split(".")
    obj = {"cute": cute, "cutlass": cutlass}[root]
    for part in rest:
        obj = getattr(obj, part)
    return obj


# ---------------------------------------------------------------- keys and conversions


def key_of(x) -> Any:
    """A hashable key for executor values that can reach CuTe."""
    if isinstance(x, DynamicInt):  # not the static int it equals: CuTe answers otherwise
        return ("dyn", int(x))
    if x is None or isinstance(x, (bool, int, str, float)):
        return x
    if isinstance(x, (Layout, ComposedLayout, Swizzle, Recipe, Basis)):
        return x.key
    if isinstance(x, DType):
        return ("T", x.name)
    if isinstance(x, (tuple, list)):
        return tuple(key_of(e) for e in x)
    if isinstance(x, dict):
        return tuple(sorted((k, key_of(v)) for k, v in x.items()))
    if hasattr(x, "oracle_key"):
        return x.oracle_key()
    import numpy as np

    if isinstance(x, np.integer):
        return int(x)
    raise Unmodelled(f"passing {type(x).__name__} to CuTe's layout algebra")


def to_real(x):
    """An executor value as the CuTe DSL value (inside a trace)."""
    import cutlass
    import cutlass.cute as cute

    if isinstance(x, DynamicInt):  # asked dynamic: a value CuTe cannot read, as on the GPU
        return cutlass.Int32(int(x)) if _ASKING_DYNAMIC else int(x)
    if isinstance(x, Layout):
        return cute.make_layout(to_real(x.shape), stride=to_real(x.stride) if x.basis else x.stride)
    if isinstance(x, Swizzle):
        return cute.make_swizzle(x.bits, x.base, x.shift)
    if isinstance(x, ComposedLayout):
        return cute.make_composed_layout(to_real(x.inner), x.offset, to_real(x.outer))
    if isinstance(x, DType):
        return getattr(cutlass, x.name)
    if isinstance(x, Recipe):
        return x.real()
    if isinstance(x, tuple):
        return tuple(to_real(e) for e in x)
    if isinstance(x, list):
        return [to_real(e) for e in x]
    if isinstance(x, dict):
        return {k: to_real(v) for k, v in x.items()}
    if hasattr(x, "to_real"):
        return x.to_real()
    return x


def from_real(x):
    """A CuTe DSL value (inside a trace) as an executor value."""
    import cutlass
    import cutlass.cute as cute

    if x is None or isinstance(x, (bool, int, str, float)):
        return x
    if isinstance(x, cute.ComposedLayout):
        made = ComposedRead if _ASKING_DYNAMIC else ComposedLayout
        return made(from_real(x.inner), _int(x.offset), from_real(x.outer))
    if isinstance(x, cute.Layout):
        return (Read if _ASKING_DYNAMIC else Layout)(_static(x.shape), _static(x.stride))
    if isinstance(x, cute.Swizzle):
        return Swizzle(x.num_bits, x.num_base, x.num_shift)
    if isinstance(x, cute.Tensor):
        it = x.iterator
        dtype = _dtype_name(x.element_type)
        if isinstance(it, (int, cutlass.Integer)) or _is_int(it):
            return ("counting", _int(it), from_real(x.layout))
        return ("tensor", dtype, from_real(x.layout))
    if isinstance(x, (tuple, list)):
        return tuple(from_real(e) for e in x)
    if _is_basis(x):
        return _static(x)
    if isinstance(x, type) and x.__name__ in TYPES:
        return TYPES[x.__name__]
    if _is_int(x):
        return _int(x)
    if _ASKING_DYNAMIC and isinstance(x, cutlass.Numeric):  # a number the GPU computes
        return UNKNOWN
    raise Unmodelled(f"CuTe's {type(x).__name__} value on the executor")


def _dtype_name(t):
    return TYPES.get(getattr(t, "__name__", ""), None)


def _is_int(x) -> bool:
    try:
        int(x)
        return not isinstance(x, float)
    except Exception:  # noqa: BLE001 -- a dynamic value: not an int
        return False


def _int(x) -> int:
    try:
        return int(x)
    except Exception:  # noqa: BLE001
        if _ASKING_DYNAMIC:  # a leaf the GPU's build leaves dynamic: the static asking's
            return UNKNOWN
        raise Unmodelled(f"a dynamic value ({x}) where the executor needs a static one") from None


def _static(t):
    """A static IntTuple (or stride) of CuTe's as ints, a ScaledBasis as a Basis."""
    if isinstance(t, tuple):
        return tuple(_static(e) for e in t)
    if _is_basis(t):
        value = _int(t.value)
        return UNKNOWN if value is UNKNOWN else Basis(value, t.mode)
    return _int(t)


def _is_basis(x) -> bool:
    import cutlass.cute as cute

    return isinstance(x, cute.ScaledBasis)


# ---------------------------------------------------------------- asking


BLACKWELL_ARCH = "sm_100a"  # tcgen05 and blackwell_helpers trace only for it
_BLACKWELL_MARKS = ("tcgen05", "blackwell_helpers", "tmem-tensor")


def arch_for(key) -> str:
    """The target a question is traced for: sm_100a where it names a Blackwell op or
    helper, else ARCH."""
    text = repr(key)
    return BLACKWELL_ARCH if any(m in text for m in _BLACKWELL_MARKS) else ARCH


def ask(key, job):
    """job() run in a CuTe DSL trace on the CPU, its answer kept under `key`."""
    if key in _CACHE:
        value = _CACHE[key]
    else:
        from course.cute.trace import on_cpu

        try:
            value = on_cpu(lambda: ("ok", job()), arch=arch_for(key))
        except Exception as exc:  # noqa: BLE001 -- CuTe refused: the kernel's error too
            inner = _unmodelled_in(exc)
            if inner is not None:
                raise inner from None
            value = ("error", _short(exc))
        if value[0] == "ok" and asks_dynamic(key):
            value = ("ok", merge(value[1], _asked_dynamic(key, job)))
        _CACHE[key] = value
    if value[0] == "error":
        raise CuteError(value[1])
    return value[1]


# while a question is asked the second time, with its dynamic extents dynamic in the trace
_ASKING_DYNAMIC = False


def _asked_dynamic(key, job):
    """job()'s answer with the DynamicInt extents as dynamic values, as the GPU's build
    computes it (course.execute.dynamic_answers), or None where CuTe refuses it so (the
    static answer then stands)."""
    global _ASKING_DYNAMIC
    from course.cute.trace import on_cpu

    _ASKING_DYNAMIC = True
    try:
        return on_cpu(job, arch=arch_for(key))
    except Exception:  # noqa: BLE001 -- not askable dynamic: the static answer stands
        return None
    finally:
        _ASKING_DYNAMIC = False


def _unmodelled_in(exc: BaseException | None):
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, Unmodelled):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


class CuteError(ValueError):
    """CuTe DSL refused the call (the same code would not compile for the GPU either)."""


def _short(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: " + " / ".join(lines[:3])


def call(name: str, *args, **kwargs):
    """cute.<name>(*args, **kwargs) on static values (layouts, shapes, ints)."""

    def job():
        import cutlass.cute as cute

        return from_real(getattr(cute, name)(*to_real(args), **to_real(kwargs)))

    return ask(("call", name, key_of(args), key_of(kwargs)), job)


def on_tensor(name: str, layout, *args, **kwargs) -> tuple[int, Any]:
    """cute.<name>(t, *args) for a counting tensor t over `layout`: (how far the iterator
    moved, the result's layout)."""

    def job():
        import cutlass.cute as cute

        t = cute.make_tensor(0, to_real(layout))
        return from_real(getattr(cute, name)(t, *to_real(args), **to_real(kwargs)))

    result = ask(("tensor", name, key_of(layout), key_of(args), key_of(kwargs)), job)
    return _counting(result, name)


def _counting(result, what: str):
    if not (isinstance(result, tuple) and result and result[0] == "counting"):
        raise Unmodelled(f"{what} returning {result!r}")
    return result[1], result[2]


def attribute(recipe: Recipe, name: str):
    """A static property of a CuTe object (a TiledCopy's layout_tv_tiled, a TiledMMA's size)."""
    return ask(("attr", recipe.key, name), lambda: from_real(getattr(recipe.real(), name)))


def static_function(path: str):
    """A host-side CuTe DSL function of layouts, types and enums (make_smem_layout_atom,
    make_smem_layout_epi, ...): its answer asked of CuTe, kept."""

    def fn(*args, **kwargs):
        def job():
            return from_real(resolve(path)(*to_real(args), **to_real(kwargs)))

        return ask(("static", path, key_of(args), key_of(kwargs)), job)

    fn.__name__ = path.rsplit(".", 1)[-1]
    return fn


def method(recipe: Recipe, name: str, *args):
    return ask(
        ("method", recipe.key, name, key_of(args)),
        lambda: from_real(getattr(recipe.real(), name)(*to_real(args))),
    )


def thread_start(recipe: Recipe, name: str, tile: tuple, thread: int) -> int:
    """thread_starts' answer for one thread index, also one outside the op's threads (CuTe
    computes a partition for any index by its TV layout's arithmetic)."""

    def job():
        import cutlass.cute as cute

        t = cute.make_tensor(0, cute.make_layout(tile))
        return _int(getattr(recipe.real().get_slice(thread), name)(t).iterator)

    return ask(("start", recipe.key, name, tile, thread), job)


def thread_starts_at(recipe: Recipe, name: str, tile: tuple, ids: tuple) -> list[int]:
    """thread_start for several thread indices at once, in one trace (a warp's lanes outside
    the op's threads: one question, not 32)."""

    def job():
        import cutlass.cute as cute

        obj = recipe.real()
        t = cute.make_tensor(0, cute.make_layout(tile))
        return [_int(getattr(obj.get_slice(i), name)(t).iterator) for i in ids]

    return ask(("starts at", recipe.key, name, tile, tuple(ids)), job)


def thread_starts(recipe: Recipe, name: str, tile: tuple, threads: int) -> list[int]:
    """Where each thread's partition starts in one tile: the colexicographic index, in a
    tile of shape `tile`, of thread t's first value under recipe.get_slice(t).<name>.
    Every tensor the op partitions tile by tile starts there too (course.execute.atoms)."""

    def job():
        import cutlass.cute as cute

        obj = recipe.real()
        t = cute.make_tensor(0, cute.make_layout(tile))
        return [_int(getattr(obj.get_slice(i), name)(t).iterator) for i in range(threads)]

    return ask(("starts", recipe.key, name, tile, threads), job)


def first_partition(recipe: Recipe, name: str, layout) -> tuple[int, Any]:
    """(iterator offset, layout) of thread 0's partition of a counting tensor over `layout`:
    the layout every thread's partition has."""

    def job():
        import cutlass.cute as cute

        t = cute.make_tensor(0, to_real(layout))
        return from_real(getattr(recipe.real().get_slice(0), name)(t))

    return _counting(ask(("first", recipe.key, name, key_of(layout)), job), name)


def fragment(recipe: Recipe | None, name: str, space: str, dtype: DType, layout, *extra):
    """The register layout and type of a fragment CuTe makes from a tensor with `layout`
    in `space` of `dtype`: recipe.<name>(t) (make_fragment_A/B/C), or cute.<name>(t, *extra)
    when recipe is None (make_fragment_like, make_rmem_tensor_like)."""

    def job():
        import cutlass.cute as cute

        t = _pointer_tensor(space, dtype, layout)
        fn = getattr(cute, name) if recipe is None else getattr(recipe.real(), name)
        made = fn(t, *to_real(extra))
        return (from_real(made.layout), _dtype_name(made.element_type))

    if isinstance(layout, ComposedLayout):
        layout = layout.representative()
    return ask(
        (
            "fragment",
            recipe.key if recipe else None,
            name,
            space,
            dtype.name,
            key_of(layout),
            key_of(extra),
        ),
        job,
    )


def retile(recipe: Recipe, layout, dtype: DType) -> tuple[int, Any]:
    """recipe.retile(register tensor over `layout`): (iterator offset, layout)."""

    def job():
        import cutlass.cute as cute

        t = cute.make_rmem_tensor(to_real(layout), to_real(dtype))
        made = recipe.real().retile(t)
        return from_real(made.layout)

    return 0, ask(("retile", recipe.key, key_of(layout), dtype.name), job)


def _pointer_tensor(space: str, dtype: DType, layout):
    import cutlass.cute as cute

    real = to_real(dtype)
    if space == "rmem":
        return cute.make_rmem_tensor(to_real(layout), real)
    ptr = cute.make_ptr(real, 0, getattr(cute.AddressSpace, space), assumed_align=16)
    return cute.make_tensor(ptr, to_real(layout))


def layout_property(layout, name: str):
    """A static property of a layout (`max_alignment`), as CuTe DSL's own layout gives it."""
    return ask(
        ("layout property", key_of(layout), name), lambda: from_real(getattr(to_real(layout), name))
    )


static_layout.ASK_CUTE = layout_property


def clear() -> None:
    """Forget every answer (tests use it to time a first question)."""
    _CACHE.clear()
