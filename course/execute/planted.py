"""Synchronisation mistakes planted in the Blackwell kernels, the same way for the compiler and
for the CPU executor, so both checks can be asked about the same broken kernel.

    with planted("tmem_freed"):
        ptx = compile ...                     # course.cute.ptx_protocol names the rule
        run = blackwell_runs.run_gemm(...)    # the executor names the hazard

A plant makes one call of the kernel a no-op while the `with` block runs: a `cute.arch`
instruction (made a no-op in CuTe DSL itself, which the compiler traces, and in the
executor's stand-in, which it runs), or a method of one of NVIDIA's pipeline classes (the
executor runs their own source, so one change reaches both). Each plant names the rule of
course.cute.ptx_protocol that must catch it in the PTX and the hazard kind the executor must
raise, with a word its message must contain.
"""

from __future__ import annotations

import contextlib
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
}


def _no_op(*args, **kwargs):
    return None


@contextlib.contextmanager
def planted(name: str):
    """The plant `name` in force for CuTe DSL (compiles) and the executor (runs)."""
    call = PLANTS[name].call
    with contextlib.ExitStack() as undo:
        if call.startswith("cute.arch."):
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
def _swapped(owner, attr: str):
    """`owner.attr` a no-op for the block; afterwards as it was (an inherited method is
    inherited again)."""
    own = attr in vars(owner)
    saved = vars(owner)[attr] if own else None
    setattr(owner, attr, _no_op)
    try:
        yield
    finally:
        if own:
            setattr(owner, attr, saved)
        else:
            delattr(owner, attr)


@contextlib.contextmanager
def _swapped_entry(names: dict, attr: str):
    saved = names[attr]
    names[attr] = _no_op
    try:
        yield
    finally:
        names[attr] = saved
