"""Lecture mode: every notebook as a slide deck that works offline.

    python -m course slides [NN ...]   write build/slides/NN_topic.slides.html

Cells carry `slideshow` metadata (a markdown cell that opens with a heading starts a
slide); this turns a notebook into one self-contained HTML file with nbconvert's
slides exporter and the course's template (course/tools/slides_template/). nbconvert's
own reveal template loads reveal.js, require.js, jQuery, mermaid, MathJax and the
widget manager from CDNs, so it shows nothing useful without a network; the course's
template references no URL at all: styles and a small presenter are inlined, and
pictures are data URIs.

Widgets: the notebook's saved widget state is dropped before export, so every
StaticWidget output falls back to the PNG it carries (nbconvert shows a widget view
only when widget state is present, and that view needs the CDN widget manager).
Math in markdown ($...$) is shown as TeX source: MathJax is not bundled.
"""

from __future__ import annotations

import copy
from pathlib import Path

from course import ROOT
from course.catalogue import LESSONS

TEMPLATE_DIR = Path(__file__).resolve().parent / "slides_template"
OUT_DIR = ROOT / "build" / "slides"
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def without_widget_state(nb):
    """A copy of `nb` whose widget outputs fall back to their static pictures."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    return nb


def exporter(kind: str = "slides"):
    """nbconvert exporter for `kind` ("slides" or "html") that needs no network for pictures."""
    from nbconvert import HTMLExporter, SlidesExporter

    if kind == "slides":
        exp = SlidesExporter(
            extra_template_basedirs=[str(TEMPLATE_DIR.parent)], template_name=TEMPLATE_DIR.name
        )
    elif kind == "html":
        exp = HTMLExporter(template_name="lab")
    else:
        raise ValueError(f"kind must be 'slides' or 'html', not {kind!r}")
    exp.embed_images = True
    return exp


def to_html(nb, kind: str = "slides", name: str = "notebook") -> str:
    """The notebook as one HTML page (slides by default), widgets as static pictures."""
    resources = {"metadata": {"name": name}}
    if kind == "slides":
        resources["course_slides"] = {
            "css": (TEMPLATE_DIR / "presenter.css").read_text(),
            "js": (TEMPLATE_DIR / "presenter.js").read_text(),
        }
    body, _ = exporter(kind).from_notebook_node(without_widget_state(nb), resources=resources)
    return body


def export(path: Path, out_dir: Path = OUT_DIR) -> Path:
    """Write `path` as out_dir/<name>.slides.html and return the file written."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{path.stem}.slides.html"
    out.write_text(to_html(nb, "slides", path.stem), encoding="utf-8")
    return out


def export_all(numbers: list[int] | None = None, out_dir: Path = OUT_DIR) -> list[Path]:
    """Export every written notebook (or only `numbers`)."""
    written = []
    for lesson in LESSONS:
        if lesson.written and (not numbers or lesson.number in numbers):
            written.append(export(lesson.path, out_dir))
    return written


def slide_types(nb) -> list[str | None]:
    """Each cell's slide_type (None where a cell has none)."""
    return [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]
