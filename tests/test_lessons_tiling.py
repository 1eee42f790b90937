"""Notebook 03's lessons: the two partitions and a TiledCopy as ownership maps, the naive
GEMM's thread trace read out, its load reuse, and its check (on a GPU) or compile."""

import numpy as np
import pytest

from course.cute import kernel_traces
from course.lessons import tiling_lesson
from kernels import naive_gemm


def test_outer_partition_interleaves_and_inner_partition_blocks(capsys):
    maps = tiling_lesson.partition_maps(matrix=(8, 8), tile=(4, 4), threads=(2, 2))
    rows, cols = np.indices((4, 4))
    assert (maps["local_partition (outer)"].thread == rows % 2 + 2 * (cols % 2)).all()
    assert (maps["local_tile per thread (inner)"].thread == rows // 2 + 2 * (cols // 2)).all()
    out = capsys.readouterr().out
    assert "local_partition (outer):" in out and "r0   T0  T2  T0  T2" in out


def test_tiled_copy_gives_each_thread_four_rows_of_one_column(capsys):
    own = tiling_lesson.tiled_copy_map(thr_shape=(4, 8), val_shape=(4, 1))
    rows, cols = np.indices((16, 8))
    assert own.shape == (16, 8) and (own.thread == 4 * cols + rows // 4).all()
    assert "ownership of the 16x8 tile" in capsys.readouterr().out


@pytest.fixture(scope="module")
def trace():
    return kernel_traces.thread_trace(256, 128, 32, thread=0, block=(0, 0))


def test_thread_trace_is_read_out(trace, capsys):
    tiling_lesson.print_thread_trace(trace)
    out = capsys.readouterr().out
    assert f"tCgC   {trace['tCgC']}" in out
    assert f"= {len(trace['c_cells'])} elements" in out and "grid (2, 1)" in out


def test_the_naive_gemm_does_four_fmas_per_load(trace, capsys):
    cfg = naive_gemm.Config()
    a_map = kernel_traces.operand_ownership("A", cfg)
    assert tiling_lesson.load_reuse(trace, cfg.threads, a_map, 256, 128, 32) == 4
    out = capsys.readouterr().out
    assert f"loaded by {a_map.count.max()} threads" in out and "(21x each)" in out


@pytest.mark.compile
def test_naive_instructions_show_the_k_loop(capsys):
    art = tiling_lesson.naive_instructions("sm_90a")
    out = capsys.readouterr().out
    assert f"{art.sass().count('FFMA')} FFMA" in out and "SASS around the first FFMA" in out


@pytest.mark.gpu
def test_the_naive_gemm_passes_the_notebook_check():
    verdicts, rows = tiling_lesson.check_and_time(shapes=[(200, 100, 20), (129, 257, 9)], size=512)
    assert all(v.ok for v in verdicts) and len(rows) == 2
