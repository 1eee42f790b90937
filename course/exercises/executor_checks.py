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
import types
from typing import Callable

from course.execute import hazards, mbarriers, runner, tcgen05, tma, wgmma
from course.execute.hazards import Hazard, Unmodelled
from course.exercises.kernel_exercises import (
    EXECUTOR_CHECK,
    EXECUTOR_LABEL,
    failed,
    lookup,
    not_checked,
)

CHECK, LABEL = EXECUTOR_CHECK, EXECUTOR_LABEL  # kept apart: a GPU's verdict needs no executor
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
    "12.overlap",
    "13.residual_epilogue",
    "14.epilogue_role",
    "15.read_next_tile",
    "16.sf_copy_and_mma",
)


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
# Every hint below is chosen from what the executor observed, in structured form: a hazard's
# kind where the kind alone says it (tcgen05.COMMIT_NOT_WAITED, tma.NOT_DRAINED, ...), else its
# cause (course.execute.hazards.Cause: what happened, to which bytes, tensor or barrier, by
# which unit and warp), never the words of its sentence, which stay free to be reworded.

# a wgmma not retired when its stage was refilled or its accumulator used, by how it stands
# (Cause.what, course.execute.wgmma.WarpWgmma.state), in the words of notebook 10's hints
WGMMA_HINTS = {
    hazards.UNCOMMITTED: "commit missing: cute.nvgpu.warpgroup.commit_group() after a k-tile's "
    "wgmmas makes them one group; wait_group counts committed groups only",
    hazards.NEWEST_GROUP: "wrong stage: the stage handed back is still being read by the wgmmas "
    "just issued; release the oldest stage (ring.consumer_release(release), then "
    "release.advance()), one k-tile behind `read`",
    hazards.NEVER_WAITED: "no wait_group: nothing says k-tile t-1's wgmmas are done reading its "
    "stage; cute.nvgpu.warpgroup.wait_group(1) before ring.consumer_release(release)",
    hazards.NOT_RETIRED: "released too early: a stage still being read by the wgmmas of its "
    "k-tile is handed back (and refilled); cute.nvgpu.warpgroup.wait_group(1) first, then "
    "ring.consumer_release(release)",
}
# a TMA load into a stage its wgmmas' reads were retired from only after the release: the same
WGMMA_HINTS[hazards.RELEASED_EARLY] = WGMMA_HINTS[hazards.NOT_RETIRED]

# a TMA store's hazards (course.execute.tma, memory), by Cause.what, in the words of notebook
# 11's hints (its staging buffers, its store warp)
_REUSED = "a staging buffer is reused while TMA may still read it: "
_KEEP = (
    "wait until at most epi_stages - 1 stores still read shared memory "
    "(stores.producer_acquire()) before the buffer comes round again"
)
TMA_STORE_HINTS = {
    hazards.UNFENCED: "shared memory written by threads is read by TMA through the async proxy: "
    "every thread fences its own writes -- cute.arch.fence_proxy('async.shared', space='cta') "
    "right after its stmatrix, before the barrier (a fence in the storing warp alone covers "
    "only that warp's writes)",
    hazards.RETIRED_UNORDERED: "only the storing warp waits for its bulk groups: the other warps "
    "may overwrite a buffer TMA still reads. A barrier after that wait "
    "(epi.chunk_sync.arrive_and_wait()) before any thread writes a buffer again",
    hazards.UNCOMMITTED: _REUSED + "the store still reading it was never committed: after the "
    "store, commit it (stores.producer_commit()) and " + _KEEP,
    hazards.NEVER_WAITED: _REUSED + "the store was committed but nothing waited for it: after "
    "the commit, " + _KEEP,
    hazards.NOT_RETIRED: _REUSED + "the waits so far let that store still be reading: after the "
    "store, commit it (stores.producer_commit()) and " + _KEEP,
    hazards.STORED_AGAIN: "the TMA store still reading this buffer stored bytes an earlier store "
    "had already stored, with no thread writing them since: it stores an earlier chunk's data "
    "again while the chunk just written sits in another buffer -- store the buffer the chunk "
    "was just written to, epi.bSG_sC[None, buf] (commit and wait are not what is wrong)",
    hazards.TWO_STORES: "every consumer thread issues its own copy of the same TMA store: issue "
    "it, commit and wait only under `if epi.warp == epi.store_warp:`",
}
# a buffer written by one warp while the TMA store another warp issued still reads it: a
# missing wait or a missing barrier after it (which, depends on where the warps stand)
TMA_STORE_REUSED_BY_ANOTHER_WARP = (
    "a staging buffer is reused while TMA may still read it: the storing warp waits until at "
    "most epi_stages - 1 stores still read shared memory (stores.producer_acquire()), and "
    "only then may the other warps write it -- without a barrier after that wait "
    "(epi.chunk_sync.arrive_and_wait()) they overwrite a buffer TMA still reads"
)
_STORE_NOT_DONE = (hazards.UNCOMMITTED, hazards.NEVER_WAITED, hazards.NOT_RETIRED)

