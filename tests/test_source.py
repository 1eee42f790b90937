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
