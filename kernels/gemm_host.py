"""The surface of every GEMM step, written once: C[M,N] = A[M,K] . B[N,K]^T.

A step module describes its kernel (a class whose `__call__` is the `@cute.jit` host
function taking `(a_ptr, b_ptr, c_ptr, m, n, k, *extra, stream)`), the operands it accepts
(`Operands`) and the GPU it needs; `GemmHost` turns that into the functions a learner and
the course call:

    compile(dtype, config)          the launchable handle for this GPU, compiled once
    artifacts(arch, dtype, config)  PTX / cubin / SASS for any target, without a GPU
    run(a, b, out=None, config)     validate the torch operands, then launch
    prepare(problem, config)        compile once for a benchmark problem; gemm(a, b, c)

Three element types name a GEMM (`GemmTypes`): A's and B's, the accumulator's and C's.
`dtype` is A's and B's; `out_dtype` is C's (by default A's); the accumulator is the
step's (`Operands.acc_dtype`, fp32 everywhere here).

`validate_gemm` is the one set of operand rules, parameterised by what the kernel's loads
need: 16-byte copies and TMA need K-major, compact rows whose strides (K for A and B, N for
C) are multiples of 16 bytes -- 8 elements of a 16-bit type, 16 of float8; the naive kernel
takes either major and any size. The widths that follow from the element type (a k-tile,
one MMA's K, a stage's bytes) are computed here once, from bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import torch

from . import host
from .artifacts import Artifacts
from .host import KernelInputError, check_tensor, dtype_name

HALF_TYPES = (torch.bfloat16, torch.float16)
FLOAT8_TYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
SHORT_NAMES = {
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
    torch.float8_e4m3fn: "e4m3",
    torch.float8_e5m2: "e5m2",
}

# ---------------------------------------------------------------- widths, in bytes

COPY_BYTES = 16  # one vectorized copy (cp.async, a row of ldmatrix/stmatrix, st.global.v4);
# TMA needs base addresses and row strides in multiples of it too
SWIZZLE_ROW_BYTES = 128  # one row of the widest shared-memory swizzle (TMA's and WGMMA's 128B)
MMA_K_BYTES = 32  # K of one wgmma / tcgen05.mma, in bytes of A: 16 of a 16-bit type, 32 of fp8


def elements(nbytes: int, elem_bits: int) -> int:
    """How many elements of `elem_bits` bits fill `nbytes`: 8 bf16 in 16 bytes, 16 float8."""
    return nbytes * 8 // elem_bits


def tile_k(elem_bits: int) -> int:
    """K elements of one k-tile of the TMA-fed steps (09 on): one 128-byte swizzle row of A
    and B, so that one TMA box row is one swizzle row: 64 of a 16-bit type, 128 of float8."""
    return elements(SWIZZLE_ROW_BYTES, elem_bits)


def mma_k(elem_bits: int) -> int:
    """K elements of one wgmma / tcgen05.mma instruction: 16 of a 16-bit type, 32 of fp8."""
    return elements(MMA_K_BYTES, elem_bits)


def stage_bytes(rows_a: int, rows_b: int) -> int:
    """Bytes of A and B one k-tile brings into one stage of a ring (what a full barrier's
    expect_tx counts): rows of one 128-byte swizzle row each, whatever the element type."""
    return (rows_a + rows_b) * SWIZZLE_ROW_BYTES


class GemmTypes(NamedTuple):
    """The element types of one GEMM, as CuTe DSL numeric types."""

    ab: type  # A's and B's
    acc: type  # the accumulator's (in registers or tensor memory)
    c: type  # C's, what the epilogue converts the accumulator to


def gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k):
    """A (M,K) and B (N,K) K-major and C (M,N) row-major, from pointers and runtime sizes,
    inside a `@cute.jit` host function: one compile serves every shape. K and N are declared
    multiples of 16 bytes (of A's and of C's type), as validate_gemm checks before a launch,
    so the compiler may use 16-byte copies and TMA may take the row strides."""
    import cutlass.cute as cute

    k = cute.assume(k, divby=elements(COPY_BYTES, a_ptr.dtype.width))
    n = cute.assume(n, divby=elements(COPY_BYTES, c_ptr.dtype.width))
    mA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
    mB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
    mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
    return mA, mB, mC


# ---------------------------------------------------------------- what a kernel accepts


@dataclass(frozen=True)
class Operands:
    """What a GEMM kernel accepts. Majors: 'k' = stored row-major as (rows, K);
    'm' (A) or 'n' (B) = contiguous down the rows, stride (1, rows)."""

    ab_dtypes: tuple[torch.dtype, ...] = HALF_TYPES
    c_dtypes: tuple[torch.dtype, ...] | None = None  # None: C in A's dtype
    acc_dtype: torch.dtype = torch.float32
    a_majors: tuple[str, ...] = ("k",)
    b_majors: tuple[str, ...] = ("k",)
    # rows (K of A and B, N of C) and base addresses in multiples of this many bytes, what
    # 16-byte copies and TMA need; None: element-wise loads, any K and N
    row_bytes: int | None = COPY_BYTES
    int32_offsets: bool = False  # the kernel indexes elements with 32-bit integers

    def align(self, dtype: torch.dtype) -> int:
        """Bytes the kernel may assume its operands' base addresses are aligned to."""
        return self.row_bytes or dtype.itemsize

    def k_elements(self, a: torch.Tensor) -> int:
        """K in elements of A (M, columns): two a column for the packed float4 types."""
        bits = host.cutlass_dtype(a.dtype).width
        return a.shape[1] * a.element_size() * 8 // bits

    def dtype_names(self) -> str:
        return "/".join(SHORT_NAMES.get(d, dtype_name(d)) for d in self.ab_dtypes)

    def check(
        self,
        kernel: str,
        dtype: torch.dtype,
        out_dtype: torch.dtype | None,
        a_major: str,
        b_major: str,
    ) -> None:
        """Refuse a configuration (dtypes, majors) these rules do not take, before compiling."""
        if a_major not in self.a_majors or b_major not in self.b_majors:
            only = " (K-major A and B only)" if self.a_majors == self.b_majors == ("k",) else ""
            raise KernelInputError(
                f"{kernel} takes a_major in {self.a_majors} and b_major in "
                f"{self.b_majors}{only}, got {a_major!r}, {b_major!r}"
            )
        if dtype not in self.ab_dtypes:
            raise KernelInputError(f"{kernel} takes {self.dtype_names()}, not {dtype_name(dtype)}")
        self.out_dtype(dtype, out_dtype)

    def out_dtype(self, dtype: torch.dtype, wanted: torch.dtype | None = None) -> torch.dtype:
        """C's dtype: `wanted`, or by default A's (or the first this kernel stores)."""
        allowed = self.c_dtypes or (dtype,)
        out = wanted or (dtype if dtype in allowed else allowed[0])
        if out not in allowed:
            raise KernelInputError(
                f"C in {dtype_name(out)}: this kernel stores C in "
                f"{', '.join(dtype_name(d) for d in allowed)}"
            )
        return out

    def types(self, dtype: torch.dtype, out_dtype: torch.dtype) -> GemmTypes:
        """The CuTe DSL types of a GEMM of A/B in `dtype` and C in `out_dtype`."""
        return GemmTypes(
            host.cutlass_dtype(dtype),
            host.cutlass_dtype(self.acc_dtype),
            host.cutlass_dtype(out_dtype),
        )


