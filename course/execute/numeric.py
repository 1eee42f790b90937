"""CuTe DSL's numeric types on the executor: what `cutlass.Float32(x)` and a bf16 tensor mean.

Each `DType` says how its values are computed (numpy scalars and arrays: float32 for
Float32 and BFloat16, float16 for Float16, Python ints for the integer types) and how they
are stored in memory (bfloat16 as its 16 bits, rounded to nearest even, as the GPU's
cvt.rn.bf16.f32 does). Calling one converts a value, as in kernel code:
`cutlass.Float32(alpha)`, `mA.element_type(0)`.
"""

from __future__ import annotations

import numpy as np

BF16_NAN = np.uint16(0x7FC0)


def f32_to_bf16_bits(values) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even); their 16 bits."""
    f = np.asarray(values, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        bits = np.where(nan, BF16_NAN, bits)
    return bits


def bf16_bits_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(values) -> np.ndarray:
    return bf16_bits_to_f32(f32_to_bf16_bits(values))


def fp32_toward_zero(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to fp32 toward zero (as float64): how the H100 adds a tensor
    core instruction's dot product (a wgmma's, an mma.sync's) into its fp32 accumulator.
    Measured: with this rounding, once per k-block of 16, the executor's bf16 outputs of
    wgmma_gemm and hopper_gemm equal the H100's recorded ones bit for bit
    (results/executor_ladder.json, ~200k elements; mma.sync: see course.execute.atoms);
    rounding to nearest differs in a few elements per 64k."""
    f = x.astype(np.float32)
    past = np.abs(f.astype(np.float64)) > np.abs(x)
    f[past] = np.nextafter(f[past], np.float32(0))
    return f.astype(np.float64)


def accumulate_k(acc: np.ndarray, a4: np.ndarray, b4: np.ndarray) -> np.ndarray:
    """One tensor core instruction per k-block, as the H100 runs them: each block's exact
    dot product added to the fp32 accumulator, rounding toward zero (`fp32_toward_zero`).
    acc [mi, ni, am, an]; a4 [mi, ki, am, ak]; b4 [ni, ki, an, ak] (float64)."""
    for ki in range(a4.shape[1]):
        acc = fp32_toward_zero(acc + np.einsum("iab,jcb->ijac", a4[:, ki], b4[:, ki]))
    return acc


