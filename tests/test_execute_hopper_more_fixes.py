"""Unit tests of the executor fixes NVIDIA's Hopper fmha, fp8 GELU GEMM, cta_norm and Ampere
hstu_attention needed (tests/test_nvidia_hopper_examples.py runs the examples themselves
from a full checkout; these run in CI, with no example at hand)."""

import itertools

import numpy as np
import pytest
import torch

import cutlass
import cutlass.cute as cute

from course.execute import api, happens_before, hazards, host, oracle
from course.execute.basis import Basis
from course.execute.numeric import TYPES, promoted
from course.execute.static_layout import Layout
from course.execute.tensor import TensorSSA


# ---------------------------------------------------------------- ScaledBasis layouts


def _real_answers(make, coords):
    """CuTe DSL's own evaluation of the layout `make()` builds, at each coordinate."""
    from course.cute.trace import on_cpu

    def job():
        lay = make(cute)
        return str(lay), [tuple(_plain(lay(c))) for c in coords]

    return on_cpu(job, arch="sm_90a")


def _plain(x):
    return tuple(_plain(e) for e in x) if isinstance(x, tuple) else int(x)


LAYOUTS = [
    lambda c: c.make_identity_layout((4, 8)),
    lambda c: c.make_layout((4, 8), stride=(c.E(1), c.E(0) * 3)),
    lambda c: c.make_layout((4, 2), stride=(c.E([0, 1]), c.E([1]))),
    lambda c: c.make_layout((3, (2, 4)), stride=(c.E(2) * 5, (c.E(0), c.E(1) * 2))),
    lambda c: c.zipped_divide(c.make_identity_layout((8, 12)), (4, 6)),
    lambda c: c.composition(c.make_identity_layout((16, 32, 2)), (8, 16)),
]


@pytest.mark.parametrize("make", LAYOUTS)
def test_scaled_basis_layouts_evaluate_as_cute_does(make):
    """make_identity_layout and E-strided layouts (Hopper fmha's o_cta_v_layout, a TMA
    atom's coordinate map) were refused as a dynamic value; now a layout's strides may be
    ScaledBasis, printed, evaluated and sliced as CuTe DSL's own static evaluation gives
    them, at every coordinate (and past the end of the last mode)."""
    ours = make(api.cute)
    coords = list(range(ours.size + 3))
    text, answers = _real_answers(make, coords)
    assert str(ours) == text
    assert [_plain(ours(i)) for i in coords] == answers


def test_a_slice_of_an_identity_layout_is_cutes():
    ident = api.cute.make_identity_layout((4, 8, 3))
    kept = api.cute.slice_(ident, (None, 2, 1))
    assert str(kept) == "(4):(1@0)"
    offset, layout = ident.slice((None, 2, 1))
    assert tuple(offset) == (0, 2, 1) and layout.basis


def test_a_basis_layout_round_trips_through_cute():
    """Executor layouts with basis strides go to CuTe and back unchanged."""
    lay = Layout((4, 8), (Basis(1, 1), Basis(3, 0)))
    assert oracle.call("coalesce", lay) == oracle.call("coalesce", lay)
    assert str(oracle.call("composition", lay, (2, 4))) == "(2,4):(1@1,3@0)"


def test_offsets_of_a_basis_layout_say_what_is_not_modelled():
    with pytest.raises(hazards.Unmodelled, match="ScaledBasis strides"):
        api.cute.make_identity_layout((4, 8)).cosize  # noqa: B018


# ---------------------------------------------------------------- promotion


FLOATS_AND_INTS = ["Float32", "Float16", "BFloat16", "Float64", "TFloat32", "Int32", "Int8"]


PAIRS = [
    (a, b)
    for a, b in itertools.product(FLOATS_AND_INTS, repeat=2)
    if TYPES[a].is_float or TYPES[b].is_float  # two ints keep the left operand's type
]


@pytest.mark.parametrize("a, b", PAIRS)
def test_binary_op_types_promote_as_cute_dsls(a, b):
    """cta_norm's `(x.load() - mean) * rstd` on Float16 x was computed and rounded in
    Float16; CuTe DSL promotes a Float16 TensorSSA with a Float32 to Float32. Where CuTe
    refuses a promotion (it asks for an explicit cast), the executor keeps the left type."""
    from cutlass.base_dsl.typing import _binary_op_type_promote

    ra, rb = getattr(cutlass, a), getattr(cutlass, b)
    try:
        _, _, real = _binary_op_type_promote(ra(0), rb(0))
    except ValueError:
        real = ra
    assert promoted(TYPES[a], TYPES[b]).name == real.__name__


