"""The raw tensor map (TMA descriptor): the arguments of cuTensorMapEncodeTiled, and the
128 bytes the CUDA driver makes of them.

A tensor map tells the TMA unit everything about one global tensor and the box it
moves: element type, rank, base address, the size of every dimension (fastest first),
the byte stride of every dimension but the first, the box extent per dimension, an
element stride per dimension, interleave, shared-memory swizzle, L2 promotion and
what to fill out-of-bounds elements with. `tiled(...)` computes those arguments for
a row-major 2-D tensor; `SEED` is the course's example (an 8192 x 8192 bf16 matrix,
64 x 64 boxes, 128-byte swizzle, no interleave, no L2 promotion, no OOB fill).

`encode(args)` calls the real driver through cuda-python (cuda.bindings.driver, which
CuTe DSL installs); without an NVIDIA driver it raises DriverUnavailable and
`try_encode` says so. `rule_violations(args)` checks the driver's documented rules
in Python, so a CPU-only reader can see why an argument set would be rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

# element type -> (driver enum suffix, bytes)
DTYPES = {
    "bf16": ("BFLOAT16", 2),
    "fp16": ("FLOAT16", 2),
    "fp32": ("FLOAT32", 4),
    "u8": ("UINT8", 1),
    "i32": ("INT32", 4),
}
TORCH_NAMES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "uint8": "u8",
    "int32": "i32",
}
SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
L2_PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")
OOB_FILLS = ("NONE", "NAN_REQUEST_ZERO_FMA")
DESCRIPTOR_BYTES = 128


class DriverUnavailable(RuntimeError):
    """No NVIDIA driver here (or it refused to start): nothing can be encoded."""


@dataclass(frozen=True)
class TensorMapArgs:
    """The arguments of one cuTensorMapEncodeTiled call, in the driver's order.

    Dimension 0 is the fastest-varying one (the columns of a row-major matrix).
    """

    dtype: str
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]  # bytes, for dimensions 1..rank-1
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str = "NONE"
    swizzle: str = "128B"
    l2_promotion: str = "NONE"
    oob_fill: str = "NONE"

    @property
    def rank(self) -> int:
        return len(self.global_dim)

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def box_bytes(self) -> int:
        n = self.elem_bytes
        for b in self.box_dim:
            n *= b
        return n

    @property
    def boxes(self) -> tuple[int, ...]:
        """Boxes along each dimension needed to cover the tensor (the last ones ragged)."""
        return tuple(-(-g // b) for g, b in zip(self.global_dim, self.box_dim))

    def call(self) -> str:
        """The call as C, one argument per line, each with what it means."""

        def tup(xs):
            return "{" + ", ".join(map(str, xs)) + "}"

        args = [
            ("&tensorMap", "out: 128 opaque bytes"),
            (
                f"CU_TENSOR_MAP_DATA_TYPE_{DTYPES[self.dtype][0]}",
                f"{self.elem_bytes}-byte elements",
            ),
            (f"{self.rank}", "tensorRank"),
            (f"(void*)0x{self.global_address:x}", "globalAddress (16-byte aligned)"),
            (tup(self.global_dim), "globalDim: elements, fastest dimension first"),
            (tup(self.global_strides), "globalStrides: bytes, dimensions 1..rank-1"),
            (tup(self.box_dim), f"boxDim: one instruction moves {self.box_bytes} bytes"),
            (tup(self.element_strides), "elementStrides: 1 = every element"),
            (f"CU_TENSOR_MAP_INTERLEAVE_{self.interleave}", "interleave"),
            (f"CU_TENSOR_MAP_SWIZZLE_{self.swizzle}", "shared-memory swizzle"),
            (f"CU_TENSOR_MAP_L2_PROMOTION_{self.l2_promotion}", "L2 promotion"),
            (f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{self.oob_fill}", "out-of-bounds fill"),
        ]
        width = max(len(a) for a, _ in args) + 1
        body = [
            f"    {(a + ('' if i == len(args) - 1 else ',')).ljust(width)}  // {why}"
            for i, (a, why) in enumerate(args)
        ]
        return "\n".join(["cuTensorMapEncodeTiled("] + body + [");"])


def tiled(
    rows: int,
    cols: int,
    dtype: str = "bf16",
    box: tuple[int, int] = (64, 64),
    swizzle: int = 128,
    ld: int | None = None,
    address: int = 0,
    l2_promotion: str = "NONE",
    oob_fill: str = "NONE",
) -> TensorMapArgs:
    """Arguments for a row-major (rows, cols) matrix with row stride `ld` elements,
    moved in boxes of box = (box_rows, box_cols)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}")
    if swizzle not in SWIZZLES:
        raise ValueError(f"swizzle must be one of {sorted(SWIZZLES)} bytes")
    if l2_promotion not in L2_PROMOTIONS or oob_fill not in OOB_FILLS:
        raise ValueError(f"l2_promotion in {L2_PROMOTIONS}, oob_fill in {OOB_FILLS}")
    elem = DTYPES[dtype][1]
    ld = cols if ld is None else ld
    return TensorMapArgs(
        dtype=dtype,
        global_address=address,
        global_dim=(cols, rows),
        global_strides=(ld * elem,),
        box_dim=(box[1], box[0]),
        element_strides=(1, 1),
        swizzle=SWIZZLES[swizzle],
        l2_promotion=l2_promotion,
        oob_fill=oob_fill,
    )


