"""Notebook 02's exercises: writing and predicting layouts.

Answers are layouts written as 'shape:stride' strings (a course.models.layout.Layout or a
(shape, stride) pair also works). The expected answers are computed by CuTe DSL
(course.cute.algebra), never typed in here.

`02.padded_tiles` is a kernel exercise: the learner writes a function that builds a layout
with CuTe's own calls; it is traced on the CPU (course.cute.trace.on_cpu) and compared with
the reference, and a tiny kernel that writes layout(i) for every i is compiled with it.
"""
# no `from __future__ import annotations`: CuTe DSL evaluates the kernel's annotations

import functools

from course.cute import algebra
from course.models import layout as pl
from course.exercises.check import Wrong, exercise, pair
from course.exercises.kernel_check import PASS, Finding, expect, kernel_exercise


def read_layout(answer) -> pl.Layout:
    """A learner's layout answer, or Wrong with what to write instead."""
    if isinstance(answer, pl.Layout):
        return answer
    if isinstance(answer, str):
        try:
            return pl.parse_layout(answer)
        except pl.LayoutError as exc:
            raise Wrong(
                f"could not read {answer!r} as a layout ({exc}); write it like '(2,4):(1,2)'"
            )
    if isinstance(answer, tuple) and len(answer) == 2:
        try:
            return pl.Layout(*answer)
        except (pl.LayoutError, TypeError) as exc:
            raise Wrong(f"{answer!r} is not a (shape, stride) pair: {exc}")
    raise Wrong(f"answer with a layout string like '(2,4):(1,2)', got {type(answer).__name__}")


def _same_function(a: pl.Layout, b: pl.Layout) -> bool:
    return a.size == b.size and (a.offsets() == b.offsets()).all()


@exercise(
    "02.padded",
    "A 4x8 tile of floats is stored row by row, each row padded to 9 floats so that "
    "the columns do not fall into the same shared-memory bank. Write its layout "
    "(rows, cols) as 'shape:stride'.",
    "mode 0 is the row, mode 1 the column; moving one column is +1, moving one row "
    "skips a whole padded row.",
    "(4,8):(9,1): shape (rows, cols) = (4,8); the column stride is 1 and the row "
    "stride is the padded row length, 9. Its cosize is 3*9 + 7 + 1 = 35.",
)
def _padded(answer):
    lay = read_layout(answer)
    want = pl.Layout((4, 8), (9, 1))
    if lay.shape == (8, 4):
        raise Wrong("the shape is (rows, cols) = (4, 8): 4 rows of 8 floats")
    if pl.product(lay.shape) != 32:
        raise Wrong(f"a 4x8 tile has 32 elements; {lay} has {lay.size}")
    if lay(0, 1) != 1:
        raise Wrong(
            f"moving one column should move one float (row-major), but {lay} moves {lay(0, 1)}"
        )
    if lay(1, 0) == 8:
        raise Wrong("that is the unpadded row-major tile (4,8):(8,1); each row takes 9 floats")
    if lay == want or _same_function(lay, want):
        return True, f"{lay}: row r starts at 9r, so column c of row r is at 9r + c."
    return False, f"{lay} puts row 1 at offset {lay(1, 0)}; a padded row is 9 floats long."


@exercise(
    "02.zipped",
    "The tile (8,8):(8,1) is ROW-major. What does cute.zipped_divide give for it with "
    "the tiler (2,4)? Predict the layout, then check.",
    "divide each mode separately (8:8 by 2, 8:1 by 4), then gather the two tile modes "
    "first and the two rest modes second.",
    "((2,4),(4,2)):((8,1),(16,4)): rows 8:8 split into 2:8 within the tile and 4:16 "
    "across tiles; columns 8:1 into 4:1 and 2:4; zipped: ((2,4),(4,2)) with strides "
    "((8,1),(16,4)).",
)
def _zipped(answer):
    lay = read_layout(answer)
    cute = algebra.apply("zipped_divide", "(8,8):(8,1)", "(2,4)").layout
    logical = algebra.apply("logical_divide", "(8,8):(8,1)", "(2,4)").layout
    if lay == cute:
        return True, f"{cute}: mode 0 walks one 2x4 tile, mode 1 picks which of the 4x2 tiles."
    if lay == logical:
        raise Wrong(
            f"{lay} is logical_divide's answer: ((tile,rest) of rows, (tile,rest) of "
            f"columns). zipped_divide regroups it as ((tiles), (rests))"
        )
    if lay == pl.zipped_divide(pl.Layout((8, 8), (1, 8)), (2, 4)):
        raise Wrong(
            "that is the column-major (8,8):(1,8) case; here a row step is 8, a column step is 1"
        )
    if lay.shape != cute.shape:
        raise Wrong(
            f"the shape should be ((2,4),(4,2)): (tile) then (rest); you wrote {pl._fmt(lay.shape)}"
        )
    return False, "the shape is right; check the strides: within a tile a row step is 8"


