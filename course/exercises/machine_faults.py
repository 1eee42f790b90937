"""The machine's faults are the machine's: a check that could not run is never the learner's.

A check runs the learner's code on top of the course's code, its packages, a compiler, a
CUDA driver and a GPU. When one of those fails on its own -- a package missing from the
Python that runs the course, a driver that does not start, a GPU with no memory left --
the verdict is "the checker could not run here: <what>, <fix>" (verdicts.MACHINE_FAULT),
counted apart in the progress file, and never "your answer raised".

Whose fault an exception is comes from its type and its traceback, never from its text:

* an ImportError is the learner's when the import that failed is in the learner's code
  (the innermost frame of the traceback is theirs: `import numpyy` in their kernel), and
  the machine's when it is in the course's or a library's code (course.execute importing
  greenlet, torch importing its own parts);
* no GPU memory (torch.cuda.OutOfMemoryError, CUDA_ERROR_OUT_OF_MEMORY) and a driver that
  does not start (torch.cuda's lazy initialisation, a CUDA error code of the driver or the
  runtime that means no device, no driver, or a driver too old for the PTX) are the
  machine's unless the learner's own code asked for it in its innermost frame.

A frame is the learner's when it is in none of the course's folders (course/, kernels/) and
in no library's (the interpreter's and its packages' directories): a notebook cell, a test,
or the module file that course.exercises.learner_code writes -- save that file's preamble,
the course's imports above the learner's function.
"""

from __future__ import annotations

import importlib
import re
import site
import sys
import sysconfig
import traceback
from functools import cache
from pathlib import Path

from course import ROOT
from course.exercises.learner_code import CODE_DIR, FIRST_LINE

HEADLINE = "the checker could not run here"
REQUIREMENTS = ROOT / "requirements.txt"
# the modules whose package has another name (requirements.txt names packages)
MODULE_PACKAGE = {
    "cutlass": "nvidia-cutlass-dsl",
    "cuda": "nvidia-cutlass-dsl",  # cuda.bindings comes with CuTe DSL
    "cupy": "cupy-cuda13x",
    "yaml": "pyyaml",
}
# CUDA error codes (driver CUresult and runtime cudaError_t names) that say the machine
# cannot run a kernel at all, whatever the kernel: (what, fix)
NO_GPU_MEMORY = (
    "the GPU has no memory left",
    "other processes hold it (nvidia-smi lists them): close other notebooks' kernels, or ask "
    "the teacher, then check again",
)
NO_DRIVER = (
    "the CUDA driver could not start",
    "check that `nvidia-smi` works and that the driver supports the CUDA version of the "
    "course's packages (requirements.txt); restart this notebook's kernel",
)
OLD_DRIVER = (
    "the CUDA driver is too old for the code the compiler produced",
    "update the NVIDIA driver to one that supports the course's CUDA version (requirements.txt)",
)
CUDA_CODES = {
    "OUT_OF_MEMORY": NO_GPU_MEMORY,
    "MEMORY_ALLOCATION": NO_GPU_MEMORY,
    "NO_DEVICE": NO_DRIVER,
    "NOT_INITIALIZED": NO_DRIVER,
    "INITIALIZATION_ERROR": NO_DRIVER,
    "DEINITIALIZED": NO_DRIVER,
    "INVALID_DEVICE": NO_DRIVER,
    "DEVICE_UNAVAILABLE": NO_DRIVER,
    "DEVICES_UNAVAILABLE": NO_DRIVER,
    "SYSTEM_NOT_READY": NO_DRIVER,
    "SYSTEM_DRIVER_MISMATCH": NO_DRIVER,
    "COMPAT_NOT_SUPPORTED_ON_DEVICE": NO_DRIVER,
    "STUB_LIBRARY": NO_DRIVER,
    "INSUFFICIENT_DRIVER": OLD_DRIVER,
    "UNSUPPORTED_PTX_VERSION": OLD_DRIVER,
    "JIT_COMPILER_NOT_FOUND": OLD_DRIVER,
}


class MachineFault(Exception):
    """The checker could not run here; `what` happened and `fix` says how to mend it."""

    def __init__(self, what: str, fix: str):
        super().__init__(f"{what}, {fix}")
        self.what, self.fix = what, fix

    def message(self) -> str:
        """The verdict's text: "the checker could not run here: <what>, <fix>"."""
        return f"{HEADLINE}: {self.what}, {self.fix}"


