"""Kernel excerpts in the notebooks: every excerpt a notebook shows names a region the kernel
marks, and shows lines; every region a kernel marks is well formed and shown somewhere."""

import ast
import inspect
import json

import pytest

from course import ROOT, source


def _sample():
    first = 1
    # region middle
    second = first + 1
    # region inner
    third = second + 1
    # endregion inner
    # endregion middle
    return third


def test_a_region_is_the_lines_between_its_markers_without_any_marker():
    assert source.excerpt(_sample, "middle") == "second = first + 1\nthird = second + 1"
    assert source.excerpt(_sample, "inner") == "third = second + 1"


def test_without_a_region_the_whole_function_from_its_def_line():
    text = source.excerpt(_sample)
    assert text.splitlines()[0] == "def _sample():" and "region" not in text
    assert text.splitlines()[-1] == "    return third"


def test_a_missing_region_names_the_ones_that_exist():
    with pytest.raises(
        source.RegionNotFound,
        match=r"no region 'fourth' in _sample; it marks "
        r"\['inner', 'middle'\]",
    ):
        source.excerpt(_sample, "fourth")


def _unclosed():
    # region open
    return 1


def _twice():
    # region a
    # endregion a
    # region a
    # endregion a
    return 1


def test_badly_marked_regions_are_refused():
    with pytest.raises(source.RegionNotFound, match="never closed"):
        source.regions(_unclosed)
    with pytest.raises(source.RegionNotFound, match="marked twice"):
        source.regions(_twice)


def test_a_diff_of_two_functions_leaves_markers_out():
    def other():
        first = 1
        second = first + 2
        return second

    d = source.diff(_sample, other)
    assert "-    second = first + 1" in d and "+        second = first + 2" in d
    assert "region" not in d
    assert "-b" in source.diff("a\nb\nc", "a\nB\nc")


def _notebook_excerpts():
    """(notebook, call source, imports) for every source.show/excerpt/diff call in a notebook."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = [
            "".join(c["source"])
            for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "code"
        ]
        trees = [ast.parse(src) for src in cells]
        imports = [
            ast.unparse(node)
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and (node.module.split(".")[0] == "kernels" or node.module.startswith("course.lessons"))
        ]
        bare = {  # show / excerpt / diff imported by name from course.source
            a.asname or a.name
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "course.source"
            for a in node.names
        }
        imports += [
            ast.unparse(node)
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            and any(a.name.split(".")[0] == "kernels" for a in node.names)
        ]
        calls = [
            node
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("show", "excerpt", "diff")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "source"
                or isinstance(node.func, ast.Name)
                and node.func.id in bare & {"show", "excerpt", "diff"}
            )
        ]
        for call in calls:
            yield path.name, ast.unparse(call), imports


EXCERPTS = list(_notebook_excerpts())


def _evaluate(notebook, call, imports) -> tuple[str, list]:
    namespace = {}
    for line in imports:
        exec(line, namespace)
    node = ast.parse(call, mode="eval").body
    args = [eval(compile(ast.Expression(a), notebook, "eval"), namespace) for a in node.args]
    return getattr(node.func, "attr", None) or node.func.id, args


def test_the_notebooks_show_excerpts():
    assert len(EXCERPTS) >= 15


@pytest.mark.parametrize(
    "notebook, call, imports", EXCERPTS, ids=[f"{n[:2]}:{c[:60]}" for n, c, _ in EXCERPTS]
)
def test_every_notebook_excerpt_exists_and_shows_lines(notebook, call, imports):
    kind, args = _evaluate(notebook, call, imports)
    text = source.diff(*args) if kind == "diff" else source.excerpt(*args)
    assert text.strip(), f"{notebook}: {call} shows nothing"
    assert "# region" not in text and "# endregion" not in text


def test_code_shows_highlighted_in_a_notebook_and_as_plain_text_elsewhere(capsys):
    code = source.Code(source.excerpt(_sample))
    assert repr(code) == source.excerpt(_sample)  # the text/plain of the display bundle
    html = code._repr_html_()
    assert html.startswith("<div") and "style=" in html and "class=" in html
    assert '<span style="color: #008000; font-weight: bold">def</span>' in html  # inline colours
    assert "http" not in html  # nothing to fetch: works in the offline slides
    source.show(_sample, "middle")  # outside a notebook: printed
    assert capsys.readouterr().out == "second = first + 1\nthird = second + 1\n"


def test_a_diff_is_highlighted_as_a_diff():
    old, new = "a = 1\nb = 2\n", "a = 1\nb = 3\n"
    html = source.Code(source.diff(old, new), "diff")._repr_html_()
    assert "-b = 2" in html and "+b = 3" in html


def test_notebook_sources_are_shown_with_source_show_not_printed():
    """Kernel code a notebook shows goes through course.source (highlighted), never a bare
    print(inspect.getsource(...)), in the notebooks that use source.show."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = "\n".join(
            "".join(c["source"])
            for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "code"
        )
        assert "inspect.getsource" not in code, path.name


def _kernel_functions():
    """Every function and method written in kernels/ that marks a region."""
    import importlib

    for path in sorted((ROOT / "kernels").glob("*.py")):
        if "# region " not in path.read_text():
            continue
        module = importlib.import_module(f"kernels.{path.stem}")
        functions = [fn for _, fn in inspect.getmembers(module, inspect.isfunction)]
        for _, cls in inspect.getmembers(module, inspect.isclass):
            functions += [fn for _, fn in inspect.getmembers(cls, inspect.isfunction)]
        for fn in functions:
            fn = inspect.unwrap(fn)
            if getattr(fn, "__code__", None) and fn.__code__.co_filename == str(path):
                if "# region " in inspect.getsource(fn):
                    yield fn


def test_every_region_a_kernel_marks_is_well_formed_and_shown_by_a_notebook():
    shown = set()
    for notebook, call, imports in EXCERPTS:
        kind, args = _evaluate(notebook, call, imports)
        if kind != "diff" and len(args) > 1:
            shown.add((inspect.unwrap(args[0]).__qualname__, args[1]))
    marked = {
        (inspect.unwrap(fn).__qualname__, name)
        for fn in _kernel_functions()
        for name in source.regions(fn)
    }
    assert marked, "no kernel marks a region"
    assert marked <= shown, f"regions no notebook shows: {sorted(marked - shown)}"
    texts = "".join(p.read_text() for p in (ROOT / "kernels").glob("*.py"))
    assert texts.count("# region ") == texts.count("# endregion ") == len(marked)


def _formatted(a, b, c, d, e, f):  # fmt: skip
    return a


def test_the_formatters_directives_are_not_shown():
    assert source.excerpt(_formatted).splitlines()[0] == "def _formatted(a, b, c, d, e, f):"