COMPLEMENT_OF, COMPLEMENT_UP_TO = "(2,2):(1,4)", 16  # 02.complement: not section 5's 4:2


@exercise(
    "02.complement",
    f"The layout {COMPLEMENT_OF} touches offsets 0, 1, 4, 5. What is "
    f"cute.complement({COMPLEMENT_OF}, {COMPLEMENT_UP_TO}): the layout that steps over "
    f"everything it leaves out, up to {COMPLEMENT_UP_TO}?",
    "as in section 5: first the holes inside the layout's own span, in order (how many, "
    "how far apart?), then whole copies of that span until the cotarget is reached.",
    "(2,2):(2,8): the holes 2, 3 are reached by 2 steps of 2 from each of 0, 1; then the "
    "span of 8 is repeated twice to reach 16. make_layout((2,2):(1,4), (2,2):(2,8)) is "
    "a bijection onto [0,16).",
)
def _complement(answer):
    lay = read_layout(answer)
    cute = algebra.apply("complement", COMPLEMENT_OF, str(COMPLEMENT_UP_TO)).layout
    if lay == cute or (lay.size == cute.size and pl.coalesce(lay) == pl.coalesce(cute)):
        return True, (
            f"{cute}: {COMPLEMENT_OF} and its complement together hit each of "
            f"0..{COMPLEMENT_UP_TO - 1} once."
        )
    mine = pl.parse_layout(COMPLEMENT_OF).offsets().ravel().tolist()
    sums = [a + b for a in mine for b in lay.offsets().ravel().tolist()]
    missing = sorted(set(range(COMPLEMENT_UP_TO)) - set(sums))
    twice = len(sums) - len(set(sums))
    if missing or twice:
        raise Wrong(
            f"{COMPLEMENT_OF} together with {lay} misses offsets {missing[:6]}"
            f"{'...' if len(missing) > 6 else ''} and reaches {twice} offsets more "
            f"than once; the pair must hit each of 0..{COMPLEMENT_UP_TO - 1} exactly once"
        )
    return False, f"{lay} covers the gaps but not in CuTe's order (smallest stride first)"


PRODUCT_BLOCK, PRODUCT_TILER, PRODUCT_OFFSET = "(2,2):(1,2)", "(2,3):(1,2)", 6


def _where(layout: pl.Layout, offset: int) -> tuple[int, int]:
    rows, cols = (layout.grid() == offset).nonzero()
    return int(rows[0]), int(cols[0])


@exercise(
    "02.product",
    f"Block {PRODUCT_BLOCK}, tiler {PRODUCT_TILER} (section 7 used the tiler (3,4)). "
    f"Which (row, col) of cute.raked_product(block, tiler) holds offset "
    f"{PRODUCT_OFFSET}? Rows are mode 0, columns mode 1, as in section 7's pictures.",
    "raked: each mode is (tiler, block), so the tiler's index varies fastest along a "
    "mode. Which copy of the block holds offset 6, and which of its elements is it?",
    "(1, 3): raked_product = ((2,2),(3,2)):((4,1),(8,2)); offset 6 = 4 + 2 is row "
    "(1 in the tiler, 0 in the block) = 1 and column (0, 1) = 3. In blocked_product "
    "((2,2),(2,3)):((1,4),(2,8)) it sits at (2, 1).",
)
def _product(answer):
    row, col = pair(answer, "answer with a pair (row, col)")
    blocked, raked = (
        r.layout
        for r in algebra.apply_many(
            [
                ("blocked_product", PRODUCT_BLOCK, PRODUCT_TILER),
                ("raked_product", PRODUCT_BLOCK, PRODUCT_TILER),
            ]
        )
    )
    truth = _where(raked, PRODUCT_OFFSET)
    if (row, col) == truth:
        return True, f"{truth}: raked_product = {raked}."
    if (row, col) == _where(blocked, PRODUCT_OFFSET):
        return False, (
            f"that is where blocked_product puts offset {PRODUCT_OFFSET}; raked has "
            "each mode as (tiler, block)"
        )
    rows, cols = raked.grid().shape
    if not (0 <= row < rows and 0 <= col < cols):
        return False, f"the product is {rows} rows by {cols} columns"
    return False, (f"({row}, {col}) holds offset {int(raked.grid()[row, col])} in raked_product")


