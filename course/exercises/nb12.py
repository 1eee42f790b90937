"""Notebook 12's exercises: tensor memory, the instruction descriptor, the epilogue's lanes."""
from __future__ import annotations

from course.exercises.check import Wrong, exercise, number
from course.models.instruction_descriptor import InstructionDescriptor
from course.emulate.blackwell_memory import tmem_alloc_columns
from course.models.tmem_ownership import warp_of_lane


@exercise("12.tmem_cols", "How many TMEM columns does tcgen05.alloc hand out for a 128 x 200 "
          "fp32 accumulator?",
          "one fp32 per 32-bit cell, one row per lane: 200 columns are needed, and allocations "
          "come in powers of two (at least 32).",
          "256: 200 columns rounded up to the next power of two.")
def _tmem_cols(answer):
    return number(answer, tmem_alloc_columns(200), unit="columns")


@exercise("12.idesc", "Encode the tcgen05.mma instruction descriptor (an int) for M=128, "
          "N=256, bf16 A and B (both K-major), fp32 accumulation.",
          "D format bits 4-5 (F32 = 1), A bits 7-9 and B bits 10-12 (BF16 = 1), N >> 3 at "
          "bit 17, M >> 4 at bit 24; or build "
          "course.models.instruction_descriptor.InstructionDescriptor.",
          "1 << 4 | 1 << 7 | 1 << 10 | (256 >> 3) << 17 | (128 >> 4) << 24 = 0x8400490 "
          "= 138413200.")
def _idesc(answer):
    expected = InstructionDescriptor(m=128, n=256).encode()
    try:
        value = int(answer)
    except (TypeError, ValueError):
        raise Wrong(f"answer with an int, got {answer!r}")
    if value == expected:
        return True, f"{value:#x}: M=128, N=256, bf16 x bf16 -> f32."
    try:
        got = InstructionDescriptor.decode(value)
    except (ValueError, KeyError):
        return False, f"{value:#x} does not decode as a dense kind::f16 descriptor."
    return False, f"{value:#x} decodes as {got}; compare field by field."


@exercise("12.lane_owner", "Which epilogue warp (0-3) is allowed to read TMEM lane 77, and "
          "which epilogue thread (0-127) reads it with tcgen05.ld 32x32b? Answer (warp, thread).",
          "warp w may access lanes 32w..32w+31; with 32x32b, thread t reads lane t.",
          "(2, 77): lanes 64-95 belong to warp 2, and thread 77 (lane 13 of warp 2) reads "
          "lane 77.")
def _lane_owner(answer):
    try:
        warp, thread = answer
    except (TypeError, ValueError):
        raise Wrong("answer with a pair (warp, thread)")
    ok = (warp, thread) == (warp_of_lane(77), 77)
    return ok, "" if ok else "look at which 32-lane quarter lane 77 falls in."


@exercise("12.stage_bytes", "With tile_n = 256, how many bytes must each stage's full barrier "
          "expect in the 1-CTA kernel (bf16 inputs, 64-wide K-blocks)?",
          "one stage holds a 128 x 64 box of A and a tile_n x 64 box of B, 2 bytes per element.",
          "(128 + 256) * 64 * 2 = 49152 bytes.")
def _stage_bytes(answer):
    return number(answer, (128 + 256) * 64 * 2, unit="bytes")


from course.exercises import nb12_epilogue_kernel  # noqa: E402,F401  registers 12.epilogue_role
