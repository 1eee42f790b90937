"""Notebook 05's transpose: out = in.T through a 64x64 float tile in shared memory.

Each CTA of 32x8 threads takes one 64x64 tile of the row-major (m, n) input. A warp is one
value of thread_idx.y: its 32 lanes read 32 consecutive floats of one input row (coalesced),
the row's two halves one after the other, and store them into tile row r, columns h*32 + 0..31.
After a barrier the same warp writes 32 consecutive floats of one *output* row (coalesced
again), which are tile column c, rows h*32 + 0..31. So shared memory is written by rows and
read by columns, and with a plain row-major tile, (64,64):(64,1), every lane of a column read
hits the same bank: a 32-way conflict.

The tile is 64 floats wide, not 32, so that notebook 05's exercise is not section 4's 32x32
tile again: a row's offset bits start at bit 6 here, and the swizzle that fixes the tile has
to read them there.

The tile's layout, (row, col) -> float offset in shared memory, is a parameter: `LAYOUTS`
holds the plain one, the padded one (64,64):(65,1) and the swizzled one,
Swizzle<5,0,6> o (64,64):(64,1), which XORs the row into the bank. `transpose` takes any
function that builds such a layout as a Constexpr. Ragged matrices are predicated at
their edges.
"""

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.memory.smem import SmemAllocator

from .host import Compiler, KernelInputError, check_tensor, current_stream, fake_stream
from .host import gmem_pointer, require

NEEDS = "gpu"
TILE = 64  # the tile is TILE x TILE floats
LANES = 32  # a warp's lanes span half a tile row (or half a column): HALVES requests each
HALVES = TILE // LANES
ROWS_PER_PASS = 8  # thread_idx.y: 8 warps, each taking every 8th tile row


def plain_layout():
    """Row-major: column reads are a 32-way bank conflict."""
    return cute.make_layout((TILE, TILE), stride=(TILE, 1))


def padded_layout():
    """One float of padding per row: element (r, c) is in bank (r + c) % 32."""
    return cute.make_layout((TILE, TILE), stride=(TILE + 1, 1))


def swizzled_layout():
    """Swizzle<5,0,6>: the row's low 5 bits (offset bits 6-10) XORed into the 5 bank bits,
    bank = (c ^ r) % 32."""
    return cute.make_composed_layout(cute.make_swizzle(5, 0, 6), 0, plain_layout())


LAYOUTS = {"plain": plain_layout, "padded": padded_layout, "swizzled": swizzled_layout}


@dataclass(frozen=True)
class Config:
    layout: str = "swizzled"

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout {self.layout!r}: expected one of {tuple(LAYOUTS)}")


