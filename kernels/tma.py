"""Notebook 08: the Tensor Memory Accelerator, one instruction at a time.

Four small kernels, each checked bit for bit against its input:

  * load: one CTA per box of a 2-D tensor. One warp arms an mbarrier with the box's
    byte count (expect_tx) and hands the box to TMA (cp.async.bulk.tensor ... global ->
    shared, completion counted in bytes on that mbarrier); every thread waits on the
    barrier, then copies shared -> global with ordinary stores. Out of bounds, TMA
    fills the box with zeros. `mode="boxes"` writes each box whole, as it sat in shared
    memory; `mode="physical"` writes the raw bytes in address order, which shows the
    swizzle TMA applied on the way in.
  * store: ordinary loads fill a shared-memory box, a proxy fence makes those writes
    visible to the TMA unit, and one warp issues cp.async.bulk.tensor shared -> global
    (completion tracked with bulk groups, not mbarriers). TMA clips the box at the edge
    of the tensor: nothing outside it is written.
  * multicast: a cluster of 2 or 4 CTAs that all need the same tiles. Each CTA loads
    1/n of every tile and multicasts its slice into all n CTAs' shared memory
    (.multicast::cluster), so L2 serves each byte once per cluster instead of n times.
    Every CTA's mbarrier expects the whole tiles' bytes: n slices land on it.
  * descriptor: copies the tensor map CuTe built for `load` into global memory (CuTe's
    copy_tensormap moves its first 64 of 128 bytes), to compare with the one the CUDA
    driver encodes (course.models.tensormap).

Tensors are 2-D, row-major with a row stride `ld` (a multiple of 16 bytes, as TMA
requires), so a view into a larger buffer works and the tests can check that
nothing outside the tensor is touched.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.memory.smem import SmemAllocator

from .host import Compiler, KernelInputError, check_smem, check_tensor, current_stream
from .host import cutlass_dtype, fake_stream, gmem_pointer, require

NEEDS = "sm_90+"
DTYPES = (torch.bfloat16, torch.float16, torch.float32)
SWIZZLE_BITS = {0: 0, 32: 1, 64: 2, 128: 3}  # swizzle span in bytes -> Swizzle<B,4,3>
MODES = ("copy", "boxes", "physical")


@dataclass(frozen=True)
class Config:
    box_rows: int = 64
    box_cols: int = 64  # elements along the contiguous dimension
    swizzle: int = 128  # bytes: 0 (none), 32, 64 or 128
    threads: int = 128

    def __post_init__(self):
        if self.swizzle not in SWIZZLE_BITS:
            raise ValueError(f"swizzle must be one of {sorted(SWIZZLE_BITS)} (bytes)")
        if not (1 <= self.box_rows <= 256 and 1 <= self.box_cols <= 256):
            raise ValueError("a TMA box has at most 256 elements along each dimension")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise ValueError("threads must be a multiple of 32 in [32, 1024]")
        if (self.box_rows * self.box_cols) % self.threads:
            raise ValueError("threads must divide the box's element count")

    def check(self, elem_bytes: int) -> None:
        """The box rules that depend on the element size (raise KernelInputError)."""
        row = self.box_cols * elem_bytes
        if row % 16:
            raise KernelInputError(
                f"a box row of {self.box_cols} x {elem_bytes} B = {row} B; "
                "TMA moves rows in multiples of 16 bytes"
            )
        if self.swizzle and row != self.swizzle:
            raise KernelInputError(
                f"with the {self.swizzle}B swizzle a box row must be exactly "
                f"{self.swizzle} bytes ({self.swizzle // elem_bytes} elements), "
                f"got {row}"
            )

    def box_bytes(self, elem_bytes: int) -> int:
        return self.box_rows * self.box_cols * elem_bytes


@dataclass(frozen=True)
class MulticastConfig:
    cluster: int = 2  # CTAs per cluster that share the tiles
    tiles: int = 4  # tiles every CTA receives (each its own shared-memory buffer)
    multicast: bool = True  # False: every CTA loads whole tiles itself (the baseline)
    box: Config = Config()

    def __post_init__(self):
        if self.cluster not in (1, 2, 4):
            raise ValueError("cluster must be 1, 2 or 4")
        if not 1 <= self.tiles <= 16:
            raise ValueError("tiles must be in [1, 16]")
        if self.box.box_rows % self.cluster:
            raise ValueError("the cluster size must divide box_rows (each CTA loads a slice)")

    @property
    def slices(self) -> int:
        """How many pieces each tile arrives in (one per CTA when multicasting)."""
        return self.cluster if self.multicast else 1


def box_layout(dtype, cfg: Config, stages: int = 0):
    """The box in shared memory: row-major, with the tensor map's swizzle.

    The swizzle is Swizzle<B,4,3> acting on byte addresses (it travels with the shared
    memory pointer): bits 4-6 of an address -- which 16-byte chunk of a 128-byte row --
    are XORed with bits 7-9 -- which row of eight. B = 3, 2, 1, 0 for the 128, 64, 32
    byte and no-swizzle modes. `stages` > 0 adds a third mode of that many boxes.
    """
    r, c = cfg.box_rows, cfg.box_cols
    outer = (
        cute.make_layout((r, c, stages), stride=(c, 1, r * c))
        if stages
        else cute.make_layout((r, c), stride=(c, 1))
    )
    return cute.make_composed_layout(cute.make_swizzle(SWIZZLE_BITS[cfg.swizzle], 4, 3), 0, outer)


def _matrix(ptr, rows, cols, ld, dtype):
    """(rows, cols) row-major with row stride ld (ld * element size a multiple of 16)."""
    ld = cute.assume(ld, divby=128 // dtype.width)
    return cute.make_tensor(ptr, cute.make_layout((rows, cols), stride=(ld, 1)))


@cute.jit
def _arm_and_load(
    tma: cute.CopyAtom,
    src: cute.Tensor,
    dst: cute.Tensor,
    bar: cute.Pointer,
    tx_bytes: cutlass.Constexpr,
):
    """Called by one whole warp: arm the barrier with the bytes to expect (one elected
    lane), then issue the TMA copy (which elects its own lane)."""
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, tx_bytes)
    cute.copy(tma, src, dst, tma_bar_ptr=bar)


class TmaLoad:
    """Global -> shared by TMA, then shared -> global by plain stores. `arm_and_load` is
    the step a subclass may replace (notebook 08's kernel exercise does)."""

    arm_and_load = staticmethod(_arm_and_load)

    def __init__(self, dtype, config: Config, mode: str):
        self.dtype, self.cfg, self.mode = dtype, config, mode
        self.tx_bytes = config.box_bytes(dtype.width // 8)

    @cute.jit
    def __call__(
        self,
        src_ptr: cute.Pointer,
        dst_ptr: cute.Pointer,
        rows: cutlass.Int32,
        cols: cutlass.Int32,
        ld_src: cutlass.Int32,
        ld_dst: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        cfg = self.cfg
        mSrc = _matrix(src_ptr, rows, cols, ld_src, self.dtype)
        tiles_m = (rows + cfg.box_rows - 1) // cfg.box_rows
        tiles_n = (cols + cfg.box_cols - 1) // cfg.box_cols
        if cutlass.const_expr(self.mode == "copy"):
            mDst = _matrix(dst_ptr, rows, cols, ld_dst, self.dtype)
        else:  # every box whole: a (tiles_m * box_rows, tiles_n * box_cols) mosaic
            mDst = _matrix(
                dst_ptr,
                tiles_m * cfg.box_rows,
                tiles_n * cfg.box_cols,
                tiles_n * cfg.box_cols,
                self.dtype,
            )
        sl = box_layout(self.dtype, cfg)
        # the tensor map: mSrc's shape and strides, a box of (box_rows, box_cols), the
        # swizzle of `sl`; the TMA tensor maps (row, col) to the coordinates TMA takes
        tma, tSrc = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), mSrc, sl, (cfg.box_rows, cfg.box_cols)
        )
        self.kernel(tma, tSrc, mDst, sl, rows, cols).launch(
            grid=[tiles_n, tiles_m, 1], block=[cfg.threads, 1, 1], stream=stream
        )

    @cute.kernel
    def kernel(
        self,
        tma: cute.CopyAtom,
        tSrc: cute.Tensor,
        mDst: cute.Tensor,
        sl: cute.ComposedLayout,
        rows: cutlass.Int32,
        cols: cutlass.Int32,
    ):
        cfg = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bn, bm, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        smem = SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        raw = smem.allocate_tensor(self.dtype, sl.outer, 1024)  # the bytes, in address order
        # the same bytes seen through the swizzle
        box = cute.make_tensor(cute.recast_ptr(raw.iterator, sl.inner, dtype=self.dtype), sl.outer)

        # one thread initialises the barrier: it completes after 1 arrival + tx_bytes
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        gSrc = cute.local_tile(tSrc, (cfg.box_rows, cfg.box_cols), (None, None))
        tAs, tAg = cute.nvgpu.cpasync.tma_partition(
            tma, 0, cute.make_layout(1), cute.group_modes(box, 0, 2), cute.group_modes(gSrc, 0, 2)
        )
        if warp == 0:  # a whole, converged warp: the copy and expect_tx elect their lane
            self.arm_and_load(tma, tAg[(None, bm, bn)], tAs, bar, self.tx_bytes)
        cute.arch.mbarrier_wait(bar, 0)  # phase 0 completes when all the bytes have landed

        view = raw if cutlass.const_expr(self.mode == "physical") else box
        for v in cutlass.range_constexpr(cfg.box_rows * cfg.box_cols // cfg.threads):
            i = tidx + v * cfg.threads
            r = i // cfg.box_cols
            c = i % cfg.box_cols
            gr = bm * cfg.box_rows + r
            gc = bn * cfg.box_cols + c
            if cutlass.const_expr(self.mode == "copy"):
                if gr < rows and gc < cols:
                    mDst[gr, gc] = view[r, c]
            else:
                mDst[gr, gc] = view[r, c]


class TmaStore:
    """Global -> shared by plain loads, then shared -> global by TMA."""

    def __init__(self, dtype, config: Config):
        self.dtype, self.cfg = dtype, config

    @cute.jit
    def __call__(
        self,
        src_ptr: cute.Pointer,
        dst_ptr: cute.Pointer,
        rows: cutlass.Int32,
        cols: cutlass.Int32,
        ld_src: cutlass.Int32,
        ld_dst: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        cfg = self.cfg
        mSrc = _matrix(src_ptr, rows, cols, ld_src, self.dtype)
        mDst = _matrix(dst_ptr, rows, cols, ld_dst, self.dtype)
        sl = box_layout(self.dtype, cfg)
        tma, tDst = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), mDst, sl, (cfg.box_rows, cfg.box_cols)
        )
        tiles_m = (rows + cfg.box_rows - 1) // cfg.box_rows
        tiles_n = (cols + cfg.box_cols - 1) // cfg.box_cols
        self.kernel(tma, tDst, mSrc, sl).launch(
            grid=[tiles_n, tiles_m, 1], block=[cfg.threads, 1, 1], stream=stream
        )

    @cute.kernel
    def kernel(
        self, tma: cute.CopyAtom, tDst: cute.Tensor, mSrc: cute.Tensor, sl: cute.ComposedLayout
    ):
        cfg = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bn, bm, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = SmemAllocator()
        box = smem.allocate_tensor(self.dtype, sl.outer, 1024, sl.inner)

        rows, cols = mSrc.shape
        for v in cutlass.range_constexpr(cfg.box_rows * cfg.box_cols // cfg.threads):
            i = tidx + v * cfg.threads
            r = i // cfg.box_cols
            c = i % cfg.box_cols
            gr = bm * cfg.box_rows + r
            gc = bn * cfg.box_cols + c
            value = self.dtype(0)
            if gr < rows and gc < cols:
                value = mSrc[gr, gc]
            box[r, c] = value
        # the box was written through the generic proxy; TMA reads through the async
        # proxy: fence, then make sure every thread's writes are done
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_threads()

        gDst = cute.local_tile(tDst, (cfg.box_rows, cfg.box_cols), (None, None))
        tBs, tBg = cute.nvgpu.cpasync.tma_partition(
            tma, 0, cute.make_layout(1), cute.group_modes(box, 0, 2), cute.group_modes(gDst, 0, 2)
        )
        if warp == 0:
            cute.copy(tma, tBs, tBg[(None, bm, bn)])
            cute.arch.cp_async_bulk_commit_group()  # stores are tracked in bulk groups
            cute.arch.cp_async_bulk_wait_group(0)  # ... and this waits for ours


class TmaMulticast:
    """Every CTA of every cluster receives the same `tiles` tiles, `rounds` times over.

    With multicast, CTA `rank` of a cluster of n loads rows [rank*R/n, (rank+1)*R/n) of
    each tile and TMA writes them into all n CTAs' shared memory; without, each CTA
    loads every tile itself. Between rounds a cluster barrier keeps any CTA from
    multicasting round r+1 into a partner that is still waiting for round r.
    """

    def __init__(self, dtype, config: MulticastConfig, write_out: bool):
        self.dtype, self.cfg, self.write_out = dtype, config, write_out
        self.tx_bytes = config.tiles * config.box.box_bytes(dtype.width // 8)
        self.smem_bytes = self.tx_bytes + 1024  # the tiles, 1024-byte aligned, and the barrier

    @cute.jit
    def __call__(
        self,
        src_ptr: cute.Pointer,
        dst_ptr: cute.Pointer,
        clusters: cutlass.Int32,
        rounds: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        cfg, box = self.cfg, self.cfg.box
        mSrc = cute.make_tensor(
            src_ptr,
            cute.make_layout((cfg.tiles * box.box_rows, box.box_cols), stride=(box.box_cols, 1)),
        )
        ctas = clusters * cfg.cluster
        mDst = cute.make_tensor(
            dst_ptr,
            cute.make_layout(
                (ctas * cfg.tiles * box.box_rows, box.box_cols), stride=(box.box_cols, 1)
            ),
        )
        sl = box_layout(self.dtype, box, stages=cfg.tiles)
        one = cute.slice_(sl, (None, None, 0))
        if cutlass.const_expr(cfg.multicast and cfg.cluster > 1):
            tma, tSrc = cute.nvgpu.cpasync.make_tiled_tma_atom(
                cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp(),
                mSrc,
                one,
                (box.box_rows, box.box_cols),
                num_multicast=cfg.cluster,
            )
        else:
            tma, tSrc = cute.nvgpu.cpasync.make_tiled_tma_atom(
                cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(),
                mSrc,
                one,
                (box.box_rows, box.box_cols),
            )
        self.kernel(tma, tSrc, mDst, sl, rounds).launch(
            grid=[ctas, 1, 1], block=[box.threads, 1, 1], cluster=[cfg.cluster, 1, 1], stream=stream
        )

    @cute.kernel
    def kernel(
        self,
        tma: cute.CopyAtom,
        tSrc: cute.Tensor,
        mDst: cute.Tensor,
        sl: cute.ComposedLayout,
        rounds: cutlass.Int32,
    ):
        cfg, box = self.cfg, self.cfg.box
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        clustered = cfg.cluster > 1

        smem = SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        sTiles = smem.allocate_tensor(self.dtype, sl.outer, 1024, sl.inner)  # (R, C, tiles)

        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        # a partner may multicast into this CTA as soon as it passes this point: every
        # barrier of the cluster must be initialised first
        self.cluster_sync(clustered)

        gSrc = cute.local_tile(tSrc, (box.box_rows, box.box_cols), (None, 0))  # (R, C, tiles)
        if cutlass.const_expr(cfg.multicast and clustered):
            tAs, tAg = cute.nvgpu.cpasync.tma_partition(
                tma,
                rank,
                cute.make_layout(cfg.cluster),
                cute.group_modes(sTiles, 0, 2),
                cute.group_modes(gSrc, 0, 2),
            )
            everyone = cute.make_layout_image_mask(
                cute.make_layout((cfg.cluster, 1, 1)), (rank, 0, 0), mode=0
            )
        else:
            tAs, tAg = cute.nvgpu.cpasync.tma_partition(
                tma,
                0,
                cute.make_layout(1),
                cute.group_modes(sTiles, 0, 2),
                cute.group_modes(gSrc, 0, 2),
            )

        phase = cutlass.Int32(0)
        for _ in range(rounds):
            if warp == 0:
                with cute.arch.elect_one():  # all the tiles' bytes land here, from n CTAs
                    cute.arch.mbarrier_arrive_and_expect_tx(bar, self.tx_bytes)
                for t in cutlass.range_constexpr(cfg.tiles):
                    if cutlass.const_expr(cfg.multicast and clustered):
                        cute.copy(
                            tma,
                            tAg[(None, t)],
                            tAs[(None, t)],
                            tma_bar_ptr=bar,
                            mcast_mask=everyone,
                        )
                    else:
                        cute.copy(tma, tAg[(None, t)], tAs[(None, t)], tma_bar_ptr=bar)
            cute.arch.mbarrier_wait(bar, phase)
            phase = phase ^ 1
            self.cluster_sync(clustered)

        if cutlass.const_expr(self.write_out):
            per_tile = box.box_rows * box.box_cols
            for t in cutlass.range_constexpr(cfg.tiles):
                for v in cutlass.range_constexpr(per_tile // box.threads):
                    i = tidx + v * box.threads
                    r = i // box.box_cols
                    c = i % box.box_cols
                    mDst[(bidx * cfg.tiles + t) * box.box_rows + r, c] = sTiles[r, c, t]
            self.cluster_sync(clustered)

    @cute.jit
    def cluster_sync(self, clustered: cutlass.Constexpr):
        if cutlass.const_expr(clustered):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()


class DescriptorDump:
    """Write the tensor map that `TmaLoad` would use for a tensor (as much of its 128
    bytes as cute.nvgpu.cpasync.copy_tensormap copies: the first 64 in CuTe DSL 4.8)."""

    def __init__(self, dtype, config: Config):
        self.dtype, self.cfg = dtype, config

    @cute.jit
    def __call__(
        self,
        src_ptr: cute.Pointer,
        out_ptr: cute.Pointer,
        rows: cutlass.Int32,
        cols: cutlass.Int32,
        ld: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        mSrc = _matrix(src_ptr, rows, cols, ld, self.dtype)
        tma, _ = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(),
            mSrc,
            box_layout(self.dtype, self.cfg),
            (self.cfg.box_rows, self.cfg.box_cols),
        )
        self.kernel(tma, out_ptr).launch(grid=[1, 1, 1], block=[32, 1, 1], stream=stream)

    @cute.kernel
    def kernel(self, tma: cute.CopyAtom, out_ptr: cute.Pointer):
        with cute.arch.elect_one():
            cute.nvgpu.cpasync.copy_tensormap(tma, out_ptr)


# ------------------------------------------------------------------ Python surface

KERNELS = ("load", "boxes", "physical", "store", "multicast", "descriptor")


def _signature(arch: str, kernel: str, dtype: torch.dtype, config):
    cdt = cutlass_dtype(dtype)
    p = gmem_pointer(None, dtype)
    i = cutlass.Int32(64)
    stream = fake_stream()
    if kernel in ("load", "boxes", "physical"):
        return (
            TmaLoad(cdt, config, "copy" if kernel == "load" else kernel),
            p,
            p,
            i,
            i,
            i,
            i,
            stream,
        )
    if kernel == "store":
        return (TmaStore(cdt, config), p, p, i, i, i, i, stream)
    if kernel in ("multicast", "multicast_bench"):
        multicast = TmaMulticast(cdt, config, write_out=kernel == "multicast")
        check_smem(f"tma.{kernel}", multicast.smem_bytes, arch)
        return (multicast, p, p, cutlass.Int32(1), cutlass.Int32(1), stream)
    if kernel == "descriptor":
        out = gmem_pointer(None, torch.uint8, align_bytes=128)
        return (DescriptorDump(cdt, config), p, out, i, i, i, stream)
    raise ValueError(f"unknown kernel {kernel!r}; one of {KERNELS}")


COMPILER = Compiler("tma", NEEDS, _signature)


def _default_config(kernel: str):
    return MulticastConfig() if kernel.startswith("multicast") else Config()


def compile(
    kernel: str = "load",
    dtype: torch.dtype = torch.bfloat16,
    config=None,
    device: torch.device | None = None,
):
    """The launchable kernel for this machine's GPU (compiled once per kernel/dtype/config)."""
    return COMPILER.compile(kernel, dtype, config or _default_config(kernel), device=device)


def artifacts(
    arch: str = "sm_90a", kernel: str = "load", dtype: torch.dtype = torch.bfloat16, config=None
):
    """PTX and cubin for `arch`, compiled here without a GPU."""
    return COMPILER.artifacts(arch, kernel, dtype, config or _default_config(kernel))


def _require(t) -> None:
    require(NEEDS, "tma", t.device if isinstance(t, torch.Tensor) and t.is_cuda else None)


def _check_matrix(t: torch.Tensor, name: str, dtypes=DTYPES) -> None:
    check_tensor(t, name, dtypes=dtypes, ndim=2)
    row_bytes = t.stride(0) * t.element_size()
    if t.shape[0] > 1 and row_bytes % 16:
        raise KernelInputError(
            f"{name}'s rows are {row_bytes} bytes apart; a tensor map needs "
            "row strides that are multiples of 16 bytes"
        )
    if t.shape[1] * t.element_size() % 16:
        raise KernelInputError(
            f"{name} has {t.shape[1]} columns; rows of 16-byte multiples "
            f"({16 // t.element_size()} elements) are required"
        )
    if max(t.shape) >= 2**31:
        raise KernelInputError(f"{name} is too large for 32-bit indexing")


def _ld(t: torch.Tensor) -> int:
    return t.stride(0) if t.shape[0] > 1 else t.shape[1]


def _launch_pair(kernel: str, src: torch.Tensor, dst: torch.Tensor, config: Config) -> None:
    fn = compile(kernel, src.dtype, config, src.device)
    fn(
        gmem_pointer(src, src.dtype),
        gmem_pointer(dst, src.dtype),
        cutlass.Int32(src.shape[0]),
        cutlass.Int32(src.shape[1]),
        cutlass.Int32(_ld(src)),
        cutlass.Int32(_ld(dst)),
        current_stream(),
    )


def tiles(shape: tuple[int, int], config: Config = Config()) -> tuple[int, int]:
    """How many boxes cover a (rows, cols) tensor: (down, across)."""
    return (-(-shape[0] // config.box_rows), -(-shape[1] // config.box_cols))


def _copy(kernel: str, x: torch.Tensor, out: torch.Tensor | None, config: Config) -> torch.Tensor:
    """out = x through shared memory with the `kernel` ("load" or "store") variant."""
    _require(x)
    _check_matrix(x, "x")
    config.check(x.element_size())
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    _check_matrix(out, "out", (x.dtype,))
    if out.shape != x.shape or out.device != x.device:
        raise KernelInputError("out must have x's shape and device")
    if x.numel():
        _launch_pair(kernel, x, out, config)
    return out


def load(
    x: torch.Tensor, out: torch.Tensor | None = None, config: Config = Config()
) -> torch.Tensor:
    """out = x, moved global -> shared by TMA and shared -> global by plain stores."""
    return _copy("load", x, out, config)


def boxes(x: torch.Tensor, config: Config = Config(), physical: bool = False) -> torch.Tensor:
    """Every box exactly as it landed in shared memory, out-of-bounds fill included:
    a (down, across, box_rows, box_cols) tensor. physical=True: the raw bytes in
    address order (the swizzle made visible)."""
    _require(x)
    _check_matrix(x, "x")
    config.check(x.element_size())
    down, across = tiles(tuple(x.shape), config)
    mosaic = torch.empty(
        down * config.box_rows, across * config.box_cols, dtype=x.dtype, device=x.device
    )
    if x.numel():
        _launch_pair("physical" if physical else "boxes", x, mosaic, config)
    return (
        mosaic.view(down, config.box_rows, across, config.box_cols).permute(0, 2, 1, 3).contiguous()
    )


def store(
    x: torch.Tensor, out: torch.Tensor | None = None, config: Config = Config()
) -> torch.Tensor:
    """out = x, moved global -> shared by plain loads and shared -> global by TMA."""
    return _copy("store", x, out, config)


def multicast(
    tiles_src: torch.Tensor,
    config: MulticastConfig = MulticastConfig(),
    clusters: int = 1,
    rounds: int = 1,
) -> torch.Tensor:
    """What every CTA received: a (clusters * cluster, tiles, box_rows, box_cols) tensor
    that must equal `tiles_src` (tiles, box_rows, box_cols) in every CTA's slot."""
    _require(tiles_src)
    box = config.box
    check_tensor(tiles_src, "tiles_src", dtypes=DTYPES, ndim=3)
    box.check(tiles_src.element_size())
    if tuple(tiles_src.shape) != (config.tiles, box.box_rows, box.box_cols):
        raise KernelInputError(
            f"tiles_src must be ({config.tiles}, {box.box_rows}, "
            f"{box.box_cols}), got {tuple(tiles_src.shape)}"
        )
    if not tiles_src.is_contiguous():
        raise KernelInputError("tiles_src must be contiguous")
    if clusters < 1 or rounds < 1:
        raise KernelInputError("clusters and rounds must be positive")
    ctas = clusters * config.cluster
    out = torch.empty(ctas, *tiles_src.shape, dtype=tiles_src.dtype, device=tiles_src.device)
    fn = compile("multicast", tiles_src.dtype, config, tiles_src.device)
    fn(
        gmem_pointer(tiles_src, tiles_src.dtype),
        gmem_pointer(out, tiles_src.dtype),
        cutlass.Int32(clusters),
        cutlass.Int32(rounds),
        current_stream(),
    )
    return out


def multicast_launcher(
    tiles_src: torch.Tensor, config: MulticastConfig, clusters: int, rounds: int
):
    """A zero-argument launch of the benchmark variant (no write-out), for timing."""
    _require(tiles_src)
    fn = compile("multicast_bench", tiles_src.dtype, config, tiles_src.device)
    args = (
        gmem_pointer(tiles_src, tiles_src.dtype),
        gmem_pointer(tiles_src, tiles_src.dtype),
        cutlass.Int32(clusters),
        cutlass.Int32(rounds),
    )
    return lambda: fn(*args, current_stream())


DESCRIPTOR_COPIED = 64  # bytes of the 128-byte map that copy_tensormap writes out


def descriptor(x: torch.Tensor, config: Config = Config()) -> bytes:
    """The tensor map CuTe encodes for loading boxes of `x`: its first
    DESCRIPTOR_COPIED bytes (what copy_tensormap copies out of the kernel parameter)."""
    _require(x)
    _check_matrix(x, "x")
    config.check(x.element_size())
    out = torch.zeros(128, dtype=torch.uint8, device=x.device)
    fn = compile("descriptor", x.dtype, config, x.device)
    fn(
        gmem_pointer(x, x.dtype),
        gmem_pointer(out, torch.uint8, 128),
        cutlass.Int32(x.shape[0]),
        cutlass.Int32(x.shape[1]),
        cutlass.Int32(_ld(x)),
        current_stream(),
    )
    torch.cuda.synchronize()
    return bytes(out.cpu().tolist())[:DESCRIPTOR_COPIED]


def _self_test() -> int:
    """Loads and stores copy ragged tensors exactly; multicast delivers every tile to every
    CTA of a cluster; its time against separate loads."""
    from . import selftest

    if not selftest.runnable_here(NEEDS, "tma"):
        selftest.show_artifacts(artifacts())
        return 0
    ok = True
    for dtype in (torch.bfloat16, torch.float32):
        for shape in ((64, 64), (100, 72), (513, 1032)):
            x = torch.randn(*shape, device="cuda").to(dtype)
            cfg = Config(box_cols=128 // x.element_size())
            for name, fn in (("load", load), ("store", store)):
                out = fn(x, torch.full_like(x, float("nan")), cfg)
                torch.cuda.synchronize()
                ok &= selftest.verdict(f"{name} {str(dtype)[6:]} {shape}", out, x, dtype)
    for cluster in (2, 4):
        cfg = MulticastConfig(cluster=cluster)
        src = torch.randn(cfg.tiles, cfg.box.box_rows, cfg.box.box_cols, device="cuda")
        src = src.to(torch.bfloat16)
        got = multicast(src, cfg, clusters=4)
        torch.cuda.synchronize()
        ok &= selftest.verdict(
            f"multicast to {cluster} CTAs", got, src.expand_as(got), torch.bfloat16
        )
        sep = MulticastConfig(cluster=cluster, multicast=False)
        t = selftest.paired_rounds(
            {
                "separate": lambda i: multicast_launcher(src, sep, 132 // cluster, 64)(),
                "multicast": lambda i: multicast_launcher(src, cfg, 132 // cluster, 64)(),
            },
            rounds=7,
            reps=10,
        )
        print(
            f"  cluster of {cluster}: multicast runs at "
            f"{selftest.ratio_summary(t['separate'], t['multicast'])} of separate loads' rate"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_self_test())
