"""Unit tests of the executor fixes NVIDIA's Blackwell dense GEMMs and reductions needed
(dense_gemm's default TFloat32, ...; tests/test_nvidia_blackwell_dense_examples.py runs the
examples themselves with a full CUTLASS checkout). These run in CI, with no example at hand."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
import torch

from course.execute import api, blackwell, hazards, tcgen05
from course.execute.numeric import by_name, tf32_toward_zero
from course.execute.runner import pointer, run
from course.execute.hazards import Unmodelled
from course.execute.tensor import Pointer

TC = api.MODULES["cutlass.cute.nvgpu.tcgen05"]
K_MAJOR = api.MODULES["cutlass.cute.nvgpu"].OperandMajorMode.K


# ---------------------------------------------------------------- tf32


def test_tf32_keeps_the_top_ten_mantissa_bits():
    """tf32 is fp32's sign and exponent with 10 mantissa bits: the low 13 dropped (toward
    zero, either sign); values already tf32, infinities and NaN are kept."""
    one_ulp = np.float32(2.0**-10)
    x = np.array([1 + one_ulp, 1 + one_ulp * 0.999, -(1 + one_ulp * 1.5), 3.0, np.inf, -np.inf])
    got = tf32_toward_zero(x)
    assert got.tolist() == [1 + one_ulp, 1.0, -(1 + one_ulp), 3.0, np.inf, -np.inf]
    assert np.isnan(tf32_toward_zero(np.array([np.nan], np.float32)))[0]
    r = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    t = tf32_toward_zero(r)
    assert (t.view(np.uint32) & 0x1FFF == 0).all() and (np.abs(t) <= np.abs(r)).all()
    assert (np.abs(r - t) < np.abs(r) * 2.0**-10).all()


def test_tfloat32_is_a_32_bit_fp32_container():
    """cutlass.TFloat32 in memory is an fp32 word: stored and loaded as it is (only a tf32
    MMA reads it as tf32)."""
    tf32 = by_name("TFloat32")
    assert tf32.width == 32 and tf32.is_float and api.MODULES["cutlass"].TFloat32 is tf32
    x = np.float32(1 + 2.0**-20)
    assert tf32.decode(tf32.encode(x)) == x


def _tf32_op(_ab, _acc, shape, *modes):
    """tcgen05.MmaF16BF16Op's call as notebook 14's kernel makes it, made kind::tf32."""
    return TC.MmaTF32Op(shape, *modes)


def _tf32_gemm(monkeypatch, m: int, n: int, k: int):
    """Notebook 14's tcgen05 GEMM with TFloat32 A and B (its widths follow the type: 8 per
    MMA, 32 per k-tile) and its MMA made kind::tf32; A, B of full fp32 precision."""
    import cutlass

    from kernels import tcgen05_gemm
    from kernels.gemm_host import GemmTypes

    monkeypatch.setattr(TC, "MmaF16BF16Op", _tf32_op)
    types = GemmTypes(cutlass.TFloat32, cutlass.Float32, cutlass.Float32)
    gemm = tcgen05_gemm.Tcgen05Gemm(types, tcgen05_gemm.Config(tile_n=128, stages=2))
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
    c = torch.zeros(m, n)

    def tf32_pointer(t, name):
        p = pointer(t, name)
        return Pointer(p.memory, p.byte_offset, by_name("TFloat32"), align=16)

    result = run(gemm.__call__, tf32_pointer(a, "A"), tf32_pointer(b, "B"), pointer(c, "C"),
                 m, n, k, None)  # fmt: skip
    return a, b, c, result


def test_a_tf32_mma_reads_its_operands_as_tf32(monkeypatch):
    """The kind::tf32 MMA multiplies the operands' tf32 values: the GEMM equals the fp32
    product of A and B with their low 13 mantissa bits dropped (to fp32 rounding of the
    accumulation), and is farther from the full-precision product; the launch notes that
    this rounding is the executor's choice."""
    m, n, k = 128, 128, 64
    a, b, c, result = _tf32_gemm(monkeypatch, m, n, k)  # a hazard would raise
    at, bt = (torch.from_numpy(tf32_toward_zero(x.numpy())).double() for x in (a, b))
    tf32_error = (c.double() - at @ bt.T).abs().max().item()
    full_error = (c.double() - a.double() @ b.double().T).abs().max().item()
    assert tf32_error < 1e-5 < full_error, (tf32_error, full_error)
    notes = [n for n in result.notes if n.kind == hazards.TF32_ROUNDING]
    assert len(notes) == 1 and "its own choice" in str(notes[0]), result.notes