# Blackwell's hazards (course.execute.tmem, tcgen05, scaled_mma, launch_control), by
# (Cause.unit, Cause.what) -- unit "" for any unit -- in the words of notebooks 14-16's hints
BLACKWELL_HINTS = {
    (hazards.UNIT_TMEM_LOAD, hazards.UNWRITTEN): "the accumulator is read before the MMAs "
    "finished: acc_pipeline.consumer_wait(acc_state) before draining it",
    (hazards.UNIT_MMA, hazards.UNWRITTEN): "the first MMA of a tile adds to TMEM no MMA has "
    "written: tiled_mma.set(tcgen05.Field.ACCUMULATE, False) before the tile's first "
    "cute.gemm, True after it",
    ("", hazards.NEVER_FREED): "TMEM is never freed: end with tmem.free(tmem_ptr) (warp 0 "
    "deallocates)",
    ("", hazards.FREED_WHILE_READ): "warp 0 frees TMEM while warps 1-3 may still be reading it: "
    "epi_barrier.arrive_and_wait() before tmem.free",
    ("", hazards.USE_AFTER_FREE): "TMEM is read after tcgen05.dealloc freed it: free it last, "
    "once every epilogue warp's tcgen05.ld is done and the warps have met "
    "(epi_barrier.arrive_and_wait()) -- then tmem.free",
    ("", hazards.NOT_ALLOCATED): "TMEM outside what tcgen05.alloc gave: read and write only the "
    "columns from the allocator's address (tmem.retrieve_ptr), after tmem.allocate",
    ("", hazards.PEER_NOT_DONE): "a CTA pair frees TMEM only after both CTAs are done with it: "
    "tmem.free does the dealloc mbarrier handshake with the peer",
    ("", hazards.SF_NOT_COPIED): "the MMA read SF columns of TMEM no tcgen05.cp wrote before "
    "it: copy the stage's SFs into TMEM before the k-tile's first cute.gemm, "
    "cute.copy(sfa.s2t, sfa.smem[stage], sfa.tmem) and the same for sfb",
    (hazards.UNIT_MMA, hazards.READ_IN_FLIGHT): "the MMAs read a stage TMA may still be "
    "writing: ring.consumer_wait(state) before the k-tile's first cute.gemm",
    (hazards.UNIT_SF_COPY, hazards.READ_IN_FLIGHT): "the SFs are copied from a stage TMA may "
    "still be writing: ring.consumer_wait(state) before the stage's tcgen05.cp, and from that "
    "stage (state.index)",
    (hazards.UNIT_MMA, hazards.NOT_RETIRED): "a stage is overwritten while a tcgen05.mma issued "
    "on it still reads it: release a stage (ring.consumer_release(state)) only after the "
    "k-tile's last cute.gemm, whose tcgen05.commit arrives when the MMAs are done with it",
    (hazards.UNIT_SF_COPY, hazards.NOT_RETIRED): "a stage is overwritten while the tcgen05.cp "
    "of its SFs still reads it: release a stage (ring.consumer_release(state)) only after the "
    "k-tile's copies and MMAs are issued",
    (hazards.UNIT_CLC_QUERY, hazards.READ_IN_FLIGHT): "the answer is decoded before it has "
    "arrived: clc_pipeline.consumer_wait(read_state) first",
    (hazards.UNIT_CLC_QUERY, hazards.WRITTEN_IN_FLIGHT): "a new CLC query is issued into the "
    "answer buffer while the last one is still in flight: "
    "clc_pipeline.producer_acquire(request_state) before each try_cancel",
    (hazards.UNIT_CLC_QUERY, hazards.READ_AFTER_FENCE): "the answer was decoded after the "
    "fence and the release: once consumer_release hands the buffer back, the next try_cancel "
    "may rewrite it before or while it is read. Decode it first, then "
    "cute.arch.fence_proxy('async.shared', space='cta'), then consumer_release",
    (hazards.UNIT_CLC_QUERY, hazards.UNFENCED): "the answer was read through the generic proxy "
    "and is rewritten by the async proxy (the next try_cancel): "
    "cute.arch.fence_proxy('async.shared', space='cta') before consumer_release",
}
# the hazards whose kind alone names what happened
KIND_HINTS = {
    tcgen05.COMMIT_NOT_WAITED: "the last stages' releases are never waited on: the producer ends "
    "with ring.producer_tail(state), so no tcgen05.commit arrives after the CTA exits",
    tma.NOT_DRAINED: "the TMA stores are still in flight when the kernel ends (a note: the PTX "
    "ISA leaves that defined for the CTA's own shared memory); the course's kernels drain with "
    "the store pipeline's producer_tail() (c_pipeline.producer_tail())",
    tcgen05.WAIT_LD: "tcgen05.ld's registers used without tcgen05.wait::ld",
}
# the mbarriers of the CLC pipeline as the course's kernel names their shared memory
# (kernels.cta_pair_clc_gemm: barrier_storage=bars.clc), and a deadlock waiting on them
CLC_BARRIERS = "bars.clc"
CLC_DEADLOCK_HINT = (
    "the CLC answer buffer is never freed: the leader's next request waits for every reader "
    "forever (clc_pipeline.consumer_release(read_state))"
)


