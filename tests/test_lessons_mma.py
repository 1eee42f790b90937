"""Notebook 06's lessons: fragment sizes, C's owners, a TiledMMA's warps, the compiled
mma.sync, and the stamp and micro-GEMM on a GPU."""

import numpy as np
import pytest

from course.cute import kernel_traces
from course.lessons import mma_lesson
from course.models.ownership import Ownership
from kernels import mma_atom


def test_fragment_sizes_of_m16n8k16(capsys):
    assert mma_lesson.fragment_sizes() == {"A": 8, "B": 4, "C": 4}
    assert "C: 16x8 = 128 values -> 4 fp32 values per thread" in capsys.readouterr().out


def test_row_owners_follow_lane_over_four(capsys):
    c_map = Ownership.from_pairs((16, 8), kernel_traces.mma_atom_pairs("C"))
    mma_lesson.print_row_owners(c_map, rows=(1, 9))
    lines = capsys.readouterr().out.splitlines()
    expected = " ".join(f"T{4 + n // 2:02d}" for n in range(8))  # row r: lanes 4(r%8) + col/2
    assert lines[0] == f"row  1: {expected}" and lines[1] == f"row  9: {expected}"
    assert lines[2] == "thread 0 holds [(0, 0), (0, 1), (8, 0), (8, 1)]"


def test_warp_map_tiles_c_by_warp():
    cfg = mma_atom.Config(2, 2)
    own = mma_lesson.warp_map(cfg)
    assert own.shape == (32, 16) and own.thread_label == "W"
    # each warp owns one 16x8 block; the four blocks are the four warps
    blocks = {(r // 16, c // 8): set() for r in range(32) for c in range(16)}
    for (r, c), w in np.ndenumerate(own.thread):
        blocks[r // 16, c // 8].add(int(w))
    assert all(len(ws) == 1 for ws in blocks.values())
    assert sorted(w for ws in blocks.values() for w in ws) == [0, 1, 2, 3]


@pytest.mark.compile
@pytest.mark.parametrize("warps, count", [((1, 1), 1), ((2, 2), 1)])
def test_mma_sync_lines_of_the_micro_gemm(warps, count, capsys):
    lines = mma_lesson.mma_sync_lines("sm_80", mma_atom.Config(*warps))
    assert len(lines) == count and "m16n8k16" in lines[0]
    assert f"{count} mma.sync per thread" in capsys.readouterr().out


@pytest.mark.gpu(needs="sm_80+")
def test_the_gpu_stamps_cutes_map_and_multiplies_exactly():
    import torch

    assert mma_lesson.stamp_on_gpu()
    assert mma_lesson.check_micro_gemm().ok
    assert mma_lesson.check_micro_gemm(mma_atom.Config(2, 2), torch.float16).ok
