"""Show kernel code in a notebook: excerpts between markers, and diffs between rungs.

The notebooks never copy kernel code into cells; they show the lines of the module
that actually runs, so what a learner reads is what was compiled.
"""
from __future__ import annotations

import difflib
import inspect


class MarkerNotFound(ValueError):
    """An excerpt's start or end marker is not in the function's source: the kernel changed
    under the notebook, and the excerpt must name lines that exist."""


def _name(obj) -> str:
    return getattr(obj, "__qualname__", None) or repr(obj)[:60]


def excerpt(obj, start: str, end: str | None = None, dedent: bool = True) -> str:
    """The lines of `obj`'s source from the first line containing `start` up to (not
    including) the first later line containing `end`; with `end=None`, to the end of
    `obj`. A marker is matched within one line; a missing marker raises MarkerNotFound
    naming the marker and the function."""
    lines = inspect.getsource(obj).splitlines()
    i = next((n for n, line in enumerate(lines) if start in line), None)
    if i is None:
        raise MarkerNotFound(f"start marker {start!r} not found in {_name(obj)}")
    j = len(lines)
    if end is not None:
        j = next((n for n, line in enumerate(lines[i + 1:], i + 1) if end in line), None)
        if j is None:
            raise MarkerNotFound(f"end marker {end!r} not found after {start!r} in {_name(obj)}"
                                 + (" (a marker is matched within one line: it cannot hold a "
                                    "newline)" if "\n" in end else ""))
    chunk = lines[i:j]
    if dedent:
        pad = min((len(l) - len(l.lstrip()) for l in chunk if l.strip()), default=0)
        chunk = [l[pad:] for l in chunk]
    return "\n".join(chunk)


def show(obj, start: str, end: str | None = None) -> None:
    """Print `excerpt(obj, start, end)`."""
    print(excerpt(obj, start, end))


def diff(old, new, context: int = 1) -> str:
    """A unified diff between the sources of two functions/classes (or strings)."""
    a = old if isinstance(old, str) else inspect.getsource(old)
    b = new if isinstance(new, str) else inspect.getsource(new)
    name_a = getattr(old, "__qualname__", "old")
    name_b = getattr(new, "__qualname__", "new")
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b,
                                          n=context, lineterm=""))
