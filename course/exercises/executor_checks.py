"""The kernel exercises of notebooks 01-16, run on the CPU executor instead of a GPU.

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
import re
import types
from typing import Callable

from course.execute import hazards, mbarriers, runner, wgmma
from course.execute.hazards import Hazard, Unmodelled
from course.exercises.kernel_check import EXECUTOR_CHECK, EXECUTOR_LABEL

CHECK, LABEL = EXECUTOR_CHECK, EXECUTOR_LABEL  # kernel_check's: a GPU's verdict needs no executor
EXERCISES = (
    "01.saxpy",
    "02.padded_tiles",
    "03.partition",
    "04.vector_copy",
    "05.transpose_swizzle",
    "06.mma_tile",
    "07.mainloop",
    "08.arm_and_load",
    "09.ring",
    "10.wgmma_mainloop",
    "11.tma_store",
    "12.promotion",
    "13.residual_epilogue",
    "14.epilogue_role",
    "15.read_next_tile",
    "16.sf_copy_and_mma",
)


def _copy_speed_check() -> str:
    from course.exercises.nb04_copy_kernel import SPEED_CHECK

    return SPEED_CHECK


def _mainloop_speed_check() -> str:
    from course.exercises import nb07
    from course.exercises.gpu_run import speed_check

    return speed_check(nb07.TIMED_SIZE, nb07.SPEED_AGAINST)


def _wgmma_speed_check() -> str:
    from course.exercises import nb10_mainloop_kernel as nb10
    from course.exercises.gpu_run import speed_check

    return speed_check(nb10.TIMED_SIZE, nb10.SPEED_AGAINST)


def _tma_store_speed_check() -> str:
    from course.exercises.nb11_tma_store_kernel import SPEED_CHECK

    return SPEED_CHECK


# the exercises whose GPU check also times the kernel: the name of that check
SPEED_GATED = {
    "04.vector_copy": _copy_speed_check,
    "07.mainloop": _mainloop_speed_check,
    "10.wgmma_mainloop": _wgmma_speed_check,
    "11.tma_store": _tma_store_speed_check,
}
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
    hazards.COLLECTIVE: "an instruction the whole warp issues together, reached by part of it: "
    "elect_one is for one lane's own work (an mbarrier arrive, tcgen05.commit); a TMA copy, "
    "cute.gemm on tcgen05 and tcgen05.cp elect their own lane, so the whole warp calls them, "
    "never inside elect_one or a branch on the lane",
    wgmma.ACC_IN_FLIGHT: "acc in flight: the accumulator was used while wgmmas still write it: "
    "cute.nvgpu.warpgroup.wait_group retires them first (and only committed groups are waited "
    "for: commit_group)",
    wgmma.NO_FENCE: "missing fence: cute.nvgpu.warpgroup.fence() before the first cute.gemm "
    "after the accumulator was written",
    wgmma.PROXY_FENCE: "missing fence.proxy.async: shared memory written by threads is read by "
    "the tensor cores through the async proxy; cute.arch.fence_proxy('async.shared', "
    "space='cta') before the barrier",
}
HAZARD_HINTS[mbarriers.MBARRIER] = (
    "mbarrier set-up: one thread initialises each barrier (cute.arch.elect_one), then "
    "mbarrier_init_fence and a sync_threads before any other thread uses it; and no more "
    "arrivals in a phase than the count it was initialised with"
)
# a deadlock on an mbarrier: a phase that never completes
MBARRIER_DEADLOCK_HINT = (
    "a wait whose phase never completes: does each barrier's count match who arrives (one "
    "elected lane per warp, not every thread), does the producer arm full with expect_tx, and "
    "does each wait use its role's parity (the producer's first trip starts at 1)?"
)
# a wgmma not retired when its stage was refilled or its accumulator used: why, by what the
# executor saw (course.execute.wgmma's status words), in the words of notebook 10's hints
WGMMA_HINTS = (
    (
        "no commit_group",
        "commit missing: cute.nvgpu.warpgroup.commit_group() after a k-tile's wgmmas makes "
        "them one group; wait_group counts committed groups only",
    ),
    (
        "the k-tile just issued",
        "wrong stage: the stage handed back is still being read by the wgmmas just issued; "
        "release the oldest stage (ring.consumer_release(release), then release.advance()), "
        "one k-tile behind `read`",
    ),
    (
        "no wait_group yet",
        "no wait_group: nothing says k-tile t-1's wgmmas are done reading its stage; "
        "cute.nvgpu.warpgroup.wait_group(1) before ring.consumer_release(release)",
    ),
    (
        "",
        "released too early: a stage still being read by the wgmmas of its k-tile is handed "
        "back (and refilled); cute.nvgpu.warpgroup.wait_group(1) first, then "
        "ring.consumer_release(release)",
    ),
)


# Blackwell's hazards (course.execute.tmem, tcgen05, clc): the hint by what the executor saw,
# in the words of notebooks 14-15's hints
BLACKWELL_HINTS = (
    (
        "which no tcgen05.mma has written",
        "the accumulator is read before the MMAs finished: acc_pipeline.consumer_wait("
        "acc_state) before draining it",
    ),
    ("still allocated", "TMEM is never freed: end with tmem.free(tmem_ptr) (warp 0 deallocates)"),
    (
        "tcgen05.dealloc) while warp",
        "warp 0 frees TMEM while warps 1-3 may still be reading it: "
        "epi_barrier.arrive_and_wait() before tmem.free",
    ),
    (
        "use after free (tcgen05.dealloc",
        "TMEM is freed while a warp still reads it: every epilogue warp meets "
        "(epi_barrier.arrive_and_wait()) before tmem.free",
    ),
    (
        "tcgen05.commit at",
        "the last stages' releases are never waited on: the producer ends with "
        "ring.producer_tail(state), so no tcgen05.commit arrives after the CTA exits",
    ),
    (
        "TMA stores are not drained",
        "the TMA stores are not drained before the kernel ends: the store pipeline's "
        "producer_tail() (c_pipeline.producer_tail()) waits for every store to finish",
    ),
    ("before tcgen05.wait::ld", "tcgen05.ld's registers used without tcgen05.wait::ld"),
    (
        # a block-scaled MMA reading SF bytes of TMEM nothing wrote (course.execute.scaled_mma)
        "no tcgen05.cp",
        "the MMA read SF columns of TMEM no tcgen05.cp wrote before it: copy the stage's SFs "
        "into TMEM before the k-tile's first cute.gemm, cute.copy(sfa.s2t, sfa.smem[stage], "
        "sfa.tmem) and the same for sfb",
    ),
    (
        # a tcgen05.cp of a stage whose TMA load is still in flight (course.execute.memory)
        "tcgen05.cp reads",
        "the SFs are copied from a stage TMA may still be writing: ring.consumer_wait(state) "
        "before the stage's tcgen05.cp, and from that stage (state.index)",
    ),
    (
        "handshake",
        "a CTA pair frees TMEM only after both CTAs are done with it: tmem.free does the "
        "dealloc mbarrier handshake with the peer",
    ),
    (
        # a read of the response while its query is in flight (course.execute.memory's words
        # for an AsyncCopy named "CLC query (...)": "... while its own CLC query (...) to it")
        "CLC query (clusterlaunchcontrol.try_cancel) to it",
        "the answer is decoded before it has arrived: clc_pipeline.consumer_wait(read_state) first",
    ),
    (
        # a second query into the response buffer before the last one landed
        # (course.execute.launch_control's WRITE_IN_FLIGHT)
        "while the last one is still in flight",
        "a new CLC query is issued into the answer buffer while the last one is still in "
        "flight: clc_pipeline.producer_acquire(request_state) before each try_cancel",
    ),
    (
        "CLC answer",
        "the answer was read through the generic proxy and is rewritten by the async proxy "
        "(the next try_cancel): cute.arch.fence_proxy('async.shared', space='cta') before "
        "consumer_release",
    ),
    (
        "wait on mbarrier bars.clc",
        "the CLC answer buffer is never freed: the leader's next request waits for every "
        "reader forever (clc_pipeline.consumer_release(read_state))",
    ),
)


def _blackwell_hint(exc: Hazard) -> str:
    return next((hint for words, hint in BLACKWELL_HINTS if words in exc.detail), "")


# a TMA store's hazards (course.execute.tma): the hint by what the executor saw, in the words
# of notebook 11's hints (its staging buffers, its store warp)
TMA_STORE_HINTS = (
    (
        "no fence.proxy.async",
        "shared memory written by threads is read by TMA through the async proxy: every thread "
        "fences its own writes -- cute.arch.fence_proxy('async.shared', space='cta') right "
        "after its stmatrix, before the barrier (a fence in the storing warp alone covers "
        "only that warp's writes)",
    ),
    (
        "no barrier since orders",
        "only the storing warp waits for its bulk groups: the other warps may overwrite a "
        "buffer TMA still reads. A barrier after that wait (epi.chunk_sync.arrive_and_wait()) "
        "before any thread writes a buffer again",
    ),
    (
        "before a wait_group retired",
        "a staging buffer is reused while TMA may still read it: after the store, commit it "
        "(stores.producer_commit()) and wait until at most epi_stages - 1 stores still read "
        "shared memory (stores.producer_acquire()) before the buffer comes round again",
    ),
    (
        "two unordered stores",
        "every consumer thread issues its own copy of the same TMA store: issue it, commit "
        "and wait only under `if epi.warp == epi.store_warp:`",
    ),
)


# a buffer written by one warp while the TMA store another warp issued still reads it: a
# missing wait or a missing barrier after it (which, depends on where the warps stand)
TMA_STORE_REUSED_BY_ANOTHER_WARP = (
    "a staging buffer is reused while TMA may still read it: the storing warp waits until at "
    "most epi_stages - 1 stores still read shared memory (stores.producer_acquire()), and "
    "only then may the other warps write it -- without a barrier after that wait "
    "(epi.chunk_sync.arrive_and_wait()) they overwrite a buffer TMA still reads"
)


def _tma_store_hint(exc: Hazard) -> str:
    if "TMA store" not in exc.detail:
        return ""
    warps = re.findall(r"\(warp (\d+), lane", exc.detail)
    if "before a wait_group retired" in exc.detail and len(set(warps[:2])) == 2:
        return TMA_STORE_REUSED_BY_ANOTHER_WARP
    return next((hint for words, hint in TMA_STORE_HINTS if words in exc.detail), "")


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


def _cause_hint(exc: Hazard) -> str:
    """The hint chosen from the hazard's structured cause (hazards.Cause), where the executor
    gave one and it says more than the hazard's kind: an index below a tensor's start is no
    edge a predicate guards, but index arithmetic one step back."""
    cause = exc.cause
    if cause is not None and cause.what == hazards.BELOW_START:
        return (
            f"element {cause.observed} of {cause.subject} lies before its first element, not "
            f"past its edge, so no predicate at the edge is missing: an index computed one "
            f"step back (the previous k-tile's kt - 1 while kt is 0, a row or column minus "
            f"1) -- index {cause.subject} with the element's own coordinates and the "
            f"k-tile's own kt"
        )
    return ""


def _hazard_finding(exc: Hazard):
    from course.exercises.kernel_check import failed

    where = f"; at {exc.site.describe()}" if exc.site is not hazards.UNKNOWN else ""
    hint = (
        _cause_hint(exc)
        or _blackwell_hint(exc)
        or _tma_store_hint(exc)
        or HAZARD_HINTS.get(exc.kind, "")
    )
    if exc.kind == hazards.STAGE_OVERWRITE and (
        "wgmma" in exc.detail or "cute.gemm(" in exc.detail
    ):
        hint = next(h for words, h in WGMMA_HINTS if words in exc.detail)
    if exc.kind == wgmma.ACC_IN_FLIGHT and "no commit_group" in exc.detail:
        hint = WGMMA_HINTS[0][1]
    if exc.kind == hazards.DEADLOCK and "on mbarrier" in exc.detail and not _blackwell_hint(exc):
        hint = MBARRIER_DEADLOCK_HINT
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


H100_SMS = 132


def max_active_clusters(device_index: int, cluster_size: int) -> int:
    """A persistent kernel's grid, as an H100 SXM gives it (one CTA per SM): the quick shapes
    have fewer clusters of work than that, so every cluster takes one work item, as there."""
    return H100_SMS // cluster_size


def _gemm_host_on_cpu():
    from kernels import gemm_host, host

    class GemmHostOnCpu(gemm_host.GemmHost):
        """A GEMM step whose run() validates the operands and runs the kernel object's
        `@cute.jit` __call__ on the executor."""

        def compile(self, *args, **kwargs):
            return None

        def run(self, a, b, out=None, config=None, *, out_dtype=None, tensors=()):
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
            # the step's extra arguments (tma_gemm's debug report) made through the boundary
            extra = _boundary_translator().value(self.extra.values)(a, config)
            # the kernel's further operands (fp8_gemm's scales), named as its __call__ names
            # them (a_scale_ptr -> "a_scale")
            params = list(inspect.signature(inspect.unwrap(type(obj).__call__)).parameters)
            names = params[7 + len(extra) : 7 + len(extra) + len(tensors)]
            more = [
                runner.pointer(t, name.removesuffix("_ptr"), t.element_size())
                for t, name in zip(tensors, names)
            ]
            runner.run(
                obj.__call__,
                runner.pointer(a, "A", align),
                runner.pointer(b, "B", align),
                runner.pointer(out, "C", align),
                m,
                n,
                k,
                *extra,
                *more,
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
        current_device=lambda: 0,
    )
    return mod


@functools.lru_cache(maxsize=1)
def _redirects() -> tuple:
    import torch

    import kernels.gemm_host
    import kernels.host

    on_cpu = _gemm_host_on_cpu()  # one class: the redirect and the twins are its instances
    redirects = {
        torch: _torch_on_cpu(),
        kernels.host.compile_for: compile_for,
        kernels.host.gmem_pointer: gmem_pointer,
        kernels.host.current_stream: lambda: None,
        kernels.host.fake_stream: lambda: None,
        kernels.host.max_active_clusters: max_active_clusters,
        kernels.gemm_host.GemmHost: on_cpu,
    }
    return tuple(redirects.items()) + _gemm_twins(on_cpu)


# the steps whose GemmHost an exercise derives its own from (dataclasses.replace keeps the
# class, so the step's instance itself is seen as its CPU twin)
DERIVED_GEMMS = ("tma_gemm",)


def _gemm_twins(on_cpu) -> tuple:
    """(the step's GemmHost, the same fields as a GemmHostOnCpu) per DERIVED_GEMMS step."""
    import importlib

    twins = []
    for name in DERIVED_GEMMS:
        real = importlib.import_module(f"kernels.{name}").GEMM
        fields = {f.name: getattr(real, f.name) for f in dataclasses.fields(real) if f.init}
        twins.append((real, on_cpu(**fields)))
    return tuple(twins)


def _boundary_translator():
    from course.execute.translate import Translator

    return Translator(redirects=_redirects())
