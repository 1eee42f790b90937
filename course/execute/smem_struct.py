"""`cute.struct` on the executor: a kernel's shared-memory struct (its mbarriers, the TMEM
address word, the CLC response) laid out as CuTe DSL lays it out, and
`SmemAllocator.allocate(Struct)` giving a view of its fields.

    @cute.struct
    class Barriers:
        ab: cute.struct.MemRange[cutlass.Int64, 8]      # bars.ab.data_ptr(): 8 Int64s
        tmem_base: cutlass.Int32                         # bars.tmem_base.ptr
        resp: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 4], 16]

Fields come in order, each at its alignment (its element size, or what Align says); the
struct is aligned to its largest field. Each field is named in the shared memory's
allocations ("bars.ab[3]"), so a hazard names the barrier a kernel got wrong.
"""

from __future__ import annotations

import re
import sys

from course.execute import hazards, machine
from course.execute.hazards import KernelGlobals, Unmodelled
from course.execute.memory import SMEM, Allocation
from course.execute.numeric import DType
from course.execute.static_layout import Layout
from course.execute.tensor import Pointer, Tensor


class MemRange:
    """cute.struct.MemRange[dtype, n]: n elements in a row."""

    def __init__(self, dtype: DType, count: int):
        self.dtype, self.count = dtype, int(count)

    def __class_getitem__(cls, key):
        return cls(*key)

    @property
    def nbytes(self) -> int:
        # sub-byte types packed (n fp4 values: n / 2 bytes), as CuTe DSL sizes the range
        return -(-self.dtype.width * self.count // 8)

    @property
    def align(self) -> int:
        return self.dtype.itemsize


class Align:
    """cute.struct.Align[field, bytes]: the field at a multiple of `bytes`."""

    def __init__(self, inner, align: int):
        self.inner, self.align_ = _field(inner), int(align)

    def __class_getitem__(cls, key):
        return cls(*key)

    @property
    def nbytes(self) -> int:
        return self.inner.nbytes

    @property
    def align(self) -> int:
        return max(self.align_, self.inner.align)


class Struct:
    """A @cute.struct class: its fields in order."""

    def __init__(self, cls, scope: tuple = ({}, {})):
        self.name = cls.__name__
        self.fields = [
            (k, _field(eval(v, *scope) if isinstance(v, str) else v))  # noqa: S307
            for k, v in getattr(cls, "__annotations__", {}).items()
        ]

    @property
    def align(self) -> int:
        return max((f.align for _, f in self.fields), default=1)

    def layout(self) -> tuple[list, int]:
        """[(name, field, byte offset)], total bytes."""
        out, offset = [], 0
        for name, f in self.fields:
            offset = -(-offset // f.align) * f.align
            out.append((name, f, offset))
            offset += f.nbytes
        return out, -(-offset // self.align) * self.align

    @property
    def nbytes(self) -> int:
        return self.layout()[1]

    # CuTe DSL's struct API: its size and alignment are static
    def size_in_bytes(self) -> int:
        return self.nbytes

    def __sizeof__(self) -> int:
        return self.nbytes

    def __alignof__(self) -> int:
        return self.align

    def __call__(self, ptr) -> "StructView":
        """`Struct(ptr)`: the struct's fields over shared memory at a pointer (one that
        SmemAllocator or another struct's field gave)."""
        if not isinstance(ptr, Pointer) or ptr.memory.space != SMEM:
            raise Unmodelled(f"{self.name}(ptr) over a {type(ptr).__name__} not in shared memory")
        return view(ptr.memory, ptr.byte_offset, self, self.name)


def from_real(real, value) -> Struct:
    """A @cute.struct that CuTe DSL itself decorated (a module-level class, made when the
    kernel's module was imported) as the executor's Struct: the same fields, their element
    types translated by `value` (course.execute.translate); the offsets CuTe DSL computed
    are checked against the executor's, so a layout rule the executor lacks is said, not
    guessed."""
    made = Struct(type("_", (), {"__annotations__": {}}))
    made.name = real._cls.__name__
    made.fields = [(k, _real_field(v, value)) for k, v in real._annotations.items()]
    offsets = {name: offset for name, _, offset in made.layout()[0]}
    if offsets != dict(real._offsets) or made.nbytes != real._size_of:
        raise Unmodelled(f"the layout of cute.struct {made.name} (CuTe DSL: {real._offsets})")
    return made


def _real_field(spec, value):
    from cutlass.cute import struct as real_struct

    if isinstance(spec, real_struct._AlignMeta):
        return Align(_real_field(spec.dtype, value), spec.align)
    if isinstance(spec, real_struct._MemRangeMeta):
        return MemRange(value(spec._dtype), spec._size)
    if isinstance(spec, real_struct):
        return from_real(spec, value)
    return _field(value(spec))


def _field(spec):
    if isinstance(spec, (MemRange, Align, Struct)):
        return spec
    if isinstance(spec, DType):
        return MemRange(spec, 1)
    raise Unmodelled(f"a cute.struct field of {spec!r}")


def struct(cls) -> Struct:
    """@cute.struct. Under `from __future__ import annotations` the fields are strings
    (`cute.struct.MemRange[cutlass.Int64, self.stages * 2]`): they are read in the scope
    of the kernel code that declares the class, as CuTe DSL's tracing reads them: the class
    body's own names first (`align = self.n_bytes` above `x: Align[..., align]`), as Python
    evaluates a class body, then the kernel frame's locals and globals."""
    frame = sys._getframe(1)
    while frame is not None and not isinstance(frame.f_globals, KernelGlobals):
        frame = frame.f_back
    if frame is None:
        return Struct(cls)
    own = {k: v for k, v in vars(cls).items() if not k.startswith("__")}
    return Struct(cls, (frame.f_globals, _Names({**frame.f_locals, **own}, frame.f_globals)))


class _Names(dict):
    """A kernel frame's locals, then its (lazily translated) globals."""

    def __init__(self, local: dict, kernel_globals: dict):
        super().__init__(local)
        self._globals = kernel_globals

    def __missing__(self, name):
        return self._globals[name]


struct.MemRange = MemRange
struct.Align = Align


# ---------------------------------------------------------------- views of an allocated struct


class RangeView:
    """A MemRange (or scalar) field in shared memory: its pointer and a tensor over it."""

    def __init__(self, ptr: Pointer, field: MemRange):
        self._ptr, self._field = ptr, field

    def data_ptr(self) -> Pointer:
        return self._ptr

    @property
    def ptr(self) -> Pointer:
        return self._ptr

    def get_tensor(self, layout, swizzle=None, dtype=None) -> Tensor:
        """CuTe DSL's MemRange.get_tensor: the field's pointer recast (to `dtype`, with
        `swizzle` on its addresses), then a tensor of `layout` over it."""
        from course.execute.static_layout import ComposedLayout, Swizzle

        if swizzle is not None and isinstance(layout, ComposedLayout):
            raise TypeError("incompatible layout with swizzle")
        if swizzle is not None and not isinstance(swizzle, Swizzle):
            raise Unmodelled(f"get_tensor(..., swizzle={swizzle!r})")
        p = self._ptr
        ptr = Pointer(p.memory, p.byte_offset, dtype or p.dtype, swizzle or p.swizzle, p._align)
        if not isinstance(layout, (Layout, ComposedLayout)):
            layout = Layout(layout)
        return Tensor(ptr, layout)


class StructView:
    def __init__(self, fields: dict):
        self.__dict__.update(fields)


def view(smem, start: int, spec: Struct, prefix: str):
    fields = {}
    for name, f, offset in spec.layout()[0]:
        inner = f.inner if isinstance(f, Align) else f
        at = start + offset
        label = f"{prefix}.{name}"
        if isinstance(inner, Struct):
            fields[name] = view(smem, at, inner, label)
            continue
        if not any(a.start == at and a.name == label for a in smem.allocations):
            smem.allocations.append(
                Allocation(label, at, inner.nbytes, inner.dtype, Layout(inner.count))
            )
        fields[name] = RangeView(Pointer(smem, at, inner.dtype, align=f.align), inner)
    return StructView(fields)


def allocate(allocator, spec, byte_alignment: int = 1, **_):
    """SmemAllocator.allocate(Struct | dtype | bytes): a struct view, or a pointer."""
    site = hazards.site(2)
    if isinstance(spec, Struct):
        start = allocator._take(spec.nbytes, max(int(byte_alignment), spec.align, 8))
        match = re.match(r"\s*(\w+)\s*=", site.text())
        return view(machine.warp().cta.smem, start, spec, match.group(1) if match else spec.name)
    if isinstance(spec, DType):
        return allocator.allocate_array(spec, 1, max(int(byte_alignment), spec.itemsize))
    if isinstance(spec, int) and not isinstance(spec, bool):  # raw bytes: an Int8 pointer
        from course.execute.numeric import by_name

        if spec < 0 or int(byte_alignment) < 1:
            raise ValueError("SmemAllocator.allocate: a size >= 0 and a byte_alignment >= 1")
        return allocator.allocate_array(by_name("Int8"), spec, int(byte_alignment))
    raise Unmodelled(f"SmemAllocator.allocate({spec!r})")