@pytest.mark.parametrize("dtype", ["Float16", "Int32"])
def test_a_tf32_mma_of_other_than_32_bit_floats_is_refused(dtype):
    """kind::tf32 reads 32-bit floats: another operand type is the kernel's mistake."""
    mma = blackwell.make_trivial_tiled_mma(
        by_name("Float32"), K_MAJOR, K_MAJOR, by_name("Float32"), TC.CtaGroup.ONE, (128, 128)
    )
    with pytest.raises(hazards.Hazard, match="kind::tf32 of " + dtype):
        tcgen05._operand_reading(mma, by_name(dtype), hazards.site(1))


# ---------------------------------------------------------------- jit arguments and structs


def test_a_scalar_argument_is_the_numeric_type_its_parameter_names():
    """CuTe DSL makes a Python float passed for `alpha: cutlass.Float32` a Float32, with its
    methods (dense_gemm_alpha_beta_persistent's `alpha.to(self.epi_dtype)`); the executor's
    translated functions had lost the annotation, and alpha stayed a float."""
    import cutlass
    import cutlass.cute as cute

    from course.execute import host

    @cute.kernel
    def scale(out: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32):
        tx, _, _ = cute.arch.thread_idx()
        out[tx] = alpha.to(cutlass.Float32) * tx + n

    @cute.jit
    def launch(out: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32):
        scale(out, alpha, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32)
    with host.interpreting():
        launch(out, 1.5, 2)
    assert torch.equal(out, torch.arange(32) * 1.5 + 2)


def test_a_struct_field_may_name_what_the_class_body_defines():
    """Under `from __future__ import annotations` (this file's), a @cute.struct field
    `Align[..., align]` naming a class attribute `align = ...` above it (NVIDIA's
    dense_gemm_persistent_dynamic) is read in the class body's scope first, as Python
    evaluates a class body."""
    import cutlass
    import cutlass.cute as cute

    from course.execute import host

    @cute.kernel
    def offsets(out: cute.Tensor):
        @cute.struct
        class Storage:
            first: cute.struct.MemRange[cutlass.Int32, 1]
            align = 64
            second: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 4], align]

        storage = cutlass.utils.SmemAllocator().allocate(Storage)
        out[0] = storage.second.data_ptr().toint() - storage.first.data_ptr().toint()

    @cute.jit
    def launch(out: cute.Tensor):
        offsets(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(1, dtype=torch.int32)
    with host.interpreting():
        launch(out)
    assert out.item() == 64


def test_an_identity_tensors_last_mode_takes_what_int64_leaves():
    """The coordinates of a rank-r identity tensor are packed in one int64, each mode but
    the last one signed digit: the last mode is wider (rmsnorm's (M, N) of N = 32K)."""
    from course.execute import tensor as executor_tensor

    for shape in ((4, 32768), (3, 2, 1 << 20), (2, 3, 4, 100000)):
        last = tuple(s - 1 for s in shape)
        assert executor_tensor.identity_tensor(shape)[last] == last
    with pytest.raises(Unmodelled, match="mode 0 of 32768 or more"):
        executor_tensor.identity_tensor((32768, 4))


# ---------------------------------------------------------------- inline PTX: st.async

ST_ASYNC = "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [$0], $1, [$2];"


def _exchange(wait: bool, how: str = "ptx"):
    """A cluster of two CTAs: lane p of each sends (rank * 10 + 1) into slot `rank` of CTA
    p's buffer, st.async on CTA p's mbarrier -- as inline PTX (mapa, st.async: "ptx") or as
    cute.copy of a CopyDsmemStoreOp atom to a map_dsmem_ptr pointer ("copy"); each then
    waits (or not) and reads both slots. The result, by CTA: its buffer."""
    import cutlass
    import cutlass.cute as cute
    from cutlass._mlir.dialects import llvm
    from cutlass.cute.arch.smem import map_dsmem_ptr
    from cutlass.cutlass_dsl import T

    from course.execute import host

    def in_peer(address, rank):
        return llvm.inline_asm(
            T.i32(), [address, rank], "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r"
        )

    @cute.kernel
    def exchange(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        rank = cute.arch.block_idx_in_cluster()
        smem = cutlass.utils.SmemAllocator()
        buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(2), byte_alignment=8)
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if tx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
        if tx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 8)
        value = cutlass.Float32(rank * 10 + 1)
        if cutlass.const_expr(how == "ptx"):
            if tx < 2:  # lane p to CTA p
                slot = (buf.iterator + rank).toint().ir_value()
                llvm.inline_asm(
                    None,
                    [in_peer(slot, tx), value.ir_value(), in_peer(bar.toint().ir_value(), tx)],
                    ST_ASYNC,
                    "r,f,r",
                    has_side_effects=True,
                )
        elif tx == 0:  # lane 0 to each CTA in turn (map_dsmem_ptr takes one rank)
            atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyDsmemStoreOp(), cutlass.Float32)
            reg = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
            reg[0] = value
            for peer in cutlass.range_constexpr(2):
                dst = map_dsmem_ptr(buf.iterator + rank, peer)
                cute.copy(atom, reg, cute.make_tensor(dst, cute.make_layout(1)),
                          mbar_ptr=map_dsmem_ptr(bar, peer))  # fmt: skip
        if wait:
            cute.arch.mbarrier_wait(bar, phase=0)
        if tx < 2:
            out[rank, tx] = (buf.iterator + tx).load()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()

    @cute.jit
    def launch(out: cute.Tensor):
        exchange(out).launch(grid=[2, 1, 1], block=[32, 1, 1], cluster=[2, 1, 1])

    out = torch.zeros(2, 2)
    with host.interpreting():
        launch(out)
    return out