def test_a_float16_tensor_minus_a_float32_scalar_is_float32():
    x = TensorSSA(np.array([1.0, 2.0], dtype=np.float16), (2,), TYPES["Float16"])
    assert (x - np.float32(0.5)).dtype.name == "Float32"
    assert (x * 0.5).dtype.name == "Float32"  # a Python float is a Float32 (as_numeric)
    assert (x + x).dtype.name == "Float16"


# ---------------------------------------------------------------- kernels


def test_ir_value_llvm_ptr_and_a_timed_mbarrier_wait():
    """Hopper fmha replaces cute.arch.mbarrier_wait by its own: `Int32(phase).ir_value()`,
    `mbar_ptr.llvm_ptr` and nvvm.mbarrier_try_wait_parity_timelimit, retried under
    if_generate. Warp 0 waits with it for warp 1's arrival and reads what warp 1 wrote."""
    from cutlass._mlir.dialects import nvvm
    from cutlass.cutlass_dsl import Boolean, Int32, if_generate

    @cute.kernel
    def k(out: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1)
        data = smem.allocate_tensor(cutlass.Int32, cute.make_layout(1))
        tidx, _, _ = cute.arch.thread_idx()
        warp = tidx // 32
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp == 1:
            if tidx == 32:
                data[0] = Int32(41)
                cute.arch.mbarrier_arrive(bar)
        else:
            phase = Int32(0).ir_value()
            limit = Int32(10_000_000).ir_value()
            done = Boolean(nvvm.mbarrier_try_wait_parity_timelimit(bar.llvm_ptr, phase, limit))
            yes = lambda: Boolean(True).ir_value()  # noqa: E731 -- fmha's own spelling
            done = if_generate(done, yes, lambda: False, None, [Boolean])
            if tidx == 0:
                out[0] = data[0] + Int32(1) if done else Int32(-1)

    @cute.jit
    def launch(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[64, 1, 1])

    out = torch.zeros(1, dtype=torch.int32)
    with host.interpreting():
        launch(out)
    assert out.item() == 42


def test_lanes_writing_the_same_value_to_one_location_are_no_race():
    """cta_norm's warp 0 stores its reduced sum with every lane into acc[n]: one write
    lands, and all of them carry the same bits. Different values are still a race."""

    @cute.kernel
    def k(out: cute.Tensor, differ: cutlass.Constexpr):
        smem = cutlass.utils.SmemAllocator()
        acc = smem.allocate_tensor(cutlass.Float32, cute.make_layout(1))
        tidx, _, _ = cute.arch.thread_idx()
        val = cute.arch.warp_reduction_sum(cutlass.Float32(tidx))
        if cutlass.const_expr(differ):
            val = cutlass.Float32(tidx)
        acc[0] = val
        cute.arch.sync_threads()
        if tidx == 0:
            out[0] = acc[0]

    @cute.jit
    def launch(out: cute.Tensor, differ: cutlass.Constexpr):
        k(out, differ).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(1, dtype=torch.float32)
    with host.interpreting():
        launch(out, differ=False)
    assert out.item() == sum(range(32))
    with pytest.raises(hazards.Hazard, match="in the same instruction"):
        with host.interpreting():
            launch(out, differ=True)


def test_cute_math_functions_and_types_are_at_cutes_top():
    """The fp8 GELU GEMM calls `cute.erf`, cta_norm names `cute.Float32`: re-exports."""
    x = TensorSSA(np.array([0.5, -1.0], dtype=np.float32), (2,), TYPES["Float32"])
    assert np.array_equal(api.cute.erf(x).values, api.math.erf(x).values)
    assert api.cute.Float32 is api.cutlass.Float32


