"""Notebook 04's exercises: coalescing, the TiledCopy's ownership, and a copy at full speed.

`04.vector_copy` (a kernel exercise): the learner writes the TiledCopy (copy atom, thread
layout, value layout) that a course-supplied kernel uses to copy a 1-D float32 buffer; it
must compile to 128-bit global loads and stores, coalesce every warp request, and reach
90% of torch's own device-to-device copy on a GPU. It lives in nb04_copy_kernel (a module
without postponed annotations, which CuTe DSL evaluates).
"""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, number
from course.models.coalescing import analyze


@exercise(
    "04.lines",
    "A warp's 32 lanes each read one float, lane l at byte 8*l (every other "
    "float). How many 128-byte lines does the request touch?",
    "the lanes span 32 * 8 = 256 bytes from an aligned start.",
    "2: bytes 0..251 lie in lines 0 and 1 (course.models.coalescing.analyze([8*l for l in "
    "range(32)], 4).lines == [0, 1]); half of every sector moved is wasted.",
)
def _lines(answer):
    return number(answer, len(analyze([8 * l for l in range(32)], 4).lines))


USEFUL_WIDTH, USEFUL_STRIDE = 8, 16  # 04.useful: float2 loads, every other one


@exercise(
    "04.useful",
    f"Each lane reads {USEFUL_WIDTH} bytes (a float2), lane l at byte "
    f"{USEFUL_STRIDE}*l (every other float2). What percentage of the bytes the memory "
    f"system moves does the warp use?",
    "which 32-byte sectors do the 32 lanes touch, and how many of each sector's bytes are wanted?",
    "50: the lanes span 32 * 16 = 512 bytes, so all 16 sectors of 4 lines are moved "
    "(512 bytes) for 32 * 8 = 256 wanted bytes.",
)
def _useful(answer):
    acc = analyze([USEFUL_STRIDE * l for l in range(32)], USEFUL_WIDTH)
    return number(answer, 100 * acc.efficiency, rel=0.01, unit="%")


OWNER_THREADS = ((4, 8), (8, 1))  # 04.owner: section 5's copy, its threads numbered row-major
OWNER_CELL = (9, 2)


def _owner_map():
    from course.cute.tiled_copy import tiled_copy_map

    return tiled_copy_map(*OWNER_THREADS, (4, 1), (1, 4))


@exercise(
    "04.owner",
    "Section 5's TiledCopy again (16x8 column-major tile, 4 contiguous floats "
    "per thread along mode 0), but with the 32 threads numbered ROW-major: thread layout "
    "(4,8):(8,1) instead of (4,8):(1,4). Which thread now copies row 9 of column 2? "
    "Answer with the thread number.",
    "the thread layout maps a thread's (row of threads, column of threads) to its number; "
    "each thread's 4 floats cover 4 rows of one column.",
    "18: rows 8-11 are the third row of threads (index 2), column 2 is column of threads "
    "2, and (4,8):(8,1) numbers (2, 2) as 2*8 + 2 = 18. With section 5's column-major "
    "(4,8):(1,4) it was thread 10.",
)
def _owner(answer):
    ((thread, _value),) = _owner_map().owner(*OWNER_CELL)
    if isinstance(answer, str) and answer.strip().upper().startswith("T"):
        answer = answer.strip()[1:]
    try:
        value = int(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a thread number, e.g. 5 or 'T05'")
    if value == thread:
        return True, f"T{thread:02d} copies {OWNER_CELL}, as CuTe DSL's TV layout says."
    from course.cute.tiled_copy import tiled_copy_16x8

    ((section5, _),) = tiled_copy_16x8().owner(*OWNER_CELL)
    if value == section5:
        return False, (
            "that is the owner in section 5's column-major thread layout; number "
            "the threads row-major: (4,8):(8,1)"
        )
    return False, f"T{value:02d} copies rows {_rows(value)}."


def _rows(thread: int) -> str:
    cells = _owner_map().cells_of(thread)
    if not cells:
        return "nothing (there are 32 threads)"
    return f"{cells[0][0]}-{cells[-1][0]} of column {cells[0][1]}"


from course.exercises import nb04_copy_kernel  # noqa: E402,F401  (registers 04.vector_copy)