@pytest.mark.parametrize("how", ["ptx", "copy"])
def test_st_async_lands_in_the_peers_shared_memory_and_completes_its_mbarrier(how):
    """st.async ... complete_tx, as inline PTX with mapa.shared::cluster (NVIDIA's
    reduce.py) or as CuTe's CopyDsmemStoreOp (dense_gemm_persistent_dynamic's split-K):
    each CTA's buffer holds both CTAs' values once its mbarrier's phase completed on their
    8 bytes (read back through Pointer.load)."""
    assert _exchange(wait=True, how=how).tolist() == [[1.0, 11.0], [1.0, 11.0]]


@pytest.mark.parametrize("how", ["ptx", "copy"])
def test_a_read_before_the_wait_on_st_async_is_named(how):
    """Without the wait, a slot is read while the peer's st.async into it is in flight."""
    with pytest.raises(hazards.Hazard, match="st.async to it") as caught:
        _exchange(wait=False, how=how)
    assert caught.value.kind == hazards.IN_FLIGHT


def test_inline_ptx_the_executor_does_not_run_is_named():
    from course.execute import inline_ptx

    with pytest.raises(Unmodelled, match="inline PTX `multimem.red"):
        inline_ptx.inline_asm(None, [0], "multimem.red.release.gpu.global.add.s32 [$0], 1;")


class _Helper:
    """A script object holding a kernel object (as NVIDIA's EFC helper holds its GEMM)."""

    def __init__(self, gemm):
        self.gemm = gemm

    def size(self):
        import cutlass.cute as cute

        return cute.size(self.gemm.layout)  # a field the GEMM's host function set


class _Gemm:
    def __init__(self):
        self.helper = _Helper(self)

    @cute.kernel
    def kernel(self, out: cute.Tensor, n: cutlass.Int32):
        tx, _, _ = cute.arch.thread_idx()
        out[tx] = n

    @cute.jit
    def __call__(self, out: cute.Tensor):
        self.layout = cute.make_layout((4, 3))  # no plain value: kept on the proxy only
        self.kernel(out, self.helper.size()).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_script_object_holding_a_kernel_object_sees_what_its_host_function_set():
    """dense_gemm EFC's helper reads `self.gemm.d_layout`, which the GEMM's host function
    set: the helper is seen through a proxy too, and its `gemm` is the one proxy the host
    function runs on (it was the real object, which never got the layout)."""
    from course.execute import host

    out = torch.zeros(32, dtype=torch.int32)
    with host.interpreting():
        _Gemm()(out)
    assert (out == 12).all()