def check_rows(what: str, size: int, dtype: torch.dtype, rows: str, row_bytes: int) -> None:
    """Refuse a row of `size` elements that is not a multiple of `row_bytes` bytes."""
    per = row_bytes // dtype.itemsize
    if size * dtype.itemsize % row_bytes:
        raise KernelInputError(
            f"{what} = {size} is not a multiple of {per}: {rows} are {size} x "
            f"{dtype.itemsize} = {size * dtype.itemsize} bytes, and 16-byte copies and TMA "
            f"need rows in multiples of {row_bytes} bytes ({per} {dtype_name(dtype)}). Pad "
            f"{what} with zeros to a multiple of {per}"
        )


def major_of(t: torch.Tensor, name: str, majors: tuple[str, ...], rows: str) -> str:
    """'k' if `t` (rows, K) is stored row-major with packed rows, the rows' name ('m' or
    'n') if it is stored the other way round; refuse anything else this kernel cannot read."""
    n_rows, n_cols = t.shape
    if t.numel() == 0 or (t.stride(1) == 1 and (t.stride(0) == n_cols or n_rows == 1)):
        found = "k"
    elif t.stride(0) == 1 and (t.stride(1) == n_rows or n_cols == 1):
        found = rows.lower()
    elif t.stride(1) == 1:
        raise KernelInputError(
            f"{name}'s rows are not packed (row stride {t.stride(0)} for {n_cols} columns: a "
            f"column slice?); pass {name}.contiguous()"
        )
    else:
        found = None
    if found not in majors:
        if majors == ("k",):
            raise KernelInputError(
                f"{name} must be K-major (stored row-major as ({rows}, K)); it has strides "
                f"{tuple(t.stride())} (a transposed view?). This kernel takes K-major operands "
                f"only: pass {name}.contiguous()"
            )
        raise KernelInputError(
            f"{name} with strides {tuple(t.stride())} is neither {rows.lower()}-major (stride "
            f"(1,{n_rows})) nor K-major (stride ({n_cols},1)); pass .contiguous() or a "
            f"transposed contiguous tensor"
        )
    return found


