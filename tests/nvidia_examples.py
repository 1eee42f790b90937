"""NVIDIA's CuTe DSL examples, unmodified, for the executor's conformance tests.

One setting finds them: `CUTLASS_DSL_EXAMPLES`, a path to any CUTLASS checkout's
`examples/python/CuTeDSL`; without it, the copy beside this repository
(`../shared/cutlass/examples/python/CuTeDSL`, see its README). A test that needs them and
finds none is skipped with that path named.

NVIDIA's examples beyond that subset come from a full CUTLASS checkout: the setting
`CUTLASS_DSL_EXAMPLES_FULL` (`FULL`, `needs_full`); `run_script` runs one of them whole
through `python -m course.execute`, with its own argparse, host code and torch check, and
`passed` asks that it checked itself and found no hazard.

`load(relative)` imports one example file as a module of its own (its folder first on
sys.path, as running it there would: the Blackwell tutorial imports its `utils`), without
running its `__main__` block. The tests then do what the example's own `run` function does,
with the tensors made on the CPU, inside `course.execute.host.interpreting()`.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course import ROOT

SETTING = "CUTLASS_DSL_EXAMPLES"
DEFAULT = ROOT.parent / "shared" / "cutlass" / "examples" / "python" / "CuTeDSL"


def examples_dir() -> Path:
    return Path(os.environ.get(SETTING) or DEFAULT)


def needs_examples():
    """A pytest mark: skip (naming the path and the setting) when the examples are absent."""
    where = examples_dir()
    return pytest.mark.skipif(
        not where.is_dir(), reason=f"no CuTe DSL examples at {where} (set {SETTING})"
    )


FULL_SETTING = "CUTLASS_DSL_EXAMPLES_FULL"
FULL = Path(os.environ.get(FULL_SETTING, "/nonexistent"))
needs_full = pytest.mark.skipif(
    not FULL.is_dir(), reason=f"no full CUTLASS checkout's CuTe DSL examples (set {FULL_SETTING})"
)


def run_script(arch: str, script, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m course.execute --arch ARCH SCRIPT ARGS` from the repository root; a
    relative `script` is one of the full checkout's (under FULL)."""
    script = Path(script)
    script = script if script.is_absolute() else FULL / script
    return subprocess.run(
        [sys.executable, "-m", "course.execute", "--arch", arch, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def passed(done: subprocess.CompletedProcess, success: str = "PASS") -> None:
    """The run ended well, the example's own check printed `success`, the executor found
    no hazard."""
    assert done.returncode == 0, done.stderr[-3000:]
    assert success in done.stdout, done.stdout[-2000:]
    assert "no hazard" in done.stderr, done.stderr[-2000:]


_LOADED: dict = {}


def load(relative: str):
    """The example at `relative` (e.g. "cute/ampere/kernel/elementwise/elementwise_add.py"),
    imported once per process under a name of its own."""
    path = examples_dir() / relative
    if path in _LOADED:
        return _LOADED[path]
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "nvidia_example_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _LOADED[path] = module
    return module


_COPIES = itertools.count()


def planted(relative: str, old: str, new: str, tmp_path):
    """The example at `relative` with its one occurrence of `old` replaced by `new`,
    imported from a temp copy (the example's folder on sys.path, for the tutorial's utils):
    (the module, the copy's text, the number of the edit's last line in the copy). With as
    many lines in `new` as in `old`, the copy's line numbers are the original's. The
    unmodified example is each planted test's control."""
    text = (examples_dir() / relative).read_text()
    assert text.count(old) == 1, f"the edit's text is not once in {relative}: {old!r}"
    edited = text.replace(old, new)
    last_line = text[: text.index(old)].count("\n") + len(new.splitlines())
    folder = str((examples_dir() / relative).parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    path = tmp_path / f"planted_{next(_COPIES)}_{Path(relative).name}"
    path.write_text(edited)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, edited, last_line


def line_of(text: str, needle: str, after: int = 0) -> int:
    """The 1-based number of the first line past line `after` that holds `needle`."""
    lines = text.splitlines()
    return next(i for i, line in enumerate(lines) if i >= after and needle in line) + 1