@cute.kernel
def transpose_kernel(
    gIn: cute.Tensor,
    gOut: cute.Tensor,
    m: cutlass.Int32,
    n: cutlass.Int32,
    smem_layout: cutlass.Constexpr,
):
    tx, ty, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    smem = SmemAllocator()
    tile = smem.allocate_tensor(cutlass.Float32, smem_layout(), byte_alignment=128)
    for k in cutlass.range_constexpr(TILE // ROWS_PER_PASS):
        r = ty + k * ROWS_PER_PASS  # tile row: input row by * TILE + r
        for h in cutlass.range_constexpr(HALVES):
            row, col = by * TILE + r, bx * TILE + h * LANES + tx
            if row < m and col < n:
                tile[r, h * LANES + tx] = gIn[row, col]  # lanes along a tile row
    cute.arch.sync_threads()
    for k in cutlass.range_constexpr(TILE // ROWS_PER_PASS):
        c = ty + k * ROWS_PER_PASS  # tile column: output row bx * TILE + c
        for h in cutlass.range_constexpr(HALVES):
            row, col = bx * TILE + c, by * TILE + h * LANES + tx
            if row < n and col < m:
                gOut[row, col] = tile[h * LANES + tx, c]  # lanes down a tile column


@cute.jit
def transpose(
    in_ptr: cute.Pointer,
    out_ptr: cute.Pointer,
    m: cutlass.Int32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
    smem_layout: cutlass.Constexpr,
):
    gIn = cute.make_tensor(in_ptr, cute.make_layout((m, n), stride=(n, 1)))
    gOut = cute.make_tensor(out_ptr, cute.make_layout((n, m), stride=(m, 1)))
    grid = [(n + TILE - 1) // TILE, (m + TILE - 1) // TILE, 1]
    transpose_kernel(gIn, gOut, m, n, smem_layout).launch(
        grid=grid, block=[LANES, ROWS_PER_PASS, 1], stream=stream
    )


def _signature(arch: str, config: Config):
    p = gmem_pointer(None, torch.float32, align_bytes=4)
    one = cutlass.Int32(1)
    return (transpose, p, p, one, one, fake_stream(), LAYOUTS[config.layout])


COMPILER = Compiler("smem_transpose", NEEDS, _signature)


def compile(config: Config = Config()):
    """The launchable transpose for this machine's GPU (compiled once per configuration)."""
    return COMPILER.compile(config)


def artifacts(arch: str = "sm_90a", config: Config = Config()):
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return COMPILER.artifacts(arch, config)


def run(
    x: torch.Tensor, out: torch.Tensor | None = None, config: Config = Config()
) -> torch.Tensor:
    """out = x.T (a new contiguous (n, m) tensor unless `out` is given)."""
    arch = require(
        NEEDS, "smem_transpose", x.device if isinstance(x, torch.Tensor) and x.is_cuda else None
    )
    check_tensor(x, "x", dtypes=(torch.float32,), ndim=2, align_bytes=4)
    if x.stride(0) != x.shape[1] and x.numel() > 1:
        raise KernelInputError(
            f"x must be a contiguous row-major matrix (strides "
            f"{tuple(x.stride())}); pass .contiguous()"
        )
    m, n = x.shape
    if out is None:
        out = torch.empty((n, m), dtype=x.dtype, device=x.device)
    check_tensor(out, "out", dtypes=(torch.float32,), ndim=2, align_bytes=4)
    if (
        tuple(out.shape) != (n, m)
        or out.device != x.device
        or (out.numel() > 1 and out.stride(0) != m)
    ):
        raise KernelInputError(f"out must be a contiguous ({n}, {m}) tensor on {x.device}")
    if m * n >= 2**31:
        raise KernelInputError(
            "the transpose indexes with 32-bit integers: fewer than 2^31 elements"
        )
    if m * n == 0:
        return out
    kernel = COMPILER.for_arch(arch, config)
    kernel(
        gmem_pointer(x, torch.float32, 4),
        gmem_pointer(out, torch.float32, 4),
        cutlass.Int32(m),
        cutlass.Int32(n),
        current_stream(),
    )
    return out


def _self_test() -> int:
    """Every layout transposes exactly on ragged shapes; the swizzled and padded tiles
    against the plain one's time."""
    from . import selftest

    if not selftest.runnable_here(NEEDS, "smem_transpose"):
        selftest.show_artifacts(artifacts())
        return 0
    ok = True
    for layout in LAYOUTS:
        for m, n in ((32, 32), (100, 67), (1024, 520), (1, 33)):
            x = torch.randn(m, n, device="cuda")
            out = run(x, torch.full((n, m), float("nan"), device="cuda"), Config(layout))
            torch.cuda.synchronize()
            ok &= selftest.verdict(f"{layout} {m}x{n}", out, x.t(), torch.float32)
    xs = [torch.randn(8192, 8192, device="cuda") for _ in range(3)]
    outs = [torch.empty_like(x) for x in xs]
    t = selftest.paired_rounds(
        {
            name: (lambda i, name=name: run(xs[i % 3], outs[i % 3], Config(name)))
            for name in LAYOUTS
        },
        rounds=7,
    )
    for name in ("padded", "swizzled"):
        print(
            f"  {name:8s}: {selftest.ratio_summary(t['plain'], t[name])} of the plain "
            f"tile's speed (its time over this one's)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_self_test())
