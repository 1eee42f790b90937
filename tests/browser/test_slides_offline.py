"""Lecture mode without a network: the exported slides in Chromium, every request blocked."""

from __future__ import annotations

import nbformat

from course.tools import slides
from course.catalogue import LESSONS

from .jupyterlab import screenshot


def test_exported_slides_present_offline_with_static_widget_pictures(lab, tmp_path):
    lesson = LESSONS[0]
    path = slides.export(lesson.path, tmp_path)
    kinds = slides.slide_types(nbformat.read(lesson.path, as_version=4))

    page = lab.page()
    outside = []

    def block_network(route):
        url = route.request.url
        if url.startswith(("file:", "data:")):
            return route.continue_()
        outside.append(url)
        return route.abort()

    page.context.route("**/*", block_network)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    assert page.evaluate("courseSlides.count()") == sum(k in ("slide", "subslide") for k in kinds)
    assert page.locator("section.present h1").first.is_visible()
    screenshot(page, "slides-00-1-title")

    # walk forward to the slide with the tile explorer: its static picture is shown
    for _ in range(page.evaluate("courseSlides.count()")):
        present = page.locator(".slides > section > section.present")
        if "tile_roofline(" in present.inner_text():
            break
        page.keyboard.press("ArrowRight")
    else:
        raise AssertionError("no slide shows the tile_roofline cell")
    cell = present.locator(".jp-CodeCell", has_text="tile_roofline(")
    img = cell.locator(".jp-OutputArea-output img")
    assert img.count() == 1, "the widget cell should fall back to its PNG"
    img.scroll_into_view_if_needed()
    assert img.evaluate("i => i.complete && i.naturalWidth > 300")
    screenshot(page, "slides-00-2-widget-as-picture")

    page.keyboard.press("End")
    assert page.evaluate("courseSlides.index()") == page.evaluate("courseSlides.count()") - 1
    assert outside == [], f"the offline slides tried the network: {outside}"
    assert errors == [], errors
