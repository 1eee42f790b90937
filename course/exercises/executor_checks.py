"""The kernel exercises of notebooks 01-07, run on the CPU executor instead of a GPU.

`EXECUTOR_CHECKS[id](fn, quick)` runs exercise `id`'s own GPU checks -- the module-level
`gpu_checks` its notebook registered, with its shapes, inputs, poisoned and guarded output,
torch reference and hints (course.exercises.gpu_run.judge_output) -- with the GPU replaced
at its boundary by the executor:

* `torch` in that code makes CPU tensors where it asked for `device="cuda"`, and
  `torch.cuda` is a stand-in with nothing to wait for;
* `kernels.host.compile_for` gives a handle that runs the `@cute.jit` function on the
  executor when called, `gmem_pointer` points into the CPU tensor, streams are None;
* `kernels.gemm_host.GemmHost` runs its kernel object on the executor.

The checks run with their quick shapes (the CPU is slow), speed is not measured (the
finding says so), and every finding of a run is named "ran on the course's CPU executor:
...". A hazard the executor finds is a failed finding naming it; a call it does not model
is a finding "not run" that says a GPU is needed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import types
from typing import Callable

from course.execute import hazards, runner
from course.execute.hazards import Hazard, Unmodelled

CHECK = "ran on the course's CPU executor"
LABEL = (
    "ran on the course's CPU executor, not on a GPU: values and hazards checked, speed not measured"
)
EXERCISES = (
    "01.saxpy",
    "02.padded_tiles",
    "03.partition",
    "04.vector_copy",
    "05.transpose_swizzle",
    "06.mma_tile",
    "07.mainloop",
)


def _copy_speed_check() -> str:
    from course.exercises.nb04_copy_kernel import SPEED_CHECK

    return SPEED_CHECK


def _mainloop_speed_check() -> str:
    from course.exercises import nb07
    from course.exercises.gpu_run import speed_check

    return speed_check(nb07.TIMED_SIZE, nb07.SPEED_AGAINST)


# the exercises whose GPU check also times the kernel: the name of that check
SPEED_GATED = {"04.vector_copy": _copy_speed_check, "07.mainloop": _mainloop_speed_check}
# an uninitialised A or B operand is a load that never happened, not an accumulator to clear
OPERAND_NOT_LOADED = (
    "operand never loaded: every k-block's A and B fragments must be copied from shared "
    "memory into registers before cute.gemm multiplies them"
)
HAZARD_HINTS = {
    hazards.IN_FLIGHT: "a missing wait: cp_async_wait_group must retire a k-tile's copies "
    "before any thread reads its stage",
    hazards.RACE: "missing sync: two threads touch the same shared-memory bytes with no "
    "sync_threads() between them (or two elements share one address)",
    hazards.STAGE_OVERWRITE: "wrong stage: copies overwrite a stage some thread still reads; "
    "the stage written must be the one freed last iteration",
    hazards.WRITE_IN_FLIGHT: "wrong stage: copies go into a stage whose earlier copies are "
    "still in flight",
    hazards.OUT_OF_BOUNDS: "an access outside the tensor: a missing predicate at the edge",
    hazards.DEADLOCK: "a barrier not every thread reaches: keep sync_threads() out of "
    "branches that only some threads take",
    hazards.DIVERGENT: "a barrier or warp-wide instruction reached by only some threads",
    hazards.UNINITIALISED: "accumulator not cleared: registers are garbage until written; "
    "fill the accumulator with 0 before cute.gemm",
    hazards.MISALIGNED: "vector width: a 128-bit access needs 16 contiguous, aligned bytes",
    hazards.CRASH: "read the error: it names the thread and the line",
    hazards.HANG: "a loop that does not end",
}


def executor_check(exercise_id: str) -> Callable:
    """The executor's run of one exercise: (learner's fn, quick) -> findings."""

    def check(fn, quick: bool = True) -> list:
        from course.exercises.kernel_check import lookup, not_checked

        ex = lookup(exercise_id)
        try:
            translated = _boundary_translator().value(ex.gpu_checks)
            found = translated(fn, quick=True, launching=lambda: None)
        except Unmodelled as exc:
            return [not_checked(CHECK, f"not run: {exc}")]
        except Hazard as exc:
            return [_hazard_finding(exc)]
        findings = [_renamed(f) for f in found]
        if exercise_id in SPEED_GATED:
            findings.append(
                not_checked(
                    SPEED_GATED[exercise_id](),
                    "not measured: speed needs a GPU (the CPU executor checks "
                    "values and hazards only)",
                )
            )
        return findings

    check.__name__ = f"executor_check_{exercise_id.replace('.', '_')}"
    return check


EXECUTOR_CHECKS: dict[str, Callable] = {id: executor_check(id) for id in EXERCISES}


def _renamed(f):
    """A finding of the exercise's GPU checks, made by a run on the executor."""
    return dataclasses.replace(f, check=f"{CHECK}: {f.check}", ran=True)


def _hazard_finding(exc: Hazard):
    from course.exercises.kernel_check import failed

    where = f"; at {exc.site.describe()}" if exc.site is not hazards.UNKNOWN else ""
    hint = HAZARD_HINTS.get(exc.kind, "")
    if exc.kind == hazards.UNINITIALISED and "accumulator" not in exc.detail:
        hint = OPERAND_NOT_LOADED
    return dataclasses.replace(failed(f"{CHECK}: {exc.kind}", exc.detail + where, hint), ran=True)


