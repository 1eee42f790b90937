"""Unit tests of the executor fixes a survey of the CuTe DSL examples no other test ran
needed (tests/test_nvidia_survey_examples.py runs the examples and notebooks themselves with
a full CUTLASS checkout). These run in CI, with no example at hand."""

from __future__ import annotations

import warnings

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
import torch

from course.execute import api, host, translate
from course.execute.cuda_on_cpu import cuda_on_cpu
from course.execute.hazards import Unmodelled
from course.execute.numeric import by_name
from course.execute.static_layout import Layout
from course.execute.tensor import TensorSSA

TC = api.MODULES["cutlass.cute.nvgpu.tcgen05"]
CUTE = api.MODULES["cutlass.cute"]
F32, I32 = by_name("Float32"), by_name("Int32")


# ---------------------------------------------------------------- an op's own fields


def _f16_op():
    k = api.MODULES["cutlass.cute.nvgpu"].OperandMajorMode.K
    f16 = api.MODULES["cutlass"].Float16
    return TC.MmaF16BF16Op(f16, F32, (128, 64, 16), TC.CtaGroup.ONE, TC.OperandSource.SMEM, k, k)


def test_an_mma_ops_dataclass_field_is_cutes_answer():
    """`tiled_mma.op.shape_mnk` (a field each instance of CuTe's op gets, not its class):
    asked of CuTe, not called the kernel's AttributeError."""
    assert tuple(_f16_op().shape_mnk) == (128, 64, 16)


def test_a_field_cutes_op_lacks_is_still_the_kernels_error():
    with pytest.raises(AttributeError) as caught:
        _f16_op().shape_mnkl
    assert not isinstance(caught.value, Unmodelled)


# ---------------------------------------------------------------- deprecated aliases


def test_a_deprecated_alias_imported_at_module_level_is_the_standin():
    """`from cutlass.cute.nvgpu.tcgen05 import OperandMajorMode` (an enum class of its own
    that tcgen05's module __getattr__ serves) reaches kernel code as the stand-in's."""
    import cutlass.cute.nvgpu.tcgen05 as real_tcgen05

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alias = real_tcgen05.OperandMajorMode
    got = translate.Translator().value(alias)
    assert got is TC.OperandMajorMode and got.K is TC.OperandMajorMode.K


def test_tcgen05_mma_is_the_module_of_its_ops():
    assert TC.mma.SmemLayoutAtomKind.K_SW128 is TC.SmemLayoutAtomKind.K_SW128


def test_tcgen05_make_smem_layout_atom_is_cutes():
    from course.cute.trace import on_cpu

    import cutlass.cute.nvgpu.tcgen05 as real_tcgen05

    ours = TC.make_smem_layout_atom(TC.SmemLayoutAtomKind.MN_SW128, by_name("Float16"))
    theirs = on_cpu(
        lambda: str(
            real_tcgen05.make_smem_layout_atom(
                real_tcgen05.SmemLayoutAtomKind.MN_SW128, cutlass.Float16
            )
        ),
        arch="sm_100a",
    )
    assert str(ours) == theirs


# ---------------------------------------------------------------- layout algebra by keyword


def test_layout_algebra_takes_its_first_argument_by_keyword():
    by_keyword = CUTE.make_ordered_layout(shape=(2, 3, 4), order=(1, 0, 2))
    assert by_keyword == CUTE.make_ordered_layout((2, 3, 4), order=(1, 0, 2))
    assert by_keyword.stride == (3, 1, 6)  # mode 1 fastest, then 0, then 2
    with pytest.raises(TypeError, match="shape"):
        CUTE.make_ordered_layout(order=(1, 0, 2))


def test_depth_is_cutes():
    assert [api.depth(x) for x in (4, (4, 2), (4, (2, 8)))] == [0, 1, 2]
    assert api.depth(Layout((4, (2, 8)), (1, (4, 8)))) == 2


# ---------------------------------------------------------------- the host side


@pytest.mark.parametrize("capability, sms", [((10, 3), 160), ((12, 0), 170)])
def test_hardware_info_of_blackwell_ultra_and_geforce(capability, sms):
    with cuda_on_cpu(capability):
        import cutlass.utils as utils

        assert utils.HardwareInfo().get_device_multiprocessor_count() == sms
    with cuda_on_cpu((11, 0)), pytest.raises(Unmodelled, match="sm_110"):
        import cutlass.utils as utils

        utils.HardwareInfo()