# a cp.async issued after the last wait and barrier, into the bytes read before the next one
COPIED_INTO_READ_STAGE = (
    "copy into the stage being read: the wait and the barrier are there, but the cp.async "
    "issued after them goes into the stage this iteration reads. Copy the next k-tile into "
    "`write`, the stage read last iteration (free once every thread has passed the barrier), "
    "never into `read`"
)


def _below_start_hint(cause: hazards.Cause) -> str:
    """An index below a tensor's start is no edge a predicate guards, but index arithmetic
    one step back."""
    return (
        f"element {cause.observed} of {cause.subject} lies before its first element, not "
        f"past its edge, so no predicate at the edge is missing: an index computed one "
        f"step back (the previous k-tile's kt - 1 while kt is 0, a row or column minus "
        f"1) -- index {cause.subject} with the element's own coordinates and the "
        f"k-tile's own kt"
    )


def _cause_hint(exc: Hazard) -> str:
    """The hint of an access outside a tensor or of an MMA operand never written, from the
    hazard's cause."""
    cause = exc.cause
    if cause is None:
        return ""
    if cause.what == hazards.BELOW_START:
        return _below_start_hint(cause)
    if cause.what == hazards.NEVER_WRITTEN and cause.subject in ("A", "B"):
        return OPERAND_NOT_LOADED
    if cause.what == hazards.COPIED_SINCE_BARRIER:
        return COPIED_INTO_READ_STAGE
    if cause.what == hazards.SLICE_PAST_MODE:
        mode, extent = cause.expected
        return (
            f"an index past a mode: {cause.subject}'s mode {mode} has {extent} entries and it "
            f"was sliced at {cause.observed}; a staged tensor's last mode is the ring's "
            f"stages: a k-tile lives in stage t % stages (the ring's state.index), never at "
            f"the k-tile's own number"
        )
    if cause.what == hazards.SWAPPED_COORDINATES:
        return (  # one read cannot tell the two apart: the learner's guard can
            f"{cause.subject} has shape {cause.expected} and was read at {cause.observed}, "
            f"outside it: a predicate at the edge is missing (row < m, col < n), or, since "
            f"{cause.observed[::-1]} is inside, the coordinates are swapped -- where the "
            f"read is guarded, index it in its shape's order, {cause.subject}[row, col]"
        )
    return ""


