"""Notebook 05's exercises: banks, swizzles and the TMA modes."""

from __future__ import annotations

from course.exercises.check import Wrong, exercise, number
from course.models.smem_access import SmemTile, columns, ldmatrix_x4_down_m, rows
from course.models.layout import Layout, Swizzle
from course.models.swizzle import TMA_SWIZZLES


BANK_CELL = (7, 20)  # 05.bank: an element of section 4's swizzled transpose tile


@exercise(
    "05.bank",
    f"In section 4's swizzled transpose tile, Swizzle<5,0,5> o (32,32):(1,32) "
    f"(fp32), which bank holds element {BANK_CELL}?",
    "first the layout's offset of (row, col); then the swizzle: which bits does "
    "Swizzle<5,0,5> take, and into which does it XOR them? The bank is the result mod 32.",
    "19: offset 7 + 32*20 = 647; Swizzle<5,0,5> XORs bits 5-9 (= 20, the column) into "
    "bits 0-4 (= 7, the row): 7 ^ 20 = 19, so 647 becomes 640 + 19 = 659, bank 19.",
)
def _bank(answer):
    tile = SmemTile("fp32", Layout.col_major(32, 32), Swizzle(5, 0, 5))
    truth = int(tile.bank_map()[BANK_CELL])
    plain = int(SmemTile("fp32", Layout.col_major(32, 32)).bank_map()[BANK_CELL])
    if answer == plain and plain != truth:
        return False, "that is the bank without the swizzle"
    return number(answer, truth)


TRANSPOSE_LD = 34  # 05.transpose: columns padded by two floats; the page prints 32 and 33


@exercise(
    "05.transpose",
    f"A warp reads one row of a 32x32 float tile stored column-major with each column "
    f"padded by two floats, (32,32):(1,{TRANSPOSE_LD}). How many wavefronts does that "
    f"request take?",
    f"element (r, c) is at r + {TRANSPOSE_LD}c: which bank is that, and how many of the "
    f"32 lanes land in each bank?",
    f"2: element (r, c) is in bank (r + {TRANSPOSE_LD}c) % 32 = (r + 2c) % 32, so the 32 "
    "lanes reach only the 16 banks of r's parity, two different words in each: a 2-way "
    "conflict, 2 wavefronts. An odd padding (stride 33) spreads them over all 32 banks.",
)
def _transpose(answer):
    tile = SmemTile("fp32", Layout.col_major(32, 32, ld=TRANSPOSE_LD))
    truth = rows((32, 32)).predict(tile).analyses[0].wavefronts
    if answer == 32 and truth != 32:
        return False, (
            "32 is the unpadded tile's count (stride 32 puts the whole row in one bank); "
            f"with stride {TRANSPOSE_LD}, lane c's bank moves by 2c"
        )
    if answer == 1 and truth != 1:
        return False, (
            f"1 needs 32 different banks; with stride {TRANSPOSE_LD}, count the banks "
            "(r + 2c) % 32 reaches for c = 0..31"
        )
    return number(answer, truth)


PAD_TILE = 64  # 05.padding: a 64x64 float tile, not section 4's 32x32


@exercise(
    "05.padding",
    f"A {PAD_TILE}x{PAD_TILE} float tile is stored column-major, and a warp "
    f"reads 32 consecutive elements of one row. Which leading dimension (column stride, "
    f"in floats) makes those reads conflict-free with the smallest padding?",
    "where does element (r, c) land with stride ld, and which bank is that? Which ld "
    "sends 32 consecutive columns to 32 different banks?",
    f"{PAD_TILE + 1}: element (r, c) is at r + {PAD_TILE + 1}c, bank (r + c) % 32 (65 = 2*32 "
    f"+ 1), so 32 consecutive columns hit 32 different banks; {PAD_TILE} puts them all in "
    "bank r.",
)
def _padding(answer):
    try:
        ld = int(answer)
    except (TypeError, ValueError):
        raise Wrong("answer with a number (the stride of mode 1)")
    if ld < PAD_TILE:
        raise Wrong(
            f"the columns would overlap: a column of {PAD_TILE} floats needs a stride "
            f"of at least {PAD_TILE}"
        )
    tile = SmemTile("fp32", Layout.col_major(PAD_TILE, PAD_TILE, ld=ld))
    conflicts = rows((PAD_TILE, PAD_TILE)).predict(tile).conflicts
    if conflicts:
        return False, f"with stride {ld} the row reads still have {conflicts} conflicts."
    if ld != PAD_TILE + 1:
        return False, f"{ld} works, but a smaller padding does too."
    return True, f"{ld}: one extra float per column spreads every row over all 32 banks."


