"""Notebook 03's naive GEMM: the seed's thread trace from the kernel's own partitioning
(on a CPU), compile-only checks for every tier, validation, and live checks on a GPU."""

import pytest
import torch

from course.bench.gemm_bench import LADDER, MAJORS, GemmProblem, check_gemm, prepare, problem_for
from course.cute import kernel_traces
from kernels import naive_gemm as ng
from kernels.gemm_host import major_of
from kernels.host import KernelInputError, UnsupportedGPU

from .helpers import pretend_gpu

SEED_C_ROWS = [0, 1, 2, 3, 64, 65, 66, 67]


@pytest.fixture(scope="module")
def seed_trace():
    return kernel_traces.thread_trace(256, 128, 32, thread=0, block=(0, 0))


def test_the_seed_thread_trace(seed_trace):
    """Thread 0 of block (0,0), M=256 N=128 K=32, tile 128x128x8, 256 threads."""
    t = seed_trace
    assert t["mA"] == "(256,32):(1,256)" and t["mB"] == "(128,32):(1,128)"
    assert t["mC"] == "(256,128):(128,1)"
    assert t["gA"] == "(128,8,4):(1,256,2048)"
    assert t["gC"] == "(128,128):(128,1)"
    assert t["gA_k0"] == "(128,8):(1,256)" and t["gB_k0"] == "(128,8):(1,128)"
    assert t["tCgC"] == "(1,(4,2),(4,2)):(0,(128,8192),(1,64))"
    assert t["tCgA"] == "(1,(4,2),8):(0,(1,64),256)"
    assert t["tCgB"] == "(1,(4,2),8):(0,(1,64),128)"
    assert "Thr Layout VMNK: (1,16,16,1):(0,16,1,0)" in t["tiled_mma"]
    assert "Permutation MNK: ((16,4):(4,1),(16,4):(4,1),_)" in t["tiled_mma"]
    assert t["grid"] == (2, 1) and t["k_tiles"] == 4
    cells = t["c_cells"]
    assert len(cells) == 64 == len(set(cells))
    assert set(cells) == {(r, c) for r in SEED_C_ROWS for c in SEED_C_ROWS}
    assert t["a_rows"] == SEED_C_ROWS and t["b_rows"] == SEED_C_ROWS
    assert len(t["a_cells_k0"]) == 64  # 8 rows x all 8 K-columns of the slice
    assert {k for _, k in t["a_cells_k0"]} == set(range(8))


