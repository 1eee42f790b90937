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
from course.execute.memory import Allocation
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
        return self.dtype.itemsize * self.count

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


def _field(spec):
    if isinstance(spec, (MemRange, Align, Struct)):
        return spec
    if isinstance(spec, DType):
        return MemRange(spec, 1)
    raise Unmodelled(f"a cute.struct field of {spec!r}")


def struct(cls) -> Struct:
    """@cute.struct. Under `from __future__ import annotations` the fields are strings
    (`cute.struct.MemRange[cutlass.Int64, self.stages * 2]`): they are read in the scope
    of the kernel code that declares the class, as CuTe DSL's tracing reads them."""
    frame = sys._getframe(1)
    while frame is not None and not isinstance(frame.f_globals, KernelGlobals):
        frame = frame.f_back
    if frame is None:
        return Struct(cls)
    return Struct(cls, (frame.f_globals, _Names(frame.f_locals, frame.f_globals)))


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
        if swizzle is not None or dtype is not None:
            raise Unmodelled("a struct field's get_tensor with a swizzle or another type")
        return Tensor(self._ptr, layout if isinstance(layout, Layout) else Layout(layout))


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
    raise Unmodelled(f"SmemAllocator.allocate({spec!r})")
