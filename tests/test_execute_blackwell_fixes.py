"""Unit tests of the executor fixes NVIDIA's Blackwell examples the course does not name
needed (dense_gemm, dense_gemm_persistent, the TMA tutorials tma_v0..v2, nvfp4_gemm_0,
rmsnorm; tests/test_nvidia_more_examples.py runs the examples themselves with a full CUTLASS
checkout). These run in CI, with no example at hand."""

from __future__ import annotations

import pytest
import torch

from course.execute import api, blackwell, host, oracle, tcgen05
from course.execute.hazards import Unmodelled
from course.execute.numeric import by_name

F16, F32 = by_name("Float16"), by_name("Float32")
TC = api.MODULES["cutlass.cute.nvgpu.tcgen05"]
K_MAJOR = api.MODULES["cutlass.cute.nvgpu"].OperandMajorMode.K


# ---------------------------------------------------------------- blackwell_helpers


def test_make_trivial_tiled_mma_is_cutes_f16_mma_in_both_call_forms():
    """make_trivial_tiled_mma was unmodelled. It is the tcgen05 f16 MMA CuTe DSL picks,
    with the tiler's (M, N) and K = 16 per instruction, in the new (a_dtype, b_dtype, ...)
    and the deprecated (ab_dtype, ...) forms alike; its shape is CuTe's."""
    new = blackwell.make_trivial_tiled_mma(
        F16, F16, K_MAJOR, K_MAJOR, F32, TC.CtaGroup.ONE, (128, 256)
    )
    old = blackwell.make_trivial_tiled_mma(F16, K_MAJOR, K_MAJOR, F32, TC.CtaGroup.TWO, (256, 128))
    assert isinstance(new, tcgen05.TiledMma) and new.op.name == "MmaF16BF16Op"
    assert oracle.attribute(new.recipe, "shape_mnk") == (128, 256, 16)
    assert isinstance(old, tcgen05.TiledMma) and old.cta_group == 2
    assert oracle.attribute(old.recipe, "shape_mnk") == (256, 128, 16)


def test_make_trivial_tiled_mma_of_tf32_is_cutes_tf32_mma():
    """TFloat32 (and Float32) A/B make CuTe DSL's kind::tf32 MMA, K = 8 per instruction.
    The PTX ISA leaves tf32's internal layout implementation defined; how the executor reads
    fp32 operands as tf32 is tested in tests/test_execute_blackwell_dense_fixes.py."""
    import cutlass

    for ab in (cutlass.TFloat32, F32):
        mma = blackwell.make_trivial_tiled_mma(
            ab, K_MAJOR, K_MAJOR, F32, TC.CtaGroup.ONE, (128, 128)
        )
        assert isinstance(mma, tcgen05.TiledMma) and mma.op.name == tcgen05.TF32_OP
        assert oracle.attribute(mma.recipe, "shape_mnk") == (128, 128, 8)


@pytest.mark.parametrize(
    "cluster, group, a, b, sfb",
    [
        ((1, 1), 1, "G2SOp", "G2SOp", "G2SOp"),
        ((2, 1), 1, "G2SOp", "Multicast", "Multicast"),
        ((1, 2), 1, "Multicast", "G2SOp", "G2SOp"),
        ((2, 1), 2, "G2SOp", "G2SOp", "Multicast"),
        ((4, 2), 2, "Multicast", "Multicast", "Multicast"),
    ],
)
def test_cluster_shape_to_tma_atom_picks_as_cute_dsl(cluster, group, a, b, sfb):
    """cluster_shape_to_tma_atom_A/_B/_SFB were unmodelled: multicast exactly where CuTe
    DSL's helpers multicast, with the MMA's CtaGroup."""
    thr_id = api.make_layout(group)
    for operand, want in (("A", a), ("B", b), ("SFB", sfb)):
        op = getattr(blackwell, "_cluster_tma_op")(operand)((*cluster, 1), thr_id)
        assert want in op.name, (operand, op.name)
        assert op.args[0].name == ("TWO" if group == 2 else "ONE")