# ---------------------------------------------------------------- the GPU boundary, on the CPU


class CompiledOnCpu:
    """What `cute.compile(jit_fn, *args)` gives on the executor: call it with the runtime
    arguments; the Constexpr ones come from the compile, as CuTe DSL does it."""

    def __init__(self, jit_fn, args: tuple):
        self.jit_fn, self.args = jit_fn, args
        raw = inspect.unwrap(getattr(jit_fn, "__func__", jit_fn))
        params = list(inspect.signature(raw).parameters.values())
        if isinstance(jit_fn, types.MethodType):
            params = params[1:]
        self.names = [p.name for p in params]
        self.constexpr = [_is_constexpr(p.annotation) for p in params]

    def __call__(self, *runtime):
        from course.execute.tensor import Pointer

        merged, rt = [], iter(runtime)
        for i, const in enumerate(self.constexpr):
            value = self.args[i] if const else next(rt)
            if isinstance(value, Pointer) and value.memory.name == runner.UNNAMED:
                value.memory.name = self.names[i]  # name the tensor as the host code does
            merged.append(value)
        return runner.run(self.jit_fn, *merged)


def _is_constexpr(annotation) -> bool:
    return getattr(annotation, "__name__", "") == "Constexpr" or annotation == "cutlass.Constexpr"


def compile_for(arch: str, jit_fn, *args):
    return CompiledOnCpu(jit_fn, args)


class _Placeholder:
    """gmem_pointer(None, ...): a pointer to nothing, only ever a compile-time argument."""

    def __repr__(self) -> str:
        return "<a placeholder pointer>"


def gmem_pointer(t, dtype, align_bytes: int = 16):
    if t is None:
        return _Placeholder()
    return runner.pointer(t, align=align_bytes)


def _gemm_host_on_cpu():
    from kernels import gemm_host, host

    class GemmHostOnCpu(gemm_host.GemmHost):
        """A GEMM step whose run() validates the operands and runs the kernel object's
        `@cute.jit` __call__ on the executor."""

        def compile(self, *args, **kwargs):
            return None

        def run(self, a, b, out=None, config=None, *, out_dtype=None):
            config = self.default_config if config is None else config
            with _expected_device("cpu"):
                out, a_major, b_major = gemm_host.validate_gemm(
                    a, b, out, kernel=self.name, operands=self.operands, out_dtype=out_dtype
                )
            (m, k), n = a.shape, b.shape[0]
            obj = self.kernel(
                self.operands.types(a.dtype, out.dtype),
                config,
                host.COMPILE_TARGET[self.needs],
                a_major,
                b_major,
            )
            align = self.operands.align(a.dtype)
            runner.run(
                obj.__call__,
                runner.pointer(a, "A", align),
                runner.pointer(b, "B", align),
                runner.pointer(out, "C", align),
                m,
                n,
                k,
                *self.extra.values(a, config),
                None,
            )
            return out

    return GemmHostOnCpu


@contextlib.contextmanager
def _expected_device(device: str):
    import kernels.host

    saved, kernels.host.EXPECTED_DEVICE = kernels.host.EXPECTED_DEVICE, device
    try:
        yield
    finally:
        kernels.host.EXPECTED_DEVICE = saved


# ---------------------------------------------------------------- torch, CPU only

_DEVICE_FUNCTIONS = {
    "randn",
    "rand",
    "randint",
    "empty",
    "zeros",
    "ones",
    "full",
    "tensor",
    "arange",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "randn_like",
    "rand_like",
    "empty_strided",
    "as_tensor",
    "linspace",
    "eye",
}


def _on_cpu(value):
    if isinstance(value, str) and value.startswith("cuda"):
        return "cpu"
    import torch

    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    return value


def _torch_on_cpu():
    import torch

    def cpu_version(fn):
        @functools.wraps(fn)
        def made_on_cpu(*args, **kwargs):
            if "device" in kwargs:
                kwargs["device"] = _on_cpu(kwargs["device"])
            return fn(*args, **kwargs)

        return made_on_cpu

    class TorchOnCpu(types.ModuleType):
        def __getattr__(self, name):
            value = getattr(torch, name)
            if name in _DEVICE_FUNCTIONS:
                value = cpu_version(value)
            self.__dict__[name] = value
            return value

    mod = TorchOnCpu("torch")
    mod.cuda = types.SimpleNamespace(  # torch.cuda where there is none to wait for
        synchronize=lambda *a, **k: None,
        get_device_capability=lambda *a, **k: (9, 0),
        is_available=lambda: False,
        current_stream=lambda *a, **k: types.SimpleNamespace(cuda_stream=0),
    )
    return mod


@functools.lru_cache(maxsize=1)
def _redirects() -> dict:
    import torch

    import kernels.gemm_host
    import kernels.host

    return {
        torch: _torch_on_cpu(),
        kernels.host.compile_for: compile_for,
        kernels.host.gmem_pointer: gmem_pointer,
        kernels.host.current_stream: lambda: None,
        kernels.host.fake_stream: lambda: None,
        kernels.gemm_host.GemmHost: _gemm_host_on_cpu(),
    }


def _boundary_translator():
    from course.execute.translate import Translator

    return Translator(redirects=_redirects())
