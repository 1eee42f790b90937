"""course.execute has no import circle, and every modelled name is given by one table.

The graph counts every `import` of a course.execute module, at the top of a file or inside a
function: a lazy import hides a circle from Python, not from the next engineer.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from .import_graph import circles

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "course" / "execute"


def _imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The course.execute modules a module's source imports, anywhere in it."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "course.execute":
                found.update(a.name for a in node.names)
            elif node.module.startswith("course.execute."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(
                a.name.split(".")[2] for a in node.names if a.name.startswith("course.execute.")
            )
    return found & modules


def import_graph(package: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    modules = {p.stem for p in package.glob("*.py")}
    return {
        m: _imported(ast.parse((package / f"{m}.py").read_text()), modules) - {m} for m in modules
    }


def test_the_graph_finds_a_circle_through_a_lazy_import(tmp_path):
    (tmp_path / "a.py").write_text("from course.execute import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from course.execute.a import x\n")
    (tmp_path / "c.py").write_text("import course.execute.a\n")
    assert circles(import_graph(tmp_path)) == [["a", "b"]]


def test_course_execute_has_no_import_circle():
    found = circles(import_graph())
    assert not found, "import circles in course/execute: " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_every_stand_in_module_is_built_from_the_tables():
    from course.execute import api, standins

    assert api.MODULES is not None and standins.MODULES == api.MODULES
    # each name of each stand-in has the table that gave it
    for module, namespace in api.MODULES.items():
        for name in vars(namespace):
            if not name.startswith("_"):
                assert (module, name) in api.OWNERS, f"{module}.{name} came from no table"
    assert api.OWNERS[("cutlass.cute.arch", "alloc_tmem")] == "course.execute.blackwell"
    assert api.OWNERS[("cutlass.cute.nvgpu.cpasync", "make_tiled_tma_atom")] == (
        "course.execute.hopper"
    )


def test_a_name_given_twice_is_refused():
    from course.execute import standins

    first = {"cutlass": {}, "cutlass.cute": {"size": len}}
    with pytest.raises(standins.DuplicateName, match=r"cutlass\.cute\.size.*\bb\b"):
        standins.build([("a", first), ("b", {"cutlass.cute": {"size": abs}})])


def test_a_name_changed_on_purpose_is_taken():
    from course.execute import standins

    first = {"cutlass": {}, "cutlass.cute": {"size": len, "rank": len}}
    later = {
        "cutlass.cute": {
            "size": standins.Replaces(abs),
            "rank": standins.Wraps(lambda old: lambda x: old(x) + 1),
        },
        "cutlass.utils": {"size_alias": standins.Alias("cutlass.cute", "size")},
    }
    modules, owners = standins.build([("a", first), ("b", later)])
    cute = modules["cutlass.cute"]
    assert cute.size is abs and cute.rank("ab") == 3
    assert modules["cutlass"].cute is cute and modules["cutlass.utils"].size_alias is abs
    assert owners[("cutlass.cute", "size")] == "b, replacing a"
    with pytest.raises(standins.DuplicateName, match="no table before it"):
        standins.build([("a", first), ("b", {"cutlass.cute": {"shape": standins.Wraps(id)}})])


def test_the_architecture_tables_give_no_name_twice():
    """Building the stand-ins again from api's tables raises nothing (standins.build refuses
    a name two tables give without Replaces/Wraps/Alias), and gives the same names."""
    from course.execute import api, hopper, standins

    modules, _ = standins.build(api.TABLES, hopper.LOCATION_FREE)
    assert {m: set(vars(ns)) for m, ns in modules.items()} == {
        m: set(vars(ns)) for m, ns in api.MODULES.items()
    }