def test_from_dlpack_with_tvm_ffi_needs_no_tvm_ffi_on_the_executor():
    from cutlass.cute.runtime import from_dlpack

    @cute.kernel
    def k(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x[tidx] = x[tidx] * 2.0

    @cute.jit
    def launch(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    t = torch.arange(32, dtype=torch.float32)
    with host.interpreting():
        launch(from_dlpack(t, assumed_align=16, enable_tvm_ffi=True))
    assert torch.equal(t, torch.arange(32, dtype=torch.float32) * 2)


class _Offset:
    """A script's own class that kernel code constructs (fmha's tile scheduler from
    fmha_helpers): its methods must run on the executor's cute, super() included."""

    def __init__(self, base):
        self.layout = cute.make_layout((4, 8))
        self.base = base

    def at(self, i):
        return self.base + self.layout((i % 4, i // 4))


class _Doubled(_Offset):
    def at(self, i):
        return 2 * super().at(i)


def test_a_scripts_class_made_in_kernel_code_runs_on_the_executor():
    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        out[tidx] = _Doubled(1).at(tidx)

    @cute.jit
    def launch(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32, dtype=torch.int32)
    with host.interpreting():
        launch(out)
    assert torch.equal(out, 2 * (1 + torch.arange(32, dtype=torch.int32)))


def test_tanh_approx_inline_ptx_and_mlir_type():
    """hstu_attention's fast SiLU: llvm.inline_asm(Float32.mlir_type, [x.ir_value()],
    "tanh.approx.f32 $0, $1;", "=f,f", ...)."""
    from cutlass._mlir.dialects import llvm

    @cute.kernel
    def k(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x[tidx] = llvm.inline_asm(
            cutlass.Float32.mlir_type,
            [x[tidx].ir_value()],
            "tanh.approx.f32 $0, $1;",
            "=f,f",
            has_side_effects=False,
            is_align_stack=False,
            asm_dialect=llvm.AsmDialect.AD_ATT,
        )

    @cute.jit
    def launch(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    t = torch.linspace(-3, 3, 32)
    want = torch.tanh(t)
    with host.interpreting():
        launch(t)
    torch.testing.assert_close(t, want, rtol=2**-10, atol=0)  # the ISA's bound: 2^-10.987


# ---------------------------------------------------------------- one wgmma's completion


class _Warp:
    """What happens_before reads of a warp (hashable: warps are keys of what others know)."""

    def __init__(self, index):
        self.index, self.cta, self.touched = index, None, {}
        self.clock = self.barriers = 0
        self.knows: dict = {}


class _Memory:
    def __init__(self, n):
        self.data = np.zeros(n, np.uint8)


def test_a_completion_orders_the_warps_that_waited_for_it_only():
    """A wgmma is one operation of its warpgroup: its reads end once, and each warp that
    waited for it (or heard of such a wait through a barrier) is ordered after them; a
    warp that did neither is not (Hopper fmha's epilogue stores over Q after its own
    wait_group, while another warp of the warpgroup has not reached its own yet)."""
    mem = _Memory(16)
    first = _Warp(4)
    done = happens_before.Completion(first)
    happens_before.stamp(done, mem, np.arange(8), 1)
    waited, other, told = _Warp(6), _Warp(5), _Warp(7)
    happens_before.observed(waited, done)
    assert happens_before.unordered(waited, [done], mem, np.arange(8)) is None
    assert happens_before.unordered(other, [done], mem, np.arange(8))[0] is done
    happens_before.join([waited, told])
    assert happens_before.unordered(told, [done], mem, np.arange(8)) is None


def test_a_struct_declared_in_jit_code_reads_its_fields_where_they_are_written():
    """Hopper fmha declares its SharedStorage inside __call__, a field sized by a
    conditional over a local (`cosize(o_layout) if persistent else 0`). The fields are
    read as source text in the declaring frame's scope; the conditional had been rewritten
    for masked execution into lambdas, which that scope cannot reach: a NameError."""

    @cute.kernel
    def k(out: cute.Tensor, n: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        out[tidx] = cutlass.Int32(n)

    @cute.jit
    def launch(out: cute.Tensor):
        staged = 6
        persistent = True

        @cute.struct
        class Storage:
            a: cute.struct.MemRange[cutlass.Float32, staged * 2 if persistent else 0]

        k(out, cute.size_in_bytes(cutlass.Int8, cute.make_layout(staged))).launch(
            grid=[1, 1, 1], block=[32, 1, 1]
        )

    out = torch.zeros(32, dtype=torch.int32)
    with host.interpreting():
        launch(out)
    assert torch.equal(out, torch.full((32,), 6, dtype=torch.int32))