# ---------------------------------------------------------------- kernel exercise 02.padded_tiles

PADDED_TILE = pl.Layout((4, 8), (9, 1))  # 02.padded's answer
TILER = (2, 4)
OFFSET_THREADS = 64  # one block; a layout of more than 32 elements writes past the output


def padded_tiles_reference() -> pl.Layout:
    """What the learner's layout must be: 02.padded's tile, zipped_divide'd by (2, 4)."""
    return pl.zipped_divide(PADDED_TILE, TILER)


def _offsets_launcher():
    """A kernel whose thread i writes layout(i): the learner's layout used on the device."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def write_offsets(out: cute.Tensor, make: cutlass.Constexpr):
        layout = make()
        i, _, _ = cute.arch.thread_idx()
        if i < cute.size(layout):
            out[i] = cutlass.Float32(layout(i))

    @cute.jit
    def launch(out_ptr: cute.Pointer, stream: cuda.CUstream, make: cutlass.Constexpr):
        out = cute.make_tensor(out_ptr, cute.make_layout(OFFSET_THREADS))
        write_offsets(out, make).launch(grid=[1, 1, 1], block=[OFFSET_THREADS, 1, 1], stream=stream)

    return launch


offsets_launcher = functools.cache(_offsets_launcher)  # built once, reused by every compile


def _build_offsets(fn, arch):
    import torch

    from kernels.host import fake_stream, gmem_pointer

    return offsets_launcher(), gmem_pointer(None, torch.float32), fake_stream(), fn


def traced_layout(fn) -> pl.Layout:
    """The learner's layout, as CuTe DSL computes it in a trace on the CPU."""
    from course.cute.trace import on_cpu

    lay = on_cpu(fn)
    if not isinstance(lay, pl.Layout):
        raise Wrong(
            f"the function returned {lay!r}; return the layout CuTe built "
            f"(cute.make_layout, then cute.zipped_divide)"
        )
    return lay


def _shape_mistakes() -> dict:
    """Shape of a known wrong answer -> the hint that names the mistake."""
    return {
        pl.logical_divide(
            PADDED_TILE, TILER
        ).shape: "logical_divide keeps (tile, rest) inside each mode; zipped_divide gathers the "
        "tile modes first and the rest modes second: ((2,4),(2,2))",
        pl.zipped_divide(
            PADDED_TILE, TILER[::-1]
        ).shape: "tiler transposed: (2,4) means 2 rows by 4 columns, applied mode by mode "
        "(rows first)",
        pl.zipped_divide(
            pl.Layout((8, 4), (1, 9)), TILER
        ).shape: "the tile is 4 rows (mode 0) by 8 columns (mode 1): shape (4,8)",
    }


def _offset_mistakes() -> list:
    """(wrong layout, hint) pairs: same shape as the reference, other offsets."""
    return [
        (
            pl.zipped_divide(pl.Layout((4, 8), (1, 9)), TILER),
            "swapped strides: that is column-major; stored row by row, one column is +1 "
            "and one row is +9: stride (9,1)",
        ),
        (
            pl.zipped_divide(pl.Layout((4, 8), (1, 4)), TILER),
            "swapped strides: that is the column-major (4,8):(1,4); stored row by row with "
            "padding the stride is (9,1)",
        ),
        (
            pl.zipped_divide(pl.Layout((4, 8), (8, 1)), TILER),
            "no padding: each row takes 9 floats, so one row is +9, not +8",
        ),
    ]


