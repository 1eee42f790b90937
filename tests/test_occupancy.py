"""course.models.occupancy: the CTAs an SM holds, worked by hand here, and on a Hopper GPU
checked against the driver's own occupancy calculator for the kernels notebook 01 shows."""

import re

import pytest

from course.models.occupancy import SM_80, SM_90, occupancy


def test_threads_limit_small_kernels():
    occ = occupancy(256, 14)  # notebook 01's `scale`: 8 CTAs fill the 2048 thread slots
    assert occ.ctas == 8 and occ.limited_by == "threads" and occ.fraction == 1.0


def test_registers_are_allocated_per_warp_in_units_of_256():
    # 207 registers -> 6624 per warp -> 6656 allocated; 16384 per sub-partition holds 2 warps
    occ = occupancy(256, 207)
    assert (occ.ctas, occ.warps, occ.limited_by) == (1, 8, "registers")
    assert occupancy(256, 38).ctas == 6  # 38 -> 1280 per warp: 12 per sub-partition, 48 warps
    assert occupancy(256, 32).ctas == 8  # 32 x 32 = 1024 per warp: registers never bind


def test_shared_memory_counts_the_system_reserve_per_cta():
    assert occupancy(128, 64, 48 * 1024).ctas == 4  # (48 + 1) KiB each: 4 in 228 KiB
    assert occupancy(128, 64, 56 * 1024).ctas == 4  # 57 KiB with the reserve: 228 / 57 = 4
    assert occupancy(128, 64, 56 * 1024 + 1).ctas == 3  # one byte more: rounded up, 3 fit
    assert occupancy(128, 64, 100 * 1024).limited_by == "shared memory"
    assert occupancy(128, 64, 100 * 1024, SM_80).ctas == 1  # an A100 SM has 164 KiB


def test_the_cta_limit_binds_tiny_ctas():
    occ = occupancy(32, 16)
    assert occ.ctas == 32 and occ.limited_by == "CTAs" and occ.warps == 32


def test_impossible_ctas_are_refused():
    for args in ((0, 32), (1025, 32), (128, 256), (128, 32, 228 * 1024)):
        with pytest.raises(ValueError):
            occupancy(*args)


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize("threads", [64, 128, 256, 512, 1024])
@pytest.mark.parametrize("smem", [0, 20_000, 60_000, 120_000])
def test_the_model_equals_the_drivers_calculator_on_an_h100(threads, smem):
    """cuOccupancyMaxActiveBlocksPerMultiprocessor on notebook 01's kernels, compiled for this
    GPU: the driver's answer for every block size and dynamic shared-memory size."""
    import torch
    from cuda.bindings import driver

    from course.lessons import dsl_basics_lesson

    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    A = driver.CUfunction_attribute
    for name, art in dsl_basics_lesson.spill_demos("sm_90a").items():
        err, module = driver.cuModuleLoadData(art.cubin)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        entry = re.search(r"\.entry\s+(\w+)", art.ptx).group(1)
        err, fn = driver.cuModuleGetFunction(module, entry.encode())
        assert err == driver.CUresult.CUDA_SUCCESS, err
        _, registers = driver.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)
        _, static = driver.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)
        driver.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
        err, ctas = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, smem)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        model = occupancy(threads, registers, static + smem, SM_90)
        assert ctas == model.ctas, (name, registers, static, model.limits)
        driver.cuModuleUnload(module)