@exercise(
    "05.tma_mode",
    "A K-major bf16 tile has 64-byte rows (32 elements per row, 32 rows). "
    "ldmatrix reads the first 16 bytes of each row, 8 rows per phase. What is the smallest "
    "TMA swizzle mode ('none', '32B', '64B' or '128B') that makes it conflict-free?",
    "rows are 64 bytes, so rows r and r+2 start in the same bank; which mode XORs enough "
    "row bits into the 16-byte chunk index? Try them in the BankConflictExplorer.",
    "'64B' (Swizzle<2,4,3> on byte addresses): it XORs (row // 2) % 4 into the chunk "
    "index, spreading 8 rows over 8 different groups of 4 banks. 32B would leave a "
    "2-way conflict, and TMA refuses it for rows longer than 32 bytes anyway.",
)
def _tma_mode(answer):
    if not isinstance(answer, str) or answer.strip() not in TMA_SWIZZLES:
        raise Wrong("answer with one of 'none', '32B', '64B', '128B'")
    smallest = next(mode for mode in TMA_SWIZZLES if _free(mode))
    if answer.strip() == smallest:
        return True, f"{smallest} is the smallest conflict-free mode for 64-byte rows."
    if _free(answer.strip()):
        return False, "that one works, but a smaller mode does too."
    return False, f"with {answer.strip()} the reads still conflict."


def _free(mode: str) -> bool:
    tile = SmemTile("bf16", Layout.row_major(32, 32), TMA_SWIZZLES[mode], "bytes")
    return ldmatrix_x4_down_m().predict(tile).conflicts == 0


# ---------------------------------------------------------------- 05.transpose_swizzle (a kernel)
# The learner writes the shared-memory layout of kernels.smem_transpose's 64x64 float tile:
# a warp writes half a tile row (lane l -> (r, h*32 + l)) and later reads half a tile column
# (lane l -> (h*32 + l, c)). The tile is wider than section 4's 32x32 one on purpose: its row
# bits sit elsewhere in the offset, so section 4's swizzle and padding do not carry over. The
# bank model must predict no extra wavefront either way, every element must keep its own
# word, and on a GPU the transpose must equal torch's on ragged shapes.

TILE = 64  # kernels.smem_transpose.TILE, spelled here so the CPU checks import no kernel
TRANSPOSE_SHAPES = ((64, 64), (100, 67), (1024, 520), (1, 65))
TRANSPOSE_QUICK = ((64, 64), (100, 67))
TIMED_SIDE = 4096


def _transpose_build(fn, arch):
    import cutlass
    import torch

    from kernels import smem_transpose
    from kernels.host import fake_stream, gmem_pointer

    p = gmem_pointer(None, torch.float32, align_bytes=4)
    one = cutlass.Int32(1)
    return (smem_transpose.transpose, p, p, one, one, fake_stream(), fn)


def traced_tile(fn) -> SmemTile:
    """The learner's layout as CuTe DSL builds it, as the bank model's fp32 tile."""
    from course.cute.trace import on_cpu
    from course.models.layout import ComposedLayout

    built = on_cpu(fn)
    if isinstance(built, ComposedLayout):
        if built.offset:
            raise Wrong(f"{built}: compose with offset 0, the tile starts the buffer")
        return SmemTile("fp32", built.layout, built.swizzle)
    if not isinstance(built, Layout):
        raise Wrong(f"return a CuTe layout of the tile (got {built!r})")
    return SmemTile("fp32", built)


