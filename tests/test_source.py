"""Kernel excerpts in the notebooks: markers must exist, and every excerpt a notebook shows
names lines that are in the kernel today."""
import ast
import json

import pytest

from course import ROOT, source


def _sample():
    first = 1
    second = first + 1
    third = second + 1
    return third


def test_excerpt_between_markers_and_to_the_end():
    assert source.excerpt(_sample, "first = 1", "third") == "first = 1\nsecond = first + 1"
    assert source.excerpt(_sample, "third = ").splitlines() == ["third = second + 1",
                                                               "return third"]


def test_a_missing_start_marker_names_it_and_the_function():
    with pytest.raises(source.MarkerNotFound, match=r"start marker 'fourth' not found in _sample"):
        source.excerpt(_sample, "fourth")


def test_a_missing_end_marker_is_an_error_not_the_rest_of_the_function():
    with pytest.raises(source.MarkerNotFound,
                       match=r"end marker 'fourth' not found after 'first = 1' in _sample"):
        source.excerpt(_sample, "first = 1", "fourth")
    with pytest.raises(source.MarkerNotFound, match="cannot hold a newline"):
        source.excerpt(_sample, "first = 1", "third =\n")
    with pytest.raises(source.MarkerNotFound):   # the end must come after the start
        source.excerpt(_sample, "second", "first = 1")


def _notebook_excerpts():
    """(notebook, call source, namespace) for every source.show/excerpt call in a notebook."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = [''.join(c["source"]) for c in json.loads(path.read_text())["cells"]
                 if c["cell_type"] == "code"]
        trees = [ast.parse(src) for src in cells]
        imports = [ast.unparse(node) for tree in trees for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) and node.module
                   and node.module.split(".")[0] == "kernels"]
        calls = [node for tree in trees for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr in ("show", "excerpt")
                 and isinstance(node.func.value, ast.Name) and node.func.value.id == "source"]
        for call in calls:
            yield path.name, ast.unparse(call), imports


EXCERPTS = list(_notebook_excerpts())


def test_the_notebooks_show_excerpts():
    assert len(EXCERPTS) >= 15


@pytest.mark.parametrize("notebook, call, imports", EXCERPTS,
                         ids=[f"{n[:2]}:{c[:60]}" for n, c, _ in EXCERPTS])
def test_every_notebook_excerpt_names_lines_that_exist(notebook, call, imports):
    namespace = {}
    for line in imports:
        exec(line, namespace)
    node = ast.parse(call, mode="eval").body
    args = [eval(compile(ast.Expression(a), notebook, "eval"), namespace) for a in node.args]
    text = source.excerpt(*args)
    assert text.strip(), f"{notebook}: {call} shows nothing"


def test_without_markers_an_excerpt_is_the_whole_function():
    assert source.excerpt(_sample).splitlines()[0] == "def _sample():"
    assert source.excerpt(_sample).splitlines()[-1] == "    return third"


def test_code_shows_highlighted_in_a_notebook_and_as_plain_text_elsewhere(capsys):
    code = source.Code(source.excerpt(_sample))
    assert repr(code) == source.excerpt(_sample)  # the text/plain of the display bundle
    html = code._repr_html_()
    assert html.startswith("<div") and "style=" in html and "class=" in html
    assert '<span style="color: #008000; font-weight: bold">def</span>' in html  # inline colours
    assert "http" not in html  # nothing to fetch: works in the offline slides
    source.show(_sample, "second")  # outside a notebook: printed
    assert capsys.readouterr().out == "second = first + 1\nthird = second + 1\nreturn third\n"


def test_a_diff_is_highlighted_as_a_diff():
    old, new = "a = 1\nb = 2\n", "a = 1\nb = 3\n"
    html = source.Code(source.diff(old, new), "diff")._repr_html_()
    assert "-b = 2" in html and "+b = 3" in html


def test_notebook_sources_are_shown_with_source_show_not_printed():
    """Kernel code a notebook shows goes through course.source (highlighted), never a bare
    print(inspect.getsource(...)), in the notebooks that use source.show."""
    for path in sorted((ROOT / "notebooks").glob("0[0-6]_*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "code")
        assert "inspect.getsource" not in code, path.name
