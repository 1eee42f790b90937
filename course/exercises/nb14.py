"""Notebook 14's exercises: tensor memory, the instruction descriptor, the epilogue's lanes."""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, number, pair
from course.models.instruction_descriptor import InstructionDescriptor
from course.emulate.blackwell_memory import tmem_alloc_columns
from course.models.tmem_ownership import warp_of_lane


@exercise(
    "14.tmem_cols",
    "A kernel needs a 128 x 200 fp32 accumulator in TMEM. How many "
    "columns must it ask tcgen05.alloc for?",
    "one fp32 per 32-bit cell, one row per lane: 200 columns of data. tcgen05.alloc takes "
    "only a power of two of at least 32 columns, and rounds nothing itself.",
    "256: the kernel rounds 200 up to the next power of two; a request for 200 is not a valid one.",
)
def _tmem_cols(answer):
    ok, message = number(answer, tmem_alloc_columns(200), unit="columns")
    if not ok and str(answer).strip() == "200":
        raise Wrong(
            "200 columns is not a request tcgen05.alloc takes: only powers of two, at least 32"
        )
    return ok, message


@exercise(
    "14.idesc",
    "Encode the tcgen05.mma instruction descriptor (an int) for M=128, "
    "N=256, bf16 A and B (both K-major), fp32 accumulation.",
    "D format bits 4-5 (F32 = 1), A bits 7-9 and B bits 10-12 (BF16 = 1), N >> 3 at "
    "bit 17, M >> 4 at bit 24; or build "
    "course.models.instruction_descriptor.InstructionDescriptor.",
    "1 << 4 | 1 << 7 | 1 << 10 | (256 >> 3) << 17 | (128 >> 4) << 24 = 0x8400490 = 138413200.",
)
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


# A lane the notebook's printed sample (threads 0, 31, 32, 77, 127) does not show.
ASKED_LANE = 93


@exercise(
    "14.lane_owner",
    f"Which epilogue warp (0-3) is allowed to read TMEM lane {ASKED_LANE}, "
    "and which epilogue thread (0-127) reads it with tcgen05.ld 32x32b? Answer (warp, "
    "thread).",
    "warp w may access lanes 32w..32w+31; with 32x32b, thread t reads lane t.",
    f"({ASKED_LANE // 32}, {ASKED_LANE}): lanes 64-95 belong to warp 2, and thread "
    f"{ASKED_LANE} (lane {ASKED_LANE % 32} of warp 2) reads lane {ASKED_LANE}.",
)
def _lane_owner(answer):
    warp, thread = pair(answer, "answer with a pair (warp, thread)")
    ok = (warp, thread) == (warp_of_lane(ASKED_LANE), ASKED_LANE)
    return ok, "" if ok else f"look at which 32-lane quarter lane {ASKED_LANE} falls in."


@exercise(
    "14.stage_bytes",
    "With tile_n = 256, how many bytes must each stage's full barrier "
    "expect in the 1-CTA kernel (bf16 inputs, 64-wide K-blocks)?",
    "one stage holds a 128 x 64 box of A and a tile_n x 64 box of B, 2 bytes per element.",
    "(128 + 256) * 64 * 2 = 49152 bytes.",
)
def _stage_bytes(answer):
    return number(answer, (128 + 256) * 64 * 2, unit="bytes")


from course.exercises import nb14_epilogue_kernel  # noqa: E402,F401  registers 14.epilogue_role
