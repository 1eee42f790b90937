"""Correct solutions a held-out review found refused on a CPU, and the fixes that let the
checker judge them: the TMA partition's stand-in (08), a WGMMA main loop's gemm over a
whole k-tile in the loop model (10), CuTe DSL's separate-D gemm blamed on CuTe DSL (06),
a tile shape spelled with a 1-tuple (02)."""

import numpy as np
import pytest

from course.exercises.check import check


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch):
    """These verdicts are the tests', not a learner's: nothing goes to a progress file."""
    monkeypatch.setenv("COURSE_PROGRESS", "off")


def _verdict(exercise, fn):
    return check(exercise, fn, quiet=True, gpu=False)


# ---------------------------------------------------------------- 08: the TMA partition


def _view(select, box=32):
    """A TMA partition of a row-major 4x8 box (grouped into mode 0), over a placeholder
    iterator: the layout is read from the tensor's layout and the selection alone."""
    from course.execute.static_layout import Layout
    from course.execute.tensor import Tensor
    from course.execute.tma import TmaView

    return TmaView(Tensor(object(), Layout(((4, 8),), ((8, 1),))), np.asarray(select), box)


def test_tma_partition_layout_is_the_copied_elements_in_address_order():
    whole = _view(np.arange(32)).layout
    assert (whole.shape, whole.stride, whole.size) == (((32,),), ((1,),), 32)
    # multicast, CTA 1 of 2: rows 2-3 of the box (offsets 16..31), colex indices r + 4c
    rows_2_3 = sorted(r + 4 * c for r in (2, 3) for c in range(8))
    half = _view(rows_2_3).layout
    assert (half.shape, half.stride) == (((16,),), ((1,),))


def test_tma_partition_layout_refuses_what_an_int_stride_cannot_say():
    from course.execute.hazards import Unmodelled
    from course.execute.tensor import identity_tensor
    from course.execute.tma import TmaView

    with pytest.raises(Unmodelled, match="unevenly spaced"):
        _ = _view([0, 1, 4 * 5]).layout  # offsets 0, 8, 5: no one stride
    with pytest.raises(Unmodelled, match="TMA tensor"):
        _ = TmaView(identity_tensor((4, 8)), np.arange(32), 32).layout


def test_tma_partition_is_a_standin_of_cute_tensor():
    """An attribute CuTe DSL's tensor has and the stand-in lacks is the executor's gap; one
    it lacks too stays the kernel's own AttributeError."""
    from course.execute.hazards import UnmodelledAttribute

    view = _view(np.arange(32))
    with pytest.raises(UnmodelledAttribute, match="does not model"):
        view.mark_layout_dynamic  # noqa: B018 -- _Tensor has it, TmaView does not
    with pytest.raises(AttributeError) as raised:
        view.no_such_attribute  # noqa: B018
    assert not isinstance(raised.value, UnmodelledAttribute)


def test_arm_and_load_counting_bytes_from_the_destination_is_right():
    from course.exercises.solutions.nb08_solutions import arm_and_load_bytes_from_dst

    verdict = _verdict("08.arm_and_load", arm_and_load_bytes_from_dst)
    assert verdict.status == "right", verdict.message


# ---------------------------------------------------------------- 10: a gemm over a k-tile


def test_wgmma_loop_model_runs_a_gemm_over_a_whole_k_tile():
    from course.exercises.solutions.nb10_solutions import mainloop_whole_k_tile_gemm
    from course.sim import wgmma_loop

    out = wgmma_loop.sweep(mainloop_whole_k_tile_gemm, k_tiles_list=(1, 3), seeds=2)
    assert out.ok, out.detail


def test_wgmma_loop_model_counts_each_k_block_of_a_whole_k_tile():
    """A whole-k-tile gemm issued twice multiplies every k-block twice: the model expands
    the slice into its k-blocks rather than counting it once."""
    from course.exercises.learner_code import edited
    from course.exercises.solutions.nb10_solutions import mainloop_whole_k_tile_gemm
    from course.sim import wgmma_loop

    call = (
        "        cute.gemm(tiled_mma, acc, tCrA[None, None, None, read.index], "
        "tCrB[None, None, None, read.index], acc)\n"
    )
    twice = edited(mainloop_whole_k_tile_gemm, "mainloop__whole_k_tile_twice", (call, call * 2))
    out = wgmma_loop.run(twice, _wgmma_config(), k_tiles=2)
    assert (out.kind, out.mistake) == ("misuse", "every k-block"), out.detail


def _wgmma_config():
    from kernels.wgmma_gemm import Config

    return Config()


def test_whole_k_tile_mainloop_is_right():
    from course.exercises.solutions.nb10_solutions import mainloop_whole_k_tile_gemm

    verdict = _verdict("10.wgmma_mainloop", mainloop_whole_k_tile_gemm)
    assert verdict.status == "right", verdict.message


# ---------------------------------------------------------------- 06: a separate D


def test_separate_d_is_told_as_cute_dsls_fault():
    """CuTe DSL 4.8.1 writes cute.gemm's result into C when D is another fragment: the PTX
    has no mma.sync, and the hint names CuTe DSL, not a missing store or thread_idx."""
    from course.exercises.solutions.nb06_solutions import mma_tile_kernel__separate_d

    verdict = _verdict("06.mma_tile", mma_tile_kernel__separate_d)
    assert verdict.status == "wrong"
    assert "CuTe DSL's fault" in verdict.message
    assert "never reads thread_idx" not in verdict.message
    assert "copy the accumulator tCrC back" not in verdict.message


def test_a_kernel_that_stores_nothing_is_still_told_to_store():
    from course.exercises.learner_code import edited
    from course.exercises.solutions.nb06_solutions import mma_tile_kernel

    no_store = edited(
        mma_tile_kernel, "mma_tile_kernel__no_store", ("    cute.autovec_copy(tCrC, tCgC)\n", "")
    )
    verdict = _verdict("06.mma_tile", no_store)
    assert verdict.status == "wrong"
    assert "the kernel stores nothing" in verdict.message
    assert "CuTe DSL's fault" not in verdict.message


def test_separate_d_is_read_from_the_gemm_call():
    from course.exercises.nb06 import gemm_with_separate_d

    assert gemm_with_separate_d("cute.gemm(mma, tCrD, tCrA, tCrB, tCrZ)")
    assert not gemm_with_separate_d("cute.gemm(mma, tCrC, tCrA, tCrB, tCrC)")
    assert not gemm_with_separate_d("cute.gemm(mma, acc, a[None, kb], b[None, kb], acc)")


# ---------------------------------------------------------------- 02: a 1-tuple in the shape


def test_rank_one_tiler_mode_is_right():
    from course.exercises.solutions.nb02_solutions import padded_tiles_rank_one_tiler

    verdict = _verdict("02.padded_tiles", padded_tiles_rank_one_tiler)
    assert verdict.status == "right", verdict.message


def test_unwrapped_shape_keeps_the_modes():
    from course.exercises.nb02 import unwrapped

    assert unwrapped(((2, (4,)), (2, 2))) == ((2, 4), (2, 2))
    assert unwrapped(((2, 4), 2, 2)) != ((2, 4), (2, 2))  # tiled_divide's flat rest modes
