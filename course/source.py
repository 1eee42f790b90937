"""Show kernel code in a notebook: named regions of a function, whole functions, and diffs.

The notebooks never copy kernel code into cells; they show the lines of the module that
actually runs, so what a learner reads is what was compiled. An excerpt is anchored on a
named region the kernel marks for it, so editing code or comments around it never moves it:

        # region prologue
        ...the lines a notebook shows...
        # endregion prologue

`show(obj, "prologue")` prints the lines between the two markers of `obj` (a function or
method); `show(obj)` prints the whole function from its `def` line. Marker lines are never
shown, also those of regions nested inside an excerpt, nor the formatter's `# fmt: skip`.

In a notebook the code shows with syntax highlighting (HTML with inline colours, so the
offline slides keep them too) and carries its plain text beside it for any viewer that shows
text only; outside a notebook it is printed.
"""

from __future__ import annotations

import difflib
import inspect
import re

START = re.compile(r"^\s*# region (?P<name>[\w-]+)\s*$")
END = re.compile(r"^\s*# endregion (?P<name>[\w-]+)\s*$")
FORMATTER = re.compile(r"\s*# fmt: skip\s*$")  # ruff's, kept out of what a learner reads


class RegionNotFound(ValueError):
    """An excerpt names a region its function does not mark (or marks badly): the kernel
    changed under the notebook, and the excerpt must name a region that exists."""


def _name(obj) -> str:
    return getattr(obj, "__qualname__", None) or repr(obj)[:60]


def regions(obj) -> dict[str, tuple[int, int]]:
    """name -> (first, last) line index (of `obj`'s source lines) of each region it marks,
    markers excluded. Raises RegionNotFound for an unclosed, unopened or repeated region."""
    return _regions(inspect.getsource(obj).splitlines(), obj)


def _regions(lines: list[str], obj) -> dict[str, tuple[int, int]]:
    found, open_at = {}, {}
    for i, line in enumerate(lines):
        if m := START.match(line):
            name = m["name"]
            if name in found or name in open_at:
                raise RegionNotFound(f"region {name!r} is marked twice in {_name(obj)}")
            open_at[name] = i
        elif m := END.match(line):
            name = m["name"]
            if name not in open_at:
                raise RegionNotFound(f"'# endregion {name}' without its start in {_name(obj)}")
            found[name] = (open_at.pop(name) + 1, i)
    if open_at:
        raise RegionNotFound(f"region(s) {sorted(open_at)} never closed in {_name(obj)}")
    return found


def excerpt(obj, region: str | None = None, dedent: bool = True) -> str:
    """The lines of `obj`'s region `region`, or (region None) of the whole function from its
    `def` line (decorators left out); region markers are left out either way."""
    lines = inspect.getsource(obj).splitlines()
    if region is None:
        start = next(
            i
            for i, line in enumerate(lines)
            if line.lstrip().startswith(("def ", "async def ", "class "))
        )
        chunk = lines[start:]
    else:
        spans = _regions(lines, obj)
        if region not in spans:
            raise RegionNotFound(
                f"no region {region!r} in {_name(obj)}; it marks {sorted(spans) or 'none'}"
            )
        first, end = spans[region]
        chunk = lines[first:end]
    chunk = [
        FORMATTER.sub("", line) for line in chunk if not (START.match(line) or END.match(line))
    ]
    if dedent:
        pad = min((len(line) - len(line.lstrip()) for line in chunk if line.strip()), default=0)
        chunk = [line[pad:] for line in chunk]
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
        return highlight(
            self.text,
            get_lexer_by_name(self.language),
            HtmlFormatter(noclasses=True, style="default"),
        )


def display_code(text: str, language: str = "python") -> None:
    """Show `text` highlighted in a notebook, printed elsewhere (its repr is the text)."""
    from course.runtime.live import show

    show(Code(text, language))


def show(obj, region: str | None = None) -> None:
    """Show `excerpt(obj, region)`: highlighted in a notebook, printed elsewhere."""
    display_code(excerpt(obj, region))


def diff(old, new, context: int = 1) -> str:
    """A unified diff between two functions/classes (their whole excerpts) or strings."""
    a = old if isinstance(old, str) else excerpt(old, dedent=False)
    b = new if isinstance(new, str) else excerpt(new, dedent=False)
    name_a = getattr(old, "__qualname__", "old")
    name_b = getattr(new, "__qualname__", "new")
    return "\n".join(
        difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b, n=context, lineterm="")
    )