def diagnose(exc: BaseException) -> MachineFault | None:
    """The machine's fault behind `exc`, or None when `exc` may be the learner's."""
    if isinstance(exc, MachineFault):
        return exc
    if exc.__cause__ is not None:  # a wrapper (CuTe DSL's errors): judge what it wraps
        cause = diagnose(exc.__cause__)
        if cause is not None:
            return cause
    frames = _frames(exc)
    innermost = frames[-1] if frames else None
    if innermost is not None and is_learners(innermost.filename, innermost.lineno):
        return None  # the learner's own code raised it (their import, their allocation)
    if isinstance(exc, ImportError):
        return missing_module(exc)
    cuda = _cuda_fault(exc, frames)
    return MachineFault(*cuda) if cuda else None


def missing_module(exc: ImportError) -> MachineFault:
    """What could not be imported, and the pinned install that mends it."""
    name = exc.name or ""
    top = name.split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and top:
        what = f"the Python that runs the course ({sys.executable}) has no module {name!r}"
    else:
        what = f"a package of the Python that runs the course is broken ({_first_line(exc)})"
    requirement = pinned(MODULE_PACKAGE.get(top, top)) if top else None
    pip = f"{sys.executable} -m pip install"
    fix = (
        f"install it: {pip} {requirement} (requirements.txt)"
        if requirement
        else f"install the course's packages: {pip} -r {REQUIREMENTS}"
    )
    return MachineFault(what, fix)


def pinned(package: str) -> str | None:
    """requirements.txt's line for `package` (name, extras and pin), or None."""
    wanted = _normalised(package)
    try:
        lines = REQUIREMENTS.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        spec = line.split("#")[0].strip()
        match = re.match(r"[A-Za-z0-9._-]+", spec)
        if match and _normalised(match.group(0)) == wanted:
            return spec
    return None


def is_learners(filename: str, lineno: int | None = None) -> bool:
    """Is this frame the learner's code? Not when it is the course's, a library's, or the
    preamble of the module file course.exercises.learner_code writes."""
    if filename.startswith("<frozen"):
        return False
    path = Path(filename)
    if path.parent == CODE_DIR:  # a learner's module: the course's imports, then theirs
        return lineno is None or lineno >= FIRST_LINE
    if not path.is_absolute():
        return True  # <ipython-input-...>, <string>: written in the notebook
    return not any(_under(path, folder) for folder in _not_the_learners())


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The traceback's frames, outermost first, the import machinery's own left out: the
    innermost frame left is the code that asked for the import (importlib.import_module's
    caller, not importlib)."""
    machinery = Path(importlib.__file__).parent
    return [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<frozen importlib")
        and not _under(Path(f.filename), machinery)
    ]


def _cuda_fault(exc: BaseException, frames) -> tuple[str, str] | None:
    """(what, fix) for no GPU memory or a driver that does not start, else None."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(exc, torch.cuda.OutOfMemoryError):
        return NO_GPU_MEMORY
    if any(f.name == "_lazy_init" and _under(Path(f.filename), _torch_cuda()) for f in frames):
        return NO_DRIVER  # torch.cuda could not initialise CUDA
    code = getattr(exc, "_error_name", None)  # CuTe DSL's DSLCudaRuntimeError
    if code is None:
        return None
    name = code.decode() if isinstance(code, bytes) else str(code)
    key = re.sub(r"^(CUDA_ERROR_|cudaError)", "", name.split(".")[-1])
    return CUDA_CODES.get(_snake(key).upper())


def _snake(name: str) -> str:
    """cudaError_t's CamelCase as CUresult's words: 'MemoryAllocation' -> 'Memory_Allocation'."""
    return name if "_" in name or name.isupper() else re.sub(r"(?<!^)(?=[A-Z])", "_", name)


@cache
def _torch_cuda() -> Path:
    try:
        import torch.cuda

        return Path(torch.cuda.__file__).parent
    except Exception:  # no torch: no torch.cuda frame either
        return Path("/nonexistent")


@cache
def _not_the_learners() -> tuple[Path, ...]:
    """The folders of the course's and the libraries' code."""
    paths = {ROOT / "course", ROOT / "kernels"}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if sysconfig.get_paths().get(key):
            paths.add(Path(sysconfig.get_paths()[key]))
    for folder in (*getattr(site, "getsitepackages", list)(), site.getusersitepackages()):
        paths.add(Path(folder))
    paths.update(Path(p) for p in sys.path if p and ("-packages" in p or p.endswith(".zip")))
    return tuple(p.resolve() for p in paths)


def _under(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
        return True
    except (ValueError, OSError):
        return False


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"
