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


@exercise("04.lines", "A warp's 32 lanes each read one float, lane l at byte 8*l (every other "
          "float). How many 128-byte lines does the request touch?",
          "the lanes span 32 * 8 = 256 bytes from an aligned start.",
          "2: bytes 0..251 lie in lines 0 and 1 (course.models.coalescing.analyze([8*l for l in "
          "range(32)], 4).lines == [0, 1]); half of every sector moved is wasted.")
def _lines(answer):
    return number(answer, len(analyze([8 * l for l in range(32)], 4).lines))


@exercise("04.useful", "Each lane reads a float 4 KiB after its neighbour's (the strided copy). "
          "What percentage of the bytes the memory system moves does the warp use?",
          "every lane needs its own 32-byte sector and uses 4 bytes of it.",
          "12.5: 32 sectors of 32 bytes are moved for 128 useful bytes.")
def _useful(answer):
    acc = analyze([4096 * l for l in range(32)], 4)
    return number(answer, 100 * acc.efficiency, rel=0.01, unit="%")


@exercise("04.owner", "In section 5's TiledCopy (16x8 column-major tile, 32 threads laid out (4,8) "
          "column-major, 4 contiguous floats each along mode 0), which thread copies row 9 of "
          "column 2? Answer with the thread number.",
          "rows 0-3, 4-7, 8-11, 12-15 of a column go to 4 consecutive threads; each column "
          "starts 4 threads further on.",
          "10: row 9 is in the third group of 4 rows (thread 2 of its column), and column 2 "
          "starts at thread 2 * 4 = 8. The notebook's copy.owner(9, 2) "
          "== [(10, 1)] (value 1: the second of T10's floats).")
def _owner(answer):
    from course.cute.tiled_copy import tiled_copy_16x8

    (thread, _value), = tiled_copy_16x8().owner(9, 2)
    if isinstance(answer, str) and answer.strip().upper().startswith("T"):
        answer = answer.strip()[1:]
    try:
        value = int(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a thread number, e.g. 5 or 'T05'")
    if value == thread:
        return True, f"T{thread:02d} copies (9, 2), as CuTe DSL's TV layout says."
    return False, f"T{value:02d} copies rows {_rows(value)}."


def _rows(thread: int) -> str:
    from course.cute.tiled_copy import tiled_copy_16x8

    cells = tiled_copy_16x8().cells_of(thread)
    if not cells:
        return "nothing (there are 32 threads)"
    return f"{cells[0][0]}-{cells[-1][0]} of column {cells[0][1]}"


from course.exercises import nb04_copy_kernel  # noqa: E402,F401  (registers 04.vector_copy)
