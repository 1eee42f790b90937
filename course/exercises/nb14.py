"""Notebook 14's exercises: tensor memory, the instruction descriptor, the epilogue's lanes."""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, number, number_or_known_slip, pair
from course.models.instruction_descriptor import InstructionDescriptor
from course.emulate.blackwell_memory import tmem_alloc_columns
from course.models.tmem_ownership import warp_of_lane


@exercise(
    "14.tmem_cols",
    "A kernel needs a 128 x 200 fp32 accumulator in TMEM. How many "
    "columns must it ask tcgen05.alloc for?",
    "what does one row of the accumulator occupy in TMEM, and which requests does "
    "tcgen05.alloc accept (section 2)?",
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
    "section 3's table lays out every field for N = 128: which fields does N change, and "
    "how is N stored?",
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


# A row the notebook's printed sample (threads 0, 31, 32, 77, 127) does not show.
ASKED_LANE = 93


@exercise(
    "14.lane_owner",
    f"Row {ASKED_LANE} of the 1-CTA kernel's 128-row accumulator: which epilogue warp (0-3) "
    "reads it out of TMEM, and which lane (0-31) of that warp holds its values after the "
    "tcgen05.ld 32x32b? Answer (warp, lane).",
    "which lanes of TMEM may each warp touch, and which TMEM lane does each thread of the "
    "32x32b load read (section 6)?",
    f"({ASKED_LANE // 32}, {ASKED_LANE % 32}): TMEM lane {ASKED_LANE} is row {ASKED_LANE}; "
    f"lanes 64-95 belong to warp 2, and epilogue thread {ASKED_LANE} (lane "
    f"{ASKED_LANE % 32} of warp 2) reads it.",
)
def _lane_owner(answer):
    warp, lane = pair(answer, "answer with a pair (warp, lane)")
    expected = (warp_of_lane(ASKED_LANE), ASKED_LANE % 32)
    if (warp, lane) == expected:
        return True, ""
    if (warp, lane) == (expected[0], ASKED_LANE):
        return False, (
            f"{ASKED_LANE} is the thread's index among the 128 epilogue threads; the question "
            f"asks for its lane within warp {expected[0]} (0-31)"
        )
    if warp != expected[0]:
        return False, f"look at which 32-lane quarter of TMEM row {ASKED_LANE} lies in."
    return False, "the warp is right; which of its 32 threads reads that row?"


@exercise(
    "14.stage_bytes",
    "With tile_n = 256, how many bytes must each stage's full barrier "
    "expect in the 1-CTA kernel (bf16 inputs, 64-wide K-blocks)?",
    "which boxes does one stage of the ring hold, and how many bytes is each element?",
    "(128 + 256) * 64 * 2 = 49152 bytes.",
)
def _stage_bytes(answer):
    said = {
        32768: "32,768 bytes is one box (B's 256 x 64), or the whole stage of tile_n = 128: "
        "a stage holds A's box and B's box",
        16384: "16,384 bytes is A's 128 x 64 box alone: the stage holds B's box too",
        24576: "24,576 bytes counts one byte per element: bf16 takes two",
    }
    return number_or_known_slip(answer, (128 + 256) * 64 * 2, said, unit="bytes")


from course.exercises import nb14_epilogue_kernel  # noqa: E402,F401  registers 14.epilogue_role
