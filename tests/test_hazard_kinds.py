"""Every kind a hazard or note of the executor names, and every word of its structured cause,
is defined once, in course/execute/hazards.py (KINDS, CAUSES, UNITS), with what it means.

Read from the source, not from a run: each `Hazard(...)`, `Note(...)`, `machine.note(...)`
and `Cause(...)` call in course/execute whose word is a constant (a name, `module.NAME`, or
either side of `a if c else b`) is followed through module-level assignments and imports to
where the string is made, and that must be `_kind(...)` (a kind), `_cause(...)` (a cause's
`what`) or `_unit(...)` (a cause's `unit`) in hazards.py. A kind spelled as a string in
another module -- even the same words -- fails: a checker that compares `hazards.X` would
never learn of it. Words only known at run time (a function's parameter, a local) are left
to the calls that pass them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from course.execute import hazards

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "course.execute"
HAZARDS = f"{PACKAGE}.hazards"
MAKERS = {"_kind": "kind", "_cause": "cause", "_unit": "unit"}


@functools.cache
def _tree(module: str) -> ast.Module | None:
    path = ROOT / (module.replace(".", "/") + ".py")
    return ast.parse(path.read_text(), str(path)) if path.exists() else None


@functools.cache
def _bindings(module: str) -> dict:
    """A module's top-level names: what each is assigned, or ("import", module, name)."""
    found: dict = {}
    for node in _tree(module).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = ("import", node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = ("import", alias.name, None)
    return found


def _module_named(module: str, name: str) -> str | None:
    """The module a top-level name of `module` is (`from course.execute import tmem`)."""
    bound = _bindings(module).get(name)
    if not isinstance(bound, tuple):
        return None
    _, source, attr = bound
    candidate = source if attr is None else f"{source}.{attr}"
    return candidate if _tree(candidate) is not None else None


def _origins(module: str, expr) -> list | None:
    """Where the string `expr` (in `module`) is made: [(module, table or None, words)], or
    None where it is known only at run time."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [(module, None, expr.value)]
    if isinstance(expr, ast.IfExp):
        body, orelse = _origins(module, expr.body), _origins(module, expr.orelse)
        return None if body is None or orelse is None else body + orelse
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        table = MAKERS.get(expr.func.id)
        if table and expr.args and isinstance(expr.args[0], ast.Constant):
            return [(module, table, expr.args[0].value)]
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        owner = _module_named(module, expr.value.id)
        return _origins(owner, ast.Name(expr.attr)) if owner else None
    if isinstance(expr, ast.Name):
        bound = _bindings(module).get(expr.id)
        if isinstance(bound, tuple):
            _, source, attr = bound
            return _origins(source, ast.Name(attr)) if _tree(source) and attr else None
        return None if bound is None else _origins(module, bound)
    return None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _word_of(node: ast.Call, keyword: str):
    if node.args:
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _uses() -> list:
    """(file:line, module, expression, the table it must come from) of every kind and cause
    word the executor's source passes."""
    uses = []
    for path in sorted((ROOT / "course" / "execute").glob("*.py")):
        module = f"{PACKAGE}.{path.stem}"
        for node in ast.walk(_tree(module)):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.name}:{node.lineno}"
            name = _called(node)
            if name in ("Hazard", "Note", "note"):
                uses.append((where, module, _word_of(node, "kind"), "kind"))
            elif name == "Cause":
                uses.append((where, module, _word_of(node, "what"), "cause"))
                unit = next((k.value for k in node.keywords if k.arg == "unit"), None)
                if unit is not None:
                    uses.append((where, module, unit, "unit"))
    return uses


def test_every_kind_and_cause_raised_is_defined_in_hazards():
    wrong, checked = [], 0
    for where, module, expr, table in _uses():
        origins = _origins(module, expr) if expr is not None else None
        if origins is None:
            continue
        for origin, made_by, words in origins:
            checked += 1
            if (origin, made_by) != (HAZARDS, table):
                wrong.append(f"{where}: {words!r} is made in {origin}, not hazards' _{table}()")
    assert not wrong, "\n".join(wrong)
    assert checked > 100, f"only {checked} words followed: the scan lost its way"


def test_the_tables_hold_every_constant_with_a_meaning():
    for table in (hazards.KINDS, hazards.CAUSES, hazards.UNITS):
        assert table and all(isinstance(m, str) and len(m) > 10 for m in table.values())
    for kind in (hazards.RACE, hazards.TMEM, hazards.MBARRIER, hazards.WAIT_LD):
        assert kind in hazards.KINDS
    assert hazards.DIVISION_BY_ZERO in hazards.CAUSES
    assert hazards.UNIT_CLC_QUERY in hazards.UNITS


def test_a_word_is_defined_once():
    with pytest.raises(AssertionError, match="defined twice"):
        hazards._kind(hazards.RACE, "a second meaning")


@pytest.mark.parametrize(
    "module, name",
    [
        ("mbarriers", "MBARRIER"),
        ("sm90", "PROXY_FENCE"),
        ("tma", "PROXY_FENCE"),
        ("tma", "NOT_DRAINED"),
        ("tma", "LOAD_NOT_WAITED"),
        ("tmem", "TMEM"),
        ("tcgen05", "WAIT_LD"),
        ("tcgen05", "COMMIT_NOT_WAITED"),
        ("wgmma", "ACC_IN_FLIGHT"),
        ("wgmma", "A_IN_FLIGHT"),
        ("wgmma", "NO_FENCE"),
        ("unspecified", "UNSPECIFIED_USED"),
        ("unspecified", "DIVISION_BY_ZERO"),
    ],
)
def test_the_old_names_are_aliases(module, name):
    import importlib

    assert getattr(importlib.import_module(f"{PACKAGE}.{module}"), name) is getattr(hazards, name)
