"""NVIDIA's Hopper dense GEMMs, unmodified, on the CPU executor.

`cute/hopper/kernel/dense_gemm/dense_gemm.py` (TMA loads, WGMMA, one warpgroup that also
loads, TMA-store epilogue) and `dense_gemm_persistent.py` (a DMA warpgroup and MMA
warpgroups, NVIDIA's static persistent tile scheduler) run through their own kernel
classes and host code: tensors made the way their `run` makes them (on the CPU: integer
values in [-2, 2), `from_dlpack(..., assumed_align=16)`, the element type set, the layout
marked dynamic on its leading mode), `cute.compile(gemm, mA, mB, mC, [max_active_clusters,]
stream)` and a call of what it gives, inside `course.execute.host.interpreting()`.
Float16 in and out, Float32 accumulation: integer-valued products sum exactly, so C is
bit-exact against torch. Shapes are ragged where the examples allow it (M, N, K multiples
of 8 for 16-byte rows, not of the 128x128x64 tile), with clusters of one and two CTAs.

Each planted mistake is one textual edit of the example's own source, loaded from a temp
copy; the unmodified example at the same shape is its control (exact, no hazard), and the
executor must name the mistake's kind and the kernel line where it shows.
"""

from __future__ import annotations

import functools

import pytest
import torch

from course.execute import hazards, sm90, unspecified, wgmma
from tests.nvidia_examples import (
    FULL,
    line_of,
    load,
    needs_examples,
    needs_full,
    passed,
    planted,
    run_script,
)

pytestmark = needs_examples()

DENSE = "cute/hopper/kernel/dense_gemm/dense_gemm.py"
PERSISTENT = "cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py"


def operand(l: int, mode0: int, mode1: int, seed: int):
    """What the examples' tensor helpers make for a K-major (or N-major C) Float16 operand,
    on the CPU: a (mode0, mode1, l) view of an (l, mode0, mode1) tensor of integers in
    [-2, 2), and its host tensor with the leading mode marked dynamic."""
    import cutlass
    import cutlass.torch as cutlass_torch
    from cutlass.cute.runtime import from_dlpack

    torch.manual_seed(seed)
    data = cutlass_torch.create_and_permute_torch_tensor(
        (l, mode0, mode1),
        torch.float16,
        permute_order=(1, 2, 0),
        init_type=cutlass_torch.TensorInitType.RANDOM,
        init_config=cutlass_torch.RandomInitConfig(min_val=-2, max_val=2),
    )
    host = from_dlpack(data, assumed_align=16)
    host.element_type = cutlass.Float16
    return data, host.mark_layout_dynamic(leading_dim=1)


def run_gemm(module, mnkl, cluster=(1, 1), *, tile=(128, 128), persistent_clusters=None, swizzle=1):
    """The example's kernel class on A (M, K, L), B (N, K, L), C (M, N, L), compiled and
    called as its `run` does; with `persistent_clusters`, the persistent kernel with that
    many clusters resident (the GPU's HardwareInfo answer, chosen here). Returns C and
    torch's einsum in Float16."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    from course.execute import host

    m, n, k, l = mnkl
    a, mA = operand(l, m, k, seed=1)
    b, mB = operand(l, n, k, seed=2)
    c, mC = operand(l, m, n, seed=3)
    c.fill_(7)  # every element must be written
    stream = cuda.CUstream(0)
    with host.interpreting():
        if persistent_clusters is None:
            gemm = module.HopperWgmmaGemmKernel(cutlass.Float32, tile, cluster)
            compiled = cute.compile(gemm, mA, mB, mC, stream)
        else:
            gemm = module.HopperWgmmaGemmPersistentKernel(
                cutlass.Float32, tile, cluster, swizzle, True
            )
            compiled = cute.compile(gemm, mA, mB, mC, persistent_clusters, stream)
        compiled(mA, mB, mC, stream)
    ref = torch.einsum("mkl,nkl->mnl", a.float(), b.float()).to(torch.float16)
    return c, ref


# ---------------------------------------------------------------- correct kernels


@pytest.mark.parametrize(
    "mnkl, cluster",
    [
        ((200, 136, 136, 1), (1, 1)),  # ragged M, N and K: 2x2 tiles, 3 k-tiles
        ((256, 128, 64, 1), (2, 1)),  # a cluster of two CTAs: B multicast along M
        ((128, 256, 72, 2), (1, 2)),  # a batch of two; A multicast along N
    ],
)
def test_dense_gemm_is_exact(mnkl, cluster):
    c, ref = run_gemm(load(DENSE), mnkl, cluster)
    assert torch.equal(c, ref)


@pytest.mark.parametrize(
    "mnkl, cluster, clusters, swizzle",
    [
        ((200, 264, 136, 1), (1, 1), 2, 1),  # 6 tiles over 2 persistent CTAs, ragged
        ((256, 128, 64, 1), (2, 1), 1, 1),  # one cluster of two walks both tiles
        ((136, 200, 72, 2), (1, 1), 3, 2),  # a batch, a swizzled raster (get_flat_coord)
    ],
)
def test_dense_gemm_persistent_is_exact(mnkl, cluster, clusters, swizzle):
    c, ref = run_gemm(
        load(PERSISTENT), mnkl, cluster, persistent_clusters=clusters, swizzle=swizzle
    )
    assert torch.equal(c, ref)


# ---------------------------------------------------------------- planted mistakes


def hazard_of(module, mnkl, **kwargs) -> hazards.Hazard:
    with pytest.raises(hazards.Hazard) as caught:
        run_gemm(module, mnkl, **kwargs)
    return caught.value


DENSE_RELEASE = """            cute.nvgpu.warpgroup.wait_group(k_pipe_mmas)

            mainloop_pipeline.consumer_release(mainloop_consumer_release_state)