def test_get_num_tmem_alloc_cols_rounds_as_cute_dsl():
    """get_num_tmem_alloc_cols was unmodelled: the accumulator's columns, rounded up to a
    power of two (at least 32), or as they are without rounding."""
    mma = blackwell.make_trivial_tiled_mma(F16, F16, K_MAJOR, K_MAJOR, F32, TC.CtaGroup.ONE,
                                           (128, 96))  # fmt: skip
    acc = mma.make_fragment_C(mma.partition_shape_C((128, 96)))
    assert blackwell.get_num_tmem_alloc_cols(acc) == 128
    assert blackwell.get_num_tmem_alloc_cols(acc, rounding=False) == 96
    assert blackwell.get_num_tmem_alloc_cols([acc, acc]) == 256
    with pytest.raises(ValueError):
        blackwell.get_num_tmem_alloc_cols([acc] * 6)  # 576 columns: more than 512


def test_get_tmem_load_op_is_cutes_pick_or_unmodelled():
    """get_tmem_load_op was unmodelled: the 32x32b load CuTe DSL picks for an N-major
    16-bit output is the executor's tcgen05.ld; the 16x256b load it picks for an M-major
    one is not modelled, and says so."""
    from course.execute.layout_enum import LayoutEnum

    helpers = api.MODULES[blackwell.HELPERS]
    tile = helpers.compute_epilogue_tile_shape((128, 128), False, LayoutEnum.ROW_MAJOR, F16)
    atom = blackwell.get_tmem_load_op((128, 128, 64), LayoutEnum.ROW_MAJOR, F16, F32, tile, False)
    assert atom.op.name == "Ld32x32bOp" and atom.op.args[0].name.startswith("x")
    with pytest.raises(Unmodelled, match="Ld16x256bOp"):
        blackwell.get_tmem_load_op((128, 128, 64), LayoutEnum.COL_MAJOR, F16, F32, tile, False)


def test_utils_sm100_is_the_helpers_module_and_gemm_epilogues_run_translated():
    """cutlass.utils.sm100 (CuTe DSL's short name of blackwell_helpers) and
    cutlass.utils.gemm.sm100 (the persistent GEMM's epilogues) were unmodelled."""
    import cutlass.utils

    from course.execute import translate

    utils = api.MODULES["cutlass.utils"]
    assert utils.sm100 is api.MODULES[blackwell.HELPERS]
    seen = translate.Translator().value(cutlass.utils)
    epilogue = seen.gemm.sm100.epilogue
    assert getattr(epilogue, translate.TRANSLATED, False)


