"""Show kernel code in a notebook: excerpts between markers, and diffs between rungs.

The notebooks never copy kernel code into cells; they show the lines of the module
that actually runs, so what a learner reads is what was compiled.
"""
from __future__ import annotations

import difflib
import inspect


def excerpt(obj, start: str, end: str | None = None, dedent: bool = True) -> str:
    """The lines of `obj`'s source from the first line containing `start` up to (not
    including) the first later line containing `end` (or to the end)."""
    lines = inspect.getsource(obj).splitlines()
    try:
        i = next(n for n, line in enumerate(lines) if start in line)
    except StopIteration:
        raise ValueError(f"{start!r} not found in {getattr(obj, '__qualname__', obj)}")
    j = len(lines)
    if end is not None:
        j = next((n for n, line in enumerate(lines[i + 1:], i + 1) if end in line), len(lines))
    chunk = lines[i:j]
    if dedent:
        pad = min((len(l) - len(l.lstrip()) for l in chunk if l.strip()), default=0)
        chunk = [l[pad:] for l in chunk]
    return "\n".join(chunk)


def show(obj, start: str, end: str | None = None) -> None:
    print(excerpt(obj, start, end))


def diff(old, new, context: int = 1) -> str:
    """A unified diff between the sources of two functions/classes (or strings)."""
    a = old if isinstance(old, str) else inspect.getsource(old)
    b = new if isinstance(new, str) else inspect.getsource(new)
    name_a = getattr(old, "__qualname__", "old")
    name_b = getattr(new, "__qualname__", "new")
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b,
                                          n=context, lineterm=""))