def validate_gemm(
    a: Any,
    b: Any,
    out: Any,
    *,
    kernel: str,
    operands: Operands,
    out_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, str, str]:
    """Check A (M,K), B (N,K) and C (M,N) before a launch; return (C, A's major, B's major),
    allocating C when `out` is None."""
    for t, name in ((a, "a"), (b, "b")):
        dtypes = operands.ab_dtypes if name == "a" else (a.dtype,)
        check_tensor(
            t,
            name,
            dtypes=dtypes,
            ndim=2,
            contiguous_dim=None,
            align_bytes=operands.align(t.dtype) if isinstance(t, torch.Tensor) else 1,
        )
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb:
        raise KernelInputError(
            f"a is {m}x{k} and b is {n}x{kb}: C = A.B^T needs the same K (B given as N x K)"
        )
    if a.device != b.device:
        raise KernelInputError(f"a is on {a.device} and b on {b.device}: use one device")
    a_major = major_of(a, "a", operands.a_majors, "M")
    b_major = major_of(b, "b", operands.b_majors, "N")
    if operands.row_bytes:
        check_rows("K", k, a.dtype, "rows of A and B", operands.row_bytes)
    if max(m, n, k) >= 2**31 or (
        operands.int32_offsets and max(a.numel(), b.numel(), m * n) >= 2**31
    ):
        raise KernelInputError(
            f"{kernel} indexes with 32-bit integers: sizes and operands "
            f"must stay below 2^31 elements"
        )
    if out is None:
        out = torch.empty(m, n, dtype=operands.out_dtype(a.dtype, out_dtype), device=a.device)
    check_tensor(
        out,
        "out",
        dtypes=operands.c_dtypes or (a.dtype,),
        ndim=2,
        contiguous_dim=None,
        align_bytes=operands.align(out.dtype),
    )
    if operands.row_bytes:
        check_rows("N", n, out.dtype, "rows of C", operands.row_bytes)
    if tuple(out.shape) != (m, n):
        raise KernelInputError(f"out must be {m}x{n} (M x N), got {tuple(out.shape)}")
    if out.device != a.device:
        raise KernelInputError(f"out is on {out.device}, a on {a.device}: use one device")
    if out.numel() and (out.stride(1) != 1 or (m > 1 and out.stride(0) != n)):
        raise KernelInputError(
            f"out must be a compact row-major {m}x{n} tensor "
            f"(strides {tuple(out.stride())}); pass a fresh tensor"
        )
    return out, a_major, b_major


@dataclass(frozen=True)
class LaunchExtra:
    """Arguments a kernel takes after (m, n, k): stand-ins to compile with, the real values
    (computed after validation, e.g. from the operands' GPU), and a check after the launch."""

    placeholders: Callable[[Any], tuple]
    values: Callable[[torch.Tensor, Any], tuple]
    after: Callable[[torch.Tensor, Any], None] | None = None


NO_EXTRA = LaunchExtra(lambda config: (), lambda a, config: ())


def _accept_any(a: torch.Tensor, b: torch.Tensor, tensors: tuple, config) -> None:
    return None