def test_get_smem_capacity_in_bytes_is_cute_dsls_for_the_run_gpu(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    assert api.MODULES["cutlass.utils"].get_smem_capacity_in_bytes() == 227 * 1024
    assert api.MODULES["cutlass.memory"].get_smem_capacity_in_bytes("sm_80") == 163 * 1024


# ---------------------------------------------------------------- host values


def test_an_enum_member_made_on_the_host_is_the_stand_ins():
    """A kernel class's __init__ keeps tcgen05.CtaGroup.ONE (the real enum's member): it
    reached kernel code as an unknown object. It is the stand-in's member now (CuTe DSL
    re-exports the enum in cpasync too, which does not model it)."""
    from cutlass.cute.nvgpu import tcgen05 as real

    from course.execute import translate

    seen = translate.Translator().value(real.CtaGroup.TWO)
    assert seen is TC.CtaGroup.TWO


def test_what_a_host_function_sets_on_its_object_the_host_code_reads_after():
    """tma_v2 prints `kernel.num_load_stages`, set inside its @cute.jit __call__: the
    executor kept it on its proxy only (AttributeError on the host)."""
    import cutlass.cute as cute

    class Kernel:
        @cute.jit
        def __call__(self, out: cute.Tensor):
            self.stages = (2, 3)
            self.layout = cute.make_layout(4)  # not a plain value: stays on the proxy

    k = Kernel()
    with host.interpreting():
        k(torch.zeros(4))
    assert k.stages == (2, 3) and not hasattr(k, "layout")


def test_a_config_object_holding_cute_dsl_types_is_seen_through():
    """rmsnorm keeps its dtype in a plain config object read inside the kernel; its
    `cutlass.BFloat16` reached `TensorSSA.to` as CuTe DSL's class."""
    import cutlass
    import cutlass.cute as cute

    class Config:
        def __init__(self):
            self.dtype = cutlass.Float16

    cfg = Config()

    @cute.jit
    def convert(src: cute.Tensor, dst: cute.Tensor):
        dst[0] = src[0].to(cfg.dtype)

    src, dst = torch.tensor([1.5], dtype=torch.float32), torch.zeros(1, dtype=torch.float16)
    with host.interpreting():
        convert(src, dst)
    assert dst.item() == 1.5


def test_make_ptr_of_a_tensors_address_is_that_tensor():
    """nvfp4_gemm_0 and rmsnorm pass `make_ptr(dtype, t.data_ptr(), ...)`: the executor
    took the runtime pointer for an unknown object. It is a pointer into t's storage, and
    an address no tensor gave is unmodelled."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    @cute.jit
    def fill(p: cute.Pointer):
        t = cute.make_tensor(p, cute.make_layout(3))
        for i in cutlass.range_constexpr(3):
            t[i] = cutlass.Float32(i + 1)

    t = torch.zeros(8)
    with host.interpreting():
        fill(make_ptr(cutlass.Float32, t.data_ptr() + 8, cute.AddressSpace.gmem))
        fill(make_ptr(cutlass.Float32, t.data_ptr() + 16))  # generic: a global address
        with pytest.raises(Unmodelled, match="make_ptr"):
            fill(make_ptr(cutlass.Float32, 16, cute.AddressSpace.gmem))
    assert t.tolist() == [0, 0, 1, 2, 1, 2, 3, 0]


def test_cuda_device_properties_are_the_run_gpus():
    from course.execute.cuda_on_cpu import cuda_on_cpu

    with cuda_on_cpu((10, 0)):
        props = torch.cuda.get_device_properties(0)
        assert (props.major, props.minor, props.multi_processor_count) == (10, 0, 148)
        with pytest.raises(Unmodelled):
            props.total_memory


# ---------------------------------------------------------------- kernel-side names


def test_copy_r2g_stores_registers_as_a_universal_copy():
    """dense_gemm_persistent's epilogue stores with cute.nvgpu.CopyR2GOp and an L1 eviction
    hint (cutlass.utils.gemm.sm100.epilogue): both were unmodelled."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def store(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        atom = cute.make_copy_atom(
            cute.nvgpu.CopyR2GOp(),
            cutlass.Float32,
            num_bits_per_copy=64,
            l1c_evict_priority=cute.nvgpu.CacheEvictionPriority.NO_ALLOCATE,
        )
        r = cute.make_rmem_tensor((2,), cutlass.Float32)
        r[0] = cutlass.Float32(tx * 2)
        r[1] = cutlass.Float32(tx * 2 + 1)
        cute.copy(atom, r, cute.local_tile(out, (2,), (tx,)))

    @cute.jit
    def launch(out: cute.Tensor):
        store(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(64)
    with host.interpreting():
        launch(out)
    assert torch.equal(out, torch.arange(64, dtype=torch.float32))


@pytest.mark.parametrize("group", [32, 8])
def test_warp_reduction_folds_each_group_of_lanes(group):
    """cute.arch.warp_reduction (rmsnorm's row sums) was unmodelled: butterfly shuffles
    fold each group of `threads_in_group` lanes, every lane ending with its group's sum."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def reduce(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        total = cute.arch.warp_reduction(
            cutlass.Float32(tx), lambda a, b: a + b, threads_in_group=group
        )
        out[tx] = total

    @cute.jit
    def launch(out: cute.Tensor):
        reduce(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32)
    with host.interpreting():
        launch(out)
    lanes = torch.arange(32, dtype=torch.float32).view(-1, group)
    assert torch.equal(out, lanes.sum(1, keepdim=True).expand(-1, group).reshape(-1))


# ---------------------------------------------------------------- TMA stores at exit


def test_an_undrained_tma_store_at_exit_is_a_note_not_a_hazard(launch_notes):
    """NVIDIA's TMA tutorials end right after their TMA store, never waiting on its bulk
    group: the executor stopped them (NOT_DRAINED). The PTX ISA makes an async copy
    undefined only by a modified source or an early read of the destination, and forbids
    an exit only before a *peer* CTA's shared-memory operation completes; a bulk store reads
    its own CTA's. So it is a note (the course's kernels still drain), and C is right."""
    from course.execute import blackwell_runs, tma
    from course.exercises.nb14_epilogue_kernel import epilogue_class
    from course.exercises.solutions import nb14_solutions as solutions

    notes = launch_notes
    cls = epilogue_class(solutions.epilogue_role_no_tail)
    run = blackwell_runs.run_gemm("tcgen05_gemm", 129, 136, 72, cls=cls)
    assert run.ok, run.summary()
    drained = [n for n in notes if n.kind == tma.NOT_DRAINED]
    assert drained and "leaves this defined" in str(drained[0]), notes


# ---------------------------------------------------------------- torch on the CPU


def test_scaled_mm_of_block_scaled_fp4_on_the_cpu():
    """nvfp4_gemm_0 checks itself with torch._scaled_mm on NVFP4 operands and blocked
    e4m3 scales, which torch's CPU build refuses. The CPU version: every value of A and B
    scaled by its 16-wide block's scale, the scales read from cuBLAS's 128x4 tiles."""
    from course.execute.cuda_on_cpu import cuda_on_cpu

    m = n = 256
    k = 64  # 4 scale columns: one tile column
    gen = torch.Generator().manual_seed(3)
    a = torch.randint(0, 256, (m, k // 2), dtype=torch.uint8, generator=gen)
    b = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=gen)
    ones = torch.ones(2 * 512, dtype=torch.float32).to(torch.float8_e4m3fn)
    scale_a = ones.clone()
    # row 200 (row tile 1; 200 % 32 = 8, (200 // 32) % 4 = 2), scale column 1
    scale_a[1 * 512 + 8 * 16 + 2 * 4 + 1] = 2.0
    fp4 = torch.float4_e2m1fn_x2
    with cuda_on_cpu():
        plain = torch._scaled_mm(a.view(fp4), b.view(fp4).t(), ones, ones, out_dtype=torch.float32)
        scaled = torch._scaled_mm(
            a.view(fp4), b.view(fp4).t(), scale_a, ones, out_dtype=torch.float32
        )
    values = _e2m1(a).double(), _e2m1(b).double()
    assert torch.equal(plain, (values[0] @ values[1].T).float())
    differs = (scaled != plain).any(dim=1).nonzero().flatten().tolist()
    assert differs == [200]
    row = values[0][200].clone()
    row[16:32] *= 2
    assert torch.equal(scaled[200], (row @ values[1].T).float())


def _e2m1(packed: torch.Tensor) -> torch.Tensor:
    """e2m1 values of bytes holding two codes (the first in the low nibble)."""
    table = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    low, high = table[(packed & 0xF).long()], table[(packed >> 4).long()]
    return torch.stack([low, high], dim=-1).reshape(packed.shape[0], -1)


# ---------------------------------------------------------------- block-scaled GEMMs


@pytest.mark.parametrize(
    "a, sf, vec, op, k",
    [
        ("Float4E2M1FN", "Float8E4M3FN", 16, "MmaMXF4NVF4Op", 64),
        ("Float4E2M1FN", "Float8E8M0FNU", 32, "MmaMXF4Op", 64),
        ("Float8E4M3FN", "Float8E8M0FNU", 32, "MmaMXF8F6F4Op", 32),
    ],
)
def test_make_blockscaled_trivial_tiled_mma_picks_cutes_op(a, sf, vec, op, k):
    """make_blockscaled_trivial_tiled_mma was unmodelled (dense_blockscaled_gemm_persistent
    makes its MMA with it): the op CuTe DSL picks for the operand and SF types, its shape
    CuTe's own."""
    mma = blackwell.make_blockscaled_trivial_tiled_mma(
        by_name(a), by_name(a), K_MAJOR, K_MAJOR, by_name(sf), vec, TC.CtaGroup.ONE, (128, 128)
    )
    assert isinstance(mma, tcgen05.TiledMma) and mma.op.name == op
    assert oracle.attribute(mma.recipe, "shape_mnk") == (128, 128, k)