"""
DENSE_DRAIN = """        cute.nvgpu.warpgroup.wait_group(0)

        if cute.size(self.cluster_shape_mn) > 1:"""
DENSE_FENCE = """            cute.arch.fence_proxy(
                "async.shared",
                space="cta",
            )
            # barrier for sync"""
DENSE_BARRIER = """            # barrier for sync
            pipeline.sync(barrier_id=1)
"""
PERSISTENT_WAIT = """                for k_tile in range(prologue_mma_cnt, k_tile_cnt):
                    # Wait for TMA copies to complete
                    mainloop_pipeline.consumer_wait(mainloop_consumer_read_state)
"""
PERSISTENT_BARRIER = """                    )
                    self.epilog_sync_barrier.arrive_and_wait()

                    gmem_coord"""
PERSISTENT_ACQUIRE = """                        tma_store_pipeline.producer_commit()
                        tma_store_pipeline.producer_acquire()
"""


def line_after(text: str, anchor: str, needle: str) -> int:
    """The line of the first `needle` past the first line that holds `anchor`."""
    return line_of(text, needle, after=line_of(text, anchor))


@functools.lru_cache(maxsize=None)
def control_is_exact(relative: str, mnkl: tuple, options: tuple) -> bool:
    """The unmodified example at a planted test's shape and options: exact, no hazard."""
    c, ref = run_gemm(load(relative), mnkl, **dict(options))
    return torch.equal(c, ref)


def caught(relative, old, new, tmp_path, mnkl, **options):
    """The planted copy's hazard (the unmodified example at the same shape the control),
    and the copy's text."""
    assert control_is_exact(relative, mnkl, tuple(sorted(options.items())))
    module, text, _ = planted(relative, old, new, tmp_path)
    return hazard_of(module, mnkl, **options), text


def test_dense_gemm_stage_released_before_its_wgmma_retired(tmp_path):
    """consumer_release before warpgroup.wait_group: the producer's next TMA load refills
    the stage the k-tile's wgmma still reads (a 128x256 tile has 4 stages; K=320 is 5
    k-tiles, so a stage is refilled)."""
    new = """            mainloop_pipeline.consumer_release(mainloop_consumer_release_state)

            cute.nvgpu.warpgroup.wait_group(k_pipe_mmas)
"""
    h, text = caught(DENSE, DENSE_RELEASE, new, tmp_path, (128, 256, 320, 1), tile=(128, 256))
    assert h.kind == hazards.STAGE_OVERWRITE
    assert h.site.lineno == line_after(text, "#  MAINLOOP", "cute.copy(")  # the refill
    assert "cute.gemm(" in h.detail  # the reader it overwrites


