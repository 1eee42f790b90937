"""Notebook 16's kernel: block-scaled MMA -- MXFP8 and NVFP4 with scale factors in TMEM.

C[M,N] = (SFA . A)[M,K] . (SFB . B)[N,K]^T: notebook 14's kernel (kernels/tcgen05_gemm.py, one
CTA per 128 x tile_n tile of C, warps 0-3 epilogue, warp 4 TMA, warp 5 MMA) with one idea
added: every `vec` consecutive K-elements of a row of A (and of B) share one scale factor
(SF), and the tensor core multiplies the SFs in itself (`tcgen05.mma ... .block_scale`).

    KINDS       A/B         SF                  vec   MMA (K per instruction)
    "mxfp8"     e4m3        ue8m0 (2^e)         32    kind::mxf8f6f4, scale_vec::1X (K 32)
    "nvfp4"     e2m1 (fp4)  e4m3                16    kind::mxf4nvf4, scale_vec::4X (K 64)
    "mxfp4"     e2m1 (fp4)  ue8m0               32    kind::mxf4nvf4, scale_vec::2X (K 64)

The SFs travel like A and B: a TMA copy per stage brings this tile's SFs of the k-tile into
shared memory (in the 128 x 4 "blocked" layout the host prepares, `to_blocked`); the MMA
warp copies them to tensor memory (`tcgen05.cp` 4x32x128b with warpx4 replication) and
points each MMA at them (`tiled_mma.set(Field.SFA / SFB, ...)`). A tcgen05.cp and the
tcgen05.mma issued after it by the same thread execute in that order (PTX ISA, pipelined
tcgen05 instructions), and so, in the ISA's later revisions, do an MMA's reads of its SFs
and a later copy's writes: one TMEM slot for SFs serves every k-tile, as in NVIDIA's tutorial.

TMEM holds the 128 x tile_n fp32 accumulator, then SFA's columns, then SFB's.
A k-tile is one 128-byte swizzle row of A and B (128 e4m3 or 256 e2m1), 4 MMAs.

Ragged shapes: TMA fills out-of-bounds rows of A and B with zeros and clips the store of C;
the blocked SFs are padded to 128 rows and 4 SF columns by the host. K must be a multiple of
32 (whole SF blocks and 16-byte rows of A and B), N a multiple of 16 bytes of C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blockscaled_layout as blockscaled
import torch
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.memory import SmemAllocator

from . import host
from .gemm_host import COPY_BYTES, ExtraOperands, GemmHost, GemmTypes, Operands, gemm_tensors
from .gemm_host import mma_k
from .host import KernelInputError, check_tensor, dtype_name
from .sm100_parts import EPI_COLS, MMA_WARP, THREADS_PER_CTA, TMA_WARP
from .sm100_parts import TileShape, accumulator_layout
from .sm100_parts import allocate_operand_smem, cta_footprint, cta_stage_bytes
from .sm100_parts import make_accumulator_handoff, make_tmem_allocator
from .sm100_parts import make_epilogue_tma, make_operand_tma, make_stage_ring
from .sm100_parts import partition_operands, tmem_columns_for
from .tcgen05_gemm import Tcgen05Gemm

NEEDS = "sm_100a"
FP4 = torch.float4_e2m1fn_x2  # two e2m1 values a byte: A (M, K//2), B (N, K//2)
C_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
SF_ROWS, SF_COLS = 128, 4  # one block of the "blocked" SF layout: 128 rows x 4 SFs


@dataclass(frozen=True)
class Kind:
    """One block-scaled format: the element type of A and B, of their SFs, and how many
    K-elements share one SF."""

    ab: torch.dtype
    sf: torch.dtype
    vec: int

    @property
    def ab_bits(self) -> int:
        return 4 if self.ab == FP4 else 8

    def ab_cols(self, k: int) -> int:
        """Columns of A's (and B's) torch tensor for K elements (fp4: two a byte)."""
        return k * self.ab_bits // 8


KINDS = {
    "mxfp8": Kind(torch.float8_e4m3fn, torch.float8_e8m0fnu, 32),
    "nvfp4": Kind(FP4, torch.float8_e4m3fn, 16),
    "mxfp4": Kind(FP4, torch.float8_e8m0fnu, 32),
}


@dataclass(frozen=True)
class Config:
    kind: str = "mxfp8"  # a key of KINDS
    tile_n: int = 128  # columns of C per CTA: 128 or 256
    stages: int = 4  # depth of the shared-memory ring of A/B/SFA/SFB k-tiles

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {tuple(KINDS)}, got {self.kind!r}")
        if self.tile_n not in (128, 256):
            raise ValueError("tile_n must be 128 or 256")
        if not 2 <= self.stages <= 8:
            raise ValueError("stages must be in [2, 8]")

    @property
    def format(self) -> Kind:
        return KINDS[self.kind]


def sf_bytes_per_stage(tile: TileShape, vec: int) -> int:
    """Bytes of SFA and SFB one k-tile brings: one byte per `vec` K-elements of each row
    (B's rows rounded up to a whole 128-row block)."""
    rows_b = -(-tile.n // SF_ROWS) * SF_ROWS
    return (tile.cta_m + rows_b) * (tile.k // vec)


def sf_tmem_columns(tile: TileShape, vec: int) -> int:
    """TMEM columns one k-tile's SFs take: 4 per 128 x 4 block (32 lanes x 16 bytes, the same
    in every lane partition), the blocks of SFA's 128 rows and of SFB's n rows."""
    blocks_k = tile.k // vec // SF_COLS
    return SF_COLS * blocks_k * (tile.cta_m // SF_ROWS + -(-tile.n // SF_ROWS))


def make_blockscaled_mma(kind: Kind, ab, sf, tile: TileShape) -> cute.TiledMma:
    """One block-scaled tcgen05.mma atom (128 x n x K), A and B (of CuTe type `ab`, SFs of
    `sf`) K-major from shared memory: K = 32 bytes of A, 32 e4m3 (kind::mxf8f6f4) or 64 e2m1
    (kind::mxf4nvf4)."""
    shape = (tile.mma_m, tile.n, mma_k(kind.ab_bits))
    one, smem = tcgen05.CtaGroup.ONE, tcgen05.OperandSource.SMEM
    if kind.ab_bits == 8:
        k_major = cute.nvgpu.OperandMajorMode.K
        op = tcgen05.MmaMXF8F6F4Op(ab, ab, shape, one, smem, k_major, k_major)
    elif kind.vec == 32:
        op = tcgen05.MmaMXF4Op(shape, one, smem)
    else:
        op = tcgen05.MmaMXF4NVF4Op(sf, shape, one, smem)
    return cute.make_tiled_mma(op)


def sf_tensor(sf_ptr: cute.Pointer, rows, k, vec: int) -> cute.Tensor:
    """The blocked SFs of A (rows = M) or B (rows = N) as a logical (rows, K) tensor, one SF
    broadcast over `vec` K-elements (stride 0): ((32, 4, rows/128), (vec, 4, K/(4 vec))),
    i.e. 128 x 4 SF blocks of 512 bytes, K-blocks of a row-block adjacent (`to_blocked`)."""
    padded_rows = (rows + SF_ROWS - 1) // SF_ROWS * SF_ROWS
    padded_k = (k + SF_COLS * vec - 1) // (SF_COLS * vec) * (SF_COLS * vec)
    atom = blockscaled.BlockScaledBasicChunk(vec).layout  # ((32, 4), (vec, 4)): one block
    return cute.make_tensor(sf_ptr, cute.tile_to_shape(atom, (padded_rows, padded_k), (2, 1)))


def make_sf_tma(sfa, sfb, tiled_mma, tile: TileShape, vec: int, stages: int):
    """Staged smem layouts of SFA and SFB and the TMA atoms that fill them. An SF block is
    copied as 16-bit elements (internal_type Int16, two SFs each), as NVIDIA's block-scaled
    examples do: a choice of the copy (8-bit A and B travel by TMA as 8-bit integers)."""
    # region sf-smem
    sfa_smem = blockscaled.make_smem_layout_sfa(tiled_mma, tile.mma_tiler, vec, stages)
    sfb_smem = blockscaled.make_smem_layout_sfb(tiled_mma, tile.mma_tiler, vec, stages)
    # endregion sf-smem
    op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    tma_sfa = cute.nvgpu.make_tiled_tma_atom_A(
        op, sfa, sfa_smem, tile.mma_tiler, tiled_mma, internal_type=cutlass.Int16
    )
    tma_sfb = cute.nvgpu.make_tiled_tma_atom_B(
        op, sfb, sfb_smem, tile.mma_tiler, tiled_mma, internal_type=cutlass.Int16
    )
    return tma_sfa, tma_sfb


def sf_tmem_tensors(tiled_mma, tile: TileShape, vec: int, sf_dtype, accumulators, sSFA, sSFB):
    """SFA's and SFB's TMEM tensors, placed after the accumulator's columns: each
    (MMA, MMA_MN, MMA_K), one k-tile's SFs, laid out as the MMA reads them."""
    # region sf-layouts
    sfa_layout = blockscaled.make_tmem_layout_sfa(
        tiled_mma, tile.mma_tiler, vec, cute.slice_(sSFA.layout, (None, None, None, 0))
    )
    sfb_layout = blockscaled.make_tmem_layout_sfb(
        tiled_mma, tile.mma_tiler, vec, cute.slice_(sSFB.layout, (None, None, None, 0))
    )
    acc_cols = tcgen05.find_tmem_tensor_col_offset(accumulators)
    sfa_ptr = cute.recast_ptr(accumulators.iterator + acc_cols, dtype=sf_dtype)
    tCtSFA = cute.make_tensor(sfa_ptr, sfa_layout)
    sfb_ptr = cute.recast_ptr(
        accumulators.iterator + acc_cols + tcgen05.find_tmem_tensor_col_offset(tCtSFA),
        dtype=sf_dtype,
    )
    tCtSFB = cute.make_tensor(sfb_ptr, sfb_layout)
    # endregion sf-layouts
    return tCtSFA, tCtSFB


class SfCopy(NamedTuple):
    """One operand's SF copy shared -> TMEM (tcgen05.cp) and the MMA's view of its TMEM."""

    s2t: cute.TiledCopy  # tcgen05.cp 4x32x128b, warpx4
    smem: cute.Tensor  # ((ATOM_V, REST_V), Rest_Tiler, MMA_MN, MMA_K, STAGE): descriptors
    tmem: cute.Tensor  # ((ATOM_V, REST_V), Rest_Tiler, MMA_MN, MMA_K): where the copy lands
    mma: cute.Tensor  # (MMA, MMA_MN, MMA_K): what each MMA points Field.SFA/SFB at


def make_sf_copy(sf_dtype, sSF: cute.Tensor, tCtSF: cute.Tensor) -> SfCopy:
    """Partition one operand's staged SFs in smem and their TMEM slot for tcgen05.cp.

    4x32x128b.warpx4: each copy takes 32 rows x 16 bytes of smem and writes them to all four
    32-lane quarters of TMEM, so each quarter (each epilogue warp's lanes) holds them."""
    atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(tcgen05.CtaGroup.ONE), sf_dtype)
    tmem_compact = cute.filter_zeros(tCtSF)  # the SF broadcast over K (stride 0) dropped
    s2t = tcgen05.make_s2t_copy(atom, tmem_compact)
    thr = s2t.get_slice(0)
    smem = tcgen05.get_s2t_smem_desc_tensor(s2t, thr.partition_S(cute.filter_zeros(sSF)))
    return SfCopy(s2t, smem, thr.partition_D(tmem_compact), tCtSF)


class BlockscaledGemm(Tcgen05Gemm):
    """The kernel for one (kind, C type, Config): notebook 14's with SFs beside A and B."""

    def __init__(self, types: GemmTypes, config: Config = Config()):
        super().__init__(types, config)
        self.kind = config.format
        self.sf_dtype = host.cutlass_dtype(self.kind.sf)
        self.vec = self.kind.vec
        # the accumulator, then SFA's and SFB's columns: the next power of two
        self.tmem_columns = tmem_columns_for(self.tile.n + sf_tmem_columns(self.tile, self.vec))
        self.stage_bytes = cta_stage_bytes(self.tile) + sf_bytes_per_stage(self.tile, self.vec)
        # what the host checks against the GPU's shared memory before compiling: the ring,
        # the epilogue's staging buffers, and 1 KiB for the barriers and the alignments
        epilogue = self.epi_stages * self.tile.cta_m * EPI_COLS * self.c_dtype.width // 8
        self.smem_bytes = self.stages * self.stage_bytes + epilogue + 1024

    def footprint(self) -> dict:
        """notebook 14's footprint with the SFs added to each stage (A and B in bits: fp4)."""
        out = cta_footprint(
            self.tile, self.stages, self.acc_slots, self.epi_stages, 1, self.c_dtype.width // 8
        )
        sf = sf_bytes_per_stage(self.tile, self.vec)
        instruction_k = mma_k(self.kind.ab_bits)
        out.update(
            mma=f"{self.tile.mma_m}x{self.tile.n}x{instruction_k}",
            mma_per_k_block=self.tile.k // instruction_k,
            stage_bytes=self.stage_bytes,
            full_barrier_bytes=self.stage_bytes,
            smem_ring_bytes=self.stages * self.stage_bytes,
            sf_bytes_per_stage=sf,
            tmem_columns=self.tmem_columns,
        )
        return out

    # ------------------------------------------------------------ host
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        sfa_ptr: cute.Pointer,
        sfb_ptr: cute.Pointer,
        stream: cuda.CUstream,
    ):
        self.check_pointers(a_ptr, b_ptr, c_ptr)
        a, b, c = gemm_tensors(a_ptr, b_ptr, c_ptr, m, n, k)
        sfa = sf_tensor(sfa_ptr, m, k, self.vec)  # ((32,4,M/128), (vec,4,K/4vec))
        sfb = sf_tensor(sfb_ptr, n, k, self.vec)
        tiled_mma = make_blockscaled_mma(self.kind, self.ab_dtype, self.sf_dtype, self.tile)
        cta_layout_vmnk = cute.make_layout((1, 1, 1, 1))
        tma_a, tma_b = make_operand_tma(a, b, tiled_mma, self.tile, self.stages)
        tma_sfa, tma_sfb = make_sf_tma(sfa, sfb, tiled_mma, self.tile, self.vec, self.stages)
        epi_tile, tma_c = make_epilogue_tma(c, self.tile, self.epi_stages)
        grid = (
            (m + self.tile.cta_m - 1) // self.tile.cta_m,
            (n + self.tile.n - 1) // self.tile.n,
            1,
        )
        self.kernel(
            tiled_mma, tma_a, tma_b, tma_sfa, tma_sfb, tma_c, epi_tile, cta_layout_vmnk
        ).launch(grid=grid, block=[THREADS_PER_CTA, 1, 1], stream=stream)

    # ------------------------------------------------------------ device
    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cpasync.TmaInfo,
        tma_b: cpasync.TmaInfo,
        tma_sfa: cpasync.TmaInfo,
        tma_sfb: cpasync.TmaInfo,
        tma_c: cpasync.TmaInfo,
        epi_tile: cute.Tile,
        cta_layout_vmnk: cute.Layout,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tile_row, tile_col, _ = cute.arch.block_idx()

        @cute.struct
        class Barriers:
            ab: cute.struct.MemRange[cutlass.Int64, self.stages * 2]  # full + empty per stage
            acc: cute.struct.MemRange[cutlass.Int64, self.acc_slots * 2]
            tmem_base: cutlass.Int32

        smem = SmemAllocator()
        bars = smem.allocate(Barriers)
        if warp_idx == TMA_WARP:
            for tma in (tma_a, tma_b, tma_sfa, tma_sfb, tma_c):
                cpasync.prefetch_descriptor(tma.atom)

        # one stage = A, B, SFA and SFB of one k-tile, all on the stage's full barrier
        ring = make_stage_ring(bars.ab.data_ptr(), self.stages, self.stage_bytes, cta_layout_vmnk)
        acc_pipeline = make_accumulator_handoff(
            bars.acc.data_ptr(), self.acc_slots, cta_layout_vmnk
        )
        tmem = make_tmem_allocator(bars.tmem_base.ptr)
        pipeline.pipeline_init_arrive()
        pipeline.pipeline_init_wait()

        sA, sB, sC = allocate_operand_smem(smem, self.ab_dtype, self.c_dtype, tma_a, tma_b, tma_c)
        # (((32,4,REST_M),(vec,4,REST_K)), MMA_M, MMA_K, STAGE) and SFB's alike
        sSFA = smem.allocate_tensor(self.sf_dtype, tma_sfa.smem_layout, byte_alignment=128)
        sSFB = smem.allocate_tensor(self.sf_dtype, tma_sfb.smem_layout, byte_alignment=128)
        views = partition_operands(
            tiled_mma, self.tile, tma_a, tma_b, tma_c, sA, sB, cta_layout_vmnk, (0, 0, 0, 0)
        )
        tAgSFA, tBgSFB, tAsSFA, tBsSFB = self.partition_sfs(tiled_mma, tma_sfa, tma_sfb, sSFA, sSFB)
        acc_layout = accumulator_layout(tiled_mma, self.tile, self.acc_slots)

        tmem.allocate(self.tmem_columns)
        tmem.relinquish_alloc_permit()

        if warp_idx == TMA_WARP:
            self.tma_role(
                tma_a=tma_a,
                tma_b=tma_b,
                tma_sfa=tma_sfa,
                tma_sfb=tma_sfb,
                views=views,
                tAgSFA=tAgSFA,
                tBgSFB=tBgSFB,
                tAsSFA=tAsSFA,
                tBsSFB=tBsSFB,
                ring=ring,
                tile_row=tile_row,
                tile_col=tile_col,
            )
        if warp_idx == MMA_WARP:
            self.mma_role(
                tiled_mma=tiled_mma,
                tmem=tmem,
                acc_layout=acc_layout,
                tCrA=views.tCrA,
                tCrB=views.tCrB,
                sSFA=sSFA,
                sSFB=sSFB,
                ring=ring,
                acc_pipeline=acc_pipeline,
                k_tiles=views.k_tiles,
            )
        if warp_idx < TMA_WARP:
            self.epilogue_role(
                tidx=tidx,
                warp_idx=warp_idx,
                tmem=tmem,
                acc_layout=acc_layout,
                tma_c=tma_c,
                sC=sC,
                tCgC=views.tCgC,
                epi_tile=epi_tile,
                acc_pipeline=acc_pipeline,
                tile_row=tile_row,
                tile_col=tile_col,
            )

    def partition_sfs(self, tiled_mma, tma_sfa, tma_sfb, sSFA, sSFB):
        """TMA views of the SFs, like A's and B's: ((TMA, REST), tiles, k_tiles) in global
        memory, ((TMA, REST), STAGE) in shared (the zero-stride broadcast over K dropped)."""
        gSFA = cute.local_tile(
            tma_sfa.tma_tensor, cute.select(self.tile.mma_tiler, mode=[0, 2]), (None, None)
        )
        gSFB = cute.local_tile(
            tma_sfb.tma_tensor, cute.select(self.tile.mma_tiler, mode=[1, 2]), (None, None)
        )
        thr_mma = tiled_mma.get_slice(0)
        tCgSFA = thr_mma.partition_A(gSFA)  # (MMA, MMA_M, MMA_K, tiles_m, k_tiles)
        tCgSFB = thr_mma.partition_B(gSFB)  # (MMA, MMA_N, MMA_K, tiles_n, k_tiles)
        one = cute.make_layout(1)
        tAsSFA, tAgSFA = cpasync.tma_partition(
            tma_sfa.atom, 0, one, cute.group_modes(sSFA, 0, 3), cute.group_modes(tCgSFA, 0, 3)
        )
        tBsSFB, tBgSFB = cpasync.tma_partition(
            tma_sfb.atom, 0, one, cute.group_modes(sSFB, 0, 3), cute.group_modes(tCgSFB, 0, 3)
        )
        return (
            cute.filter_zeros(tAgSFA),
            cute.filter_zeros(tBgSFB),
            cute.filter_zeros(tAsSFA),
            cute.filter_zeros(tBsSFB),
        )

    @cute.jit
    def tma_role(
        self,
        tma_a,
        tma_b,
        tma_sfa,
        tma_sfb,
        views,
        tAgSFA,
        tBgSFB,
        tAsSFA,
        tBsSFB,
        ring,
        tile_row,
        tile_col,
    ):
        """Warp 4: each k-tile's A, B, SFA and SFB into one stage of the ring."""
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        copies = (
            (tma_a, views.tAgA[(None, tile_row, None)], views.tAsA),
            (tma_b, views.tBgB[(None, tile_col, None)], views.tBsB),
            (tma_sfa, tAgSFA[(None, tile_row, None)], tAsSFA),
            (tma_sfb, tBgSFB[(None, tile_col, None)], tBsSFB),
        )
        for k_block in cutlass.range(views.k_tiles, unroll=1):
            ring.producer_acquire(state)
            barrier = ring.producer_get_barrier(state)
            for tma, src, dst in copies:
                cute.copy(
                    tma.atom, src[(None, k_block)], dst[(None, state.index)], tma_bar_ptr=barrier
                )
            state.advance()
        ring.producer_tail(state)

    @cute.jit
    def mma_role(
        self, tiled_mma, tmem, acc_layout, tCrA, tCrB, sSFA, sSFB, ring, acc_pipeline, k_tiles
    ):
        """Warp 5: SFs to TMEM and all K-blocks into the accumulator, then hand it over."""
        tmem.wait_for_alloc()
        accumulators = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        tCtSFA, tCtSFB = sf_tmem_tensors(
            tiled_mma, self.tile, self.vec, self.sf_dtype, accumulators, sSFA, sSFB
        )
        sfa = make_sf_copy(self.sf_dtype, sSFA, tCtSFA)
        sfb = make_sf_copy(self.sf_dtype, sSFB, tCtSFB)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.acc_slots)
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        acc_pipeline.producer_acquire(acc_state)
        ab_state = self.mma_k_loop(
            tiled_mma,
            accumulators[(None, None, None, 0)],
            tCrA,
            tCrB,
            sfa,
            sfb,
            ring,
            ab_state,
            k_tiles,
        )
        acc_pipeline.producer_commit(acc_state)

    @cute.jit
    def mma_k_loop(
        self,
        tiled_mma: cute.TiledMma,
        accumulator: cute.Tensor,
        tCrA: cute.Tensor,
        tCrB: cute.Tensor,
        sfa: SfCopy,
        sfb: SfCopy,
        ring: pipeline.PipelineTmaUmma,
        state: pipeline.PipelineState,
        k_tiles: cutlass.Int32,
    ) -> pipeline.PipelineState:
        """MMA warp: per k-tile, copy its SFs shared -> TMEM, then 4 block-scaled MMAs.

        The copies and the MMAs are all asynchronous and issued by this one thread: they
        execute in issue order, so the MMAs read this k-tile's SFs, and the next k-tile's copy
        waits for them. tcgen05.commit (consumer_release) fires when both have finished
        reading the stage. (Notebook 16's kernel exercise: the learner writes this method.)
        """
        # region sf-copy-and-mma
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        for k_block in cutlass.range(k_tiles, unroll=1):
            ring.consumer_wait(state)
            stage = (None, None, None, None, state.index)
            cute.copy(sfa.s2t, sfa.smem[stage], sfa.tmem)  # tcgen05.cp
            cute.copy(sfb.s2t, sfb.smem[stage], sfb.tmem)
            for kk in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                tiled_mma.set(tcgen05.Field.SFA, sfa.mma[(None, None, kk)].iterator)
                tiled_mma.set(tcgen05.Field.SFB, sfb.mma[(None, None, kk)].iterator)
                operands = (None, None, kk, state.index)
                cute.gemm(tiled_mma, accumulator, tCrA[operands], tCrB[operands], accumulator)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            ring.consumer_release(state)
            state.advance()
        # endregion sf-copy-and-mma
        return state


# ---------------------------------------------------------------- the surface


def to_blocked(sf: torch.Tensor) -> torch.Tensor:
    """Rearrange plain scale factors (rows, K // vec) into the layout the MMA reads from TMEM,
    as one flat tensor: cuBLAS's and torch._scaled_mm's "blocked" layout for MX/NV formats.

    Rows are padded to a multiple of 128 and SF columns to a multiple of 4 (with zeros); each
    128 x 4 block is stored as 512 contiguous bytes, blocks row-block-major (the K-blocks of
    128 rows adjacent). Inside a block, the SF of row r = 32 i + j (i < 4, j < 32), column c is
    at byte 16 j + 4 i + c: one 16-byte line per row j holds the 4 SFs of rows j, 32+j, 64+j
    and 96+j -- a tcgen05.cp 4x32x128b copies 32 such lines, one to each TMEM lane of a quarter.
    """
    # region sf-blocked
    rows, cols = sf.shape
    blocks_r, blocks_c = -(-rows // SF_ROWS), -(-cols // SF_COLS)
    padded = torch.zeros(
        blocks_r * SF_ROWS, blocks_c * SF_COLS, dtype=torch.uint8, device=sf.device
    )
    padded[:rows, :cols] = sf.view(torch.uint8)  # as bytes: e8m0 has no zero to pad with
    # (blocks_r, 4, 32, blocks_c, 4) -> (blocks_r, blocks_c, 32, 4, 4)
    tiles = padded.view(blocks_r, 4, 32, blocks_c, SF_COLS).permute(0, 3, 2, 1, 4)
    return tiles.contiguous().flatten().view(sf.dtype)
    # endregion sf-blocked


def from_blocked(blocked: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """to_blocked's inverse: the plain (rows, cols) SFs."""
    blocks_r, blocks_c = -(-rows // SF_ROWS), -(-cols // SF_COLS)
    tiles = blocked.view(torch.uint8).view(blocks_r, blocks_c, 32, 4, SF_COLS)
    plain = tiles.permute(0, 3, 2, 1, 4).reshape(blocks_r * SF_ROWS, blocks_c * SF_COLS)
    return plain[:rows, :cols].contiguous().view(blocked.dtype)


OPERANDS = Operands(ab_dtypes=(torch.float8_e4m3fn, FP4), c_dtypes=C_DTYPES)


def check_scale_factors(a: torch.Tensor, b: torch.Tensor, sfs: tuple, config: Config) -> None:
    """Refuse, before anything launches, A and B of another kind than `config`'s, a K the
    SF blocks do not divide, and SFs of the wrong type, shape or device (A, B and C were
    checked as for every GEMM)."""
    kind = config.format
    for t, name in ((a, "a"), (b, "b")):
        check_tensor(t, name, dtypes=(kind.ab,), ndim=2, align_bytes=COPY_BYTES)
    m, n, k = a.shape[0], b.shape[0], OPERANDS.k_elements(a)
    if k % 32:
        raise KernelInputError(
            f"K = {k} is not a multiple of 32: {config.kind} needs whole blocks of {kind.vec} "
            f"SF-sharing elements and 16-byte rows of A and B (TMA). Pad K with zeros"
        )
    for t, name, rows in zip(sfs, ("a_sf", "b_sf"), (m, n)):
        check_tensor(t, name, dtypes=(kind.sf,), ndim=2, align_bytes=1, contiguous_dim=None)
        if tuple(t.shape) != (rows, k // kind.vec):
            raise KernelInputError(
                f"{name} must be ({rows}, {k // kind.vec}): one {dtype_name(kind.sf)} SF per "
                f"{kind.vec} K-elements of each row, got {tuple(t.shape)}"
            )
        if t.device != a.device:
            raise KernelInputError(f"{name} is on {t.device}, a on {a.device}: use one device")


SCALE_FACTORS = ExtraOperands(
    ("a_sf", "b_sf"),
    dtypes=lambda config: (config.format.sf, config.format.sf),
    check=check_scale_factors,
    prepare=lambda sfs, config: tuple(to_blocked(sf) for sf in sfs),  # the layout TMA reads
    align=COPY_BYTES,
)

GEMM = GemmHost(
    "blockscaled_gemm",
    NEEDS,
    lambda types, config, arch, a_major, b_major: BlockscaledGemm(types, config),
    Config,
    OPERANDS,
    extra_operands=SCALE_FACTORS,
)


def compile(config: Config | None = None, *, out_dtype: torch.dtype = torch.bfloat16, device=None):
    """The launchable kernel of `config` for this machine's GPU (compiled once)."""
    config = config or Config()
    return GEMM.compile(config.format.ab, config, out_dtype=out_dtype, device=device)


def artifacts(
    arch: str | None = None,
    config: Config | None = None,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
):
    """PTX, cubin and SASS of `config` for `arch` (default sm_100a), compiled without a GPU."""
    config = config or Config()
    return GEMM.artifacts(arch, config.format.ab, config, out_dtype=out_dtype)


def footprint(config: Config | None = None, *, out_dtype: torch.dtype = torch.bfloat16) -> dict:
    config = config or Config()
    return GEMM.footprint(config.format.ab, config, out_dtype=out_dtype)


def run(a, b, a_sf, b_sf, out=None, config: Config | None = None, *, out_dtype=None):
    """C = (A scaled by a_sf) . (B scaled by b_sf)^T on a Blackwell GPU, C in bf16 by default.

    a (M, K) and b (N, K), K-major: float8_e4m3fn ("mxfp8"), or float4_e2m1fn_x2 of shape
    (M, K//2) ("nvfp4", "mxfp4"); a_sf (M, K//vec), b_sf (N, K//vec) plain SFs
    (float8_e8m0fnu for mx kinds, float8_e4m3fn for nvfp4), rearranged here by to_blocked.
    """
    config = config or Config()
    return GEMM.run(a, b, out, config, out_dtype=out_dtype, tensors=(a_sf, b_sf))
