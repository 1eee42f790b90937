"""`cute.arch` on the executor, Hopper's part: elect_one, mbarriers, clusters, proxy fences,
named barriers, bulk-copy groups and register reconfiguration.

Registered into course.execute.api's `cute.arch` (ARCH) by one line there. The mbarrier
calls go to course.execute.mbarriers (the course's MBarrier model in shared memory); the
cluster calls to course.execute.machine.Cluster, whose CTAs run together on one scheduler.
"""

from __future__ import annotations

import contextlib

import numpy as np

from course.execute import atomics, hazards, machine, mbarriers
from course.execute.hazards import Hazard

PROXY_FENCE = hazards.PROXY_FENCE  # a hazard's kind: TMA stores (tma), WGMMA (wgmma)


def _warp():
    return machine.warp()


ELECT = "elect.sync (cute.arch.elect_one)"


@contextlib.contextmanager
def elect_one():
    """`with cute.arch.elect_one():` -- the body runs on the warp's first lane. elect.sync
    takes every lane of the warp (CuTe DSL's membermask is 0xffffffff): reached by part of
    it (a nested elect_one, a branch on the lane) it is a COLLECTIVE hazard."""
    site = hazards.site(3)  # past contextlib's frame
    w = machine.collective(ELECT, site)
    saved, elected = w.mask, w.elected
    first = np.zeros(w.width, bool)
    first[0] = True
    w.mask, w.elected = first, site
    try:
        yield
    finally:
        w.mask, w.elected = saved, elected


# ---------------------------------------------------------------- mbarriers


def mbarrier_init(mbar_ptr, cnt, **_):
    mbarriers.init(mbar_ptr, cnt)


def mbarrier_init_fence(**_):
    mbarriers.init_fence()


def mbarrier_arrive(mbar_ptr, peer_cta_rank_in_cluster=None, arrive_count=1, **_):
    mbarriers.arrive(mbar_ptr, arrive_count, 0, peer_cta_rank_in_cluster)


def mbarrier_arrive_and_expect_tx(mbar_ptr, bytes, peer_cta_rank_in_cluster=None, **_):  # noqa: A002
    mbarriers.arrive(mbar_ptr, 1, bytes, peer_cta_rank_in_cluster)


def mbarrier_expect_tx(mbar_ptr, bytes, peer_cta_rank_in_cluster=None, **_):  # noqa: A002
    mbarriers.expect_tx(mbar_ptr, bytes, peer_cta_rank_in_cluster)


def mbarrier_wait(mbar_ptr, phase, **_):
    mbarriers.wait(mbar_ptr, phase)


def mbarrier_try_wait(mbar_ptr, phase, **_):
    """mbarrier.try_wait.parity: "a potentially blocking instruction which tests for the
    completion of the phase ... If the phase is not complete, the executing thread may be
    suspended ... until the specified phase completes or the suspend time limit expires"
    (PTX ISA, mbarrier.test_wait/try_wait). The executor takes the limit as expired at
    once: True when the phase has completed, else False after letting the other warps
    run. That is the answer a kernel must be ready for: NVIDIA's pipelines peek with
    consumer_try_wait and wait only if the peek said no, so a kernel that trusts a peek
    alone reads a stage TMA may still be writing, and is told so."""
    return mbarriers.completed(mbar_ptr, phase)


def mbarrier_try_wait_parity_timelimit(addr, phase, time_limit, **_):
    """NVVM's mbarrier.try_wait.parity with a suspend time limit, which kernels write inline
    (Hopper fmha retries it until it answers True): "the executing thread may be suspended
    ... until the specified phase completes or the suspend time limit expires" (PTX ISA).
    The limit counts the executor's nanoseconds, its scheduling steps (`globaltimer`);
    `addr` is the barrier's pointer (`Pointer.llvm_ptr`)."""
    return mbarriers.wait_within(addr, phase, time_limit)


def mbarrier_test_wait(mbar_ptr, phase, **_):
    return mbarriers.completed(mbar_ptr, phase)


def mbarrier_conditional_try_wait(cond, mbar_ptr, phase, **_):
    """try_wait only where `cond` holds (True where it does not: nothing to wait for)."""
    if cond:
        return mbarriers.completed(mbar_ptr, phase)
    return True


# ---------------------------------------------------------------- clusters


def _cta():
    return _warp().cta


def block_idx_in_cluster(**_):
    return _cta().rank


def block_in_cluster_idx(**_):
    cta = _cta()
    return tuple(b % c for b, c in zip(cta.block, cta.launch.cluster))


def block_in_cluster_dim(**_):
    return _cta().launch.cluster


def cluster_size(**_):
    c = _cta().launch.cluster
    return c[0] * c[1] * c[2]


def cluster_idx(**_):
    return _cta().cluster.index


