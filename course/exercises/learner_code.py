"""The learner's code of a kernel exercise, as source that can be compiled anywhere.

A kernel exercise hands the checker a function the learner wrote in a notebook cell
(tagged `exercise-kernel`). The checker works from that function's *source*, not the
object: CuTe DSL reads a kernel's source to trace it, and a GPU check runs in a child
process (so a hang cannot freeze the notebook), which cannot receive a function defined
in a notebook. `LearnerCode.load()` writes the source, after a fixed preamble of imports,
into a small module file and imports it: the same code then compiles here, in a child
process, or under compute-sanitizer.

A function whose body still holds a bare `...` statement (the skeleton's "your code
here") is not written yet: the checker says so and compiles nothing.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import linecache
import os
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

# What every exercise function may use without importing it.
PREAMBLE = """\
import math
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Constexpr, Float32, Int32, const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync, tcgen05, warp
"""
HEADER = PREAMBLE + "\n\n"  # what stands above the learner's function in its module file
FIRST_LINE = HEADER.count("\n") + 1  # the function's first line in that file

CODE_DIR = Path(tempfile.gettempdir()) / "course-exercises"


class NotALearnerFunction(TypeError):
    """The object handed to the checker is not a function whose source can be read."""


@dataclass(frozen=True)
class LearnerCode:
    """One function's source and name: everything the checker needs to rebuild it."""

    name: str
    source: str

    @classmethod
    def from_function(cls, fn) -> "LearnerCode":
        fn = getattr(fn, "__wrapped__", fn)  # @cute.kernel / @cute.jit keep the function here
        if not inspect.isfunction(fn):
            raise NotALearnerFunction(f"pass the function you wrote (got {type(fn).__name__})")
        try:
            source = function_source(fn)
        except (OSError, TypeError) as exc:
            raise NotALearnerFunction(f"cannot read the source of {fn.__name__}: {exc}") from exc
        return cls(fn.__name__, source)

    @property
    def digest(self) -> str:
        return hashlib.sha1((PREAMBLE + self.source).encode()).hexdigest()[:12]

    def unwritten(self) -> bool:
        """True while the function still contains the skeleton's bare `...` statement."""
        tree = ast.parse(self.source)
        return any(
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and node.value.value is Ellipsis
            for node in ast.walk(tree)
        )

    def same_statements(self, other_fn) -> bool:
        """Does this function do what `other_fn` does, statement for statement? (Its name,
        docstring and comments aside.)"""
        return _statements(self.source) == _statements(function_source(other_fn))

    def path(self) -> Path:
        """The module file that holds this source (written once per distinct source)."""
        CODE_DIR.mkdir(parents=True, exist_ok=True)
        path = CODE_DIR / f"learner_{self.name}_{self.digest}.py"
        if not path.exists():
            # written whole under another name, then renamed: another process (a second
            # pytest worker collecting the same solutions) never finds the file half written
            fd, part = tempfile.mkstemp(dir=CODE_DIR, prefix=f".{path.stem}.", suffix=".part")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(HEADER + self.source)
                os.chmod(part, 0o644)  # readable, as write_text leaves it under umask 022
                os.replace(part, path)
            finally:
                if os.path.exists(part):  # the write failed: leave nothing half done
                    os.unlink(part)
        return path

    def load(self):
        """The function, compiled from its source in a fresh module."""
        path = self.path()
        module_name = path.stem
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module  # CuTe DSL looks the module up while tracing
            spec.loader.exec_module(module)
        return _function(module, self.name)


def source_in_file(path) -> str:
    """The learner's source back from the module file `path()` wrote."""
    return Path(path).read_text().removeprefix(HEADER)


def function_source(fn) -> str:
    """A function's source with its decorators, dedented. CuTe DSL's decorators rebuild the
    function they wrap, and the rebuilt one's first line is its `def`: the decorator lines
    above it are read back from the file, so the source compiles to a kernel again."""
    raw = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(raw)
    above = linecache.getlines(inspect.getsourcefile(raw) or "")[: max(start - 1, 0)]
    if not lines[0].lstrip().startswith("@"):
        while above and above[-1].lstrip().startswith("@"):
            lines.insert(0, above.pop())
    return textwrap.dedent("".join(lines))


def edited(fn, name: str, *edits: tuple[str, str]):
    """`fn` with each (old, new) of `edits` applied to its source (each `old` found exactly
    once), as a function named `name` built like a learner's: a known mistake made from a
    reference (or a reference from the broken code an exercise ships) by a few edits, so
    the two differ only there."""
    source = function_source(fn).replace(f"def {fn.__name__}(", f"def {name}(", 1)
    for old, new in edits:
        if source.count(old) != 1:
            raise ValueError(f"{name}: {old!r} is not in {fn.__name__} exactly once")
        source = source.replace(old, new)
    return LearnerCode(name, source).load()


def _statements(source: str) -> str:
    """A function's body as an AST dump, without its name, decorators and docstring."""
    fn = ast.parse(source).body[0]
    body = (
        fn.body[1:]
        if (
            fn.body
            and isinstance(fn.body[0], ast.Expr)
            and isinstance(fn.body[0].value, ast.Constant)
            and isinstance(fn.body[0].value.value, str)
        )
        else fn.body
    )
    return ast.dump(ast.Module(body=body, type_ignores=[])) + ast.dump(fn.args)


def _function(module: ModuleType, name: str):
    try:
        return getattr(module, name)
    except AttributeError:
        raise NotALearnerFunction(f"{name} is not defined by its own source") from None
