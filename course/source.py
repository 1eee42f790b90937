"""Show kernel code in a notebook: excerpts between markers, and diffs between rungs.

The notebooks never copy kernel code into cells; they show the lines of the module
that actually runs, so what a learner reads is what was compiled. In a notebook the
code shows with syntax highlighting (HTML with inline colours, so the offline slides
keep them too) and carries its plain text beside it for any viewer that shows text only;
outside a notebook it is printed.
"""
from __future__ import annotations

import difflib
import inspect


class MarkerNotFound(ValueError):
    """An excerpt's start or end marker is not in the function's source: the kernel changed
    under the notebook, and the excerpt must name lines that exist."""


def _name(obj) -> str:
    return getattr(obj, "__qualname__", None) or repr(obj)[:60]


def excerpt(obj, start: str | None = None, end: str | None = None, dedent: bool = True) -> str:
    """The lines of `obj`'s source from the first line containing `start` up to (not
    including) the first later line containing `end`; with `end=None`, to the end of
    `obj`; with `start=None`, from its first line (decorators included). A marker is
    matched within one line; a missing marker raises MarkerNotFound naming the marker and
    the function."""
    lines = inspect.getsource(obj).splitlines()
    if start is None:
        start = lines[0].strip()
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


class Code:
    """Source text that a notebook shows highlighted; its plain text is its repr."""

    def __init__(self, text: str, language: str = "python"):
        self.text, self.language = text, language

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str | None:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name
        except ImportError:  # no Pygments: the plain text shows instead
            return None
        return highlight(self.text, get_lexer_by_name(self.language),
                         HtmlFormatter(noclasses=True, style="default"))


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def display_code(text: str, language: str = "python") -> None:
    """Show `text` highlighted in a notebook, printed elsewhere."""
    if _in_notebook():
        from IPython.display import display

        display(Code(text, language))
    else:
        print(text)


def show(obj, start: str | None = None, end: str | None = None) -> None:
    """Show `excerpt(obj, start, end)`: the whole of `obj` without markers."""
    display_code(excerpt(obj, start, end))


def show_diff(old, new, context: int = 1) -> None:
    """Show `diff(old, new, context)`, highlighted as a diff."""
    display_code(diff(old, new, context), "diff")


def diff(old, new, context: int = 1) -> str:
    """A unified diff between the sources of two functions/classes (or strings)."""
    a = old if isinstance(old, str) else inspect.getsource(old)
    b = new if isinstance(new, str) else inspect.getsource(new)
    name_a = getattr(old, "__qualname__", "old")
    name_b = getattr(new, "__qualname__", "new")
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b,
                                          n=context, lineterm=""))
