"""Unit tests of the executor fixes NVIDIA's Blackwell EFC and mixed-input GEMMs needed
(tests/test_nvidia_blackwell_mixed_examples.py runs the examples themselves; these run in
CI, with no example at hand)."""

import types

import cutlass
import cutlass.cute as cute
import pytest
import torch


class _Helpers:
    """A script's own helper classes, as NVIDIA's EFC nests its Kernel class in EFC: no CuTe
    value and no kernel method of their own."""

    class Keeper:
        def keep(self, tidx):
            self.row = tidx  # each thread's own value, kept on one shared object

        def put(self, out, value):
            out[self.row] = value


class _UsesKeeper:
    @cute.jit
    def __call__(self, out: cute.Tensor):
        self.keeper = _Helpers.Keeper()  # made in host code, through the outer class
        self.kernel(out).launch(grid=[1, 1, 1], block=[64, 1, 1])

    @cute.kernel
    def kernel(self, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        self.keeper.keep(tidx)
        cute.arch.sync_threads()  # the other warp runs (and keeps its rows) here
        self.keeper.put(out, tidx + 1)


def test_a_helper_object_keeps_what_each_warp_set_on_it():
    """EFC's helper set each thread's partitions on one object in kernel code; the executor
    ran the helper's methods untranslated (its nested class was kept as it was) and every
    warp read back the fields the last warp had set. Now the nested class is translated and
    a field kernel code sets is the setting warp's own, as a trace's symbolic value is."""
    from course.execute import host

    out = torch.zeros(64, dtype=torch.int32)
    with host.interpreting():
        _UsesKeeper()(out)
    assert torch.equal(out, torch.arange(1, 65, dtype=torch.int32))


def test_a_field_a_warp_never_set_reads_what_was_there():
    """A warp reads the last value any warp set (what the object holds in a trace's program
    order), then the host's own; host code sees the object as it set it."""
    from course.execute import current, warp_fields

    fields = {"tile": "host"}
    one, two = object(), object()
    current.set_warp(one)
    try:
        assert warp_fields.set_in_warp(fields, "tile", "one's")
        assert "tile" not in fields  # reads now come through the layers
        current.set_warp(two)
        assert warp_fields.get_in_warp(fields, "tile") == "one's"
        assert warp_fields.set_in_warp(fields, "tile", "two's")
        current.set_warp(one)
        assert warp_fields.get_in_warp(fields, "tile") == "one's"
    finally:
        current.set_warp(None)
    assert warp_fields.get_in_warp(fields, "tile") == "host"
    assert not warp_fields.set_in_warp(fields, "tile", "again")


def test_an_mma_ops_plain_attributes_are_the_real_ops():
    """The mixed-input GEMM sizes its TMEM columns by `tiled_mma.op.a_dtype.width`: a
    recipe's attribute that is plain data is now asked of the real op on the CPU; a name
    the real class lacks stays the kernel's AttributeError."""
    from course.execute import api

    tc = api.MODULES["cutlass.cute.nvgpu.tcgen05"]
    op = tc.MmaF16BF16Op(
        api.cutlass.Float16,
        api.cutlass.Float32,
        (128, 64, 16),
        tc.CtaGroup.ONE,
        tc.OperandSource.SMEM,
        tc.OperandMajorMode.K,
        tc.OperandMajorMode.K,
    )
    assert op.a_dtype is api.cutlass.Float16 and op.a_dtype.width == 16
    assert op.acc_dtype is api.cutlass.Float32
    with pytest.raises(AttributeError, match="no attribute"):
        op.not_an_attribute_of_the_op


def test_target_version_is_the_installed_dsls_answer():
    """mixed_input_helpers picks its int4 conversion by `cutlass.target_version`; the
    executor answers as the installed CuTe DSL does."""
    from course.execute import api

    for bound in ("12.0", "13.1", "99.0"):
        assert api.cutlass.target_version(min_version=bound) == cutlass.target_version(
            min_version=bound
        )


def test_a_translated_library_is_reached_through_cutlass_itself():
    """EFC calls `cutlass.utils.gemm.sm100.epilogue_smem_copy_and_partition` through the
    top-level `cutlass`: the stand-in of cutlass.utils lacked `gemm`, a translated library
    the module re-exports, when reached that way (not through `import cutlass.utils`)."""
    from course.execute import api
    from course.execute.translate import ModuleProxy, Translator

    seen = Translator().value(cutlass)
    assert isinstance(seen.utils.gemm.sm100, ModuleProxy)
    assert seen.utils.gemm.sm100.epilogue_smem_copy_and_partition is not None
    assert seen.Float32 is api.cutlass.Float32  # the stand-in's own names come first


def test_int4_is_stored_two_to_a_byte_as_cutlass_torch_fills_it():
    """cute.testing.convert into Int4 (cutlass.torch's uint8 tensor of the same shape, the
    kernel reading 4-bit elements) was not modelled. Element offset i is the low (even i)
    or high nibble of byte i // 2, its two's-complement code; a float truncates toward
    zero as fptosi does, and one out of Int4's range is not made up."""
    from course.execute.cuda_on_cpu import cuda_on_cpu
    from course.execute.hazards import Unmodelled
    from course.execute.host import interpreting
    from course.execute.numeric import by_name

    values = torch.tensor([[-8.0, 7.0, -1.0, 2.9], [0.0, -2.7, 5.0, 1.0]])  # row-major 2x4
    with cuda_on_cpu(), interpreting():
        import cutlass.torch as cutlass_torch

        _, stored = cutlass_torch.cute_tensor_like(values, cutlass.Int4, True, 16)
    codes = [(-8) & 15, 7, (-1) & 15, 2, 0, (-2) & 15, 5, 1]  # offsets 0..7, row-major
    packed = [codes[i] | (codes[i + 1] << 4) for i in range(0, 8, 2)]
    assert stored.view(torch.uint8).reshape(-1)[:4].tolist() == packed
    int4 = by_name("Int4")
    assert int4.decode(int4.encode([-8, 7, -1, 9])).tolist() == [-8, 7, -1, -7]  # wraps
    assert (int4.min, int4.max, int4.width) == (-8, 7, 4)
    with pytest.raises(Unmodelled, match="Int4"):
        int4.encode([8.5])


def test_a_cotiled_copy_partitions_each_thread_where_cute_does():
    """make_cotiled_copy's tiler picks elements apart ((8,16,8):(8,128,1): a span of 1984
    for 1024 elements); each thread's start was taken within a compact tile of its size,
    so thread 64 of the mixed-input GEMM's transform started where CuTe puts another
    thread's and two threads stored the same shared element (a false race)."""
    from course.cute.trace import on_cpu
    from course.execute import api

    shape, stride = (((64, 2), 16), 1, 8), (((1, 8192), 64), 0, 1024)

    def make(cute_, cutlass_):
        atom = cute_.make_copy_atom(
            cute_.nvgpu.CopyUniversalOp(), cutlass_.BFloat16, num_bits_per_copy=32
        )
        layout = cute_.make_layout(shape, stride=stride)
        threads = cute_.make_layout((128, 8), stride=(8, 1))
        return cute_.make_cotiled_copy(atom, threads, layout), layout

    def real():
        tiled, layout = make(cute, cutlass)
        t = cute.make_tensor(0, layout)
        return [int(tiled.get_slice(i).partition_D(t).iterator) for i in range(128)]

    ours = types.SimpleNamespace(**vars(api.MODULES["cutlass.cute"]))
    ours.nvgpu = api.MODULES["cutlass.cute.nvgpu"]
    tiled, layout = make(ours, api.cutlass)
    regs = ours.make_rmem_tensor(ours.make_layout(16384), api.cutlass.BFloat16)
    t = ours.make_tensor(regs.iterator, layout)
    starts = [int(tiled.get_slice(i).partition_D(t).elements().reshape(-1)[0]) for i in range(128)]
    assert starts == on_cpu(real, arch="sm_100a")
    assert len(set(starts)) == 128


def test_thrfrg_a_is_asked_of_cute():
    """The mixed-input GEMM's host code sizes its scale copy with the TiledMMA's
    `_thrfrg_A(layout)`: a private name of CuTe DSL's class, which the executor reported
    as the kernel's own AttributeError. It is now CuTe's answer; a private name the
    executor's stand-in lacks and CuTe DSL's class has is its gap, not the kernel's."""
    from course.cute.trace import on_cpu
    from course.execute import api
    from course.execute.hazards import UnmodelledAttribute

    def make(cute_, cutlass_):
        tc = cute_.nvgpu.tcgen05
        op = tc.MmaF16BF16Op(
            cutlass_.BFloat16,
            cutlass_.Float32,
            (128, 64, 16),
            tc.CtaGroup.ONE,
            tc.OperandSource.SMEM,
            cute_.nvgpu.OperandMajorMode.K,
            cute_.nvgpu.OperandMajorMode.K,
        )
        return cute_.make_tiled_mma(op)

    def real():
        split = make(cute, cutlass)._thrfrg_A(cute.make_layout((128, 64)))
        return str(split), cute.size(split, mode=[1])

    ours = types.SimpleNamespace(**vars(api.MODULES["cutlass.cute"]))
    ours.nvgpu = types.SimpleNamespace(**vars(api.MODULES["cutlass.cute.nvgpu"]))
    ours.nvgpu.tcgen05 = api.MODULES["cutlass.cute.nvgpu.tcgen05"]
    tiled = make(ours, api.cutlass)
    split = tiled._thrfrg_A(ours.make_layout((128, 64)))
    text, size = on_cpu(real, arch="sm_100a")
    assert (str(split), ours.size(split, mode=[1])) == (text, size)
    with pytest.raises(UnmodelledAttribute):
        tiled._partition_shape
    with pytest.raises(AttributeError, match="no attribute"):
        tiled._no_such_private_name
