"""ARCHITECTURE.md's table of kernel steps, written from the one ladder registry
(kernels/ladder.py): the notebook that introduces each step, the idea it adds, and the
earlier steps it imports (read from its source, so the column cannot go stale).

    python -m course ladder            print the table
    python -m course ladder --write    put it into ARCHITECTURE.md
"""

from __future__ import annotations

import ast
import re

from course import ROOT
from kernels import ladder

ARCHITECTURE = ROOT / "ARCHITECTURE.md"
START, END = "<!-- ladder-table:start -->", "<!-- ladder-table:end -->"


def builds_on(module: str) -> list[str]:
    """The step modules that kernels/<module>.py imports, in ladder order."""
    named = set()
    for node in ast.walk(ast.parse((ROOT / "kernels" / f"{module}.py").read_text())):
        if isinstance(node, ast.Import):
            named |= {a.name.split(".")[1] for a in node.names if a.name.startswith("kernels.")}
        elif isinstance(node, ast.ImportFrom):
            base = (node.module or "").split(".")
            if node.level == 0 and base[0] != "kernels":
                continue
            inside = base[1:] if node.level == 0 else base  # the part below kernels/
            named |= {inside[0]} if inside and inside[0] else {a.name for a in node.names}
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
