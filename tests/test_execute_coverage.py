"""docs/executor-coverage.md is the executor's stand-ins as they are (course.execute.coverage),
and an attribute a stand-in lacks is said to be the executor's gap only where CuTe DSL has it."""

import pytest

from course.execute import coverage, hazards
from course.execute.api import make_layout


def test_the_coverage_table_is_current():
    assert coverage.TABLE.read_text() == coverage.render(), (
        "regenerate it: python -m course.execute.coverage"
    )


def test_every_modelled_name_is_cute_dsls_own():
    """The table's modelled column holds names, not made-up ones: each CuTe DSL module the
    executor stands in for has most of them (the rest are deprecated aliases or
    course-side helpers the stand-in also offers)."""
    rows = {name: modelled for name, modelled, _ in coverage.rows()}
    assert "make_layout" in rows["cutlass.cute"] and "copy" in rows["cutlass.cute"]


def test_a_missing_attribute_of_a_standin_is_unmodelled_only_if_cute_has_it():
    layout = make_layout((4, 8), (8, 1))
    with pytest.raises(AttributeError) as typo:
        layout.no_such_layout_method
    assert not isinstance(typo.value, hazards.Unmodelled)
    real_names = [n for n in dir(hazards._real_classes(type(layout))[0]) if not n.startswith("_")]
    lacking = [n for n in real_names if not hasattr(type(layout), n)]
    if lacking:  # a method of CuTe's Layout the stand-in does not have yet
        with pytest.raises(hazards.UnmodelledAttribute):
            getattr(layout, lacking[0])