@dataclass(frozen=True)
class ExtraOperands:
    """A step's operands beside A, B and C (scales, a bias, a residual, scale factors),
    declared once for its GemmHost: how they are checked before anything launches (after A,
    B and C were), what the kernel reads of them (`prepare`: e.g. another layout), and their
    pointers, which the kernel takes after the LaunchExtra arguments (stand-ins of the same
    types and alignment when compiling)."""

    names: tuple[str, ...]
    dtypes: Callable[[Any], tuple[torch.dtype, ...]]  # config -> the pointers' element types
    check: Callable[[torch.Tensor, torch.Tensor, tuple, Any], None] = _accept_any
    prepare: Callable[[tuple, Any], tuple] | None = None  # (tensors, config) -> what is read
    align: int | None = None  # bytes the pointers are aligned to; None: each element's size

    def placeholders(self, config) -> tuple:
        """The pointers' stand-ins for compiling `config`."""
        return tuple(
            host.gmem_pointer(None, d, self.align or d.itemsize) for d in self.dtypes(config)
        )

    def accept(
        self, kernel: str, a: torch.Tensor, b: torch.Tensor, tensors: tuple, config
    ) -> tuple:
        """Check the tensors given for these operands (A and B already checked) and return
        what the kernel reads; refuse a wrong count or a wrong tensor before a launch."""
        if len(tensors) != len(self.names):
            wanted = ", ".join(self.names) or "none"
            raise KernelInputError(
                f"{kernel} takes {len(self.names)} operand(s) beside A, B and C ({wanted}), "
                f"got {len(tensors)}"
            )
        self.check(a, b, tuple(tensors), config)
        return (
            tuple(tensors) if self.prepare is None else tuple(self.prepare(tuple(tensors), config))
        )

    def pointers(self, tensors: tuple) -> tuple:
        """The kernel's pointers to what `accept` returned."""
        return tuple(host.gmem_pointer(t, t.dtype, self.align or t.element_size()) for t in tensors)


NO_OPERANDS = ExtraOperands((), lambda config: ())


