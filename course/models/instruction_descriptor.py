"""The 32-bit instruction descriptor of tcgen05.mma (.kind::f16), encoded and decoded by hand.

Every tcgen05.mma names its shape and types in one 32-bit operand, `idesc`; the compiler
builds it from the MMA atom and it shows up in the PTX as a constant. The fields (PTX
ISA, "Instruction descriptor" for .kind::f16; the same bit layout as CUTLASS's
UMMA::InstrDescriptor):

    bits  0-1  sparsity selector        bit  2  sparse       bit 3  saturate
    bits  4-5  D (accumulator) format: 0 F16, 1 F32
    bits  7-9  A format: 0 F16, 1 BF16  bits 10-12  B format (same codes)
    bit  13    negate A                 bit  14     negate B
    bit  15    A major: 0 K, 1 MN       bit  16     B major
    bits 17-22 N >> 3                   bits 24-28  M >> 4
    bits 30-31 max shift (.ws only)

What the descriptor does NOT hold: whether to accumulate. That is the instruction's
`enable_input_d` predicate (the last operand in the PTX), false for the first K-block
of a tile and true afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

AB_FORMATS = {"float16": 0, "bfloat16": 1}
D_FORMATS = {"float16": 0, "float32": 1}


@dataclass(frozen=True)
class InstructionDescriptor:
    m: int = 128
    n: int = 128
    a: str = "bfloat16"
    b: str = "bfloat16"
    d: str = "float32"
    a_mn_major: bool = False
    b_mn_major: bool = False
    negate_a: bool = False
    negate_b: bool = False

    def __post_init__(self):
        if self.m not in (64, 128, 256):
            raise ValueError("M must be 64, 128 (one CTA) or 256 (a CTA pair)")
        if self.n % 8 or not 8 <= self.n <= 256:
            raise ValueError("N must be a multiple of 8 in [8, 256]")
        if self.a not in AB_FORMATS or self.b not in AB_FORMATS or self.d not in D_FORMATS:
            raise ValueError("kind::f16 takes float16/bfloat16 inputs, float16/float32 output")

    def encode(self) -> int:
        return (
            D_FORMATS[self.d] << 4
            | AB_FORMATS[self.a] << 7
            | AB_FORMATS[self.b] << 10
            | int(self.negate_a) << 13
            | int(self.negate_b) << 14
            | int(self.a_mn_major) << 15
            | int(self.b_mn_major) << 16
            | (self.n >> 3) << 17
            | (self.m >> 4) << 24
        )

    @classmethod
    def decode(cls, value: int) -> "InstructionDescriptor":
        ab = {v: k for k, v in AB_FORMATS.items()}
        d = {v: k for k, v in D_FORMATS.items()}
        if value & 0b1111 or value >> 30:
            raise ValueError(f"{value:#x}: sparse, saturating or .ws descriptors are not decoded")
        return cls(
            m=((value >> 24) & 0x1F) << 4,
            n=((value >> 17) & 0x3F) << 3,
            a=ab[(value >> 7) & 7],
            b=ab[(value >> 10) & 7],
            d=d[(value >> 4) & 3],
            a_mn_major=bool(value >> 15 & 1),
            b_mn_major=bool(value >> 16 & 1),
            negate_a=bool(value >> 13 & 1),
            negate_b=bool(value >> 14 & 1),
        )

    def fields(self) -> list[tuple[str, str, int]]:
        """(bits, meaning, value) rows, for printing."""
        return [
            ("4-5", f"D format ({self.d})", D_FORMATS[self.d]),
            ("7-9", f"A format ({self.a})", AB_FORMATS[self.a]),
            ("10-12", f"B format ({self.b})", AB_FORMATS[self.b]),
            ("13", "negate A", int(self.negate_a)),
            ("14", "negate B", int(self.negate_b)),
            ("15", "A major (0 = K)", int(self.a_mn_major)),
            ("16", "B major (0 = K)", int(self.b_mn_major)),
            ("17-22", f"N >> 3 (N = {self.n})", self.n >> 3),
            ("24-28", f"M >> 4 (M = {self.m})", self.m >> 4),
        ]