def test_dense_gemm_epilogue_without_draining_the_wgmmas(tmp_path):
    """No warpgroup.wait_group(0) after the mainloop: the epilogue reads accumulators the
    last k-tile's wgmma may still write."""
    new = DENSE_DRAIN.replace("cute.nvgpu.warpgroup.wait_group(0)", "pass")
    h, text = caught(DENSE, DENSE_DRAIN, new, tmp_path, (128, 128, 128, 1))
    assert h.kind == wgmma.ACC_IN_FLIGHT
    assert h.site.lineno == line_of(text, "tRS_rD[epi_v] = tRS_rAcc[")
    assert h.cause.unit == hazards.UNIT_WGMMA


def test_dense_gemm_epilogue_without_its_proxy_fence(tmp_path):
    """No fence.proxy.async between the threads' stmatrix into shared memory and the TMA
    store that reads it: the async proxy may not see the writes."""
    new = DENSE_FENCE.replace("cute.arch.fence_proxy(", "(").replace('space="cta",', "")
    h, text = caught(DENSE, DENSE_FENCE, new, tmp_path, (128, 128, 64, 1))
    assert h.kind == sm90.PROXY_FENCE
    assert h.site.lineno == line_after(text, "# barrier for sync", "cute.copy(")  # the store
    assert h.cause.unit == hazards.UNIT_TMA_STORE


def test_dense_gemm_epilogue_without_its_barrier_before_the_store(tmp_path):
    """No named barrier between the 128 threads' writes of a C sub-tile and warp 0's TMA
    store of it: the store reads other threads' writes unordered."""
    new = DENSE_BARRIER.replace("pipeline.sync(barrier_id=1)", "pass")
    h, text = caught(DENSE, DENSE_BARRIER, new, tmp_path, (128, 128, 64, 1))
    assert h.kind == hazards.RACE
    assert h.site.lineno == line_after(text, "# barrier for sync", "cute.copy(")


PERSISTENT_OPTIONS = dict(persistent_clusters=1)


def test_dense_gemm_persistent_mma_without_consumer_wait(tmp_path):
    """The MMA warpgroup's mainloop without consumer_wait: its wgmma reads a stage whose
    TMA load is still in flight."""
    new = PERSISTENT_WAIT.replace(
        "mainloop_pipeline.consumer_wait(mainloop_consumer_read_state)", "pass"
    )
    h, text = caught(
        PERSISTENT, PERSISTENT_WAIT, new, tmp_path, (128, 128, 192, 1), **PERSISTENT_OPTIONS
    )
    assert h.kind == hazards.IN_FLIGHT
    assert h.site.lineno == line_after(
        text, "for k_tile in range(prologue_mma_cnt, k_tile_cnt):", "cute.gemm("
    )
    assert h.cause.unit == hazards.UNIT_TMA_LOAD


def test_dense_gemm_persistent_store_without_the_epilogue_barrier(tmp_path):
    """The epilogue's first epilog_sync_barrier removed: the store warp's TMA store reads
    the other MMA threads' writes of the sub-tile unordered."""
    new = PERSISTENT_BARRIER.replace("self.epilog_sync_barrier.arrive_and_wait()", "pass")
    h, text = caught(
        PERSISTENT, PERSISTENT_BARRIER, new, tmp_path, (128, 128, 64, 1), **PERSISTENT_OPTIONS
    )
    assert h.kind == hazards.RACE
    assert h.site.lineno == line_after(text, "gmem_coord = epi_tile_layout", "cute.copy(")


def test_dense_gemm_persistent_staging_buffer_reused_before_the_store_read_it(tmp_path):
    """No producer_acquire (bulk wait_group.read) after the TMA store's commit: eight C
    sub-tiles cycle through four staging buffers, and the fifth overwrites one a store
    may still read."""
    new = PERSISTENT_ACQUIRE.replace("tma_store_pipeline.producer_acquire()", "pass")
    h, text = caught(
        PERSISTENT, PERSISTENT_ACQUIRE, new, tmp_path, (128, 128, 64, 1), **PERSISTENT_OPTIONS
    )
    assert h.kind == hazards.STAGE_OVERWRITE
    assert h.site.lineno == line_after(
        text, "# Copy from D registers to shared memory", "cute.copy("
    )
    assert h.cause.unit == hazards.UNIT_TMA_STORE


# ---------------------------------------------------------------- the pieces they needed


