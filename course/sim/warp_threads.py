"""Running a kernel's own CuTe DSL code on the CPU, one Python thread per warp.

What course.sim.ring_code (notebook 09's ring) and course.sim.wgmma_loop (notebook 10's
main loop) share: a warp is a thread parked at each step of the model until a scheduler
lets it take it; a @cute.jit function is rebuilt from its source as plain Python, its
module's names replaced by stand-ins; `cutlass` as plain Python (values are ints, loops
Python loops); and an error raised inside CuTe DSL's own code is told apart from the
kernel's, so a call the model does not stand in for is reported as unmodelled instead of
judged.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import textwrap
import threading
from dataclasses import dataclass

LANES = 32


OK = "ok"


@dataclass(frozen=True)
class Verdict:
    """What one run (or the first failing run of a sweep) of a model found."""

    kind: str  # "ok", "deadlock", "race", "misuse", "serialised" or "unmodelled"
    detail: str = ""
    mistake: str = ""  # the likely mistake, in the words a hint uses ("" when ok)

    @property
    def ok(self) -> bool:
        return self.kind == OK


class Found(Exception):
    """A problem a model's step found: raised in the warp, handed to the run."""

    def __init__(self, kind: str, detail: str, mistake: str):
        super().__init__(detail)
        self.verdict = Verdict(kind, detail, mistake)


class Stop(BaseException):
    """Ends a warp's thread when the run is over (BaseException: learners catch Exception)."""


class Unmodelled(Exception):
    """The code calls something the model does not know."""


class Warp:
    """One warp's thread, parked at each step until the scheduler lets it take it."""

    def __init__(self, index: int, parked: threading.Semaphore):
        self.index = index
        self.elected = 0
        self.pending = None  # the step it is parked at
        self.result = None
        self.done = False
        self.error: BaseException | None = None
        self.stop = False
        self.resume = threading.Semaphore(0)
        self.parked = parked  # shared: released whenever any warp parks or ends

    def start(self, run) -> None:
        """Run `run()` on this warp's thread up to its first step."""
        threading.Thread(target=self._body, args=(run,), daemon=True).start()
        self.resume.release()
        self.parked.acquire()

    def _body(self, run):
        self.resume.acquire()
        try:
            if not self.stop:
                run()
        except Stop:
            pass
        except BaseException as exc:  # noqa: BLE001 -- reported as the verdict
            self.error = exc
        finally:
            self.done, self.pending = True, None
            self.parked.release()

    def step(self, op):
        """Park at `op` until the scheduler takes it; return its result."""
        self.pending = op
        self.parked.release()
        self.resume.acquire()
        if self.stop:
            raise Stop
        return self.result

    def take(self, result) -> None:
        """The scheduler's side: hand the parked warp `result` and run it to its next step."""
        self.result, self.pending = result, None
        self.resume.release()
        self.parked.acquire()

    @property
    def lanes(self) -> int:
        return 1 if self.elected else LANES


def stop_all(warps: list[Warp], parked: threading.Semaphore) -> None:
    """End every warp's thread that is still parked."""
    for warp in warps:
        if not warp.done:
            warp.stop = True
            warp.resume.release()
            parked.acquire()


class PlainCutlass:
    """`cutlass` as plain Python: values are ints, loops are Python loops."""

    Int32 = Int64 = Uint32 = Uint64 = staticmethod(int)
    Boolean = staticmethod(bool)
    Float32 = staticmethod(float)
    Constexpr = object
    min, max = staticmethod(builtins.min), staticmethod(builtins.max)

    @staticmethod
    def const_expr(x):
        return x

    @staticmethod
    def range_constexpr(*args):
        return builtins.range(*args)

    @staticmethod
    def range(*args, **_unroll):
        return builtins.range(*args)

    def __getattr__(self, name):
        raise Unmodelled(f"cutlass.{name}")


PLAIN_NAMES = {
    "cutlass": PlainCutlass(),
    "const_expr": PlainCutlass.const_expr,
    "range_constexpr": PlainCutlass.range_constexpr,
    "Int32": int,
    "Float32": float,
}


def python_version(fn, names: dict):
    """`fn` (a @cute.jit function or method, or plain) as plain Python, rebuilt from its
    source without decorators (so CuTe DSL's rewriting of it plays no part), with `names`
    in place of its module's globals."""
    raw = inspect.unwrap(getattr(fn, "__func__", fn))
    namespace = {**raw.__globals__, **names}
    exec(_plain_code(raw), namespace)
    return namespace[raw.__name__]


@functools.lru_cache(maxsize=256)
def _plain_code(raw):
    tree = ast.parse(textwrap.dedent(inspect.getsource(raw)))
    tree.body[0].decorator_list = []
    return compile(tree, inspect.getsourcefile(raw) or f"<{raw.__name__}>", "exec")


def library_frame(exc: BaseException) -> str:
    """'module.function' of the first CuTe DSL (cutlass package) frame the error passed
    through, or ''."""
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.split(".")[0] == "cutlass":
            return f"{module}.{tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return ""


def source_line(exc: BaseException, fn) -> int | None:
    """The line of `fn`'s own source (counted from its `def`) where `exc` was raised, if
    the error passed through it."""
    raw = inspect.unwrap(getattr(fn, "__func__", fn))
    filename = inspect.getsourcefile(raw)
    first = inspect.getsourcelines(raw)[1]
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno - first + 1
        tb = tb.tb_next
    return line


def error_verdict(warp: Warp, model: str, fn=None) -> Verdict:
    """What a warp's exception means: a problem the model found, a call it does not model,
    or the learner's Python failing (with the line of `fn` it failed at, where known)."""
    exc = warp.error
    if isinstance(exc, Found):
        return exc.verdict
    if isinstance(exc, Unmodelled):
        return Verdict("unmodelled", f"the CPU model of {model} does not know {exc}")
    library = library_frame(exc)
    if library:  # a CuTe DSL call the model does not stand in for got the model's values
        return Verdict("unmodelled", f"the CPU model of {model} cannot run {library}")
    line = source_line(exc, fn) if fn is not None else None
    return Verdict(
        "misuse",
        f"warp {warp.index} raised {type(exc).__name__}: {exc}"
        + (f" (line {line} of your method)" if line else ""),
        "runs as plain Python",
    )