def cluster_dim(**_):
    launch = _cta().launch
    return tuple(g // c for g, c in zip(launch.grid, launch.cluster))


def cluster_arrive(**_):
    w = _warp()
    if not w.full():
        raise Hazard(
            hazards.DEADLOCK,
            "cluster_arrive reached by part of a warp (it is .aligned: every thread)",
            hazards.site(2),
        )
    w.cta.cluster.cluster_arrive(w)


cluster_arrive_relaxed = cluster_arrive


def cluster_wait(**_):
    w = _warp()
    cluster = w.cta.cluster
    gen = w.cluster_gen
    if gen == 0:
        raise Hazard(
            hazards.DEADLOCK, "cluster_wait with no cluster_arrive before it", hazards.site(2)
        )
    total = len(cluster.warps)
    machine.block_until(
        lambda: cluster.arrivals.get(gen, 0) == total,
        lambda: f"at the cluster barrier ({cluster.arrivals.get(gen, 0)} of {total} warps arrived)",
        hazards.site(2),
    )


def mapa(ptr, cta_rank, **_):
    """The same shared-memory offset in CTA `cta_rank` of the cluster."""
    cta = _cta()
    rank = int(cta_rank)
    from course.execute.tensor import Pointer

    return Pointer(
        cta.cluster.ctas[rank].smem, ptr.byte_offset, ptr.dtype, ptr.swizzle, ptr.alignment
    )


# ---------------------------------------------------------------- fences and barriers


def fence_proxy(kind, *, space=None, **_):
    """fence.proxy.async[.shared]: what this thread wrote to shared memory becomes visible to
    the async proxy (TMA stores, WGMMA reads)."""
    if str(kind) in ("async", "async.shared"):
        w = _warp()
        smem = w.cta.smem
        mine = np.isin(smem.w_tid, w.active_tids())
        smem.unfenced[mine] = False


def fence_view_async_shared(**_):
    fence_proxy("async.shared")


def _nothing(*_, **__):
    """A fence the executor's memory model does not need (it is sequentially consistent)."""


def barrier(barrier_id=None, number_of_threads=None, **_):
    w = _warp()
    bid = 0 if barrier_id is None else int(barrier_id)
    n = w.cta.threads if number_of_threads is None else int(number_of_threads)
    machine.named_barrier(bid, n, hazards.site(2))


def barrier_arrive(barrier_id=None, number_of_threads=None, **_):
    """bar.arrive: this warp counts towards the named barrier without waiting for it."""
    w = _warp()
    bid = 0 if barrier_id is None else int(barrier_id)
    n = w.cta.threads if number_of_threads is None else int(number_of_threads)
    machine.named_barrier(bid, n, hazards.site(2), wait=False)


def _setmaxregister(what):
    def set_(regs, **_):
        n = int(regs)
        if n % 8 or not 24 <= n <= 256:
            raise Hazard(
                hazards.CRASH,
                f"{what}({n}): the register count must be a multiple of 8 in [24, 256]",
                hazards.site(2),
            )

    set_.__name__ = what
    return set_


def globaltimer(**_):
    """%globaltimer, a nanosecond timer: the executor models no time, so it counts the
    launch's scheduling steps, one nanosecond each. It only grows, as the PTX ISA's does;
    a kernel's own watchdog (a wait that gives up after so many milliseconds) thus never
    fires on the executor, whose own livelock and deadlock checks name a loop that does
    not advance (course.execute.runner)."""
    return _cta().launch.steps


ARCH = dict(
    globaltimer=globaltimer,
    atomic_add=atomics.atomic_add,
    atomic_cas=atomics.atomic_cas,
    atomic_fmax=atomics.atomic_fmax,
    elect_one=elect_one,
    mbarrier_init=mbarrier_init,
    mbarrier_init_fence=mbarrier_init_fence,
    mbarrier_arrive=mbarrier_arrive,
    mbarrier_arrive_and_expect_tx=mbarrier_arrive_and_expect_tx,
    mbarrier_expect_tx=mbarrier_expect_tx,
    mbarrier_wait=mbarrier_wait,
    mbarrier_try_wait=mbarrier_try_wait,
    mbarrier_test_wait=mbarrier_test_wait,
    mbarrier_conditional_try_wait=mbarrier_conditional_try_wait,
    block_idx_in_cluster=block_idx_in_cluster,
    block_in_cluster_idx=block_in_cluster_idx,
    block_in_cluster_dim=block_in_cluster_dim,
    cluster_size=cluster_size,
    cluster_idx=cluster_idx,
    cluster_dim=cluster_dim,
    cluster_arrive=cluster_arrive,
    cluster_arrive_relaxed=cluster_arrive_relaxed,
    cluster_wait=cluster_wait,
    mapa=mapa,
    map_dsmem_ptr=mapa,
    fence_proxy=fence_proxy,
    fence_view_async_shared=fence_view_async_shared,
    fence_acq_rel_cta=_nothing,
    fence_acq_rel_cluster=_nothing,
    fence_acq_rel_gpu=_nothing,
    barrier=barrier,
    barrier_arrive=barrier_arrive,
    setmaxregister_increase=_setmaxregister("setmaxregister_increase"),
    setmaxregister_decrease=_setmaxregister("setmaxregister_decrease"),
    warpgroup_reg_alloc=_setmaxregister("warpgroup_reg_alloc"),
    warpgroup_reg_dealloc=_setmaxregister("warpgroup_reg_dealloc"),
)
