"""Synchronisation mistakes planted in the Blackwell kernels, the same way for the compiler and
for the CPU executor, so both checks can be asked about the same broken kernel.

    with planted("tmem_freed"):
        ptx = compile ...                     # course.cute.ptx_protocol names the rule
        run = blackwell_runs.run_gemm(...)    # the executor names the hazard

A plant makes one call of the kernel a no-op while the `with` block runs: a `cute.arch`
instruction (made a no-op in CuTe DSL itself, which the compiler traces, and in the
executor's stand-in, which it runs), or a method of one of NVIDIA's pipeline classes (the
executor runs their own source, so one change reaches both). A plant `within` a method of
CuTe DSL's (`cutlass.memory.TmemAllocator.free`) makes the `cute.arch` call a no-op only
inside that method, in CuTe DSL's class and in the executor's stand-in of it, which issues
its instructions through the executor's `cute.arch` as NVIDIA's issues them through CuTe
DSL's. Each plant names the rule of course.cute.ptx_protocol that must catch it in the PTX
and the hazard kind the executor must raise, with a word its message must contain.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Plant:
    kernel: str  # the kernels.<module> it is planted in
    call: str  # "cute.arch.<name>" or "cutlass.pipeline.<Class>.<method>"
    mistake: str  # what the kernel then does wrong, in a learner's words
    rule: str  # course.cute.ptx_protocol's rule that names it in the PTX
    hazard: str  # "<module>.<CONSTANT>" of course.execute: the executor's hazard kind
    says: str  # a word the executor's message contains
    within: str = ""  # "cutlass.memory.<Class>.<method>": the call a no-op only inside it


PLANTS = {
    # (tcgen05.ld's registers read before tcgen05.wait::ld, and TMA stores still in flight at
    # the CTA's exit, are no plants: the PTX ISA leaves both defined, so the PTX check and the
    # executor both say them as notes, not refusals)
    "staging_visible_to_tma": Plant(
        "tcgen05_gemm",
        "cute.arch.fence_view_async_shared",
        "the staging buffer is handed to the TMA store without fence.proxy.async",
        "staging_visible_to_tma",
        "tma.PROXY_FENCE",
        "fence",
    ),
    "barriers_ready": Plant(
        "tcgen05_gemm",
        "cute.arch.mbarrier_init_fence",
        "barriers are used without fence.mbarrier_init after their initialisation",
        "barriers_ready",
        "mbarriers.MBARRIER",
        "mbarrier_init_fence",
    ),
    "tmem_freed": Plant(
        "tcgen05_gemm",
        "cute.arch.dealloc_tmem",
        "TMEM is never freed (tcgen05.dealloc left out)",
        "tmem_freed",
        "tmem.TMEM",
        "still allocated",
    ),
    "clc_response_waited": Plant(
        "cta_pair_clc_gemm",
        "cutlass.pipeline.PipelineClcFetchAsync.consumer_wait",
        "the CLC response is read without waiting on the mbarrier it completes",
        "clc_response_waited",
        "hazards.IN_FLIGHT",
        "CLC",
    ),
    # only a CTA pair can make it: each CTA's tcgen05.dealloc.cta_group::2 frees the columns
    # of both, so it must wait until the peer is done with them (TmemAllocator.free arrives
    # on the peer's dealloc mbarrier, then waits on its own)
    "pair_dealloc_synced": Plant(
        "cta_pair_gemm",
        "cute.arch.mbarrier_wait",
        "a CTA of the pair frees the pair's TMEM without waiting for its peer (the wait of "
        "the dealloc handshake left out)",
        "pair_dealloc_synced",
        "tmem.TMEM",
        "handshake",
        within="cutlass.memory.TmemAllocator.free",
    ),
}


def _no_op(*args, **kwargs):
    return None


@contextlib.contextmanager
def planted(name: str):
    """The plant `name` in force for CuTe DSL (compiles) and the executor (runs)."""
    plant = PLANTS[name]
    call = plant.call
    with contextlib.ExitStack() as undo:
        if plant.within:
            undo.enter_context(_no_op_within(call.rsplit(".", 1)[1], plant.within))
        elif call.startswith("cute.arch."):
            import cutlass.cute as cute

            from course.execute import api

            attr = call.rsplit(".", 1)[1]
            undo.enter_context(_swapped(cute.arch, attr))
            undo.enter_context(_swapped_entry(api.arch.__dict__, attr))
        else:
            module, cls, attr = call.rsplit(".", 2)
            undo.enter_context(_swapped(getattr(importlib.import_module(module), cls), attr))
        yield PLANTS[name]


def hazard_kind(plant: Plant) -> str:
    """The executor's hazard kind that `plant` must raise."""
    module, constant = plant.hazard.split(".")
    return getattr(importlib.import_module(f"course.execute.{module}"), constant)


@contextlib.contextmanager
def _no_op_within(attr: str, method: str):
    """`cute.arch.<attr>` a no-op for whoever is inside `method` ("module.Class.name"):
    CuTe DSL's class while the compiler traces it, the executor's stand-in while a warp runs
    it; the executor's other warps, which run on while that warp waits, call it as ever."""
    import cutlass.cute as cute

    from course.execute import api, current
    from course.execute.standins import MODULES

    module, cls, name = method.rsplit(".", 2)
    inside: set = set()  # the executor's warps in `method` now (None: CuTe DSL tracing it)

    def unless_inside(original):
        def call(*args, **kwargs):
            return None if current.current_warp() in inside else original(*args, **kwargs)

        return call

    def entered(original):
        @functools.wraps(original)
        def run(*args, **kwargs):
            me = current.current_warp()
            inside.add(me)
            try:
                return original(*args, **kwargs)
            finally:
                inside.discard(me)

        return run

    owners = (getattr(importlib.import_module(module), cls), getattr(MODULES[module], cls))
    with contextlib.ExitStack() as undo:
        undo.enter_context(_replaced(cute.arch, attr, unless_inside))
        undo.enter_context(_replaced_entry(api.arch.__dict__, attr, unless_inside))
        for owner in owners:
            undo.enter_context(_replaced(owner, name, entered))
        yield


def _swapped(owner, attr: str):
    """`owner.attr` a no-op for the block."""
    return _replaced(owner, attr, lambda original: _no_op)


def _swapped_entry(names: dict, attr: str):
    return _replaced_entry(names, attr, lambda original: _no_op)


@contextlib.contextmanager
def _replaced(owner, attr: str, make):
    """`owner.attr` replaced by make(what it was) for the block; afterwards as it was (an
    inherited method is inherited again)."""
    own = attr in vars(owner)
    saved = vars(owner)[attr] if own else None
    setattr(owner, attr, make(getattr(owner, attr)))
    try:
        yield
    finally:
        if own:
            setattr(owner, attr, saved)
        else:
            delattr(owner, attr)


@contextlib.contextmanager
def _replaced_entry(names: dict, attr: str, make):
    saved = names[attr]
    names[attr] = make(saved)
    try:
        yield
    finally:
        names[attr] = saved
