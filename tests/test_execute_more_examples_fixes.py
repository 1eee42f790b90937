"""Unit tests of the executor fixes that NVIDIA examples the course does not name needed
(tests/test_nvidia_more_examples.py runs the examples themselves; these run in CI, with no
example at hand)."""

import pytest
import torch

from course.execute import tensor as executor_tensor
from course.execute.cuda_on_cpu import cuda_on_cpu


@pytest.mark.parametrize(
    "shape, coord",
    [
        ((1, 128, 1, 64), (0, 127, 0, 63)),  # flash attention's (batch, seqlen, head, dim)
        ((3, 1000, 2), (2, 999, 1)),  # a GEMM's (M, N, L) with a mode of 512 or more
        ((4, 700, 2, 3, 5), (3, 699, 1, 2, 4)),
    ],
)
def test_identity_tensors_take_modes_that_real_kernels_have(shape, coord):
    """An identity tensor of rank 3-4 with a mode of 64 (rank 4) or 512 (rank 3) or more
    was refused as unmodelled; its last coordinate reads back as itself."""
    t = executor_tensor.identity_tensor(shape)
    assert t[coord] == coord
    assert t[tuple(0 for _ in shape)] == tuple(0 for _ in shape)


def test_torch_manual_seed_under_cuda_on_cpu():
    """torch.manual_seed calls torch.cuda.manual_seed_all, which cuda_on_cpu replaced by
    torch.manual_seed: a recursion. Now both seed the CPU generator that makes "cuda"
    tensors, so a script's seeding is repeatable."""
    with cuda_on_cpu():
        torch.manual_seed(7)
        first = torch.randn(4, device="cuda")
        torch.cuda.manual_seed_all(7)
        second = torch.randn(4, device="cuda")
    assert torch.equal(first, second)


def test_product_each_sets_a_grid_and_repeat_like_a_tuple():
    """`cute.product_each` (NVIDIA's elementwise_apply sizes its grid with it; the TMA
    tutorial its tile) and `cute.repeat_like` were unmodelled; both are asked of CuTe DSL."""
    import cutlass
    import cutlass.cute as cute

    from course.execute import host

    @cute.kernel
    def mark(out: cute.Tensor):
        bx, by, _ = cute.arch.block_idx()
        tx, _, _ = cute.arch.thread_idx()
        if tx == 0:
            out[bx, by] = cutlass.Int32(bx * 10 + by + 1)

    @cute.jit
    def launch(out: cute.Tensor):
        zeros = cute.repeat_like(0, ((2, 3), 4))
        assert zeros == ((0, 0), 0)
        assert cute.repeat_like(None, cutlass.Float32(1.5)) is None  # a value is a leaf
        mark(out).launch(grid=cute.product_each(((1, 3), (2, 2))), block=[32, 1, 1])

    out = torch.zeros(3, 4, dtype=torch.int32)
    with host.interpreting():
        launch(out)
    assert torch.equal(out, torch.arange(3)[:, None] * 10 + torch.arange(4)[None, :] + 1)


def test_numeric_types_have_cute_dsls_class_properties():
    """Flash attention fills its running row maximum with `-cutlass.Float32.inf`; the
    executor's numeric types lacked the class properties CuTe DSL's have (inf, nan, zero,
    min, max, signed, is_integer), and the kernel was reported as crashing."""
    import cutlass

    from course.execute.numeric import by_name

    for name in ("Float32", "Float16", "BFloat16", "Int32", "Uint8", "Int8", "Boolean"):
        ours, real = by_name(name), getattr(cutlass, name)
        assert ours.is_integer == real.is_integer, name
        assert ours.zero == real.zero and type(ours.zero) is type(real.zero), name
        if real.is_integer:
            assert (ours.min, ours.max, ours.signed) == (real.min, real.max, real.signed), name
            assert not hasattr(ours, "inf") and not hasattr(real, "inf")
        else:
            assert ours.inf == real.inf and str(ours.nan) == str(real.nan) == "nan", name
            assert not hasattr(ours, "max") and not hasattr(real, "max")