def _wgmma_hint(exc: Hazard) -> str:
    """A wgmma still reading its stage (STAGE_OVERWRITE) or writing its accumulator: by how it
    stands (only a group never committed says more than the accumulator's own hint)."""
    cause = exc.cause
    if cause is None or cause.unit != hazards.UNIT_WGMMA:
        return ""
    if exc.kind == hazards.STAGE_OVERWRITE:
        return WGMMA_HINTS.get(cause.what, "")
    if exc.kind == wgmma.ACC_IN_FLIGHT and cause.what == hazards.UNCOMMITTED:
        return WGMMA_HINTS[hazards.UNCOMMITTED]
    return ""


def _tma_store_hint(exc: Hazard) -> str:
    cause = exc.cause
    if cause is None or cause.unit != hazards.UNIT_TMA_STORE:
        return ""
    other_warp = cause.expected is not None and cause.observed not in (None, cause.expected)
    if cause.what in _STORE_NOT_DONE and other_warp:
        return TMA_STORE_REUSED_BY_ANOTHER_WARP
    return TMA_STORE_HINTS.get(cause.what, "")


def _blackwell_hint(exc: Hazard) -> str:
    cause = exc.cause
    if cause is None:
        return ""
    return BLACKWELL_HINTS.get((cause.unit, cause.what)) or BLACKWELL_HINTS.get(
        ("", cause.what), ""
    )


def _deadlock_hint(exc: Hazard) -> str:
    """A deadlock with warps waiting on mbarriers (Cause.expected: their names): the CLC
    pipeline's, whose readers never freed the answer, or a phase that never completes."""
    cause = exc.cause
    if exc.kind != hazards.DEADLOCK or cause is None or not cause.expected:
        return ""
    if any(name.split("[")[0] == CLC_BARRIERS for name in cause.expected):
        return CLC_DEADLOCK_HINT
    return MBARRIER_DEADLOCK_HINT


def hazard_hint(exc: Hazard) -> str:
    """The hint for a hazard: from its kind where that says it all, else from its cause, else
    the kind's general hint."""
    if exc.kind in KIND_HINTS:
        return KIND_HINTS[exc.kind]
    for pick in (_cause_hint, _wgmma_hint, _tma_store_hint, _blackwell_hint, _deadlock_hint):
        hint = pick(exc)
        if hint:
            return hint
    return HAZARD_HINTS.get(exc.kind, "")


def executor_check(exercise_id: str) -> Callable:
    """The executor's run of one exercise: (learner's fn, quick) -> findings."""

    def check(fn, quick: bool = True) -> list:
        ex = lookup(exercise_id)
        try:
            translated = _boundary_translator().value(ex.gpu_checks)
            found = translated(fn, quick=True, launching=lambda: None)
        except Unmodelled as exc:
            return [not_checked(CHECK, f"not run: {exc}")]
        except Hazard as exc:
            return [_hazard_finding(exc)]
        findings = [_renamed(f) for f in found]
        if ex.speed_check:
            findings.append(
                not_checked(
                    ex.speed_check,
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
    where = f"; at {exc.site.describe()}" if exc.site is not hazards.UNKNOWN else ""
    hint = hazard_hint(exc)
    # hazard=True: course.exercises.hazard_pass takes these (and only these) beside a GPU run
    return dataclasses.replace(
        failed(f"{CHECK}: {exc.kind}", exc.detail + where, hint), ran=True, hazard=True
    )


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
                tensors = self.extra_operands.accept(self.name, a, b, tensors, config)
            m, n, k = a.shape[0], b.shape[0], self.operands.k_elements(a)
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
            # the step's operands beside A, B and C (fp8_gemm's scales), by their names
            align_more = self.extra_operands.align
            more = [
                runner.pointer(t, name, align_more or t.element_size())
                for t, name in zip(tensors, self.extra_operands.names)
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
DERIVED_GEMMS = ("tma_gemm", "fp8_gemm")


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
