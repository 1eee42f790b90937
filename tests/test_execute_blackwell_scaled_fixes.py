"""Unit tests of the executor fixes NVIDIA's Blackwell block-scaled and blockwise GEMMs
needed (nvfp4_gemm_1, dense_blockscaled_gemm_persistent_amax / _prefetch, blockwise_gemm;
tests/test_nvidia_blackwell_scaled_examples.py runs the examples themselves with a full
CUTLASS checkout). These run in CI, with no example at hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from course.execute import api, block_scale, blackwell, host, oracle, scaled_mma, tcgen05, tma
from course.execute import tensor as tensors
from course.execute.hazards import Hazard, Unmodelled
from course.execute.numeric import by_name
from course.execute.static_layout import Layout

TC = api.MODULES["cutlass.cute.nvgpu.tcgen05"]
K_MAJOR = api.MODULES["cutlass.cute.nvgpu"].OperandMajorMode.K
E4M3, F16, F32 = by_name("Float8E4M3FN"), by_name("Float16"), by_name("Float32")


# ---------------------------------------------------------------- filter_zeros of TMA views


def _sf_view(rank: int | None) -> tma.TmaView:
    """A TMA partition of an SF-like box: ((4, 2), 3):((0, 1), 2) -- each of the box's two
    offsets 4 times (an SF over 4 K-elements) -- whole, or CTA `rank`'s half of a 2-CTA
    multicast (its offset's four elements, as tma_partition picks them: address order)."""
    t = tensors.Tensor(0, Layout(((4, 2), 3), ((0, 1), 2)))
    select = np.arange(8) if rank is None else np.arange(4 * rank, 4 * rank + 4)
    return tma.TmaView(t, select, 8)


@pytest.mark.parametrize("rank", [None, 0, 1])
def test_filter_zeros_of_a_tma_partition_keeps_this_ctas_offsets(rank):
    """cute.filter_zeros of a multicast TMA partition was unmodelled (nvfp4_gemm_1's SFB):
    the box shrinks to its distinct offsets, and the CTA keeps the offsets it had -- CuTe's
    multicast share is of the TMA's vector, which names each offset once."""
    out = api.MODULES["cutlass.cute"].filter_zeros(_sf_view(rank))
    assert isinstance(out, tma.TmaView) and out.box == 2
    kept = np.asarray(out.tensor.layout.offsets)[: out.box][out.select]
    assert kept.tolist() == ([0, 1] if rank is None else [rank])


def test_filter_zeros_of_a_share_that_splits_an_offset_is_refused():
    """A share holding part of one offset's elements has no meaning once they are one."""
    view = _sf_view(0)
    split = tma.TmaView(view.tensor, np.arange(2, 6), 8)
    with pytest.raises(Unmodelled, match="splitting an offset"):
        api.MODULES["cutlass.cute"].filter_zeros(split)


def test_a_recipe_names_its_cta_group():
    """tcgen05.cp and the TMA atoms of a CTA pair are told by CtaGroup.TWO in their op."""
    assert TC.Cp4x32x128bOp(TC.CtaGroup.TWO).names("CtaGroup.TWO")
    assert not TC.Cp4x32x128bOp(TC.CtaGroup.ONE).names("CtaGroup.TWO")


# ---------------------------------------------------------------- the CTA pair's block-scaled MMA


def _pair_mma(sfb_in_peer: bool):
    """A cta_group::2 kind::mxf8f6f4 MMA (M 256, N 128, K 32) over two stand-in CTAs, each
    TMEM holding its own 128 rows' SFA at column 0 and, unless told otherwise, SFB of all
    128 columns at column 4 (what the kernels' multicast puts in both)."""
    g = np.random.default_rng(7)
    a = g.choice([-1.0, -0.5, 0.5, 1.0, 2.0], size=(256, 32))
    b = g.choice([-1.0, 0.5, 1.0, 1.5], size=(128, 32))
    sfa = g.integers(125, 130, size=(256, 1)).astype(np.uint8)  # ue8m0: 2^-2 .. 2^2
    sfb = g.integers(125, 130, size=(128, 1)).astype(np.uint8)
    ctas = [SimpleNamespace(block=(i, 0, 0)) for i in range(2)]
    for i, cta in enumerate(ctas):
        space = tcgen05.tmem.of_cta(cta)
        tmem = scaled_mma._tmem_bytes(space)
        for column, codes in ((0, sfa[128 * i : 128 * (i + 1)]), (4, sfb)):
            if column == 4 and i == 1 and not sfb_in_peer:
                continue
            lines = np.zeros((4, 32, 16), np.uint8)  # 128 rows: lane r % 32, column r // 32
            lines[np.arange(128) // 32, np.arange(128) % 32, 0] = codes[:, 0]
            for c in range(4):
                block_scale.tcgen05_cp_32x128b_warpx4(tmem, column + c, lines[c])
            space.written[:, column : column + 4] = True
    mma = scaled_mma.BLOCK_SCALED[0](
        ctas, None, None, np.zeros((128, 128), np.int64), E4M3, False, [], None, None,
        sfa=block_scale.SfAddress(0), sfb=block_scale.SfAddress(4),
        scale=block_scale.MXF8F6F4_1X, sf_type="ue8m0",
    )  # fmt: skip
    want = (a * 2.0 ** (sfa.astype(float) - 127)) @ (b * 2.0 ** (sfb.astype(float) - 127)).T
    return mma, a, b, want


def test_a_cta_pairs_block_scaled_mma_reads_each_ctas_own_tmem():
    """With cta_group::2 each CTA's rows of D use the SFA in its own TMEM and the SFB in
    its own TMEM (all N columns: NVIDIA's tutorial multicasts SFB to both CTAs)."""
    mma, a, b, want = _pair_mma(sfb_in_peer=True)
    assert np.array_equal(mma.product(a, b), want.astype(np.float32))


def test_a_cta_pair_whose_peer_lacks_sfb_is_named():
    mma, a, b, _ = _pair_mma(sfb_in_peer=False)
    mma.site = SimpleNamespace(describe=lambda: "kernel line 1")
    with pytest.raises(Hazard, match=r"SFB from TMEM columns 4-7 of CTA \(1, 0, 0\)"):
        mma.product(a, b)


# ---------------------------------------------------------------- kind::f8f6f4


def test_make_trivial_tiled_mma_of_float8_is_cutes_f8f6f4_mma():
    """Float8 A/B make CuTe DSL's kind::f8f6f4 MMA, K = 32 per instruction (it was
    unmodelled: blockwise_gemm's FP8 MMA)."""
    mma = blackwell.make_trivial_tiled_mma(
        E4M3, E4M3, K_MAJOR, K_MAJOR, F32, TC.CtaGroup.ONE, (128, 128)
    )
    assert isinstance(mma, tcgen05.TiledMma) and mma.op.name == "MmaF8F6F4Op"
    assert oracle.attribute(mma.recipe, "shape_mnk") == (128, 128, 32)


def test_a_tcgen05_mma_of_mixed_types_or_an_f16_accumulator_is_refused():
    """The executor decodes A and B as one type into an fp32 accumulator: anything else is
    said to be unmodelled, never computed wrong."""
    e5m2 = by_name("Float8E5M2")
    ok = blackwell.make_trivial_tiled_mma(E4M3, e5m2, K_MAJOR, K_MAJOR, F32, TC.CtaGroup.ONE,
                                          (128, 128))  # fmt: skip
    with pytest.raises(Unmodelled, match="mixed operand types"):
        tcgen05._check_types(ok, E4M3, e5m2)
    f16_acc = blackwell.make_trivial_tiled_mma(E4M3, E4M3, K_MAJOR, K_MAJOR, F16,
                                               TC.CtaGroup.ONE, (128, 128))  # fmt: skip
    with pytest.raises(Unmodelled, match="Float16 accumulator"):
        tcgen05._check_types(f16_acc, E4M3, E4M3)


# ---------------------------------------------------------------- host: fp4 tensors


def test_convert_into_float4_packs_two_codes_a_byte_low_first():
    """cutlass.torch makes a Float4E2M1FN tensor as a uint8 tensor of the same shape and
    fills it with cute.testing.convert (the amax GEMM's A and B): element offset i is the
    low (even i) or high nibble of byte i // 2, as the kernel's loads read it."""
    import cutlass
    from cutlass.cute.runtime import from_dlpack

    from course.execute import cuda_on_cpu

    values = torch.tensor([[0.5, -1.0, 6.0], [0.0, -6.0, 1.5]])  # e2m1 codes 1, 10, 7; 0, 15, 3
    storage = torch.zeros(2, 3, dtype=torch.uint8)
    dst = from_dlpack(storage)
    dst.element_type = cutlass.Float4E2M1FN
    cuda_on_cpu._convert(from_dlpack(values), dst)
    # row-major offsets 0..5: codes 1, 10, 7, 0, 15, 3 -> bytes 0xA1, 0x07, 0x3F
    assert storage.reshape(-1)[:3].tolist() == [0xA1, 0x07, 0x3F]
    with pytest.raises(Unmodelled, match="not an e2m1 value"):
        cuda_on_cpu._convert(from_dlpack(values + 0.25), dst)


# ---------------------------------------------------------------- kernel-side names


def test_amax_through_the_math_dialect_redux_and_atomic_fmax():
    """The amax GEMM's epilogue: |values| by `math.absf(ssa.ir_value())` (the MLIR math
    dialect), wrapped back in a TensorSSA, reduced per thread, then over the warp by
    warp_redux_sync(kind="fmax") and into global memory by atomic_fmax over two CTAs."""
    import cutlass
    import cutlass.cute as cute
    from cutlass._mlir.dialects import math

    @cute.kernel
    def amax(x: cute.Tensor, out: cute.Tensor, lanes: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        mine = cute.make_tensor(x.iterator + (bx * 32 + tx) * 4, cute.make_layout(4))
        values = mine.load()
        magnitude = type(values)(math.absf(values.ir_value()), values.shape, values.dtype)
        own = magnitude.reduce(cute.ReductionOp.MAX, cutlass.Float32(0.0), 0)
        warp = cute.arch.warp_redux_sync(value=own, kind="fmax", nan=True)
        lanes[bx * 32 + tx] = warp
        if tx == 0:
            cute.arch.atomic_fmax(out.iterator, warp, sign_bit=False)

    @cute.jit
    def launch(x: cute.Tensor, out: cute.Tensor, lanes: cute.Tensor):
        amax(x, out, lanes).launch(grid=[2, 1, 1], block=[32, 1, 1])

    x = torch.randn(2 * 32 * 4, generator=torch.Generator().manual_seed(3))
    out = torch.tensor([-float("inf")])
    lanes = torch.zeros(64)
    with host.interpreting():
        launch(x, out, lanes)
    per_cta = x.abs().view(2, -1).amax(1)
    assert torch.equal(lanes, per_cta.repeat_interleave(32))
    assert out.item() == x.abs().max().item()


@pytest.mark.parametrize(
    "old, new, sign_bit, kept",
    [
        (-float("inf"), 2.5, None, 2.5),
        (3.0, 2.5, False, 3.0),
        (-4.0, -1.0, None, -1.0),  # negative: an unsigned min of the bits
        (-1.0, -4.0, None, -1.0),
        (1.0, -4.0, True, 1.0),
        (3.0, 2.0, True, 2.0),  # sign_bit wrong for val: CuTe DSL's min, as on the GPU
    ],
)
def test_atomic_fmax_is_cute_dsls_integer_atomics(old, new, sign_bit, kept):
    """atomic_fmax as CuTe DSL builds it: signed atom.max of the bits for a value of sign
    0, unsigned atom.min for sign 1 -- the sign `sign_bit` says, right or wrong."""
    import cutlass.cute as cute

    @cute.kernel
    def bump(cell: cute.Tensor, value: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        if tx == 0:
            cute.arch.atomic_fmax(cell.iterator, value[0], sign_bit=sign_bit)

    @cute.jit
    def launch(cell: cute.Tensor, value: cute.Tensor):
        bump(cell, value).launch(grid=[1, 1, 1], block=[32, 1, 1])

    cell = torch.tensor([old])
    with host.interpreting():
        launch(cell, torch.tensor([new]))
    assert cell.item() == kept


def test_warp_redux_sync_of_integers_and_its_nan_rule():
    """redux.sync: integer kinds over the warp's 32-bit values; .f32 max ignores a NaN
    unless nan=True."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def reduce(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        v = cutlass.Float32(tx)
        if tx == 5:
            v = cutlass.Float32(float("nan"))
        out[tx, 0] = cute.arch.warp_redux_sync(cutlass.Int32(tx) - 3, "add")
        out[tx, 1] = cute.arch.warp_redux_sync(cutlass.Int32(tx) - 3, "min")
        out[tx, 2] = cute.arch.warp_redux_sync(v, "fmax")
        out[tx, 3] = cute.arch.warp_redux_sync(v, "fmax", nan=True)

    @cute.jit
    def launch(out: cute.Tensor):
        reduce(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32, 4)
    with host.interpreting():
        launch(out)
    assert out[:, 0].eq(sum(range(32)) - 96).all() and out[:, 1].eq(-3).all()
    assert out[:, 2].eq(31).all() and out[:, 3].isnan().all()


def test_an_identity_tensor_of_a_hierarchical_shape_gives_nested_coordinates():
    """make_identity_tensor of blockwise_gemm's scale shapes ((128, m), (128, k), l) was
    unmodelled: an element is the nested coordinate of its index (colexicographic), as
    CuTe's identity layout of basis strides E<0,0>, E<0,1>, ... gives it."""
    t = tensors.identity_tensor(((2, 3), 4))
    got = [t[i] for i in range(24)]
    want = [((i % 2, (i // 2) % 3), i // 6) for i in range(24)]
    assert got == want
    assert t.shape == ((2, 3), 4)


# ---------------------------------------------------------------- cp.async.mbarrier.arrive


def _cp_async_handoff(wait: bool):
    """Warp 0 copies 32 floats into shared memory with cp.async and commits them with
    cp.async.mbarrier.arrive.noinc (PipelineCpAsync's producer_commit); warp 1 waits on the
    mbarrier (or not) and reads them."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync

    @cute.kernel
    def handoff(src: cute.Tensor, out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        warp = tx // 32
        lane = tx % 32
        smem = cutlass.utils.SmemAllocator()
        staged = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), 16)
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if tx == 0:
            cute.arch.mbarrier_init(bar, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp == 0:
            atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
            one = cute.make_layout(1)
            cute.copy(
                atom,
                cute.make_tensor(src.iterator + lane, one),
                cute.make_tensor(staged.iterator + lane, one),
            )
            cute.arch.cp_async_mbarrier_arrive_noinc(bar)
        if warp == 1:
            if wait:
                cute.arch.mbarrier_wait(bar, phase=0)
            out[lane] = staged[lane]

    @cute.jit
    def launch(src: cute.Tensor, out: cute.Tensor):
        handoff(src, out).launch(grid=[1, 1, 1], block=[64, 1, 1])

    src = torch.arange(1, 33, dtype=torch.float32)
    out = torch.zeros(32)
    with host.interpreting():
        launch(src, out)
    return src, out


def test_cp_async_mbarrier_arrive_hands_the_copies_to_the_waiter():
    """cp_async_mbarrier_arrive_noinc was unmodelled (blockwise_gemm's scale pipeline): the
    phase completes once the thread's cp.asyncs have, one arrival per lane, and a waiter
    of it reads their values with no hazard."""
    src, out = _cp_async_handoff(wait=True)
    assert torch.equal(out, src)


def test_a_read_not_waiting_for_the_cp_async_arrival_is_named():
    with pytest.raises(Hazard, match="in flight"):
        _cp_async_handoff(wait=False)


# ---------------------------------------------------------------- tcgen05.st


def test_a_stand_in_enum_called_with_a_value_is_its_member():
    """blockwise_gemm writes tcgen05.copy.Repetition(32): the member x32, as CuTe DSL's."""
    copy = api.MODULES["cutlass.cute.nvgpu.tcgen05.copy"]
    assert copy.Repetition(32) is TC.Repetition.x32
    assert copy.St32x32bOp is TC.St32x32bOp and copy.Ld32x32bOp is TC.Ld32x32bOp


def _tmem_round_trip(wait_st: bool, handoff: bool):
    """Warp 0 stores 32 rows x 8 columns of TMEM with tcgen05.st (St32x32bOp x8), waits for
    them (or not) and arrives on an mbarrier; warp 4 (TMEM lanes 0-31 too) waits on it (or
    not) and loads them back with tcgen05.ld. Each value is its own (row, column)."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import tcgen05 as tc

    @cute.kernel
    def trip(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = cutlass.utils.SmemAllocator()
        holder = smem.allocate_array(cutlass.Int32, num_elems=1)
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if tx == 0:
            cute.arch.mbarrier_init(bar, 32)
        cute.arch.mbarrier_init_fence()
        if warp == 0:
            cute.arch.alloc_tmem(32, holder)
        cute.arch.sync_threads()
        ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
        cells = cute.make_tensor(ptr, cute.make_layout((128, 8), stride=(65536, 1)))
        where = cute.make_identity_tensor((128, 8))
        if warp == 0:
            st = cute.make_copy_atom(tc.copy.St32x32bOp(tc.copy.Repetition(8)), cutlass.Float32)
            mine = tc.make_tmem_copy(st, cells).get_slice(tx)
            at = mine.partition_S(where)
            regs = cute.make_rmem_tensor(at.shape, cutlass.Float32)
            for j in cutlass.range_constexpr(cute.size(regs)):
                row, col = at[j]
                regs[j] = cutlass.Float32(row * 8 + col)
            cute.copy(tc.make_tmem_copy(st, cells), regs, mine.partition_D(cells))
            if cutlass.const_expr(wait_st):
                cute.arch.fence_view_async_tmem_store()
            cute.arch.mbarrier_arrive(bar)
        if warp == 4:
            if cutlass.const_expr(handoff):
                cute.arch.mbarrier_wait(bar, phase=0)
            ld = cute.make_copy_atom(tc.Ld32x32bOp(tc.Repetition.x8), cutlass.Float32)
            tiled = tc.make_tmem_copy(ld, cells)
            mine = tiled.get_slice(tx % 128)
            at = mine.partition_D(where)
            regs = cute.make_rmem_tensor(at.shape, cutlass.Float32)
            cute.copy(tiled, mine.partition_S(cells), regs)
            cute.arch.fence_view_async_tmem_load()
            for j in cutlass.range_constexpr(cute.size(regs)):
                out[at[j]] = regs[j]
        cute.arch.sync_threads()
        if warp == 0:
            cute.arch.dealloc_tmem(ptr, 32)

    @cute.jit
    def launch(out: cute.Tensor):
        trip(out).launch(grid=[1, 1, 1], block=[160, 1, 1])

    out = torch.full((128, 8), -1.0)
    with host.interpreting():
        launch(out)
    return out[:32]


def test_tcgen05_st_puts_each_register_where_tcgen05_ld_finds_it():
    """tcgen05.st (St32x32bOp) was unmodelled (blockwise_gemm's rescaled accumulator): each
    thread's registers go to its TMEM lane, CuTe's TV layouts placing them, and a warp that
    waited on the writer's mbarrier after its wait::st reads them back."""
    got = _tmem_round_trip(wait_st=True, handoff=True)
    assert torch.equal(got, torch.arange(256, dtype=torch.float32).view(32, 8))


@pytest.mark.parametrize(
    "wait_st, handoff, words",
    [(False, True, "no tcgen05.wait::st"), (True, False, "nothing ordering")],
)
def test_a_tcgen05_ld_of_a_store_not_waited_for_or_not_handed_on_is_named(wait_st, handoff,
                                                                         words):  # fmt: skip
    with pytest.raises(Hazard, match=words):
        _tmem_round_trip(wait_st=wait_st, handoff=handoff)


def test_tmem_capacity_helpers_are_cute_dsls():
    """cute.arch.get_max/min_tmem_alloc_cols (mixed_input_gemm's host code) were
    unmodelled: CuTe DSL's own tables, per architecture."""
    from cutlass.cute.arch import tmem as real

    arch = api.MODULES["cutlass.cute.arch"]
    assert arch.get_max_tmem_alloc_cols("sm_100") == real.get_max_tmem_alloc_cols("sm_100") == 512
    assert arch.get_min_tmem_alloc_cols("sm_100") == real.get_min_tmem_alloc_cols("sm_100")


def test_an_attribute_of_a_recipe_cute_has_is_the_executors_gap_not_the_kernels_bug():
    """`op.a_dtype` of an op the executor keeps as its recipe: CuTe DSL's class has it, so
    the run stops as not modelled (needs a GPU); a name CuTe's class lacks is the kernel's
    own AttributeError, as on the GPU."""
    from course.execute.hazards import UnmodelledAttribute
    from course.execute.oracle import Recipe

    op = Recipe("cute.nvgpu.cpasync.CopyG2SOp")
    with pytest.raises(UnmodelledAttribute, match="CopyG2SOp"):
        op.cache_mode  # noqa: B018  CopyG2SOp's field, not modelled on the recipe
    with pytest.raises(AttributeError) as caught:
        op.no_such_field  # noqa: B018
    assert not isinstance(caught.value, UnmodelledAttribute)
