"""The Ownership data model (the contract in OWNERSHIP_API.md) and its picture."""

import numpy as np
import pytest

from course.cute import algebra
from course.cute.trace import on_cpu
from course.models import layout as pl
from course.models.ownership import Ownership, from_thread_value_function
from course.viz import ownership_pictures as vo
from course.widgets.static_widget import figure_png

PNG = b"\x89PNG\r\n\x1a\n"

# The TiledCopy of the seed's tutorial 04: 32 threads as (4,8) column-major, 4 values each
# down a column of a 16x8 tile. Its TV layout, as CuTe computes it, is checked below.
COPY_TV = "((4,8),4):((4,16),1)"


def test_fields_are_the_contract():
    own = Ownership.from_pairs((2, 3), [((0, 0), (0, 0)), ((1, 0), (1, 2))], title="t")
    assert own.shape == (2, 3) and own.title == "t" and own.thread_label == "T"
    for arr in (own.thread, own.value, own.count):
        assert arr.dtype == np.int64 and arr.shape == (2, 3)
    assert own.thread.tolist() == [[0, -1, -1], [-1, -1, 1]]
    assert own.value.tolist() == [[0, -1, -1], [-1, -1, 0]]
    assert own.count.tolist() == [[1, 0, 0], [0, 0, 1]]
    assert own.threads == 2


def test_replication_keeps_the_lowest_owner_and_counts_all():
    pairs = [((5, 1), (0, 0)), ((2, 3), (0, 0)), ((2, 0), (0, 0)), ((7, 0), (1, 1))]
    own = Ownership.from_pairs((2, 2), pairs, thread_label="W")
    assert own.thread[0, 0] == 2 and own.value[0, 0] == 0 and own.count[0, 0] == 3
    assert own.owners(0, 0) == [(2, 0), (2, 3), (5, 1)]
    assert own.owners(0, 1) == [] and own.replicated
    assert own.cells_of(2) == [(0, 0, 0), (0, 0, 3)]
    assert "W2 value 0" in own.describe_cell(0, 0) and "replicated 3x" in own.describe_cell(0, 0)
    with pytest.raises(IndexError):
        own.owners(2, 0)


def test_bad_pairs_are_refused():
    with pytest.raises(ValueError, match="outside the 2x2 tile"):
        Ownership.from_pairs((2, 2), [((0, 0), (2, 0))])
    with pytest.raises(ValueError, match="two modes"):
        Ownership.from_tv_layout("(4,4,4):(1,4,16)", (8, 8))
    with pytest.raises(ValueError, match="outside"):
        Ownership.from_tv_layout("(4,4):(1,4)", (2, 2))


def test_tiled_copy_tv_layout_from_cute_gives_the_seed_map():
    """CuTe's own TV layout for the seed's TiledCopy; T00 owns rows 0-3 of column 0, ..."""

    def job():
        import cutlass
        import cutlass.cute as cute

        atom = cute.make_copy_atom(
            cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128
        )
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 8)), cute.make_layout((4, 1)))
        return tiled.layout_tv_tiled, tiled.tiler_mn

    tv, tiler = on_cpu(job)
    assert str(tv) == "(32,4):(4,1)"
    own = Ownership.from_tv_layout(tv, (16, 8))
    assert own.threads == 32 and (own.count == 1).all()
    for t in range(32):  # T(4c + q) owns rows 4q..4q+3 of column c, in value order
        q, c = t % 4, t // 4
        assert own.cells_of(t) == [(4 * q + v, c, v) for v in range(4)]
    # the same map from the hand-written nested TV layout
    assert (Ownership.from_tv_layout(COPY_TV, (16, 8)).thread == own.thread).all()


def test_from_tv_layout_accepts_every_form():
    lay = pl.parse_layout(COPY_TV)
    a = Ownership.from_tv_layout(lay, (16, 8))
    b = Ownership.from_tv_layout(COPY_TV, (16, 8))
    c = on_cpu(lambda: Ownership.from_tv_layout(algebra.to_cute(lay), (16, 8)).thread)
    assert (a.thread == b.thread).all() and (a.thread == c).all()


def test_from_a_function():
    own = from_thread_value_function((4, 4), 4, 4, lambda t, v: (v, t) if t < 3 else None)
    assert own.threads == 3 and own.thread[:, 3].tolist() == [-1] * 4


def test_big_tiles_draw_quickly_and_are_labelled():
    rng = np.random.default_rng(0)
    cells = [(r, c) for r in range(256) for c in range(256)]
    pairs = [
        ((int(t), i % 64), cell)
        for i, (cell, t) in enumerate(zip(cells, rng.integers(0, 256, len(cells))))
    ]
    own = Ownership.from_pairs((256, 256), pairs, title="random 256x256")
    fig = vo.draw(own, highlight=3, cell=(10, 10), source="test")
    ax = fig.axes[0]
    assert "random 256x256" in ax.get_title() and "row" in ax.get_ylabel()
    assert figure_png(fig).startswith(PNG)


def test_small_maps_write_thread_and_value():
    own = Ownership.from_tv_layout(COPY_TV, (16, 8), title="copy")
    texts = [t.get_text() for t in vo.draw(own).axes[0].texts]
    assert "T0/v0" in texts and "T31/v3" in texts
    texts = [t.get_text() for t in vo.draw(own, highlight=5).axes[0].texts]
    assert texts.count("v0") == 1 and "v3" in texts
    assert vo.owner_colour(0) != vo.owner_colour(1)