def test_layout_enum_from_tensor_reads_the_leading_mode():
    """LayoutEnum.from_tensor: row-major for a unit stride in mode 1, column-major in
    mode 0; its major mode is the one OperandMajorMode every module re-exports."""
    from course.execute import api
    from course.execute.layout_enum import LayoutEnum

    row = api.make_tensor(
        api.make_rmem_tensor((4, 8, 1), api.cutlass.Float16).iterator,
        api.make_layout((4, 8, 1), (8, 1, 32)),
    )
    col = api.make_tensor(row.iterator, api.make_layout((4, 8, 1), (1, 4, 32)))
    assert LayoutEnum.from_tensor(row) is LayoutEnum.ROW_MAJOR
    assert LayoutEnum.from_tensor(col) is LayoutEnum.COL_MAJOR
    assert LayoutEnum.ROW_MAJOR.sm90_mma_major_mode() is api.nvgpu.warpgroup.OperandMajorMode.K
    assert LayoutEnum.COL_MAJOR.mma_major_mode() is api.nvgpu.OperandMajorMode.MN


def _division_by(divisor: int, branch_on_it: bool):
    import cutlass
    import cutlass.cute as cute

    from course.execute import host

    @cute.kernel
    def kernel(out: cute.Tensor, d: cutlass.Int32):
        r = 7 % d
        out[0] = 1
        if cutlass.const_expr(branch_on_it):
            if r > 3:
                out[0] = 2

    @cute.jit
    def launch(out: cute.Tensor, d: cutlass.Int32):
        kernel(out, d).launch(grid=(1, 1, 1), block=(32, 1, 1))

    out = torch.zeros(1, dtype=torch.int32)
    with host.interpreting():
        launch(out, divisor)
    return out


def test_an_integer_remainder_by_zero_is_unspecified_not_a_crash():
    """`7 % 0` computed and never used is no error (the PTX ISA: an unspecified value);
    a branch on it is a hazard naming the division's line."""
    assert _division_by(0, branch_on_it=False).tolist() == [1]
    assert _division_by(2, branch_on_it=True).tolist() == [1]
    with pytest.raises(hazards.Hazard) as caught:
        _division_by(0, branch_on_it=True)
    assert caught.value.kind == unspecified.UNSPECIFIED_USED
    assert caught.value.site.text() == "if r > 3:"
    assert caught.value.cause.subject == "r = 7 % d"


DENSE_MAINLOOP_WAIT = """            mainloop_pipeline.consumer_wait(
                mainloop_consumer_read_state, peek_ab_full_status
            )
            # /////////////////////////////////////////////////////////////////////////////
            #  WGMMA"""


def test_dense_gemm_mainloop_trusting_its_peek_alone(tmp_path):
    """dense_gemm's mainloop without its consumer_wait, trusting consumer_try_wait's peek:
    try_wait may answer False (the PTX ISA's suspend time limit), and the executor answers
    so whenever the phase has not completed, so the wgmma reads a stage TMA is still
    writing. (Before, the executor's try_wait blocked and always said True: not caught.)"""
    new = DENSE_MAINLOOP_WAIT.replace(
        """mainloop_pipeline.consumer_wait(
                mainloop_consumer_read_state, peek_ab_full_status
            )""",
        "pass\n\n",
    )
    h, text = caught(DENSE, DENSE_MAINLOOP_WAIT, new, tmp_path, (128, 128, 512, 1))
    assert h.kind == hazards.IN_FLIGHT, h
    assert h.cause.unit == hazards.UNIT_TMA_LOAD


# ---------------------------------------------------------------- more of the full checkout
# NVIDIA's other Hopper (and Ampere attention) examples, run whole through `python -m
# course.execute` from a full CUTLASS checkout (CUTLASS_DSL_EXAMPLES_FULL, as in
# tests/test_nvidia_more_examples.py): their own argparse, host code and torch check. The
# executor fixes they needed are unit-tested in tests/test_execute_hopper_more_fixes.py.

FMHA = "cute/hopper/kernel/attention/fmha.py"
FP8_GELU = "cute/hopper/kernel/dense_gemm/dense_gemm_fp8_gelu_persistent.py"
GROUPED = "cute/hopper/kernel/grouped_gemm/grouped_gemm.py"
HSTU = "cute/ampere/kernel/attention/hstu_attention.py"
CTA_NORM = "cute/hopper/kernel/cta_norm/cta_norm.py"


