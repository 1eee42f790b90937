"""Models, simulators and emulators return data; drawing it is course.viz's job."""

import ast

from course import ROOT

DATA_LAYERS = ("models", "sim", "emulate")
PICTURES = ("matplotlib", "course.viz", "course.widgets")


def imported_modules(path) -> set[str]:
    """Every module an import statement in `path` names, at any depth (lazy imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def draws(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PICTURES)


def test_models_simulators_and_emulators_import_no_pictures():
    offenders = {}
    for layer in DATA_LAYERS:
        for path in sorted((ROOT / "course" / layer).glob("*.py")):
            bad = sorted(m for m in imported_modules(path) if draws(m))
            if bad:
                offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"data layers importing pictures: {offenders}"