def each_element_its_own_word(c):
    from course.exercises.kernel_check import expect

    tile = traced_tile(c.fn)
    words = len(set(tile.byte_offsets().ravel().tolist()))
    ok = tile.shape == (TILE, TILE) and words == TILE * TILE
    if tile.shape != (TILE, TILE):
        hint = f"the kernel's tile is {TILE}x{TILE} floats: build a layout of that shape"
    else:
        hint = (
            f"the layout must map the {TILE}x{TILE} tile one-to-one: here elements overlap "
            f"(a row or column stride below {TILE}?), so the transpose reads values another "
            "element overwrote"
        )
    return expect(
        f"a {TILE}x{TILE} tile, every element in its own word",
        ok,
        f"{tile}: shape {tile.shape}, {words} distinct words for {TILE * TILE} elements",
        hint,
    )


# a make_swizzle(B, M, S) with |S| < B: CuTe's swizzle type refuses bits read that overlap
# the bits written, and CuTe DSL hands back the identity S<0,4,3> in its place, silently
SWIZZLE_COLLAPSED = (
    "swizzle collapsed: CuTe DSL turned your make_swizzle into S<0,4,3>, the identity (0 "
    "bits). A Swizzle<B,M,S> must shift by at least its bits (|S| >= B): the B bits it reads "
    "(from M + S up) may not overlap the B bits it XORs them into (from M up); one that breaks "
    "this becomes the identity. Count the bits a float's row takes in its offset and how far "
    "above the bank bits they start: those are the swizzle's B and S"
)


def conflict_free_both_ways(c):
    from course.exercises.kernel_check import expect

    tile = traced_tile(c.fn)
    writes, reads = rows((TILE, TILE)).predict(tile), columns((TILE, TILE)).predict(tile)
    worst = max(writes.degree, reads.degree)
    detail = (
        f"{tile}: writes by rows {writes.conflicts} extra wavefront(s), reads by columns "
        f"{reads.conflicts} extra wavefront(s) (worst {worst}-way)"
    )
    if tile.swizzle is not None and tile.swizzle.bits == 0:
        detail += f"; the swizzle CuTe DSL built is {tile.swizzle.cute_str}, which moves no bit"
        hint = SWIZZLE_COLLAPSED
    elif worst >= 32:
        hint = (
            "bank conflicts: a 32-way conflict, every lane of a column read in one bank: "
            "XOR the row into the bank bits with a swizzle (or pad each row)"
        )
    elif tile.swizzle is None:
        hint = (
            f"padding: a {worst}-way conflict remains; the 32 floats of a column read (or a "
            "row write) are one stride apart, and only an odd stride sends them to 32 "
            f"different banks ({TILE + 1} is the smallest above the tile's width)"
        )
    else:
        hint = _swizzle_bits_hint(tile, worst, reads.degree >= writes.degree)
    return expect(
        "no bank conflicts writing rows or reading columns",
        writes.conflicts == 0 and reads.conflicts == 0,
        detail,
        hint,
    )


def _swizzle_bits_hint(tile: SmemTile, worst: int, columns_worse: bool) -> str:
    """Which offset bits the conflicting warp's 32 floats differ in, before the swizzle,
    against the bits the learner's swizzle reads: the observation a wrong S or B comes to."""
    first = (lambda l: (l, 0)) if columns_worse else (lambda l: (0, l))
    plain = [int(tile.layout(*first(lane))) for lane in range(32)]
    varying = 0
    for offset in plain:
        varying |= offset ^ plain[0]
    request = "a column read" if columns_worse else "a row write"
    return (
        f"swizzle bits: a {worst}-way conflict remains. Before the swizzle, the 32 floats of "
        f"{request} differ in offset bits {_bit_list(varying)}; your {tile.swizzle} reads "
        f"bits {_bit_list(tile.swizzle.source_mask)} and XORs them into the bank bits "
        f"{_bit_list(tile.swizzle.target_mask)}. Where in a float's offset does this tile "
        "keep its row?"
    )


