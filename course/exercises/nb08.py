"""Notebook 08's exercises: tensor maps, boxes, the swizzle, multicast."""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, number, pair
from course.models.tensormap import swizzle_byte_offset, tiled


@exercise(
    "08.dims",
    "A row-major fp16 matrix has 4096 rows and 1024 columns (no padding). Give "
    "(globalDim, globalStrides) exactly as cuTensorMapEncodeTiled takes them.",
    "dimension 0 is the fastest one (the columns); strides are in bytes and dimension "
    "0's stride is not passed.",
    "((1024, 4096), (2048,)): 1024 columns then 4096 rows; a row is 1024 x 2 = 2048 bytes.",
)
def _dims(answer):
    dims, strides = pair(answer, "answer with a pair: (globalDim, globalStrides)")
    want = tiled(4096, 1024, "fp16")
    if tuple(dims) != want.global_dim:
        if tuple(dims) == want.global_dim[::-1]:
            raise Wrong("the dimensions are reversed: dimension 0 is the contiguous one")
        raise Wrong(f"globalDim {tuple(dims)} is off")
    if tuple(strides) != want.global_strides:
        if tuple(strides) == (1024,):
            raise Wrong("strides are in bytes, not elements")
        raise Wrong(
            f"globalStrides {tuple(strides)} is off (one entry per dimension after the first)"
        )
    return True, "dimension 0 = 1024 columns, rows 2048 bytes apart."


@exercise(
    "08.boxes",
    "A 1000 x 1000 bf16 matrix is loaded in 64 x 64 boxes. How many TMA loads cover it, "
    "and how many bytes must the mbarrier expect for one load at the bottom-right corner? "
    "Answer (loads, bytes).",
    "ceil(1000 / 64) boxes each way. A box that sticks out is still a whole box: TMA "
    "writes the outside part as zeros and counts those bytes too.",
    "(256, 8192): 16 x 16 boxes; every load brings 64 x 64 x 2 = 8192 bytes, edge or not.",
)
def _boxes(answer):
    loads, nbytes = pair(answer, "answer with a pair: (loads, bytes)")
    ok_loads, _ = number(loads, 256)
    ok_bytes, _ = number(nbytes, 8192)
    if ok_loads and ok_bytes:
        return True, "256 loads of 8192 bytes each, even at the edges."
    if ok_loads and float(nbytes) < 8192:
        raise Wrong("an edge box is counted whole: the zero fill lands in shared memory too")
    return False, ("the number of loads is off. " if not ok_loads else "") + (
        "the byte count is off." if not ok_bytes else ""
    )


@exercise(
    "08.swizzle",
    "A box with 128-byte rows is loaded with the 128B swizzle. In row 5 of the box, which "
    "16-byte slot of shared memory (0-7) holds the row's logical chunk 2 (bytes 32-47)?",
    "the slot is the chunk index XOR (row mod 8).",
    "7: 2 XOR 5 = 7.",
)
def _swizzle(answer):
    want = swizzle_byte_offset(5 * 128 + 2 * 16, 128) % 128 // 16
    return number(answer, want)


@exercise(
    "08.multicast",
    "A cluster of 4 CTAs all need the same 128 x 64 bf16 tile; each CTA loads a quarter "
    "and multicasts it. How many bytes does each CTA's own TMA load ask for (the slice its "
    "copy names), and how many bytes must each CTA's mbarrier expect? Answer (requested, "
    "expected).",
    "each CTA issues 1/4 of the tile; every CTA receives all four quarters.",
    "(4096, 16384): 128 x 64 x 2 = 16384 bytes per tile, each CTA's copy names a quarter, "
    "the whole tile lands in every CTA. How many bytes L2 then reads is what section 8's "
    "counters measure.",
)
def _multicast(answer):
    requested, expected = pair(answer, "answer with a pair: (requested, expected)")
    ok_r, _ = number(requested, 4096)
    ok_e, _ = number(expected, 16384)
    if ok_r and ok_e:
        return True, (
            "each copy names a quarter, the whole tile lands in every CTA (what L2 "
            "actually reads is section 8's measurement)."
        )
    if ok_r and float(expected) == 4096:
        raise Wrong("the barrier counts every byte that lands in this CTA, from all four slices")
    return False, ("the requested bytes are off. " if not ok_r else "") + (
        "the expected bytes are off." if not ok_e else ""
    )


from course.exercises import nb08_tma_kernel  # noqa: E402,F401  registers 08.arm_and_load
