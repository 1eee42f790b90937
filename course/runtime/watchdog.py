"""No notebook frozen by a broken pipeline: launches that may hang run in a child process.

A kernel whose mbarrier pipeline deadlocks (a wait on the wrong parity, a missing
arrive, a wrong arrival count) never returns, and a CUDA context stuck in a kernel
cannot be rescued from inside its own process: the notebook would freeze until the
kernel is restarted. `isolated(fn, *args, timeout_s=20)` runs `fn(*args)` in a fresh
Python process (its own CUDA context), waits, and

  * returns fn's result (it must be picklable: move tensors to the CPU first), or
  * raises `PipelineHang` in bounded time, after killing the child, when the launch
    did not finish within `timeout_s` seconds, or
  * re-raises an exception fn raised (a `PipelineHang` from the kernel's own
    bounded-wait debug mode comes back as a `PipelineHang`, message intact).

Compiling can take much longer than a launch, so the clock for `timeout_s` starts
when fn calls `launching()` (after it has compiled); until then the looser
`compile_timeout_s` applies. fn must be importable by name (defined at module level
in a .py file): it is sent to the child by name.

The child is started from a module entry point (`python -m course.runtime.isolated_child`),
not with multiprocessing's "spawn", which re-imports the parent's `__main__`: from a plain
script without an `if __name__ == "__main__":` guard, that would run the whole script again
in the child.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

from kernels.host import PipelineHang  # raised by kernels' bounded waits and by isolated()

HINT = (
    "A pipeline deadlock? Check that (1) every wait asks for the right parity: a fresh "
    "mbarrier is in phase 0, so waiting for parity 1 returns at once and waiting for parity 0 "
    "blocks until the first phase completes -- a producer's first wait on an empty slot must "
    "use parity 1; (2) every consumer arrives on the empty barrier of each stage it read; "
    "(3) the arrival counts given to mbarrier_init equal the arrivals that really happen "
    "(one per warp, or one per thread?), and expect_tx's byte count equals the bytes TMA "
    "delivers."
)


class ChildFailed(RuntimeError):
    """The isolated function raised; the child's traceback is in the message."""


@dataclass(frozen=True)
class Timing:
    """How long the isolated call took, phase by phase (seconds)."""

    startup: float = 0.0  # spawn + imports until fn started
    setup: float = 0.0  # fn's work before launching() (compiling, making inputs)
    launch: float = 0.0  # from launching() to the result (or to the kill)


_CONN = None  # the child's end of the pipe, set in the child only
LAST_TIMING = Timing()


def launching() -> None:
    """Called by the isolated function right before the launch that may hang: the
    `timeout_s` clock starts now. A no-op outside `isolated` (safe to leave in)."""
    if _CONN is not None:
        _CONN.send(("launching", time.time()))


def _child(conn, fn: Callable, args: tuple, kwargs: dict) -> None:
    global _CONN
    _CONN = conn
    conn.send(("started", time.time()))
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # report everything, including PipelineHang
        conn.send(("error", type(exc).__name__, str(exc), traceback.format_exc()))
    else:
        conn.send(("result", value))
    conn.close()


def _start_child(fn: Callable, args: tuple, kwargs: dict):
    """(the child process, the parent's end of its message pipe): the child reads this
    process's sys.path, then fn and its arguments, from its stdin."""
    read_fd, write_fd = os.pipe()
    here = str(Path(__file__).resolve().parents[2])  # where `course` imports from
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "course.runtime.isolated_child", str(write_fd)],
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
        env=env,
    )
    os.close(write_fd)
    try:
        pickle.dump(list(sys.path), proc.stdin)
        pickle.dump((fn, args, kwargs), proc.stdin)
        proc.stdin.close()
    except (BrokenPipeError, pickle.PicklingError):
        _stop(proc)
        os.close(read_fd)
        raise
    return proc, Connection(read_fd, writable=False)


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def isolated(
    fn: Callable,
    *args,
    timeout_s: float = 20.0,
    compile_timeout_s: float = 600.0,
    what: str | None = None,
    **kwargs,
) -> Any:
    """Run fn(*args, **kwargs) in a child process; see the module docstring."""
    global LAST_TIMING
    what = what or getattr(fn, "__qualname__", "the launch")
    t0 = time.time()
    proc, parent = _start_child(fn, args, kwargs)
    started = launched = None
    deadline = t0 + compile_timeout_s
    try:
        while True:
            remaining = deadline - time.time()
            if remaining <= 0 or not parent.poll(remaining):
                break
            try:
                msg = parent.recv()
            except EOFError:  # the child died without a word (a crash, an OOM kill)
                code = proc.wait(5)
                raise ChildFailed(
                    f"{what}: the child process exited with code {code} without a result"
                )
            if msg[0] == "started":
                started = time.time()
            elif msg[0] == "launching":
                launched = time.time()
                deadline = launched + timeout_s
            elif msg[0] == "result":
                LAST_TIMING = _timing(t0, started, launched, time.time())
                proc.wait(5)
                return msg[1]
            elif msg[0] == "error":
                LAST_TIMING = _timing(t0, started, launched, time.time())
                proc.wait(5)
                _, name, text, tb = msg
                if name == "PipelineHang":
                    raise PipelineHang(text)
                raise ChildFailed(f"{what} raised {name}: {text}\n--- child traceback ---\n{tb}")
    finally:
        if proc.poll() is None:
            _stop(proc)
        parent.close()
    LAST_TIMING = _timing(t0, started, launched, time.time())
    if launched is None:
        raise PipelineHang(
            f"{what} did not reach its launch within {compile_timeout_s:.0f} s "
            "(compiling or preparing); its process was stopped."
        )
    raise PipelineHang(
        f"{what} did not finish within {timeout_s:g} s of its launch; its process "
        f"was stopped, so this notebook's own GPU context is untouched. {HINT}"
    )


def _timing(t0: float, started, launched, end: float) -> Timing:
    s = started or end
    launch_start = launched or end
    return Timing(round(s - t0, 3), round(launch_start - s, 3), round(end - launch_start, 3))


# ------------------------------------------------------------------ a CPU-only demonstration


def spin_wait(parity: int, arrivals: int = 1, expected: int = 1, poll_s: float = 0.001) -> str:
    """A toy mbarrier on the CPU, for the watchdog's CPU demonstration. The barrier is
    initialised to expect `expected` arrivals, `arrivals` threads arrive, and we wait
    for `parity` -- forever, if the phase with that parity never completes.

    isolated(spin_wait, 0)           phase 0 completed: returns
    isolated(spin_wait, 1, 0)        a fresh barrier, parity 1: returns at once
    isolated(spin_wait, 0, 1, 2)     1 arrival of 2: phase 0 never completes, hangs
    isolated(spin_wait, 1)           phase 1 never completes: hangs (the wrong parity)
    """
    launching()
    phase, pending = 0, expected  # a fresh barrier: phase 0, `expected` arrivals to go
    for _ in range(arrivals):
        pending -= 1
        if pending == 0:  # the phase completes: the phase bit flips, the count reloads
            phase, pending = phase ^ 1, expected
    polls = 0
    while phase == parity:  # try_wait.parity(p) is true once the current phase's parity != p
        time.sleep(poll_s)  # nothing else will ever arrive: spin forever
        polls += 1
    return f"wait(parity={parity}) returned after {polls} polls"