# The course's example tensor map: 128 x 128 boxes of 64 x 64 bf16 (128B swizzle) cover an
# 8192 x 8192 matrix.
SEED = tiled(8192, 8192, "bf16", box=(64, 64), swizzle=128)


def rule_violations(args: TensorMapArgs) -> list[str]:
    """The driver's documented requirements that `args` breaks ([] if none)."""
    bad = []
    if not 1 <= args.rank <= 5:
        bad.append(f"rank {args.rank} is not in 1..5")
    if args.global_address % 16:
        bad.append("globalAddress must be 16-byte aligned")
    for d, g in enumerate(args.global_dim):
        if not 1 <= g <= 2**32:
            bad.append(f"globalDim[{d}] = {g} must be in [1, 2^32]")
    if len(args.global_strides) != args.rank - 1:
        bad.append(f"{args.rank - 1} global strides expected, got {len(args.global_strides)}")
    for d, s in enumerate(args.global_strides, 1):
        if s % 16 or s >= 2**40:
            bad.append(f"globalStrides[{d - 1}] = {s} B must be a multiple of 16 and < 2^40")
    for d, b in enumerate(args.box_dim):
        if not 1 <= b <= 256:
            bad.append(f"boxDim[{d}] = {b} must be in [1, 256]")
    inner = args.box_dim[0] * args.elem_bytes
    if args.interleave == "NONE" and inner % 16:
        bad.append(f"boxDim[0] x element size = {inner} B must be a multiple of 16")
    span = {"NONE": None, "32B": 32, "64B": 64, "128B": 128}[args.swizzle]
    if args.interleave == "NONE" and span is not None and inner > span:
        bad.append(
            f"the box's inner dimension ({inner} B) must be <= the {args.swizzle} swizzle span"
        )
    for d, e in enumerate(args.element_strides):
        if not 1 <= e <= 8:
            bad.append(f"elementStrides[{d}] = {e} must be in [1, 8]")
    return bad


def _driver():
    try:
        import cuda.bindings.driver as drv
    except ImportError as exc:  # cuda-python is not installed
        raise DriverUnavailable(f"cuda-python is not installed ({exc})") from exc
    try:
        (err,) = drv.cuInit(0)
    except Exception as exc:  # no libcuda.so: a machine without an NVIDIA driver
        raise DriverUnavailable(
            f"no NVIDIA driver on this machine ({type(exc).__name__}: "
            f"{str(exc).split('. ')[0][:160]})"
        ) from exc
    if err != drv.CUresult.CUDA_SUCCESS:
        raise DriverUnavailable(f"cuInit(0) failed: {err.name}")
    return drv


