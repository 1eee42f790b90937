"""Notebook 04's copies: the same dst = src, five ways, from slow to the memory system's limit.

    scalar     one float per thread; a warp reads 32 consecutive floats (coalesced)
    strided    one float per thread, but consecutive threads walk down a column of a
               1024-wide row-major view: a warp touches 32 different 128-byte lines
    vector     four floats per thread with one 128-bit load and store (LDG.E.128)
    tiled      a CuTe TiledCopy: 256 threads x 128-bit atoms, `values` atoms per thread
               in flight at once (the TiledCopy of notebook 04, scaled up)
    cp_async   the TiledCopy with a cp.async atom: global -> shared without passing
               through registers (LDGSTS), then shared -> global

All take 1-D float32 tensors; the vector variants need n to be a multiple of 4 (whole
16-byte vectors) and 16-byte aligned pointers. Ragged ends are predicated, never read
or written out of bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.nvgpu import cpasync
from cutlass.memory.smem import SmemAllocator

from .host import Compiler, KernelInputError, check_tensor, current_stream, fake_stream
from .host import gmem_pointer, require

NEEDS = "gpu"
VARIANTS = ("scalar", "strided", "vector", "tiled", "cp_async")
VECTOR_VARIANTS = ("vector", "tiled", "cp_async")
STRIDED_WIDTH = 1024  # columns of the row-major view the strided copy walks down
VEC = 4  # floats per 128-bit access


@dataclass(frozen=True)
class Config:
    variant: str = "tiled"
    threads_per_block: int = 256
    values: int = 4  # 128-bit atoms per thread per tile (tiled, cp_async)

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r}: expected one of {VARIANTS}")
        if self.threads_per_block % 32 or not 32 <= self.threads_per_block <= 1024:
            raise ValueError("threads_per_block must be a multiple of 32 in [32, 1024]")
        if not 1 <= self.values <= 16:
            raise ValueError("values (128-bit atoms per thread) must be in [1, 16]")

    @property
    def elements_per_block(self) -> int:
        """Floats one CTA copies."""
        if self.variant in ("scalar", "strided"):
            return self.threads_per_block
        if self.variant == "vector":
            return self.threads_per_block * VEC
        return self.threads_per_block * VEC * self.values


# ---------------------------------------------------------------- scalar and strided


@cute.kernel
def scalar_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid  # lane l of a warp reads float l: one 128-byte line per warp
    if i < n:
        dst[i] = src[i]


@cute.kernel
def strided_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32, rows: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    i = bid * threads + tid
    # thread i takes row i % rows, column i // rows of a (rows, 1024) row-major view:
    # neighbouring lanes are 1024 floats (4 KiB) apart
    col = i // rows
    idx = (i % rows) * STRIDED_WIDTH + col
    if col < STRIDED_WIDTH and idx < n:
        dst[idx] = src[idx]


# ---------------------------------------------------------------- 128-bit vectors


@cute.kernel
def vector_kernel(src: cute.Tensor, dst: cute.Tensor, n_vec: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    threads, _, _ = cute.arch.block_dim()
    v = bid * threads + tid
    if v < n_vec:
        # src is ((4), n/4): mode 0 is one 16-byte vector, so .load() is one LDG.E.128
        dst[(None, v)].store(src[(None, v)].load())


# ---------------------------------------------------------------- TiledCopy and cp.async


def _predicate(coords: cute.Tensor, n: cutlass.Int32):
    """One flag per 128-bit atom of this thread: is the whole vector inside [0, n)?"""
    reps = cute.size(coords, mode=[1])
    pred = cute.make_rmem_tensor(cute.make_layout((1, reps)), cutlass.Boolean)
    for j in range(reps):  # a plain helper (not traced by the preprocessor): unrolled here
        pred[0, j] = cute.elem_less(coords[(VEC - 1, j)], (n,))
    return pred


@cute.kernel
def tiled_kernel(
    gS: cute.Tensor, gD: cute.Tensor, cI: cute.Tensor, n: cutlass.Int32, tiled: cute.TiledCopy
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    thr = tiled.get_slice(tid)
    src = thr.partition_S(gS[(None, bid)])  # (atom values, atoms): this thread's part
    dst = thr.partition_D(gD[(None, bid)])
    pred = _predicate(thr.partition_S(cI[(None, bid)]), n)
    regs = cute.make_fragment_like(src)
    cute.copy(tiled, src, regs, pred=pred)  # all `values` 128-bit loads issue back to back
    cute.copy(tiled, regs, dst, pred=pred)


@cute.kernel
def cp_async_kernel(
    gS: cute.Tensor,
    gD: cute.Tensor,
    cI: cute.Tensor,
    n: cutlass.Int32,
    g2s: cute.TiledCopy,
    s2g: cute.TiledCopy,
    tile: cutlass.Constexpr,
):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    smem = SmemAllocator()
    staged = smem.allocate_tensor(cutlass.Float32, cute.make_layout(tile), byte_alignment=128)
    load = g2s.get_slice(tid)
    pred = _predicate(load.partition_S(cI[(None, bid)]), n)
    cute.copy(g2s, load.partition_S(gS[(None, bid)]), load.partition_D(staged), pred=pred)
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    # each thread reads back only what it staged itself, so waiting for its own group is
    # enough; threads sharing the tile would also need cute.arch.sync_threads() here
    store = s2g.get_slice(tid)
    cute.copy(s2g, store.partition_S(staged), store.partition_D(gD[(None, bid)]), pred=pred)


def _tiled_copy(op, threads: int):
    atom = cute.make_copy_atom(op, cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout(threads), cute.make_layout(VEC))


# ---------------------------------------------------------------- host side


@cute.jit
def copy(
    src_ptr: cute.Pointer,
    dst_ptr: cute.Pointer,
    n: cutlass.Int32,
    stream: cuda.CUstream,
    variant: cutlass.Constexpr,
    threads: cutlass.Constexpr,
    values: cutlass.Constexpr,
):
    S = cute.make_tensor(src_ptr, cute.make_layout(n))
    D = cute.make_tensor(dst_ptr, cute.make_layout(n))
    if cutlass.const_expr(variant == "scalar"):
        blocks = (n + threads - 1) // threads
        scalar_kernel(S, D, n).launch(grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream)
    elif cutlass.const_expr(variant == "strided"):
        rows = (n + STRIDED_WIDTH - 1) // STRIDED_WIDTH
        blocks = (rows * STRIDED_WIDTH + threads - 1) // threads
        strided_kernel(S, D, n, rows).launch(
            grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream
        )
    elif cutlass.const_expr(variant == "vector"):
        n_vec = n // VEC
        vS, vD = cute.zipped_divide(S, (VEC,)), cute.zipped_divide(D, (VEC,))
        blocks = (n_vec + threads - 1) // threads
        vector_kernel(vS, vD, n_vec).launch(
            grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream
        )
    else:
        tile = threads * VEC * values  # floats per CTA
        gS, gD = cute.zipped_divide(S, (tile,)), cute.zipped_divide(D, (tile,))
        cI = cute.zipped_divide(cute.make_identity_tensor((n,)), (tile,))
        blocks = cute.size(gS, mode=[1])
        s2g = _tiled_copy(cute.nvgpu.CopyUniversalOp(), threads)
        if cutlass.const_expr(variant == "tiled"):
            tiled_kernel(gS, gD, cI, n, s2g).launch(
                grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream
            )
        else:
            g2s = _tiled_copy(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), threads)
            cp_async_kernel(gS, gD, cI, n, g2s, s2g, tile).launch(
                grid=[blocks, 1, 1], block=[threads, 1, 1], stream=stream
            )


def _signature(arch: str, config: Config):
    p = gmem_pointer(None, torch.float32)
    return (
        copy,
        p,
        p,
        cutlass.Int32(VEC),
        fake_stream(),
        config.variant,
        config.threads_per_block,
        config.values,
    )


COMPILER = Compiler("copies", NEEDS, _signature)


def compile(config: Config = Config()):
    """The launchable copy for this machine's GPU (compiled once per configuration)."""
    return COMPILER.compile(config)