def test_gemm_takes_scale_factors_as_auxiliary_operands(monkeypatch):
    """CuTe DSL 4.8.1's cute.gemm(mma, D, [A, SFA], [B, SFB], C): the executor read the
    lists as tensors. Each (m, n, k) atom is issued with SFA at SFA[None, m, k] and SFB at
    SFB[None, n, k] -- what `tiled_mma.set(Field.SFA, ...)` would name -- and the fields
    are as they were afterwards."""
    from course.execute.runner import pointer

    mma = blackwell.make_blockscaled_trivial_tiled_mma(
        by_name("Float4E2M1FN"), by_name("Float4E2M1FN"), K_MAJOR, K_MAJOR,
        by_name("Float8E4M3FN"), 16, TC.CtaGroup.ONE, (128, 128),
    )  # fmt: skip

    def tensor(shape):
        size = 1
        for s in shape:
            size *= s
        return api.make_tensor(pointer(torch.zeros(size)), api.make_layout(shape))

    issued = []

    def atom(mma_, d, a, b, c, site, scaled, **_):
        sfs = mma_.__dict__["scale_factors"]
        issued.append((sfs["SFA"].byte_offset // 4, sfs["SFB"].byte_offset // 4))

    monkeypatch.setattr(tcgen05, "_gemm_atom", atom)
    d, a, b = tensor((2, 1, 2)), tensor((2, 1, 3)), tensor((2, 2, 3))
    sfa, sfb = tensor((4, 1, 3)), tensor((4, 2, 3))
    tcgen05.gemm(mma, d, [a, sfa], [b, sfb], d, scaled=object())
    # SFA[None, 0, k] starts at 4k; SFB[None, n, k] at 4n + 8k
    assert issued == [(4 * k, 4 * n + 8 * k) for n in range(2) for k in range(3)]
    assert "scale_factors" not in mma.__dict__
    with pytest.raises(Unmodelled, match="sparse"):
        tcgen05.gemm(mma, d, [a, sfa, sfa], [b, sfb], d, scaled=object())


def test_a_struct_of_fp4_elements_is_packed_as_cute_dsls():
    """A MemRange of fp4 counted a byte an element: the block-scaled GEMM's shared storage
    came to 390144 bytes, over the SM's 232448. n fp4 values are n / 2 bytes, as CuTe DSL
    lays the struct out (checked against its own offsets)."""
    import cutlass
    import cutlass.cute as cute

    from course.execute import smem_struct

    assert smem_struct.MemRange(by_name("Float4E2M1FN"), 1024).nbytes == 512

    fields = {  # not a class body: this module's annotations are strings
        "a": cute.struct.MemRange[cutlass.Float4E2M1FN, 1000],
        "b": cute.struct.MemRange[cutlass.Int64, 2],
    }
    Storage = cute.struct(type("Storage", (), {"__annotations__": fields}))
    made = smem_struct.from_real(Storage, lambda t: by_name(t.__name__))
    assert made.nbytes == 520


def test_scaled_mm_of_mxfp8_on_the_cpu():
    """dense_blockscaled_gemm_persistent's MXFP8 check: float8_e4m3fn operands with
    float8_e8m0fnu scales, one per 32 values; a scale of 2 (code 128) doubles its block."""
    from course.execute.cuda_on_cpu import cuda_on_cpu

    m = n = 128
    k = 128  # 4 scale columns
    gen = torch.Generator().manual_seed(5)
    a = torch.randint(-4, 5, (m, k), generator=gen).float().to(torch.float8_e4m3fn)
    b = torch.randint(-4, 5, (n, k), generator=gen).float().to(torch.float8_e4m3fn)
    ones = torch.full((512,), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    twice = ones.clone().view(torch.uint8)
    twice[3 * 16 + 0 * 4 + 2] = 128  # row 3, scale column 2 (K 64-95)
    with cuda_on_cpu():
        out = torch._scaled_mm(a, b.t(), ones, twice.view(torch.float8_e8m0fnu),
                               out_dtype=torch.float32)  # fmt: skip
    left, right = a.double(), b.double()
    right[3, 64:96] *= 2
    assert torch.equal(out, (left @ right.T).float())