@needs_full
@pytest.mark.parametrize("options", [(), ("--is_persistent",)])
def test_fmha(options):
    """The warp-specialised FMHA: a TMA producer warpgroup, two WGMMA warpgroups (Q.K^T from
    shared memory, P.V with P from registers), online softmax, the O epilogue through
    shared memory aliased on Q, its own mbarrier wait in inline NVVM; checked against torch
    by its own reference."""
    passed(
        run_script(
            "sm_90a", FULL / FMHA, "--q_shape", "1,128,1,64", "--k_shape", "1,128,1,64", *options
        )
    )


@needs_full
def test_fmha_at_one_tile_of_queries():
    """64 queries, one tile: the second WGMMA warpgroup's tile lies past the tensor, whose
    extents host code marked dynamic, so its TMA store is clipped away, not a second store
    of tile 0 (course.execute.dynamic; tests/test_execute_dynamic_layouts.py)."""
    passed(run_script("sm_90a", FULL / FMHA, "--q_shape", "1,64,1,64", "--k_shape", "1,64,1,64"))


@needs_full
@pytest.mark.parametrize("options", [("--mnkl", "200,136,96,2"), ("--gelu_kind", "poly11")])
def test_fp8_gelu_persistent(options):
    """FP8 WGMMA with GELU (erf, or the poly11 approximation) fused in the epilogue; ragged
    M and N over two batches."""
    shape = () if "--mnkl" in options else ("--mnkl", "128,128,64,1")
    passed(run_script("sm_90a", FULL / FP8_GELU, *shape, *options))


@needs_full
def test_grouped_gemm_says_device_side_tensor_maps_are_not_modelled():
    """The grouped GEMM rewrites its TMA descriptors in memory per group: the executor
    stops with exit 3, naming device-side tensor maps."""
    done = run_script(
        "sm_90a",
        FULL / GROUPED,
        "--num_groups",
        "2",
        "--problem_sizes_mnkl",
        "(128,128,64,1),(64,128,128,1)",
    )
    assert done.returncode == 3, done.stderr[-3000:]
    assert "does not model `device-side tensor maps" in done.stderr


HSTU_ARGS = ("--batch_size", "2", "--seqlen_q", "72", "--seqlen_kv", "104", "--num_head", "2")


@needs_full
def test_hstu_attention_on_ragged_sequences():
    """HSTU attention (cp.async, ldmatrix, mma.sync, SiLU through inline tanh.approx.f32)
    with sequences that are not whole 64-row blocks."""
    passed(run_script("sm_80", FULL / HSTU, *HSTU_ARGS, "--head_dim", "64"))


@needs_full
def test_hstu_attention_without_its_wait_for_v(tmp_path):
    """The cp.async wait before V is read (`# wait for smem tile V for O`) removed: the
    ldmatrix of V's first k-block reads shared memory its cp.async still writes."""
    text = (FULL / HSTU).read_text()
    old = "            # wait for smem tile V for O\n            cute.arch.cp_async_wait_group(0)\n"
    assert text.count(old) == 1
    edited = text.replace(old, "            # wait for smem tile V for O\n            pass\n")
    copy = tmp_path / "hstu_attention.py"
    copy.write_text(edited)
    done = run_script(
        "sm_80", copy, "--batch_size", "1", "--seqlen_q", "64", "--seqlen_kv", "96",
        "--num_head", "1", "--head_dim", "64",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    read = line_of(edited, "cute.copy(", after=line_of(edited, "# ldmatrix first V k-block"))
    kernel = line_of(edited, "    def kernel(")
    assert "read while a copy is in flight" in done.stderr
    # the site quotes the whole call (wrapped over lines in the source): V's copy
    assert f"at kernel line {read - kernel + 1} (`cute.copy(smem_tiled_copy_V" in done.stderr


@needs_full
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_cta_norm(norm):
    """LayerNorm / RMSNorm, one CTA per row, a warp-shuffle then shared-memory reduction;
    its tensors asked with enable_tvm_ffi=True, which the executor needs no TVM-FFI for."""
    passed(
        run_script(
            "sm_90a",
            FULL / CTA_NORM,
            "--M",
            "37",
            "--N",
            "200",
            "--norm_type",
            norm,
            "--warmup_iterations",
            "0",
            "--iterations",
            "1",
        )  # fmt: skip
    )