def test_register_order_is_the_fragment_order(seed_trace):
    """Accumulator v of thread 0 is C[i + 64*gm, j + 64*gn] with v = i + 4gm + 8j + 32gn."""
    assert seed_trace["tCrC"] == "(1,(4,2),(4,2)):(0,(1,4),(8,32))"
    for v, (row, col) in enumerate(seed_trace["c_cells"]):
        i, gm, j, gn = v % 4, (v // 4) % 2, (v // 8) % 4, v // 32
        assert (row, col) == (i + 64 * gm, j + 64 * gn)


def test_other_threads_blocks_and_majors():
    t = kernel_traces.thread_trace(256, 128, 32, thread=17, block=(1, 0))
    assert set(t["c_cells"]) == {(128 + r + 4, c + 4) for r in SEED_C_ROWS for c in SEED_C_ROWS}
    k = kernel_traces.thread_trace(256, 128, 32, a_major="k", b_major="k")
    assert k["mA"] == "(256,32):(32,1)" and k["tCgA"] == "(1,(4,2),8):(0,(32,2048),1)"
    ragged = kernel_traces.thread_trace(200, 100, 20, thread=255, block=(1, 0))
    assert ragged["k_tiles"] == 3 and ragged["gA"] == "(128,8,3):(1,200,1600)"
    assert max(r for r, _ in ragged["c_cells"]) == 255  # past M=200: the kernel predicates it


def test_c_ownership_is_the_seed_partition():
    own = kernel_traces.c_ownership()
    assert own.shape == (128, 128) and own.threads == 256
    assert (own.count == 1).all()  # every cell exactly once
    cells = own.cells_of(0)
    assert {(r, c) for r, c, _ in cells} == {(r, c) for r in SEED_C_ROWS for c in SEED_C_ROWS}
    assert [v for _, _, v in cells] == list(range(64))
    assert own.owners(65, 3) == [(0, 29)]
    assert all(len(own.cells_of(t)) == 64 for t in (1, 100, 255))


def test_fast_coordinates_agree_with_cutes_own_evaluation(seed_trace):
    """course.cute.partition_ownership (numpy) vs CuTe's element-by-element evaluation."""
    own = kernel_traces.c_ownership()
    assert [(r, c) for r, c, _ in own.cells_of(0)] == seed_trace["c_cells"]
    t = kernel_traces.thread_trace(256, 128, 32, thread=173)
    assert [(r, c) for r, c, _ in own.cells_of(173)] == t["c_cells"]


def test_top_left_quadrant_matches_the_tiled_mma_tv_layout(seed_trace):
    """The TiledMMA's own TV layout (64x64 tile) owns the top-left quadrant identically."""
    from course.models.ownership import Ownership

    assert seed_trace["tv_layout_C"] == "((16,16),(1,(4,4))):((256,4),(0,(1,64)))"
    tv = Ownership.from_tv_layout(seed_trace["tv_layout_C"], (64, 64))
    own = kernel_traces.c_ownership()
    assert (tv.thread == own.thread[:64, :64]).all()


def test_config_validation():
    assert ng.Config().threads == 256 and ng.Config().values_per_thread == 64
    with pytest.raises(ValueError, match="multiple of atoms"):
        ng.Config(tile_m=96)
    with pytest.raises(ValueError, match="threads"):
        ng.Config(atoms_m=2, atoms_n=2, tile_m=8, tile_n=8)


@pytest.mark.compile
@pytest.mark.parametrize(
    "arch,dtype",
    [
        ("sm_80", torch.float32),
        ("sm_90a", torch.float32),
        ("sm_100a", torch.float32),
        ("sm_90a", torch.bfloat16),
    ],
)
def test_compiles_without_a_gpu(arch, dtype):
    art = ng.artifacts(arch, dtype)
    assert f".target {arch}" in art.ptx
    # 8 K-steps x 64 accumulators, fully unrolled, all in fp32
    assert art.count_ptx(r"fma\.rn\.f32") == 512
    width = 8 * dtype.itemsize
    # 64 A + 64 B loads, in the interior path and in the predicated edge path
    assert art.count_ptx(rf"ld\.global\.b{width}") == 256
    assert art.count_ptx(rf"st\.global\.b{width}") == 128
    if dtype != torch.float32:
        assert art.count_ptx(r"cvt\.f32\.bf16") == 128
    (res,) = art.resource_usage().values()
    assert res["stack_frame_bytes"] == 0 and res["shared_bytes"] == 0  # no spills, no smem


@pytest.mark.compile
def test_sass_is_an_ffma_loop():
    sass = ng.artifacts("sm_90a", torch.float32).sass()
    assert sass.count("FFMA") == 512 and "LDG.E" in sass and "STG.E" in sass
    assert "LDS" not in sass  # no shared memory: this is the naive kernel


def test_validation_messages(monkeypatch):
    pretend_gpu(monkeypatch)
    a, b = torch.zeros(8, 4), torch.zeros(6, 4)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        ng.run(a, b)
    with pytest.raises(KernelInputError, match="dtype int64"):
        ng.run(torch.zeros(8, 4, dtype=torch.int64), b)
    with pytest.raises(KernelInputError, match="2-D"):
        ng.run(torch.zeros(8), b)


def test_majors_are_read_from_strides():
    majors = ng.GEMM.operands.a_majors
    assert major_of(torch.zeros(8, 4), "a", majors, "M") == "k"
    assert major_of(torch.zeros(4, 8).t(), "a", majors, "M") == "m"
    with pytest.raises(KernelInputError, match="not packed"):
        major_of(torch.zeros(8, 8)[::2], "a", majors, "M")
    with pytest.raises(KernelInputError, match="neither"):
        major_of(torch.zeros(8, 8, 2)[:, :, 0], "a", majors, "M")
    with pytest.raises(KernelInputError, match="a_major"):
        ng.artifacts("sm_90a", torch.float32, a_major="n")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_without_a_gpu_the_error_says_why():
    with pytest.raises(UnsupportedGPU, match="compile-only"):
        ng.run(torch.zeros(4, 4), torch.zeros(4, 4))


def test_on_the_bench_ladder():
    assert LADDER["naive"][0] == "kernels.naive_gemm:prepare" and LADDER["naive"][1] == "gpu"
    assert MAJORS["naive"] == ("m", "n")
    p = problem_for("naive", 256, 128, 32, torch.float32)
    assert (p.a_major, p.b_major) == ("m", "n")
    with pytest.raises(KernelInputError, match="stores C in"):
        ng.prepare(GemmProblem(64, 64, 64, torch.bfloat16, out_dtype=torch.float32))


# ---------------------------------------------------------------- on a GPU

SHAPES = [
    (256, 128, 32),
    (128, 128, 8),
    (1, 1, 1),
    (200, 100, 20),
    (129, 257, 9),
    (1000, 24, 1031),
    (512, 384, 300),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ng.DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize(
    "majors", [("m", "n"), ("k", "k"), ("m", "k"), ("k", "n")], ids=lambda m: "".join(m)
)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_torch(shape, majors, dtype):
    m, n, k = shape
    problem = GemmProblem(m, n, k, dtype, a_major=majors[0], b_major=majors[1])
    verdict = check_gemm(lambda a, b, c: ng.run(a, b, c), problem)  # fresh inputs, NaN-poisoned C
    assert verdict.ok, verdict


@pytest.mark.gpu
def test_through_the_ladder_and_timed_against_cublas():
    from course.bench.gemm_bench import benchmark_gemm

    problem = problem_for("naive", 1024, 1024, 1024, torch.float32)
    gemm = prepare("naive", problem)
    assert check_gemm(gemm, problem).ok
    res = benchmark_gemm(gemm, problem, "naive", rounds=2, reps=3, warmup=1)
    assert res.kernel_ms > 0 and res.cublas_ms > 0 and res.samples == 6


@pytest.mark.gpu
def test_gpu_validation():
    a = torch.randn(64, 32, device="cuda")
    b = torch.randn(48, 32, device="cuda")
    with pytest.raises(KernelInputError, match="dtype float16"):
        ng.run(a, b.half())
    with pytest.raises(KernelInputError, match="same K"):
        ng.run(a, torch.randn(48, 16, device="cuda"))
    with pytest.raises(KernelInputError, match="out must be 64x48"):
        ng.run(a, b, torch.empty(48, 64, device="cuda"))
    with pytest.raises(KernelInputError, match="compact row-major"):
        ng.run(a, b, torch.empty(48, 64, device="cuda").t())
    with pytest.raises(KernelInputError, match="neither"):
        ng.run(torch.randn(64, 64, device="cuda")[:, ::2], b)
    empty = ng.run(a[:0], b)
    assert empty.shape == (0, 48)
    zero_k = ng.run(torch.randn(8, 0, device="cuda"), torch.randn(4, 0, device="cuda"))
    assert (zero_k == 0).all()
