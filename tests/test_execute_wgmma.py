"""WGMMA on the CPU executor (course.execute.wgmma): a warpgroup's wgmmas from shared memory
give torch's values, and each planted bug of WGMMA's asynchrony is named.

The kernel below is the smallest WGMMA GEMM: the whole (M, K) and (N, K) operands copied
into 128B-swizzled shared memory by plain stores, then one warpgroup per 64 rows of C issues
a wgmma per k-block, a commit group per 64 columns of K, and the accumulator goes straight
to global memory. `bug` plants one mistake.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the annotations
import re

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils

import pytest
import torch
from cutlass.memory.smem import SmemAllocator

from course.execute import Hazard, hazards, pointer, run, wgmma

TILE_K = 64  # one 128-byte swizzle row of a 16-bit type: a commit group's k-blocks


@cute.kernel
def wgmma_tile_kernel(
    gA: cute.Tensor,
    gB: cute.Tensor,
    gC: cute.Tensor,
    tiled_mma: cute.TiledMma,
    sA_layout: cute.ComposedLayout,
    sB_layout: cute.ComposedLayout,
    bug: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    threads = cute.size(tiled_mma)
    smem = SmemAllocator()
    sA = smem.allocate_tensor(gA.element_type, sA_layout, 1024)  # (M, K), swizzled
    sB = smem.allocate_tensor(gB.element_type, sB_layout, 1024)  # (N, K)
    for i in cutlass.range_constexpr(cute.size(gA) // threads):
        sA[(tidx + i * threads) % gA.shape[0], (tidx + i * threads) // gA.shape[0]] = gA[
            (tidx + i * threads) % gA.shape[0], (tidx + i * threads) // gA.shape[0]
        ]
    for i in cutlass.range_constexpr(cute.size(gB) // threads):
        sB[(tidx + i * threads) % gB.shape[0], (tidx + i * threads) // gB.shape[0]] = gB[
            (tidx + i * threads) % gB.shape[0], (tidx + i * threads) // gB.shape[0]
        ]
    if cutlass.const_expr(bug != "no_proxy_fence"):
        cute.arch.fence_proxy("async.shared", space="cta")  # stores -> the wgmma's reads
    cute.arch.sync_threads()

    thr_mma = tiled_mma.get_slice(tidx)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))  # (MMA, MMA_M, MMA_K)
    if cutlass.const_expr(bug in ("rs", "rs_overwrite")):  # A from registers: loaded first
        cute.autovec_copy(thr_mma.partition_A(sA), tCrA)
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))  # (MMA, MMA_N, MMA_K)
    tCgC = thr_mma.partition_C(gC)  # (MMA, MMA_M, MMA_N)
    acc = tiled_mma.make_fragment_C(tCgC)
    if cutlass.const_expr(bug == "accumulate_field"):  # no clear: the first wgmma overwrites
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, False)
    else:
        acc.fill(0.0)
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
    k_blocks = cute.size(tCrA, mode=[2])
    per_group = TILE_K // 16
    if cutlass.const_expr(bug != "no_fence"):
        cute.nvgpu.warpgroup.fence()
    if cutlass.const_expr(bug == "rs_no_fence"):  # A's registers written after the fence
        cute.autovec_copy(thr_mma.partition_A(sA), tCrA)
    for kb in cutlass.range_constexpr(k_blocks):
        if cutlass.const_expr(bug == "skip_warp"):
            if tidx // 32 != 1:
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
        elif cutlass.const_expr(bug == "two_lines"):  # the same wgmma, from two lines
            if tidx < 64:
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
            else:
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
        else:
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
            tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        if cutlass.const_expr(kb % per_group == per_group - 1):
            cute.nvgpu.warpgroup.commit_group()
            if cutlass.const_expr(bug == "rs_overwrite"):
                tCrA[0] = tCrA[1]  # A's registers rewritten while the wgmmas read them
            if cutlass.const_expr(bug == "overwrite"):
                sB[tidx % gB.shape[0], 0] = gB[0, 0]  # a stage refilled while still read
            if cutlass.const_expr(kb > per_group):
                cute.nvgpu.warpgroup.wait_group(1)
    if cutlass.const_expr(bug != "no_wait"):
        cute.nvgpu.warpgroup.wait_group(0)
    if cutlass.const_expr(gC.element_type == cutlass.Float32):
        cute.autovec_copy(acc, tCgC)
    else:  # hopper_gemm's epilogue: converted, stmatrix into shared memory, then out
        store_through_smem(tiled_mma, acc, gC, smem, tidx, threads)


@cute.jit
def store_through_smem(
    tiled_mma: cute.TiledMma,
    acc: cute.Tensor,
    gC: cute.Tensor,
    smem: SmemAllocator,
    tidx: cutlass.Int32,
    threads: cutlass.Constexpr,
):
    row_major = cutlass.tensor_utils.LayoutEnum.ROW_MAJOR
    sC_layout = sm90_utils.make_smem_layout_epi(gC.element_type, row_major, gC.shape, 1)
    sC = smem.allocate_tensor(gC.element_type, sC_layout, 1024)  # (M, N, 1)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), gC.element_type)
    r2s = cute.make_tiled_copy_S(
        sm90_utils.get_smem_store_op(row_major, gC.element_type, acc.element_type),
        cute.make_tiled_copy_C_atom(stmatrix, tiled_mma),
    )
    thr_r2s = r2s.get_slice(tidx)
    tRS_sC = thr_r2s.partition_D(sC)  # (R2S, R2S_M, R2S_N, 1)
    acc_r2s = r2s.retile(acc)  # (R2S, R2S_M, R2S_N): the accumulator as stmatrix sources
    out = cute.make_rmem_tensor(acc_r2s.shape, gC.element_type)
    out.store(acc_r2s.load().to(gC.element_type))
    cute.copy(r2s, out, tRS_sC[None, None, None, 0])
    cute.arch.sync_threads()
    for i in cutlass.range_constexpr(cute.size(gC) // threads):
        gC[(tidx + i * threads) // gC.shape[1], (tidx + i * threads) % gC.shape[1]] = sC[
            (tidx + i * threads) // gC.shape[1], (tidx + i * threads) % gC.shape[1], 0
        ]


@cute.jit
def wgmma_tile(
    a_ptr: cute.Pointer,
    b_ptr: cute.Pointer,
    c_ptr: cute.Pointer,
    m: cutlass.Constexpr,
    n: cutlass.Constexpr,
    k: cutlass.Constexpr,
    stream: cuda.CUstream,
    bug: cutlass.Constexpr,
):
    ab = a_ptr.element_type
    gA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
    gB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
    gC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
    atom = cute.nvgpu.warpgroup.make_smem_layout_atom(
        sm90_utils.get_smem_layout_atom(cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, ab, TILE_K), ab
    )
    sA_layout = cute.tile_to_shape(atom, (m, k), order=(0, 1))
    sB_layout = cute.tile_to_shape(atom, (n, k), order=(0, 1))
    source = cute.nvgpu.warpgroup.OperandSource
    tiled_mma = sm90_utils.make_trivial_tiled_mma(
        ab,
        ab,
        cute.nvgpu.OperandMajorMode.K,
        cute.nvgpu.OperandMajorMode.K,
        cutlass.Float32,
        (m // 64, 1, 1),
        tiler_mn=(64, n),
        a_source=source.RMEM if cutlass.const_expr(bug.startswith("rs")) else source.SMEM,
    )
    wgmma_tile_kernel(gA, gB, gC, tiled_mma, sA_layout, sB_layout, bug).launch(
        grid=[1, 1, 1], block=[cute.size(tiled_mma), 1, 1], stream=stream
    )


def _operands(m, n, k, dtype, c_dtype=torch.float32):
    g = torch.Generator().manual_seed(10)
    a = torch.randn(m, k, generator=g).to(dtype)
    b = torch.randn(n, k, generator=g).to(dtype)
    return a, b, torch.full((m, n), float("nan"), dtype=c_dtype)


def _run(m, n, k, dtype=torch.bfloat16, bug="none", seed=0, c_dtype=torch.float32):
    a, b, c = _operands(m, n, k, dtype, c_dtype)
    run(
        wgmma_tile, pointer(a, "A"), pointer(b, "B"), pointer(c, "C"), m, n, k, None, bug, seed=seed
    )
    return a, b, c


@pytest.mark.parametrize(
    "m, n, k, dtype",
    [
        (64, 64, 192, torch.bfloat16),
        (64, 128, 128, torch.float16),
        (128, 64, 128, torch.bfloat16),  # two warpgroups, 64 rows each
    ],
)
def test_a_warpgroups_wgmmas_give_torchs_product(m, n, k, dtype):
    a, b, c = _run(m, n, k, dtype)
    expected = a.double() @ b.double().T
    assert torch.allclose(c.double(), expected, rtol=1e-5, atol=1e-4), (c - expected).abs().max()


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_float8_wgmmas_take_k_32_and_give_the_exact_product(dtype):
    """float8 A and B (kernels.fp8_gemm's wgmma, K = 32 a wgmma): integer values, so every
    sum is exact and C equals the float64 product; the executor reads their bytes as torch's
    float8 types."""
    m, n, k = 64, 64, 256
    g = torch.Generator().manual_seed(12)
    a = torch.randint(-8, 9, (m, k), generator=g).float().to(dtype)
    b = torch.randint(-8, 9, (n, k), generator=g).float().to(dtype)
    c = torch.full((m, n), float("nan"))
    run(wgmma_tile, pointer(a, "A"), pointer(b, "B"), pointer(c, "C"), m, n, k, None, "none")
    assert torch.equal(c.double(), a.double() @ b.double().T)


def test_a_from_registers_gives_the_same_product():
    a, b, c = _run(128, 64, 128, bug="rs")
    assert torch.allclose(c.double(), a.double() @ b.double().T, rtol=1e-5, atol=1e-4)


def test_a_registers_written_while_read_or_after_the_fence_are_named():
    h = _hazard("rs_overwrite")
    assert h.kind == wgmma.A_IN_FLIGHT and "writes A's registers" in h.detail
    assert "tCrA[0] = tCrA[1]" in h.site.text()
    h = _hazard("rs_no_fence")
    assert h.kind == wgmma.NO_FENCE and "A's registers" in h.detail


def test_accumulate_false_overwrites_an_accumulator_never_cleared():
    a, b, c = _run(64, 64, 128, bug="accumulate_field")
    assert torch.allclose(c.double(), a.double() @ b.double().T, rtol=1e-5, atol=1e-4)


def test_the_stmatrix_epilogue_writes_the_converted_tile():
    """hopper_gemm's epilogue pieces: get_smem_store_op's stmatrix, make_tiled_copy_C_atom,
    retile, make_smem_layout_epi."""
    a, b, c = _run(128, 64, 64, c_dtype=torch.bfloat16)
    assert torch.allclose(c.float(), a.float() @ b.float().T, rtol=1e-2, atol=1e-2)


def test_other_interleavings_give_the_same_values():
    _, _, first = _run(64, 64, 128)
    _, _, other = _run(64, 64, 128, seed=2)
    assert torch.equal(first, other)


def _hazard(bug: str, m=64) -> Hazard:
    with pytest.raises(Hazard) as found:
        _run(m, 64, 128, bug=bug)
    return found.value


def test_reading_the_accumulator_before_wait_group_is_named():
    h = _hazard("no_wait")
    assert h.kind == wgmma.ACC_IN_FLIGHT
    assert re.search(r"warp \d reads the accumulator", h.detail)
    assert "cute.gemm(tiled_mma" in h.detail
    assert "autovec_copy(acc, tCgC)" in h.site.text()


def test_a_stage_overwritten_while_a_wgmma_reads_it_is_named():
    h = _hazard("overwrite")
    assert h.kind == hazards.STAGE_OVERWRITE
    assert "sB[" in h.detail and "the wgmma warp 0 issued at" in h.detail
    assert "sB[tidx % gB.shape[0], 0] = gB[0, 0]" in h.site.text()


def test_a_wgmma_without_fence_is_named():
    h = _hazard("no_fence")
    assert h.kind == wgmma.NO_FENCE
    assert "warp 0" in h.detail and "fence()" in h.detail
    assert "cute.gemm(" in h.site.text()


def test_operands_stored_without_a_proxy_fence_are_named():
    h = _hazard("no_proxy_fence")
    assert h.kind == wgmma.PROXY_FENCE and "sA[" in h.detail


def test_warps_of_a_warpgroup_at_different_wgmma_lines_are_named():
    h = _hazard("two_lines")
    assert h.kind == hazards.DIVERGENT and "reach different wgmmas" in h.detail


def test_a_warp_that_skips_the_warpgroups_wgmma_is_a_deadlock():
    h = _hazard("skip_warp")
    assert h.kind == hazards.DEADLOCK
    assert "waits at a wgmma for warp(s) 1 of its warpgroup" in str(h)


def _exercise_10(fn):
    from course.exercises.executor_checks import EXECUTOR_CHECKS

    return EXECUTOR_CHECKS["10.wgmma_mainloop"](fn, True)


def test_exercise_10s_reference_runs_right_on_the_executor():
    from course.exercises.solutions import nb10_solutions

    ran = [f for f in _exercise_10(nb10_solutions.mainloop) if f.status != "not run"]
    assert ran and all(f.status == "pass" for f in ran), [f.line() for f in ran]


@pytest.mark.parametrize(
    "variant, words",
    [("mainloop__no_fence", "fence"), ("mainloop__no_wait", "no wait_group"),
     ("mainloop__no_commit", "commit"), ("mainloop__releases_stage_in_use", "still being read"),
     ("mainloop__release_before_wait", "released too early")],
)  # fmt: skip
def test_exercise_10s_wrong_loops_are_named_with_their_hint_words(variant, words):
    from course.exercises.solutions import nb10_solutions

    findings = _exercise_10(getattr(nb10_solutions, variant))
    assert findings[0].status == "fail" and words in findings[0].hint, findings[0].line()


WGMMA_CASES = ("wgmma_gemm", "wgmma_gemm.ragged", "hopper_gemm.tma_store", "hopper_gemm.pingpong")


@pytest.mark.parametrize("case", WGMMA_CASES)
def test_the_executors_wgmma_gives_the_h100s_bits(case):
    """Each wgmma's exact dot product added to fp32 rounding toward zero: the H100's recorded
    bf16 outputs (results/executor_ladder.json), equal bit for bit."""
    from course.execute import ladder_runs
    from course.runtime import results

    record = results.latest("executor_ladder")
    saved = record.data["cases"].get(case) if record is not None else None
    if saved is None:
        pytest.skip(f"no H100 output of {case} recorded")
    h100 = ladder_runs.recorded_output(case, saved)
    assert torch.equal(ladder_runs.RUNNERS[case]().output, h100)