def encode(args: TensorMapArgs) -> bytes:
    """The 128-byte tensor map the CUDA driver builds from `args`."""
    drv = _driver()
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    err, tmap = drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{DTYPES[args.dtype][0]}"),
        args.rank,
        args.global_address,
        [u64(g) for g in args.global_dim],
        [u64(s) for s in args.global_strides],
        [u32(b) for b in args.box_dim],
        [u32(e) for e in args.element_strides],
        getattr(drv.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{args.interleave}"),
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{args.swizzle}"),
        getattr(drv.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{args.l2_promotion}"),
        getattr(drv.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{args.oob_fill}"),
    )
    if err != drv.CUresult.CUDA_SUCCESS:
        raise ValueError(
            f"cuTensorMapEncodeTiled rejected the arguments: {err.name}"
            + (f" ({'; '.join(rule_violations(args))})" if rule_violations(args) else "")
        )
    return b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)


@dataclass(frozen=True)
class Encoded:
    """The outcome of trying to encode: the bytes, or why there are none."""

    args: TensorMapArgs
    data: bytes | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.data is not None

    def __str__(self) -> str:
        if self.ok:
            return f"encoded by the CUDA driver: {len(self.data)} bytes\n" + hexdump(self.data)
        return f"[fallback] not encoded: {self.reason}"


def try_encode(args: TensorMapArgs) -> Encoded:
    """encode(args), or an explanation of why it could not run here."""
    try:
        return Encoded(args, encode(args))
    except (DriverUnavailable, ValueError) as exc:
        return Encoded(args, None, str(exc))


def hexdump(data: bytes, width: int = 16) -> str:
    """Offset, 16 bytes in hex, one line each."""
    return "\n".join(
        f"{i:03x}: " + " ".join(f"{b:02x}" for b in data[i : i + width])
        for i in range(0, len(data), width)
    )


def differing_bytes(a: bytes, b: bytes) -> list[int]:
    """Offsets where two descriptors differ."""
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y] + list(
        range(min(len(a), len(b)), max(len(a), len(b)))
    )


# ------------------------------------------------------ reading an undocumented map by difference

# The enum arguments of cuTensorMapEncodeTiled that change how a map is encoded, not which
# tensor or box it describes (interleave left out: the course's tensors are not interleaved).
SETTINGS = {
    "swizzle": tuple(SWIZZLES.values()),
    "l2_promotion": L2_PROMOTIONS,
    "oob_fill": OOB_FILLS,
}


def setting_bits(
    encode: Callable[[TensorMapArgs], bytes], args: TensorMapArgs, nbytes: int = DESCRIPTOR_BYTES
) -> dict[str, set[tuple[int, int]]]:
    """For each setting in SETTINGS, the (byte, bit) positions of the first `nbytes` that
    change when only that setting changes: where the encoder keeps it. The map's layout is
    not documented; changing one argument at a time is how it is read. Values the encoder
    refuses for these arguments (a swizzle narrower than the box) are skipped."""
    base = encode(args)[:nbytes]
    found: dict[str, set[tuple[int, int]]] = {}
    for name, values in SETTINGS.items():
        bits: set[tuple[int, int]] = set()
        for value in values:
            try:
                other = encode(replace(args, **{name: value}))[:nbytes]
            except ValueError:
                continue
            bits |= differing_bits(base, other)
        found[name] = bits
    return found


def differing_bits(a: bytes, b: bytes) -> set[tuple[int, int]]:
    """(byte, bit) positions where two equally long byte strings differ."""
    return {
        (i, bit) for i, (x, y) in enumerate(zip(a, b)) for bit in range(8) if (x ^ y) >> bit & 1
    }


@dataclass(frozen=True)
class MapComparison:
    """A map built elsewhere (CuTe's) read against the driver's encodings of the same tensor:
    the nearest argument set, the bits that still differ, and which setting owns each."""

    nearest: TensorMapArgs
    differing: tuple[tuple[int, int], ...]  # (byte, bit), sorted
    owner: dict[tuple[int, int], str]  # the setting whose bits these are; absent: none
    nbytes: int

    @property
    def identical(self) -> bool:
        return not self.differing

    @property
    def same_tensor_and_box(self) -> bool:
        """Every differing bit is one the driver changes only with an encoding setting: the
        bytes that depend on the tensor and the box agree."""
        return all(bit in self.owner for bit in self.differing)