@dataclass
class GemmHost:
    """compile / artifacts / run / prepare for one GEMM step.

    `kernel(types, config, arch, a_major, b_major)` builds the step's kernel object
    (`types`: the GEMM's GemmTypes). A kernel object with a `smem_bytes` attribute is
    checked against the target's shared-memory capacity before it is compiled.
    """

    name: str
    needs: str
    kernel: Callable[..., Any]
    config_type: type
    operands: Operands = field(default_factory=Operands)
    extra: LaunchExtra = NO_EXTRA
    extra_operands: ExtraOperands = NO_OPERANDS
    default_dtype: torch.dtype = torch.bfloat16
    default_majors: tuple[str, str] = ("k", "k")

    def __post_init__(self):
        self.compiler = host.Compiler(self.name, self.needs, self.build)
        self.default_config = self.config_type()  # made once: a run() costs no validation

    # -- compiling
    def build(
        self,
        arch: str,
        dtype: torch.dtype,
        out_dtype: torch.dtype,
        config,
        a_major: str,
        b_major: str,
    ) -> tuple:
        """The kernel object and the arguments to compile it with for `arch` (no tensors)."""
        self.operands.check(self.name, dtype, out_dtype, a_major, b_major)
        obj = self.kernel(self.operands.types(dtype, out_dtype), config, arch, a_major, b_major)
        if hasattr(obj, "smem_bytes"):
            host.check_smem(self.name, obj.smem_bytes, arch)
        align = self.operands.align(dtype)
        pointers = (
            host.gmem_pointer(None, dtype, align),
            host.gmem_pointer(None, dtype, align),
            host.gmem_pointer(None, out_dtype, align),
        )
        size = host_int32(8)
        return (
            obj,
            *pointers,
            size,
            size,
            size,
            *self.extra.placeholders(config),
            *self.extra_operands.placeholders(config),
            host.fake_stream(),
        )

    def _key(self, dtype, out_dtype, config, a_major, b_major) -> tuple:
        """(dtype, C's dtype, config, majors), the step's defaults filled in."""
        dtype = self.default_dtype if dtype is None else dtype
        config = self.default_config if config is None else config
        return (
            dtype,
            self.operands.out_dtype(dtype, out_dtype),
            config,
            a_major or self.default_majors[0],
            b_major or self.default_majors[1],
        )

    def compile(
        self,
        dtype: torch.dtype | None = None,
        config=None,
        *,
        out_dtype: torch.dtype | None = None,
        a_major: str | None = None,
        b_major: str | None = None,
        device: torch.device | None = None,
    ):
        """The launchable kernel for this machine's GPU (compiled once per configuration)."""
        return self.compiler.compile(
            *self._key(dtype, out_dtype, config, a_major, b_major), device=device
        )

    def artifacts(
        self,
        arch: str | None = None,
        dtype: torch.dtype | None = None,
        config=None,
        *,
        out_dtype: torch.dtype | None = None,
        a_major: str | None = None,
        b_major: str | None = None,
    ) -> Artifacts:
        """PTX and cubin for `arch` (default: the step's compile-only target), compiled here
        without a GPU."""
        return self.compiler.artifacts(arch, *self._key(dtype, out_dtype, config, a_major, b_major))

    def kernel_object(
        self,
        dtype: torch.dtype | None = None,
        config=None,
        *,
        out_dtype: torch.dtype | None = None,
        arch: str | None = None,
    ):
        """The step's kernel object for a configuration, without compiling (e.g. to read
        its footprint)."""
        dtype, out_dtype, config, a_major, b_major = self._key(dtype, out_dtype, config, None, None)
        return self.kernel(
            self.operands.types(dtype, out_dtype),
            config,
            arch or host.COMPILE_TARGET[self.needs],
            a_major,
            b_major,
        )

    def footprint(
        self, dtype: torch.dtype | None = None, config=None, *, out_dtype: torch.dtype | None = None
    ) -> dict:
        """What one CTA of this configuration holds (threads, TMEM, shared memory), for the
        steps whose kernel reports it; no compile, no GPU."""
        return self.kernel_object(dtype, config, out_dtype=out_dtype).footprint()

    # -- running
    def run(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        out: torch.Tensor | None = None,
        config=None,
        *,
        out_dtype: torch.dtype | None = None,
        tensors: tuple[torch.Tensor, ...] = (),
    ) -> torch.Tensor:
        """C = A . B^T on the GPU; every input is validated before anything launches.
        `tensors`: the step's operands beside A, B and C, in the order of its
        `extra_operands` (e.g. the scales), checked by it."""
        out, kernel, args = self.launch_arguments(
            a, b, out, config, out_dtype=out_dtype, tensors=tensors
        )
        if kernel is not None:
            self.launch(kernel, args)
            if self.extra.after is not None:
                self.extra.after(a, self.default_config if config is None else config)
        return out

    def launch_arguments(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        out: torch.Tensor | None = None,
        config=None,
        *,
        out_dtype: torch.dtype | None = None,
        tensors: tuple[torch.Tensor, ...] = (),
    ) -> tuple:
        """All that run() does before the launch -- validate, compile once, build the
        arguments -- as (out, kernel, args); kernel is None when there is nothing to launch
        (an empty C, or K = 0 and C zeroed). A benchmark calls kernel(*args, stream) to time
        the launch alone."""
        device = a.device if isinstance(a, torch.Tensor) and a.is_cuda else None
        arch = host.require(self.needs, self.name, device)
        config = self.default_config if config is None else config
        out, a_major, b_major = validate_gemm(
            a, b, out, kernel=self.name, operands=self.operands, out_dtype=out_dtype
        )
        tensors = self.extra_operands.accept(self.name, a, b, tensors, config)
        m, n, k = a.shape[0], b.shape[0], self.operands.k_elements(a)
        if m == 0 or n == 0:
            return out, None, ()
        if k == 0:  # no K-block: the accumulators would never be written
            return out.zero_(), None, ()
        kernel = self.compiler.for_arch(
            arch, *self._key(a.dtype, out.dtype, config, a_major, b_major)
        )
        align = self.operands.align(a.dtype)
        args = (
            host.gmem_pointer(a, a.dtype, align),
            host.gmem_pointer(b, b.dtype, align),
            host.gmem_pointer(out, out.dtype, align),
            host_int32(m),
            host_int32(n),
            host_int32(k),
            *self.extra.values(a, config),
            *self.extra_operands.pointers(tensors),
        )
        return out, kernel, args

    def launch(self, kernel, args: tuple) -> None:
        """Launch a compiled kernel on torch's current stream (the one line that needs the GPU;
        tests replace it to stop just before the launch)."""
        kernel(*args, host.current_stream())

    def prepare(self, problem, config=None) -> Callable:
        """For a benchmark: refuse what the kernel cannot do, compile once for `problem`
        (dtype, C's dtype, majors), return gemm(a, b, c)."""
        self.operands.check(
            self.name, problem.dtype, problem.c_dtype, problem.a_major, problem.b_major
        )
        self.compile(
            problem.dtype,
            config,
            out_dtype=problem.c_dtype,
            a_major=problem.a_major,
            b_major=problem.b_major,
        )
        return lambda a, b, c: self.run(a, b, c, config)


def host_int32(value: int):
    import cutlass

    return cutlass.Int32(value)
