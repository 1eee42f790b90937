"""Import graphs read from the source, and their circles: every `import` counts, at the top of
a file or inside a function (a lazy import hides a circle from Python, not from the next
engineer)."""

from __future__ import annotations

from pathlib import Path

from course.tools.ladder_table import ROOT, imports


def module_graph(packages: tuple[str, ...] = ("course", "kernels")) -> dict[str, set[str]]:
    """Module -> the modules of `packages` it imports. `from package import name` counts as
    an import of the module `package.name` where there is one, not of the package."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for imported in imports(path):
            bits = imported.split(".")
            longest = next(
                (
                    ".".join(bits[:i])
                    for i in range(len(bits), 0, -1)
                    if ".".join(bits[:i]) in modules
                ),
                None,
            )
            if longest is not None and longest != name:
                found.add(longest)
        graph[name] = {m for m in found if not any(o.startswith(m + ".") for o in found)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found