@pytest.mark.parametrize("capability, sms", [((9, 0), 132), ((10, 0), 148)])
def test_hardware_info_answers_for_the_executors_gpu(capability, sms):
    """NVIDIA's persistent GEMMs size their grid by `utils.HardwareInfo()
    .get_max_active_clusters(n)`, which asked the CUDA driver (absent: the script died in
    the driver's loader). Under cuda_on_cpu it answers for the GPU the executor is."""
    import cutlass.utils as utils

    with cuda_on_cpu(capability):
        info = utils.HardwareInfo()
        assert info.get_device_multiprocessor_count() == sms
        assert info.get_max_active_clusters(1) == sms
        assert info.get_max_active_clusters(2) == sms // 2
        with pytest.raises(ValueError):
            info.get_max_active_clusters(33)
    assert utils.HardwareInfo.__module__ == "cutlass.utils.hardware_info"  # restored


def test_layout_modes_by_index_and_their_max_alignment():
    """NVIDIA's SIMT sgemm picks its copy width by `mA.layout[0].max_alignment % 16`:
    `Layout[i]` and `max_alignment` were missing (a TypeError blamed on the host code).
    The values are CuTe's own for these static layouts."""
    from course.execute.static_layout import Layout

    m_major = Layout((128, 16), (1, 128))
    k_major = Layout((128, 16), (16, 1))
    assert m_major[0] == Layout(128, 1) and m_major[1] == Layout(16, 128)
    assert m_major[0].max_alignment == 128  # contiguous along M: 128 elements
    assert k_major[0].max_alignment == 1  # strided along M
    assert Layout((6, 4), (1, 6))[0].max_alignment == 6


def test_a_kernels_python_range_takes_cute_dsls_loop_keywords():
    """CuTe DSL's preprocessor takes `for k in range(n, unroll_full=True)` in jit code (NVIDIA's
    sgemm writes it); the executor passed the keyword to Python's range (a TypeError)."""
    import cutlass
    import cutlass.cute as cute

    from course.execute import host

    @cute.kernel
    def count(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        if tx == 0:
            total = cutlass.Int32(0)
            for k in range(5, unroll_full=True):
                total += k
            for k in range(1, 4, unroll=2):
                total += 10 * k
            out[0] = total

    @cute.jit
    def launch(out: cute.Tensor):
        count(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(1, dtype=torch.int32)
    with host.interpreting():
        launch(out)
    assert int(out[0]) == 0 + 1 + 2 + 3 + 4 + 10 * (1 + 2 + 3)


def test_a_predicated_off_cp_async_zero_fills_its_destination():
    """CuTe DSL predicates a cp.async by its src-size (PTX `cp.async ... 4, %r` with %r
    `selp`ed to 4 or 0): a false predicate zero-fills the shared memory it would write.
    NVIDIA's sgemm relies on it for its first, partial k-tile; the executor skipped the copy
    and the stale (poisoned) shared memory made every output NaN."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync

    from course.execute import host

    @cute.kernel
    def fill(src: cute.Tensor, out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        staged = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), 16)
        staged[tx] = cutlass.Float32(7.0)
        cute.arch.sync_threads()
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        keep = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Boolean)
        keep[0] = tx < 20
        mine = cute.make_layout(1)
        cute.copy(
            atom,
            cute.make_tensor(src.iterator + tx, mine),
            cute.make_tensor(staged.iterator + tx, mine),
            pred=keep,
        )
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        out[tx] = staged[tx]

    @cute.jit
    def launch(src: cute.Tensor, out: cute.Tensor):
        fill(src, out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    src = torch.arange(1, 33, dtype=torch.float32)
    out = torch.full((32,), -1.0)
    with host.interpreting():
        launch(src, out)
    assert torch.equal(out[:20], src[:20])
    assert torch.equal(out[20:], torch.zeros(12))  # zero-filled, not the 7.0 left there