def compare_with_encodings(
    other: bytes, encode: Callable[[TensorMapArgs], bytes], args: TensorMapArgs
) -> MapComparison:
    """Read `other` (a map of the tensor `args` describes, from another encoder) against the
    driver: encode `args` with every L2 promotion and OOB fill, keep the encoding with the
    fewest differing bits, and name the setting each remaining bit belongs to."""
    n = len(other)
    candidates = [
        replace(args, l2_promotion=p, oob_fill=f) for p in L2_PROMOTIONS for f in OOB_FILLS
    ]
    diffs = {c: differing_bits(other, encode(c)[:n]) for c in candidates}
    nearest = min(candidates, key=lambda c: len(diffs[c]))
    owners = setting_bits(encode, nearest, n)
    owner = {bit: name for name, bits in owners.items() for bit in bits if bit in diffs[nearest]}
    return MapComparison(nearest, tuple(sorted(diffs[nearest])), owner, n)


# ------------------------------------------------------------------ the swizzle TMA applies


def swizzle_byte_offset(offset: int, swizzle: int) -> int:
    """Where TMA stores the byte that belongs at `offset` of a box (offsets from a
    1024-byte aligned base): Swizzle<B,4,3> -- the 16-byte chunk index (bits 4..)
    XORed with the row-of-128-bytes index (bits 7..), B bits of each."""
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle]
    mask = (1 << bits) - 1
    return offset ^ (((offset >> 7) & mask) << 4)


def swizzled_box(box, swizzle: int):
    """What a box (a rows x cols array of one element type) looks like in shared memory
    read in address order: element (r, c) lands at the swizzled position of its bytes.
    Works on numpy arrays and torch tensors (CPU)."""
    import numpy as np

    arr = np.asarray(box.cpu() if hasattr(box, "cpu") else box)
    rows, cols = arr.shape
    elem = arr.dtype.itemsize
    flat = arr.reshape(-1)
    out = np.empty_like(flat)
    for i in range(flat.size):
        dst = swizzle_byte_offset(i * elem, swizzle) // elem
        out[dst] = flat[i]
    return out.reshape(rows, cols)


def chunk_map(swizzle: int, row_bytes: int = 128, rows: int = 8) -> list[list[int]]:
    """For each row of the box and each 16-byte slot of shared memory, which logical
    16-byte chunk of that row is stored there."""
    chunks = row_bytes // 16
    table = [[0] * chunks for _ in range(rows)]
    for r in range(rows):
        for c in range(chunks):
            dst = swizzle_byte_offset(r * row_bytes + 16 * c, swizzle)
            table[dst // row_bytes][(dst % row_bytes) // 16] = c
    return table


def for_tensor(
    t,
    box: tuple[int, int] = (64, 64),
    swizzle: int = 128,
    l2_promotion: str = "NONE",
    oob_fill: str = "NONE",
) -> TensorMapArgs:
    """Arguments for a 2-D row-major torch tensor (its real address and strides)."""
    name = TORCH_NAMES.get(str(t.dtype).replace("torch.", ""))
    if name is None or t.dim() != 2 or t.stride(1) != 1:
        raise ValueError("a 2-D tensor, contiguous along its last dimension, of a TMA dtype")
    return tiled(
        t.shape[0],
        t.shape[1],
        name,
        box,
        swizzle,
        ld=t.stride(0),
        address=t.data_ptr(),
        l2_promotion=l2_promotion,
        oob_fill=oob_fill,
    )


__all__ = [
    "TensorMapArgs",
    "tiled",
    "SEED",
    "rule_violations",
    "encode",
    "try_encode",
    "Encoded",
    "DriverUnavailable",
    "hexdump",
    "differing_bytes",
    "differing_bits",
    "setting_bits",
    "MapComparison",
    "compare_with_encodings",
    "swizzle_byte_offset",
    "swizzled_box",
    "chunk_map",
    "for_tensor",
]
