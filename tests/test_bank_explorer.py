"""The BankConflictExplorer widget: presets, custom choices, errors, static picture."""

from course.widgets.bank_explorer import ACCESSES, BankConflictExplorer, make_access, make_tile
from course.widgets.static_widget import StaticWidget

PNG = b"\x89PNG\r\n\x1a\n"


def test_presets_show_the_model():
    e = BankConflictExplorer("float8x8_rows")
    assert "16 wavefronts, ideal 8, 8 bank conflict(s)" in e.summary()
    e.preset.value = "float8x8_rows_swizzled"
    assert "0 bank conflict(s)" in e.summary()
    e.preset.value = "vec128_rows"
    assert "per phase 8, 8, 8, 8" in e.summary()


def test_custom_choices_and_request_slider():
    e = BankConflictExplorer("float8x8_rows")
    e.shape.value = "32x32"  # switches to custom: fp32 32x32 column-major, rows
    assert e.preset.value == "(custom)"
    assert "1024 wavefronts" in e.summary() and e.request.max == 31
    e.storage.value = "column-major, padded +1"
    assert "0 bank conflict(s)" in e.summary()
    e.request.value = 5
    assert "Request 5:" in e.summary()


def test_impossible_choices_explain_instead_of_failing():
    e = BankConflictExplorer("float8x8_rows")
    e.access.value = ACCESSES[4]  # mma fragment on fp32
    assert e.summary().startswith("cannot apply") and "16-bit" in e.summary()
    assert e.widget().snapshot().startswith(PNG)
    e.dtype.value = "bf16"
    e.shape.value = "16x64"
    e.storage.value = "row-major"
    assert "32 wavefronts" in e.summary()  # the mma_a case, reached by hand
    e.swizzle.value = "TMA 128B: Swizzle<3,4,3> on bytes"
    assert "4 wavefronts, ideal 4, 0 bank conflict(s)" in e.summary()


def test_pattern_builders():
    t = make_tile("bf16", "32x64", "row-major", "TMA 128B: Swizzle<3,4,3> on bytes")
    assert make_access(ACCESSES[3], t).predict(t).conflicts == 0
    assert (
        make_access(ACCESSES[5], make_tile("fp32", "32x4", "row-major", "none"))
        .predict(make_tile("fp32", "32x4", "row-major", "none"))
        .conflicts
        == 2
    )


def test_widget_has_a_static_picture():
    w = BankConflictExplorer("tma_128B_plain").widget()
    assert isinstance(w, StaticWidget)
    bundle = w._repr_mimebundle_()
    assert "image/png" in bundle and "application/vnd.jupyter.widget-view+json" in bundle
