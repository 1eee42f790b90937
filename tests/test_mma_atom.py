"""Notebook 06: the mma.sync m16n8k16 atom's fragments, from CuTe and from the GPU."""

import pytest
import torch

from course.bench import compare
from course.cute import kernel_traces
from kernels import mma_atom


def owner_grid(pairs, rows, cols):
    grid = [[None] * cols for _ in range(rows)]
    for (t, v), (r, c) in pairs:
        assert grid[r][c] is None, "a C element held twice"
        grid[r][c] = t
    return grid


def test_fragment_sizes_per_thread():
    for operand, per_thread in (("A", 8), ("B", 4), ("C", 4)):
        pairs = kernel_traces.mma_atom_pairs(operand)
        assert len(pairs) == 32 * per_thread
        assert all(v < per_thread for (t, v), _ in pairs)


def test_c_ownership_matches_the_ptx_isa():
    """groupID = lane // 4 picks the row (and row + 8), lane % 4 a pair of columns."""
    grid = owner_grid(kernel_traces.mma_atom_pairs("C"), 16, 8)
    for m in range(16):
        for n in range(8):
            assert grid[m][n] == 4 * (m % 8) + n // 2
    assert grid[0] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert grid[4][0] == 16  # row 4 starts with T16, as the seed document says
    assert grid[8] == grid[0]  # and row 8 repeats row 0
    t0 = sorted(rc for (t, v), rc in kernel_traces.mma_atom_pairs("C") if t == 0)
    assert t0 == [(0, 0), (0, 1), (8, 0), (8, 1)]


def test_a_fragment_of_thread_0():
    a0 = [rc for (t, v), rc in sorted(kernel_traces.mma_atom_pairs("A")) if t == 0]
    assert a0 == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]


def test_tiled_mma_covers_its_tile_once():
    cfg = mma_atom.Config(2, 2)
    grid = owner_grid(kernel_traces.mma_atom_pairs("C", cfg), 32, 16)
    assert all(cell is not None for row in grid for cell in row)
    warps_of_block = {}
    for m in range(32):
        for n in range(16):
            warps_of_block.setdefault((m // 16, n // 8), set()).add(grid[m][n] // 32)
    assert all(len(w) == 1 for w in warps_of_block.values())  # one warp per 16x8 block
    assert len({w.pop() for w in warps_of_block.values()}) == 4


@pytest.mark.compile
def test_micro_gemm_is_one_mma_per_warp():
    art = mma_atom.artifacts("sm_80", torch.float16)
    assert art.ptx_lines(r"mma\.sync") == ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"]


@pytest.mark.gpu(needs="sm_80+")
@pytest.mark.parametrize(
    "config", [mma_atom.Config(), mma_atom.Config(2, 2), mma_atom.Config(4, 1)], ids=str
)
def test_the_gpu_stamps_what_cute_says(config):
    owner, value = mma_atom.stamp(config)
    for (t, v), (r, c) in kernel_traces.mma_atom_pairs("C", config):
        assert owner[r, c] == t and value[r, c] == v


@pytest.mark.gpu(needs="sm_80+")
@pytest.mark.parametrize("dtype", mma_atom.DTYPES)
@pytest.mark.parametrize("config", [mma_atom.Config(), mma_atom.Config(2, 2)], ids=str)
def test_micro_gemm_matches_torch(config, dtype):
    m, n, k = config.shape_mnk
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    c = mma_atom.micro_gemm(a, b, config)
    torch.cuda.synchronize()
    verdict = compare(c, a.double() @ b.double().t(), tol=1e-5)
    assert verdict.ok, verdict