def tf32_toward_zero(values) -> np.ndarray:
    """fp32 values as a tf32 MMA reads them (tcgen05.mma kind::tf32, mma.sync/wgmma .tf32):
    sign, 8 exponent bits and the top 10 of the 23 mantissa bits, the low 13 dropped (round
    toward zero); NaN stays NaN (dropping a NaN's low payload bits could make it inf).

    The PTX ISA calls tf32's internal layout implementation defined and converts fp32 to
    tf32 only through cvt (rna, rn, rz); an MMA handed fp32 bits reads them as tf32 its own
    way. Dropping the low bits is what NVIDIA's GPUs are reported to do (PyTorch's
    numerical-accuracy notes: "only the first 10 bits of the input mantissa are read"), so
    it is the executor's choice; course.execute.tcgen05 notes it on every launch that uses
    it. Either way an operand's relative error is below 2^-10."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    kept = (f.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isnan(f), f, kept)


def _to(self, dtype, **_):
    """`.to(dtype)` on a scalar read from memory, as on CuTe DSL's Numeric values
    (`residual[m, n].to(Float32)`); arithmetic on it gives plain numpy scalars again."""
    return dtype(self)


def _ir_value(self, **_):
    """The MLIR value of a CuTe DSL scalar (what inline PTX takes): the number itself."""
    return self


# numpy's float scalars with `.to` (and `.ir_value`): what a load of one element gives
# kernel code
_Float32 = type("Float32Scalar", (np.float32,), {"to": _to, "ir_value": _ir_value})
_Float16 = type("Float16Scalar", (np.float16,), {"to": _to, "ir_value": _ir_value})
_SCALARS = {np.float32: _Float32, np.float16: _Float16}
# an integer kernel code made as `cutlass.Int32(42)`: a Python int with `.to`, as CuTe
# DSL's Int32 has it (arithmetic on it gives plain ints)
_Integer = type("IntegerScalar", (int,), {"__slots__": (), "to": _to, "ir_value": _ir_value})
Integer = _Integer  # what a layout built from one holds dynamic (course.execute.api)


class DType:
    """One CuTe DSL numeric type: its name, width in bits, storage and compute dtypes."""

    def __init__(self, name: str, width: int, storage, compute, kind: str):
        self.name, self.width, self.kind = name, width, kind
        self.storage = np.dtype(storage)  # how memory holds it
        self.compute = np.dtype(compute)  # what arithmetic on it uses

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __reduce__(self):
        return (by_name, (self.name,))

    @property
    def itemsize(self) -> int:
        return max(self.width // 8, 1)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def mlir_type(self) -> str:
        """The MLIR type CuTe DSL's type lowers to, as kernels hand it to inline PTX
        (`llvm.inline_asm(Float32.mlir_type, ...)`): on the executor its name, which the
        inline forms it runs do not need (course.execute.dsmem_stores)."""
        return self.name

    # the class properties CuTe DSL's numeric types have (cutlass.base_dsl.typing), which
    # kernels read at trace time: `row_max.fill(-cutlass.Float32.inf)`, `Int32.max`
    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint", "bool")  # Boolean too, as in CuTe DSL

    @property
    def signed(self) -> bool:
        return self._int_only(self.kind != "uint", "signed")

    @property
    def zero(self):
        return 0.0 if self.is_float else 0

    @property
    def inf(self) -> float:
        return self._float_only(float("inf"), "inf")

    @property
    def nan(self) -> float:
        return self._float_only(float("nan"), "nan")

    @property
    def min(self) -> int:
        return -(1 << (self._bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self._bits - 1)) - 1 if self.signed else (1 << self._bits) - 1

    @property
    def _bits(self) -> int:
        return 1 if self.kind == "bool" else self.width  # CuTe DSL's Boolean is 1 bit wide

    def _float_only(self, value, name):
        if not self.is_float:  # CuTe DSL's integer types have no inf/nan either
            raise AttributeError(f"type object '{self.name}' has no attribute '{name}'")
        return value

    def _int_only(self, value, name):
        if not self.is_integer:  # nor its float types a min/max
            raise AttributeError(f"type object '{self.name}' has no attribute '{name}'")
        return value

    def __instancecheck__(self, x) -> bool:
        """isinstance(x, cutlass.Int32) in library code: a per-lane value or a scalar of this
        type (a Python int is not one, as in CuTe DSL)."""
        from course.execute.lanes import Lanes

        if isinstance(x, Lanes):
            return True
        return isinstance(x, np.generic) and x.dtype == np.dtype(self.storage)

    def __call__(self, value=0, **_):  # loc=, ip= from library code: no use here
        """A scalar of this type, converted as CuTe DSL converts it (per lane for a
        per-lane value)."""
        from course.execute.lanes import Lanes

        if isinstance(value, Lanes):
            return Lanes(
                self.decode(self.encode(value.v)) if self.kind != "bool" else value.v.astype(bool)
            )
        if hasattr(value, "ndim") and getattr(value, "ndim", 0) and not np.isscalar(value):
            raise TypeError(f"{self.name}(...) takes a scalar, got an array")
        if self.kind == "bool":
            return bool(value)
        if self.kind in ("int", "uint"):
            return _Integer(_wrap_int(int(value), self.width, self.kind == "int"))
        if self.name == "BFloat16":
            return np.float32(round_bf16(np.float32(value)))
        return self.of_decoded(value)  # with `.to`, as a CuTe DSL value has it

    def encode(self, values) -> np.ndarray:
        """Values (any numbers) as this type's stored bits/values."""
        if self.name == "BFloat16":
            return f32_to_bf16_bits(np.asarray(values, dtype=np.float32))
        if self.kind == "bool":
            return np.asarray(values).astype(bool).astype(self.storage)
        if self.kind in ("int", "uint"):
            return np.asarray(values).astype(np.int64).astype(self.storage)
        return np.asarray(values).astype(self.storage)

    def decode(self, stored) -> np.ndarray:
        """Stored bits/values as values to compute with."""
        if self.name == "BFloat16":
            return bf16_bits_to_f32(stored)
        if self.kind == "bool":
            return np.asarray(stored).astype(bool)
        return np.asarray(stored).astype(self.compute)

    def decode_one(self, stored):
        """One stored element as the scalar kernel code sees (pure Python: fast)."""
        if self.name == "BFloat16":
            return np.float32(np.uint32(int(stored) << 16).view(np.float32))
        if self.kind == "bool":
            return bool(stored)
        if self.kind in ("int", "uint"):
            return int(stored)
        return stored  # a numpy float32/float16/float64 scalar already

    def of_decoded(self, value):
        """One decoded value as the scalar kernel code sees (a Python int or bool, or a
        numpy float of the compute type)."""
        if self.kind == "bool":
            return bool(value)
        if self.kind in ("int", "uint"):
            return int(value)
        return _SCALARS.get(self.compute.type, self.compute.type)(value)

    def poison(self):
        """What fresh registers hold: NaN for floats (so a read before a write shows)."""
        if self.kind == "float":
            return self.encode(np.float32("nan"))
        return self.storage.type(0)


