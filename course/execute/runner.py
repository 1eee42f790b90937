"""Run a CuTe DSL host function (`@cute.jit`) and the kernels it launches on the executor.

    from course.execute import run, pointer
    out = torch.full_like(a, float("nan"))
    run(vector_add.add, pointer(a), pointer(b), pointer(out), n, None, 256)

`run(fn, *args)` calls the executor's version of `fn` (course.execute.translate) with the
arguments translated too (a function passed as a Constexpr runs as kernel code); every
`.launch(...)` inside it runs the grid there and then (course.execute.machine). Global
memory is the torch CPU tensors the pointers were made from: the kernel writes into them.

A hazard raises `hazards.Hazard` (what, who, which line); a call the executor does not model
raises `hazards.Unmodelled`; an error of the kernel's own code or one CuTe DSL refuses is a
Hazard of kind `hazards.CRASH` naming the thread and line.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from dataclasses import dataclass, field

from course.execute import hazards, machine

# the runs in progress (run() pushes its Result) and a kernel's .launch(...) inside one
from course.execute.launches import _ACTIVE, Launched, launch, running  # noqa: F401
from course.execute.memory import GMEM, Memory, bank_summaries
from course.execute.numeric import of_torch
from course.execute.oracle import CuteError
from course.execute.hazards import Hazard, Unmodelled
from course.execute.tensor import Pointer
from course.execute.translate import Translator


@dataclass
class Result:
    """What one run did: its launches and, if asked, the bank model's count per line."""

    seed: int
    launches: list[Launched] = field(default_factory=list)
    count_banks: bool = False

    @property
    def notes(self) -> list:
        """Every launch's notes (hazards.Note): what the run did that is no hazard."""
        return [n for launched in self.launches for n in launched.notes]

    def bank_lines(self) -> list:
        out = []
        for launched in self.launches:
            for smem in launched.smems[:1]:  # every CTA runs the same accesses: the first
                out.extend(bank_summaries(smem))
        return out


UNNAMED = "a global tensor"


# the time-limit fallback: a run that spends this many CPU seconds without progress
# (course.execute.machine.note_progress) is a loop that never advances; a deadlock is named at
# once, without it. The alarm is a wall-clock one, re-armed while the CPU time is short of it
TIME_LIMIT_S = 15.0


class _TimeUp(BaseException):
    """The run's time is up (a BaseException: kernel code catching Exception keeps going
    otherwise); `hang`: the Hazard naming the loop and who waits on what."""

    def __init__(self, hang: Hazard):
        super().__init__(str(hang))
        self.hang = hang


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Stop a run whose Python never returns (a loop that does not end): SIGALRM, where this
    process may set it (the main thread of a Unix process). An alarm already pending (a test
    runner's own time-out) is kept: the sooner one fires, and the other is re-armed after."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
    if outer_left and outer_left <= seconds:
        yield  # the outer alarm fires first and stops the run itself
        return

    def stop(signum, frame):
        left = seconds - machine.since_progress()
        if left > 0:  # it moved on since: count from then
            signal.setitimer(signal.ITIMER_REAL, left)
            return
        raise _TimeUp(machine.livelock(frame, seconds))

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            left = outer_left - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))


def run(
    fn,
    *args,
    seed: int = 0,
    count_banks: bool = False,
    time_limit_s: float = TIME_LIMIT_S,
    kwargs: dict | None = None,
) -> Result:
    """fn(*args, **kwargs) on the executor; the Result of its launches."""
    translator = Translator()
    kernel_fn = translator.value(fn)
    kernel_args = translator.value(args)
    kernel_kwargs = translator.value(dict(kwargs or {}))
    result = Result(seed, count_banks=count_banks)
    _ACTIVE.append(result)
    machine.note_progress()
    try:
        with _time_limit(time_limit_s):
            kernel_fn(*kernel_args, **kernel_kwargs)
    except _TimeUp as up:
        raise up.hang from None
    except (Hazard, Unmodelled):
        raise
    except CuteError as exc:
        raise Hazard(
            hazards.CRASH,
            f"CuTe DSL refused a call: {exc}",
            hazards.site_of_traceback(exc.__traceback__),
        ) from exc
    except Exception as exc:  # noqa: BLE001 -- the host code's own error, with its line
        raise Hazard(
            hazards.CRASH,
            f"the host code raised {type(exc).__name__}: {exc}",
            hazards.site_of_traceback(exc.__traceback__),
        ) from exc
    finally:
        _ACTIVE.pop()
    return result


def pointer(t, name: str = "", align: int = 16) -> Pointer:
    """A global-memory pointer to a torch CPU tensor's first element; the memory behind it is
    the tensor's whole storage (a guard zone after a view included)."""
    import torch

    if t.device.type != "cpu":
        raise ValueError(f"the CPU executor runs on CPU tensors, got one on {t.device}")
    raw = torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())
    memory = Memory(GMEM, raw.numpy(), name or UNNAMED)
    return Pointer(memory, t.storage_offset() * t.element_size(), of_torch(t.dtype), align=align)
