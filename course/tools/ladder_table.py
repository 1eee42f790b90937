"""ARCHITECTURE.md's table of kernel steps, written from the one ladder registry
(kernels/ladder.py): the notebook that introduces each step, the idea it adds, and the
earlier steps it imports (read from its source, so the column cannot go stale).

    python -m course ladder            print the table
    python -m course ladder --write    put it into ARCHITECTURE.md
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from course import ROOT
from kernels import ladder

ARCHITECTURE = ROOT / "ARCHITECTURE.md"
START, END = "<!-- ladder-table:start -->", "<!-- ladder-table:end -->"


def imports(path: Path) -> set[str]:
    """Every module name `path` imports, absolute (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    return names


def builds_on(module: str) -> list[str]:
    """The step modules that kernels/<module>.py imports, in ladder order."""
    named = {
        name.split(".")[1]
        for name in imports(ROOT / "kernels" / f"{module}.py")
        if name.startswith("kernels.")
    }
    return [s.module for s in ladder.in_order() if s.module in named and s.module != module]


def table() -> str:
    rows = ["| notebook | module | adds | builds on |", "|---|---|---|---|"]
    for s in ladder.in_order():
        number = f"{s.notebook:02d}" if isinstance(s, ladder.Step) else ""  # a parts module
        rows.append(
            f"| {number} | `{s.module}` | {s.adds} | "
            f"{', '.join(f'`{m}`' for m in builds_on(s.module))} |"
        )
    return "\n".join(rows)


def section() -> str:
    return f"{START}\n{table()}\n{END}"


def updated(text: str) -> str:
    """`text` with its table block replaced (ValueError if it has none)."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"ARCHITECTURE.md has no {START} ... {END} block")
    return pattern.sub(lambda _: section(), text)


def main(write: bool = False) -> int:
    if not write:
        print(table())
        return 0
    ARCHITECTURE.write_text(updated(ARCHITECTURE.read_text()))
    print(f"wrote the ladder table into {ARCHITECTURE}")
    return 0