class Float8(DType):
    """A float8 type (e4m3fn, e5m2): its byte in memory, float32 to compute with; values
    converted to it as torch converts them (round to nearest even)."""

    def __init__(self, name: str, torch_name: str):
        super().__init__(name, 8, np.uint8, np.float32, "float")
        self.torch_name = torch_name
        self._table = None

    def _torch(self):
        import torch

        return getattr(torch, self.torch_name)

    def table(self) -> np.ndarray:
        """The 256 values of the type, by their byte."""
        if self._table is None:
            import torch

            codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
            self._table = codes.view(self._torch()).float().numpy()
        return self._table

    def __call__(self, value=0, **_):
        from course.execute.lanes import Lanes

        if isinstance(value, Lanes):
            return Lanes(self.decode(self.encode(value.v)))
        return np.float32(self.decode(self.encode(np.float32(value))))

    def encode(self, values) -> np.ndarray:
        import torch

        f = torch.from_numpy(np.array(values, dtype=np.float32, copy=True, ndmin=0))
        return f.to(self._torch()).view(torch.uint8).numpy()

    def decode(self, stored) -> np.ndarray:
        return self.table()[np.asarray(stored, dtype=np.uint8)]

    def decode_one(self, stored):
        return np.float32(self.table()[int(stored)])


E2M1_VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
    dtype=np.float32,
)  # by 4-bit code: sign, 2 exponent bits (bias 1), 1 mantissa bit; no inf, no NaN


class Float4(DType):
    """e2m1 (CuTe DSL's Float4E2M1FN, width 4): a 4-bit element, two to a byte in memory
    (element i in byte i // 2, the low nibble for even i: `Memory.typed` gives a view of
    nibbles). Its stored form is the 4-bit code (a uint8 0-15), float32 to compute with;
    values converted to it must be exact e2m1 values (rounding to e2m1 is not modelled)."""

    def __init__(self):
        super().__init__("Float4E2M1FN", 4, np.uint8, np.float32, "float")

    def __call__(self, value=0, **_):
        from course.execute.lanes import Lanes

        if isinstance(value, Lanes):
            return Lanes(self.decode(self.encode(value.v)))
        return np.float32(self.decode(self.encode(np.float32(value))))

    def encode(self, values) -> np.ndarray:
        from course.execute.hazards import Unmodelled

        f = np.asarray(values, dtype=np.float32)
        codes = np.searchsorted(E2M1_VALUES[:8], np.abs(f)).astype(np.uint8)
        ok = (codes < 8) & (E2M1_VALUES[np.minimum(codes, 7)] == np.abs(f))
        if not ok.all():
            bad = f[~ok].reshape(-1)[0]
            raise Unmodelled(f"{bad} converted to e2m1 (not an e2m1 value: rounding to "
                             "Float4E2M1FN is not modelled)")  # fmt: skip
        return codes | (np.signbit(f).astype(np.uint8) << 3)

    def decode(self, stored) -> np.ndarray:
        return E2M1_VALUES[np.asarray(stored, dtype=np.uint8) & 0xF]

    def decode_one(self, stored):
        return np.float32(E2M1_VALUES[int(stored) & 0xF])

    def poison(self):
        return np.uint8(0xF)  # -6: e2m1 has no NaN


class Int4(DType):
    """CuTe DSL's Int4: a signed 4-bit integer, two to a byte in memory as Float4E2M1FN is
    (`Memory.typed`'s nibbles: element i in byte i // 2, the low nibble for even i, as
    cutlass.torch's uint8 tensors of Int4 hold them). Stored as its two's-complement
    4-bit code, int64 to compute with. An integer converted to it keeps its low 4 bits (a
    truncation, as CuTe DSL's int_to_int); a float truncates toward zero (fptosi), and one
    outside [-8, 7] after that is not modelled (LLVM's fptosi gives poison there)."""

    def __init__(self):
        super().__init__("Int4", 4, np.uint8, np.int64, "int")

    def encode(self, values) -> np.ndarray:
        from course.execute.hazards import Unmodelled

        v = np.asarray(values)
        if v.dtype.kind == "f":
            v = np.trunc(v)
            bad = (v < -8) | (v > 7) | np.isnan(v)
            if bad.any():
                raise Unmodelled(f"{v[bad].reshape(-1)[0]} converted to Int4 (out of its range)")
        return (v.astype(np.int64) & 0xF).astype(np.uint8)

    def decode(self, stored) -> np.ndarray:
        codes = np.asarray(stored).astype(np.int64) & 0xF
        return np.where(codes >= 8, codes - 16, codes)

    def decode_one(self, stored):
        code = int(stored) & 0xF
        return code - 16 if code >= 8 else code


def is_sub_byte(dtype) -> bool:
    return getattr(dtype, "width", 8) < 8