def _bit_list(mask: int) -> str:
    bits = [b for b in range(mask.bit_length()) if mask >> b & 1]
    if bits and bits == list(range(bits[0], bits[-1] + 1)):
        return f"{bits[0]}-{bits[-1]}" if len(bits) > 1 else str(bits[0])
    return ", ".join(map(str, bits)) or "none"


def transpose_gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import cutlass
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output
    from kernels.host import arch_for, compile_for, current_stream, gmem_pointer

    arch = arch_for(torch.cuda.get_device_capability())
    compiled = compile_for(arch, *_transpose_build(fn, arch)[:-2], current_stream(), fn)
    launching()
    findings = []
    for m, n in TRANSPOSE_QUICK if quick else TRANSPOSE_SHAPES:
        x = torch.randn(m, n, device="cuda")
        out, buffer = guarded_output((n, m), torch.float32)
        compiled(
            gmem_pointer(x, torch.float32, 4),
            gmem_pointer(out, torch.float32, 4),
            cutlass.Int32(m),
            cutlass.Int32(n),
            current_stream(),
        )
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"{m}x{n} against torch's .t()",
                out,
                x.double().t(),
                buffer,
                wrong_hint="the layout must give every (row, col) of the tile its own word",
                edge_hint="a write outside the output",
            )
        )
    if not quick and all(f.status == "pass" for f in findings):
        findings.append(_against_plain_tile(compiled))
    return findings


def _against_plain_tile(compiled):
    """Time against the plain row-major tile in alternating rounds: reported, not required."""
    import cutlass
    import torch

    from course.exercises.kernel_check import passed
    from kernels import smem_transpose
    from kernels.host import current_stream, gmem_pointer
    from kernels.selftest import paired_rounds, ratio_summary

    side = cutlass.Int32(TIMED_SIDE)
    mats = [torch.randn(TIMED_SIDE, TIMED_SIDE, device="cuda") for _ in range(3)]
    ptrs = [
        (gmem_pointer(x, torch.float32, 4), gmem_pointer(torch.empty_like(x), torch.float32, 4))
        for x in mats
    ]
    plain = smem_transpose.compile(smem_transpose.Config("plain"))
    stream = current_stream()
    t = paired_rounds(
        {
            "plain": lambda i: plain(*ptrs[i % 3], side, side, stream),
            "yours": lambda i: compiled(*ptrs[i % 3], side, side, stream),
        },
        rounds=8,
    )
    return passed(
        "speed against the unswizzled tile (reported)",
        f"{TIMED_SIDE}x{TIMED_SIDE}: {ratio_summary(t['plain'], t['yours'])} of the "
        f"plain tile's time per transpose (above 100%: yours is faster)",
    )


def _register_transpose_swizzle():
    from course.exercises.kernel_check import kernel_exercise

    kernel_exercise(
        id="05.transpose_swizzle",
        prompt="Write transpose_tile_layout(): the shared-memory layout of a transpose's 64x64 "
        "float tile, (row, col) -> offset, with which a warp writes half a tile row and "
        "reads half a tile column without bank conflicts.",
        hint="a column read sends 32 lanes to 32 different rows of the tile: in your layout, "
        "which bits of a float's offset say its row, and which say its bank? A layout is "
        "conflict-free when the rows of a column end up in different banks and the floats "
        "of a row still do too.",
        arch="sm_90a",
        needs="gpu",
        build=_transpose_build,
        cpu_checks=(each_element_its_own_word, conflict_free_both_ways),
        gpu_checks=transpose_gpu_checks,
        timeout_s=90,
        solution="course/exercises/solutions/nb05_solutions.py: transpose_tile_layout",
    )


_register_transpose_swizzle()
