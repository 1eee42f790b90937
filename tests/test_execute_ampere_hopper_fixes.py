"""Unit tests of the executor fixes that NVIDIA's Ampere and Hopper examples the course does
not name needed (flash_attention_v2, elementwise_add_autotune, dense_gemm_fp8_2xacc; the
examples themselves run in tests/test_nvidia_more_examples.py with a full CUTLASS checkout).
These run in CI, with no example at hand: each builds its own small kernel."""

import contextlib
import math

import numpy as np
import pytest
import torch

from course.execute import hazards, host
from course.execute.cuda_on_cpu import cuda_on_cpu


def _run(launch, *args):
    with host.interpreting():
        launch(*args)


# ---------------------------------------------------------------- TensorSSA.reduce


def test_tensorssa_reduce_folds_the_profiles_modes_per_lane():
    """`acc_S_row.reduce(cute.ReductionOp.MAX, -inf, 0)` (flash attention's row maximum)
    was unmodelled. A (4, 3) fragment per lane: depth-0 profiles fold every value from the
    init value; (None, 1) folds mode 1 and keeps mode 0, colexicographically."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def fold(out_max: cute.Tensor, out_sum: cute.Tensor, out_rows: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        frag = cute.make_rmem_tensor((4, 3), cutlass.Float32)
        for i in cutlass.range_constexpr(12):
            frag[i] = cutlass.Float32(tx * 100 + i)
        ssa = frag.load()
        out_max[tx] = ssa.reduce(cute.ReductionOp.MAX, -cutlass.Float32.inf, 0)
        out_sum[tx] = ssa.reduce(cute.ReductionOp.ADD, 1.0, 0)
        rows = ssa.reduce(cute.ReductionOp.MIN, cutlass.Float32.inf, (None, 1))
        for m in cutlass.range_constexpr(4):
            out_rows[tx, m] = rows[m]

    @cute.jit
    def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
        fold(a, b, c).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out_max, out_sum = torch.zeros(32), torch.zeros(32)
    out_rows = torch.zeros(32, 4)
    _run(launch, out_max, out_sum, out_rows)
    lane = torch.arange(32, dtype=torch.float32)
    assert torch.equal(out_max, lane * 100 + 11)
    assert torch.equal(out_sum, lane * 1200 + 66 + 1)
    # element (m, n) is index m + 4 n: the minimum over n is at n = 0
    assert torch.equal(out_rows, lane[:, None] * 100 + torch.arange(4.0)[None, :])


def test_reduce_max_propagates_nan_and_rejects_an_incongruent_profile():
    """MAX lowers to MLIR's maximumf, which propagates NaN (unlike fmax); a profile not
    weakly congruent to the shape is CuTe DSL's ValueError."""
    from course.execute.numeric import Float32
    from course.execute.tensor import ReductionOp, TensorSSA

    ssa = TensorSSA(np.array([1.0, np.nan, 3.0], dtype=np.float32), (3,), Float32)
    assert math.isnan(ssa.reduce(ReductionOp.MAX, -math.inf, 0))
    grid = TensorSSA(np.arange(6, dtype=np.float32), (2, 3), Float32)
    kept = grid.reduce(ReductionOp.ADD, 0.0, (1, None))  # fold mode 0: columns' sums
    assert kept.shape == (3,) and kept.values.tolist() == [1.0, 5.0, 9.0]
    with pytest.raises(ValueError):
        grid.reduce(ReductionOp.ADD, 0.0, (None, 1, 1))


# ---------------------------------------------------------------- shuffles, votes, fmax