def element_bytes(dtype, elems) -> np.ndarray:
    """The byte of each element index (same shape): i // 2 for 4-bit types, else i * size
    (the first byte; see `element_byte_span`)."""
    e = np.asarray(elems)
    return e // 2 if is_sub_byte(dtype) else e * dtype.storage.itemsize


def element_byte_span(dtype, elems) -> np.ndarray:
    """Every byte the elements occupy, (n * size,) flat (4-bit: one byte per element, so a
    byte holding two of them appears twice)."""
    e = np.asarray(elems).reshape(-1)
    if is_sub_byte(dtype):
        return e // 2
    size = dtype.storage.itemsize
    return (e[:, None] * size + np.arange(size)).reshape(-1)


def _wrap_int(v: int, width: int, signed: bool) -> int:
    v &= (1 << width) - 1
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


TYPES = {
    t.name: t
    for t in (
        DType("Float32", 32, np.float32, np.float32, "float"),
        DType("Float64", 64, np.float64, np.float64, "float"),
        # tf32 lives in a 32-bit fp32 container (memory, registers): only an MMA reads it as
        # tf32 (numeric.tf32_toward_zero)
        DType("TFloat32", 32, np.float32, np.float32, "float"),
        DType("Float16", 16, np.float16, np.float16, "float"),
        DType("BFloat16", 16, np.uint16, np.float32, "float"),
        DType("Int8", 8, np.int8, np.int64, "int"),
        DType("Int16", 16, np.int16, np.int64, "int"),
        DType("Int32", 32, np.int32, np.int64, "int"),
        DType("Int64", 64, np.int64, np.int64, "int"),
        DType("Uint8", 8, np.uint8, np.int64, "uint"),
        DType("Uint16", 16, np.uint16, np.int64, "uint"),
        DType("Uint32", 32, np.uint32, np.int64, "uint"),
        DType("Uint64", 64, np.uint64, np.int64, "uint"),
        DType("Boolean", 8, np.uint8, np.bool_, "bool"),
        Float8("Float8E4M3FN", "float8_e4m3fn"),
        Float8("Float8E5M2", "float8_e5m2"),
        Float8("Float8E8M0FNU", "float8_e8m0fnu"),  # 2^(byte - 127): MX scale factors
        Float4(),
        Int4(),
    )
}
Float32, Float16, BFloat16, Int32, Boolean = (
    TYPES[n] for n in ("Float32", "Float16", "BFloat16", "Int32", "Boolean")
)

TORCH_NAMES = {
    "float32": "Float32",
    "float16": "Float16",
    "bfloat16": "BFloat16",
    "float64": "Float64",
    "int32": "Int32",
    "int64": "Int64",
    "int8": "Int8",
    "uint8": "Uint8",
    "bool": "Boolean",
    "int16": "Int16",
    "float8_e4m3fn": "Float8E4M3FN",
    "float8_e5m2": "Float8E5M2",
    "float8_e8m0fnu": "Float8E8M0FNU",
    "float4_e2m1fn_x2": "Float4E2M1FN",  # a torch element = two e2m1 (low nibble first)
}


def by_name(name: str) -> DType:
    return TYPES[name]


def of_torch(dtype) -> DType:
    """The executor's type for a torch dtype."""
    return TYPES[TORCH_NAMES[str(dtype).replace("torch.", "")]]


def promoted(a: DType, b: DType) -> DType:
    """The type of a binary op of a and b where either is a float, as CuTe DSL promotes them
    (base_dsl.typing._promote_float): an int becomes a float of the wider width, two floats
    give the wider one (16 bits or more), and at one width Float64, Float32 or Float16 wins
    (BFloat16 with Float16 is Float16). Where CuTe refuses (floats narrower than 16 bits),
    and for two ints, `a` stays."""
    if a is b or not (a.is_float or b.is_float):
        return a
    wide = {16: "Float16", 32: "Float32", 64: "Float64"}
    aw, bw = a.width, b.width
    if a.is_float and not b.is_float:
        b = TYPES.get(wide.get(max(aw, bw), ""), b)
    elif b.is_float and not a.is_float:
        a = TYPES.get(wide.get(max(aw, bw), ""), a)
    if aw > bw and aw >= 16:
        return a
    if bw > aw and bw >= 16:
        return b
    if aw == bw:
        for name in ("Float64", "Float32", "Float16"):
            if name in (a.name, b.name):
                return TYPES[name]
    return a


def of_value(value) -> DType:
    """The type CuTe DSL would give a Python/numpy scalar."""
    if isinstance(value, (bool, np.bool_)):
        return Boolean
    if isinstance(value, (int, np.integer)):
        return Int32
    if isinstance(value, np.float16):
        return Float16
    return Float32
