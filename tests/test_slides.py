"""Lecture mode: slide metadata on every cell, and slides/HTML that work offline."""

import re

import nbformat
import pytest

from course.tools import slides
from course.catalogue import LESSONS

WRITTEN = [l for l in LESSONS if l.written]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# a resource the page would fetch (not a link the reader may click)
FETCHED_URL = re.compile(
    r"""<(?:script|link|img|iframe)[^>]+(?:src|href)=["']?(?:https?:)?//"""
    r"""|@import\s+(?:url\()?["']?(?:https?:)?//|url\(["']?(?:https?:)?//"""
)


@pytest.mark.parametrize("lesson", WRITTEN, ids=lambda l: l.path.name)
def test_every_cell_has_slide_metadata(lesson):
    nb = nbformat.read(lesson.path, as_version=4)
    kinds = slides.slide_types(nb)
    missing = [i for i, k in enumerate(kinds) if k not in slides.SLIDE_TYPES]
    assert not missing, f"{lesson.path.name}: cells {missing} lack slideshow.slide_type"
    assert kinds[0] == "slide", "the first cell must open the first slide"
    for cell, kind in zip(nb.cells, kinds):  # the builder's rule: a heading starts a slide
        if cell.cell_type == "markdown" and cell.source.startswith("#"):
            assert kind in ("slide", "subslide"), cell.source.splitlines()[0]


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    path = slides.export(LESSONS[0].path, tmp_path_factory.mktemp("slides"))
    return nbformat.read(LESSONS[0].path, as_version=4), path.read_text()


def test_slides_have_one_section_per_slide(deck):
    nb, html = deck
    kinds = slides.slide_types(nb)
    n_slides = kinds.count("slide")
    n_pages = n_slides + kinds.count("subslide")
    # nbconvert nests each slide's subslides (at least one) in the slide's section
    assert len(re.findall(r"<section\b", html)) == n_slides + n_pages
    assert "courseSlides" in html and "course-slides-bar" in html
    assert nb.cells[0].source.splitlines()[0].lstrip("# ").split(":")[0] in html


def test_slides_fetch_nothing_from_the_network(deck):
    _, html = deck
    found = FETCHED_URL.findall(html)
    assert not found, f"the slides would fetch: {found[:5]}"
    assert "reveal.js" not in html and "require.js" not in html.lower()


@pytest.mark.parametrize("kind", ["slides", "html"])
def test_static_widgets_fall_back_to_their_png(kind):
    nb = nbformat.read(LESSONS[0].path, as_version=4)
    widget_cells = [
        c
        for c in nb.cells
        if any(
            WIDGET_VIEW in o.get("data", {}) and "image/png" in o.get("data", {})
            for o in c.get("outputs", [])
        )
    ]
    assert widget_cells, "notebook 00 has a StaticWidget output"
    html = slides.to_html(nb, kind, "00")
    assert WIDGET_VIEW not in html, "a widget view without a widget manager renders nothing"
    for cell in widget_cells:
        png = next(o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {}))
        assert png.strip()[:200] in html.replace("\n", ""), "the widget's PNG is not in the page"


def test_plain_nbconvert_with_saved_widget_state_drops_the_png():
    """Why the course's exporters drop widget state: with it, nbconvert emits only the
    widget view (rendered by a widget manager fetched from a CDN) and no picture."""
    from nbconvert import HTMLExporter

    nb = nbformat.read(LESSONS[0].path, as_version=4)
    # the committed notebooks carry no widget state (course.tools.notebook_runner strips it);
    # put back what nbclient saves for notebook 00's widget, as a learner's own save would have
    view = next(
        out["data"]["application/vnd.jupyter.widget-view+json"]
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    )
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {
                view["model_id"]: {
                    "model_name": "VBoxModel",
                    "model_module": "@jupyter-widgets/controls",
                    "model_module_version": "2.0.0",
                    "state": {},
                }
            },
            "version_major": 2,
            "version_minor": 0,
        }
    }
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert WIDGET_VIEW in html


def test_slides_cli_writes_build_slides(tmp_path):
    from course.__main__ import main

    assert main(["slides", "0", "--out", str(tmp_path)]) == 0
    out = tmp_path / f"{LESSONS[0].path.stem}.slides.html"
    assert out.stat().st_size > 10_000
    assert main(["slides", "99", "--out", str(tmp_path)]) == 1