def test_shuffles_follow_ptx_shfl_sync():
    """shuffle_sync_bfly (flash attention's quad reduction), _down, _up and _idx were
    unmodelled: each lane reads the lane PTX's shfl.sync names, or keeps its own value
    where that lane falls outside the clamp (down past lane 31, up below lane 0)."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def shuffles(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        v = cutlass.Float32(tx)
        out[tx, 0] = cute.arch.shuffle_sync_bfly(v, offset=2, mask=-1, mask_and_clamp=31)
        out[tx, 1] = cute.arch.shuffle_sync_down(v, offset=3)
        out[tx, 2] = cute.arch.shuffle_sync_up(v, offset=5)
        out[tx, 3] = cute.arch.shuffle_sync(v, offset=7)
        # a segment of 8 lanes (c = (32 - 8) << 8 | 7): idx 1 is lane 1 of each segment
        out[tx, 4] = cute.arch.shuffle_sync(v, offset=1, mask_and_clamp=(24 << 8) | 7)
        quad_max = cute.arch.fmax(v, cute.arch.shuffle_sync_bfly(v, offset=2))
        quad_max = cute.arch.fmax(quad_max, cute.arch.shuffle_sync_bfly(quad_max, offset=1))
        out[tx, 5] = quad_max

    @cute.jit
    def launch(out: cute.Tensor):
        shuffles(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32, 6)
    _run(launch, out)
    lane = torch.arange(32)
    assert out[:, 0].tolist() == (lane ^ 2).tolist()
    assert out[:, 1].tolist() == torch.where(lane + 3 <= 31, lane + 3, lane).tolist()
    assert out[:, 2].tolist() == torch.where(lane - 5 >= 0, lane - 5, lane).tolist()
    assert out[:, 3].tolist() == [7.0] * 32
    assert out[:, 4].tolist() == ((lane // 8) * 8 + 1).tolist()
    assert out[:, 5].tolist() == ((lane // 4) * 4 + 3).tolist()


def test_a_shuffle_behind_a_branch_on_the_lane_is_a_collective_hazard():
    """shfl.sync with the full member mask waits for all 32 lanes: half the warp reaching
    it is a hang on the GPU, named with the line."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def half(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        if tx < 16:
            out[tx] = cute.arch.shuffle_sync_bfly(cutlass.Float32(tx), offset=1)

    @cute.jit
    def launch(out: cute.Tensor):
        half(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with pytest.raises(hazards.Hazard) as caught:
        _run(launch, torch.zeros(32))
    assert caught.value.kind == hazards.COLLECTIVE
    assert "shfl.sync" in str(caught.value)


def test_sync_warp_from_the_whole_warp_runs_and_from_half_of_it_is_a_collective_hazard():
    """bar.warp.sync (cute.arch.sync_warp) reached by every lane changes no value; with the
    full mask behind a branch on the lane, the lanes that never come hang it on the GPU."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def synced(out: cute.Tensor, half: cutlass.Constexpr):
        tx, _, _ = cute.arch.thread_idx()
        if cutlass.const_expr(half):
            if tx < 16:
                cute.arch.sync_warp()
        else:
            cute.arch.sync_warp()
        out[tx] = cutlass.Float32(tx)

    @cute.jit
    def launch(out: cute.Tensor, half: cutlass.Constexpr):
        synced(out, half).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32)
    _run(launch, out, False)
    assert out.tolist() == list(range(32))
    with pytest.raises(hazards.Hazard) as caught:
        _run(launch, torch.zeros(32), True)
    assert caught.value.kind == hazards.COLLECTIVE
    assert "sync_warp" in str(caught.value)


def test_votes_fmax_fmin_and_rcp_approx():
    """vote.sync's any/all/ballot over the warp; fmax/fmin are NaN-quiet (PTX max.f32)
    unless nan=True; rcp_approx is 1/x."""
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def misc(out: cute.Tensor):
        tx, _, _ = cute.arch.thread_idx()
        odd = tx % 2 == 1
        out[tx, 0] = cutlass.Float32(cute.arch.vote_any_sync(tx == 5))
        out[tx, 1] = cutlass.Float32(cute.arch.vote_all_sync(odd))
        out[tx, 2] = cutlass.Float32(cute.arch.vote_ballot_sync(tx < 3))
        out[tx, 3] = cute.arch.fmax(cutlass.Float32.nan, cutlass.Float32(tx))
        out[tx, 4] = cute.arch.fmin(cutlass.Float32(tx), 4.0)
        out[tx, 5] = cute.arch.rcp_approx(cutlass.Float32(tx + 1))

    @cute.jit
    def launch(out: cute.Tensor):
        misc(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32, 6)
    _run(launch, out)
    lane = torch.arange(32, dtype=torch.float32)
    assert out[:, 0].tolist() == [1.0] * 32
    assert out[:, 1].tolist() == [0.0] * 32
    assert out[:, 2].tolist() == [7.0] * 32
    assert torch.equal(out[:, 3], lane)
    assert torch.equal(out[:, 4], torch.clamp(lane, max=4.0))
    assert torch.allclose(out[:, 5], 1 / (lane + 1))
    from course.execute.warp_ops import NAMES

    assert math.isnan(NAMES["cutlass.cute.arch"]["fmax"](float("nan"), 1.0, nan=True))


# ---------------------------------------------------------------- autotuning, fp8 host tensors


def _autotuned_module():
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def write(out: cute.Tensor, value: cutlass.Constexpr, reach: cutlass.Constexpr):
        tx, _, _ = cute.arch.thread_idx()
        out[tx * reach] = cutlass.Float32(value)

    @cute.jit
    def launch(out: cute.Tensor, value: cutlass.Constexpr = 1, reach: cutlass.Constexpr = 1):
        write(out, value, reach).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return launch


def test_testing_tune_runs_every_configuration_and_keeps_the_first():
    """cutlass.testing.tune timed each configuration through the driver (and the L2 size):
    every configuration failed and tune said "No best kernel found". On the executor each
    runs once and they tie (no time is modelled): the first that runs is kept."""
    import cutlass.cute as cute
    from cutlass import testing

    launch = _autotuned_module()
    out = torch.zeros(32)
    seen = []

    def compile_one(out, value=1):
        seen.append(value)
        if value == 2:
            raise ValueError("cannot implement")  # tune skips it, as on the GPU
        compiled = cute.compile(launch, out, value)
        return lambda: compiled(out)

    with cuda_on_cpu((8, 0)), host.interpreting() as session:
        best = testing.tune(
            compile_one,
            params_dict={"value": [2, 3, 4]},
            kernel_arguments=testing.JitArguments(out),
        )
    assert best == {"value": 3}
    assert seen == [2, 3, 4] and len(session.results) == 2
    assert out.tolist() == [4.0] * 32  # the last configuration ran too


def test_a_hazard_inside_testing_tune_is_not_swallowed():
    """tune skips a configuration that raises; a hazard the executor found there (an
    out-of-bounds store) must stop the script, not turn into "No best kernel found"."""
    import cutlass.cute as cute
    from cutlass import testing

    launch = _autotuned_module()
    out = torch.zeros(32)

    def compile_one(out, reach=1):
        compiled = cute.compile(launch, out, 1, reach)
        return lambda: compiled(out)

    with cuda_on_cpu((8, 0)), host.interpreting():
        with pytest.raises(hazards.Hazard) as caught:
            testing.tune(
                compile_one,
                params_dict={"reach": [2, 1]},
                kernel_arguments=testing.JitArguments(out),
            )
    assert caught.value.kind == hazards.OUT_OF_BOUNDS


def test_autotune_jit_drops_the_compiled_functions_constexpr_arguments():
    """testing.autotune_jit asks the compiled function `execution_args.
    get_constexpr_args()` (which arguments it no longer takes): the executor's Compiled
    lacked it. It tunes over a Constexpr and calls the best without it."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute import testing as cute_testing

    @cute.kernel
    def write(out: cute.Tensor, value: cutlass.Constexpr):
        tx, _, _ = cute.arch.thread_idx()
        out[tx] = out[tx] + cutlass.Float32(value)

    @cute.jit
    def launch(out: cute.Tensor, n, value: cutlass.Constexpr = 1):
        write(out, value).launch(grid=[1, 1, 1], block=[n, 1, 1])

    out = torch.zeros(32)
    with cuda_on_cpu((8, 0)), host.interpreting() as session:
        # decorated inside, as a script run by `python -m course.execute` is imported: the
        # decorator takes cutlass.testing's timing function when it wraps
        tuned = cute_testing.autotune_jit(params_dict={"value": [5, 6]}, update_on_change=["n"])
        tuned(launch)(out, 32)
    # each configuration ran once, then the first (kept) once more
    assert out.tolist() == [5.0 + 6.0 + 5.0] * 32
    assert len(session.results) == 3
    compiled = host.Compiled(launch, session, (out, 32, 7))
    assert compiled.execution_args.get_constexpr_args() == [
        {"argument_index": 2, "argument_name": "value"}
    ]


def test_cute_tensor_like_fills_a_float8_tensor_on_the_cpu():
    """cutlass.torch.cute_tensor_like converts float32 values into a float8 tensor with a
    kernel (cute.testing.convert): unmodelled, so no fp8 example could make its inputs.
    On the CPU each value is rounded to nearest even, as torch converts it."""
    import cutlass
    import cutlass.torch as cutlass_torch

    values = torch.tensor([[0.0, 1.0, -2.5, 3.1], [448.0, 0.3, -0.07, 17.0]])
    with cuda_on_cpu((9, 0)):
        cute_tensor, stored = cutlass_torch.cute_tensor_like(
            values, cutlass.Float8E4M3FN, is_dynamic_layout=True, assumed_align=16
        )
    assert stored.dtype == torch.float8_e4m3fn
    assert torch.equal(stored.float(), values.to(torch.float8_e4m3fn).float())
    assert cute_tensor.element_type is cutlass.Float8E4M3FN


@contextlib.contextmanager
def _swapped_value(box: list, value):
    saved = box[0]
    box[0] = value
    try:
        yield
    finally:
        box[0] = saved


def test_a_contextmanager_of_kernel_code_keeps_its_decorator():
    """Hopper's fmha launches its kernel inside `with _use_optimized_mbarrier_wait():`, a
    @contextlib.contextmanager of its own: translated without the decorator, the `with`
    got a bare generator and the run was reported as the kernel's TypeError."""
    import cutlass
    import cutlass.cute as cute

    box = [1]

    @cute.kernel
    def write(out: cute.Tensor, value: cutlass.Constexpr):
        tx, _, _ = cute.arch.thread_idx()
        out[tx] = cutlass.Float32(value)

    @cute.jit
    def launch(out: cute.Tensor):
        with _swapped_value(box, 9):
            write(out, box[0]).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32)
    _run(launch, out)
    assert out.tolist() == [9.0] * 32 and box == [1]
