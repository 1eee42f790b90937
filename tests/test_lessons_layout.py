"""Notebook 02's lessons: operations checked against the model, a layout with its
complement, a matrix painted by tile, and the agreement sample."""

import numpy as np
import pytest

from course.cute.trace import on_cpu
from course.lessons import layout_lesson


def test_same_offsets_tells_a_rearrangement_from_a_new_function(capsys):
    same = layout_lesson.same_offsets(
        [("coalesce", "(2,(2,4)):(1,(2,4))"), ("composition", "(4,4):(4,1)", "(2,8):(8,1)")]
    )
    assert same == [True, False]  # coalesce keeps the function; composition makes a new one
    assert "coalesce((2,(2,4)):(1,(2,4)))" in capsys.readouterr().out


@pytest.mark.parametrize("shape, stride, cotarget", [(4, 2, 24), (3, 4, 24)])
def test_a_layout_and_its_complement_cover_the_cotarget_once(shape, stride, cotarget):
    both = layout_lesson.with_complement(shape, stride, cotarget)
    from course.models import layout as pl

    offsets = pl.parse_layout(str(both)).offsets()
    assert sorted(offsets.ravel().tolist()) == list(range(cotarget))


def test_painted_by_tile_labels_each_cell_with_its_tile():
    import cutlass.cute as cute

    Z = on_cpu(lambda: cute.zipped_divide(cute.make_layout((8, 8), stride=(1, 8)), (2, 4)))
    own = layout_lesson.painted_by_tile(Z, (8, 8))
    rows, cols = np.indices((8, 8))
    assert (own.thread == rows // 2 + 4 * (cols // 4)).all()  # 2x4 tiles, column-major
    assert own.thread_label == "tile" and "painted by tile" in own.title


def test_check_agreement_reports_and_raises_on_a_mismatch(monkeypatch, capsys):
    a = layout_lesson.check_agreement(n_per_op=1, seed=7)
    assert a["cases"] > 0 and "mismatches: 0" in capsys.readouterr().out
    from course.cute import layout_agreement

    monkeypatch.setattr(
        layout_agreement,
        "agreement",
        lambda **kw: {
            "cases": 1,
            "cute_valid": 1,
            "identical": 0,
            "both_refused": 0,
            "mismatches": ["x"],
        },
    )
    with pytest.raises(AssertionError, match="differs from CuTe DSL"):
        layout_lesson.check_agreement()