def artifacts(arch: str = "sm_90a", config: Config = Config()):
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return COMPILER.artifacts(arch, config)


def run(
    src: torch.Tensor, dst: torch.Tensor | None = None, config: Config = Config()
) -> torch.Tensor:
    """dst = src with the chosen variant; validates the inputs before launching."""
    arch = require(
        NEEDS, "copies", src.device if isinstance(src, torch.Tensor) and src.is_cuda else None
    )
    check_tensor(src, "src", dtypes=(torch.float32,), ndim=1)
    if dst is None:
        dst = torch.empty_like(src)
    check_tensor(dst, "dst", dtypes=(torch.float32,), ndim=1)
    if dst.shape != src.shape or dst.device != src.device:
        raise KernelInputError(
            f"src and dst must match: {tuple(src.shape)}@{src.device} vs "
            f"{tuple(dst.shape)}@{dst.device}"
        )
    n = src.numel()
    if n >= 2**31 - 2**20:
        raise KernelInputError(
            "the copies index with 32-bit integers: fewer than 2^31 - 2^20 elements"
        )
    if config.variant in VECTOR_VARIANTS and n % VEC:
        raise KernelInputError(
            f"the {config.variant} copy moves whole 16-byte vectors: n must be "
            f"a multiple of {VEC} (got {n})"
        )
    if n == 0:
        return dst
    kernel = COMPILER.for_arch(arch, config)
    kernel(
        gmem_pointer(src, torch.float32),
        gmem_pointer(dst, torch.float32),
        cutlass.Int32(n),
        current_stream(),
    )
    return dst


def _self_test() -> int:
    """Every variant copies exactly, ragged ends included; each one's bandwidth against
    torch's own device-to-device copy."""
    from . import selftest

    if not selftest.runnable_here(NEEDS, "copies"):
        selftest.show_artifacts(artifacts())
        return 0
    ok = True
    for variant in VARIANTS:
        for n in (4, 1020, 2**20 + 12):
            src = torch.randn(n, device="cuda")
            out = run(src, torch.full_like(src, float("nan")), Config(variant=variant))
            torch.cuda.synchronize()
            ok &= selftest.verdict(f"{variant} n={n}", out, src, torch.float32)
    n = 2**26
    bufs = [(torch.randn(n, device="cuda"), torch.empty(n, device="cuda")) for _ in range(3)]
    for variant in VARIANTS:
        t = selftest.paired_rounds(
            {
                "torch": lambda i: bufs[i % 3][1].copy_(bufs[i % 3][0]),
                "kernel": lambda i: run(*bufs[i % 3], Config(variant=variant)),
            },
            rounds=7,
        )
        print(
            f"  {variant:9s}: {selftest.ratio_summary(t['torch'], t['kernel'])} of torch's "
            f"copy bandwidth"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_self_test())