def test_cutlass_cuda_context_and_stream_on_the_cpu():
    with cuda_on_cpu((9, 0)):
        assert cutlass.cuda.initialize_cuda_context() is None
        assert int(cutlass.cuda.default_stream()) == 0
        cutlass.cuda.stream_sync(cutlass.cuda.default_stream())


@cute.kernel
def _fill_through_pointer(p: cute.Pointer):
    t = cute.make_tensor(p, cute.make_layout(32))
    tid, _, _ = cute.arch.thread_idx()
    t[tid] = cutlass.Float32(tid) * 2.0


@cute.jit
def _launch_fill(p: cute.Pointer):
    _fill_through_pointer(p).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_from_dlpack_tensors_iterator_points_into_its_storage():
    """Host code that hands the kernel `from_dlpack(t).iterator` (no data_ptr() call):
    the pointer is into t's own storage, so the kernel's stores land there."""
    from cutlass.cute.runtime import from_dlpack

    x = torch.zeros(32, dtype=torch.float32)
    with host.interpreting():
        _launch_fill(from_dlpack(x, assumed_align=16).iterator)
    assert x.tolist() == [2.0 * i for i in range(32)]


@cute.kernel
def _integers(out: cute.Tensor):
    x = cutlass.Int32(42)
    out[0] = x.to(cutlass.Float32)
    out[1] = cutlass.Int32(300).to(cutlass.Int8).to(cutlass.Float32)
    out[2] = cutlass.Float32(3.75).to(cutlass.Int32).to(cutlass.Float32)


@cute.jit
def _launch_integers(out: cute.Tensor):
    _integers(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_an_integer_kernel_code_makes_converts_as_cutes():
    """`cutlass.Int32(42).to(Float32)`; 300 into Int8 wraps to 44; 3.75 into Int32 is 3."""
    out = torch.zeros(3, dtype=torch.float32)
    with host.interpreting():
        _launch_integers(out)
    assert out.tolist() == [42.0, 44.0, 3.0]


# ---------------------------------------------------------------- TensorSSA


def _ssa(array: np.ndarray, dtype=F32) -> TensorSSA:
    """A TensorSSA of `array`'s values at their coordinates (colexicographic, as CuTe)."""
    return TensorSSA(array.ravel(order="F"), tuple(array.shape), dtype)


def test_slicing_a_tensorssa_by_a_coordinate_with_none_modes():
    src = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    got = _ssa(src)[(None, 1, None)]
    assert got.shape == (4, 3)
    assert got.values.tolist() == src[:, 1, :].ravel(order="F").tolist()
    assert _ssa(src)[(2, 1, 0)] == src[2, 1, 0]


def test_floor_division_and_remainder_are_pythons():
    """CuTe DSL lowers `//` and `%` with Python's signs (floor; the divisor's sign)."""
    a = np.array([-7, 7, -8], dtype=np.int64)
    assert (_ssa(a, I32) // 2).values.tolist() == [-4, 3, -4]
    assert (_ssa(a, I32) % 3).values.tolist() == [2, 1, 1]
    f = np.array([-7.5, 7.5], dtype=np.float32)
    assert (_ssa(f) % 2.0).values.tolist() == [0.5, 1.5]
    with pytest.raises(Unmodelled, match="division by zero"):
        _ssa(a, I32) // _ssa(np.array([1, 0, 2]), I32)


def test_bitwise_operators_on_integers():
    a, b = _ssa(np.array([1, 2, 3]), I32), _ssa(np.array([2, 2, 4]), I32)
    assert (a ^ b).values.tolist() == [3, 0, 7]
    assert (a | b).values.tolist() == [3, 2, 7]
    assert (a & b).values.tolist() == [0, 2, 0]
    assert (a & b).dtype is I32


def test_broadcasting_modes_of_extent_one():
    row = np.array([[0.0, 1.0, 2.0]], dtype=np.float32)  # (1, 3)
    col = np.array([[0.0], [10.0], [20.0], [30.0]], dtype=np.float32)  # (4, 1)
    stretched = _ssa(row).broadcast_to((4, 3))
    assert stretched.shape == (4, 3)
    assert stretched.values.tolist() == np.broadcast_to(row, (4, 3)).ravel(order="F").tolist()
    assert (_ssa(row) + _ssa(col)).values.tolist() == (row + col).ravel(order="F").tolist()
    with pytest.raises(Unmodelled, match="broadcast_to"):
        _ssa(row).broadcast_to((4, 6))


def test_print_tensor_of_a_tensorssa_prints_its_values(capsys):
    api.print_tensor(_ssa(np.array([3.0, 4.0], dtype=np.float32)))
    assert "[3. 4.]" in capsys.readouterr().out