def unwrapped(shape):
    """A shape with every 1-tuple replaced by its element: a mode (4) takes the same
    coordinates, and gives the same offsets, as a mode 4 (a tiler's mode written as a
    rank-1 layout, make_layout((4,)), yields one)."""
    if pl.is_tuple(shape):
        parts = tuple(unwrapped(e) for e in shape)
        return parts[0] if len(parts) == 1 else parts
    return shape


def tile_shape_matches(c):
    lay, want = traced_layout(c.fn), padded_tiles_reference()
    hint = _shape_mistakes().get(
        lay.shape,
        f"the shape should be ((2,4),(2,2)): a 2x4 tile, "
        f"then 2x2 of them; you built {pl._fmt(lay.shape)}",
    )
    same = unwrapped(lay.shape) == unwrapped(want.shape)
    detail = f"{lay}, expected shape {pl._fmt(want.shape)}"
    if same:
        detail = f"{lay}" + (
            ""
            if lay.shape == want.shape
            else f" (the modes of {pl._fmt(want.shape)}, a 1-tuple where it has a number: "
            "the same coordinates)"
        )
    return expect("shape ((tile), (which tile))", same, detail, hint)


def every_offset_matches(c):
    lay, want = traced_layout(c.fn), padded_tiles_reference()
    if lay.size == want.size and (lay.offsets() == want.offsets()).all():
        # the answer is a layout, and CuTe itself computed every value of it here: a full run
        return Finding(
            "every coordinate's offset",
            PASS,
            f"CuTe computed all {want.size} offsets of your layout on this machine; "
            f"each equals {want}'s",
            ran=True,
        )
    hint = next(
        (h for wrong, h in _offset_mistakes() if _same_function(lay, wrong)),
        "a row step is 9 (the padded row), a column step is 1",
    )
    index = (
        next(i for i in range(min(lay.size, want.size)) if lay.offsets()[i] != want.offsets()[i])
        if lay.size == want.size
        else 0
    )
    crd = pl.idx2crd(index, want.shape)
    return expect(
        "every coordinate's offset",
        False,
        f"{lay} puts coordinate {pl._fmt(crd)} at {lay.offsets()[index]}, the "
        f"reference at {want.offsets()[index]}",
        hint,
    )


def gpu_offsets(fn, quick: bool = False, launching=lambda: None):
    """Run the tiny kernel and compare what it wrote with the reference's offsets."""
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output
    from kernels.host import arch_for, compile_for, current_stream, gmem_pointer

    arch = arch_for(torch.cuda.get_device_capability())
    compiled = compile_for(
        arch, offsets_launcher(), gmem_pointer(None, torch.float32), current_stream(), fn
    )
    launching()
    want = torch.tensor(padded_tiles_reference().offsets(), dtype=torch.float64, device="cuda")
    out, buffer = guarded_output((want.numel(),), torch.float32)
    compiled(gmem_pointer(buffer, torch.float32), current_stream())
    torch.cuda.synchronize()
    return [
        judge_output(
            "layout(i) written by a kernel, for every i",
            out,
            want,
            buffer,
            wrong_hint="a row step is 9 (the padded row), a column step is 1",
            edge_hint="the layout has more than 32 elements: 4x8 in all",
        )
    ]


kernel_exercise(
    id="02.padded_tiles",
    prompt="Write padded_tiles(): build the 4x8 float tile of exercise 1 (row by row, rows "
    "padded to 9 floats) with cute.make_layout, cut it into 2x4 tiles with "
    "cute.zipped_divide, and return the result.",
    hint="mode 0 is the row: one step skips a padded row; mode 1 is the column: one step is "
    "one float. zipped_divide applies the tiler (2, 4) mode by mode: rows, then columns.",
    arch="sm_90a",
    needs="gpu",
    build=_build_offsets,
    cpu_checks=(tile_shape_matches, every_offset_matches),
    gpu_checks=gpu_offsets,
    solution="course/exercises/solutions/nb02_solutions.py: padded_tiles",
)
