"""tcgen05.st on the executor: registers into tensor memory (`tcgen05.make_tmem_copy` of
St32x32bOp, then `cute.copy`), and tcgen05.wait::st (`cute.arch.
fence_view_async_tmem_store`). NVIDIA's blockwise GEMM stores its rescaled accumulator so.

PTX ISA (tcgen05.st, tcgen05.wait): the store is warp-wide (.sync.aligned) and performed
asynchronously; "tcgen05.wait::st causes the executing thread to block until all prior
tcgen05.st operations issued by the executing thread have completed". Warp w reaches TMEM
lanes 32 * (w % 4) onwards, as with tcgen05.ld. So another warp may read the cells (with
tcgen05.ld) only once the storing warp waited and a synchronisation carried that to it.

The executor writes the cells when the store is issued and keeps them pending on the warp
until its wait::st; a tcgen05.ld of pending cells, or by a warp not ordered after the
wait (course.execute.happens_before), is a hazard (kind TMEM). Which register goes to which
cell is the atom's TV layouts, asked of CuTe (course.execute.oracle), as for tcgen05.ld.
"""

from __future__ import annotations

import numpy as np

from course.execute import atoms, machine, tmem
from course.execute.hazards import Hazard, Site, Unmodelled
from course.execute.standins import Alias, recipe_maker
from course.execute.tensor import Pointer, Tensor

OPS = ("St32x32bOp",)  # modelled: the 32x32b shape (one lane of TMEM per thread)
TCGEN05 = "cutlass.cute.nvgpu.tcgen05"


def tmem_store(atom: atoms.TiledCopy, src: Tensor, dst: Tensor, site: Site) -> None:
    """cute.copy(tmem store copy, registers, TMEM tensor): warp-wide tcgen05.st."""
    from course.execute.tensor import _rows_of

    w = machine.collective("tcgen05.st (warp-wide, .sync.aligned)", site, "all 32 lanes", True)
    if not isinstance(dst.iterator, Pointer) or not isinstance(dst.iterator.memory, tmem.Tmem):
        raise Hazard(tmem.TMEM, "tcgen05.st writes TMEM: its destination is no TMEM tensor", site)
    unpack = atom.op.args[1] if len(atom.op.args) > 1 else atom.op.kwargs.get("unpack")
    if unpack is not None and getattr(unpack, "name", "NONE") != "NONE":
        raise Unmodelled(f"tcgen05.st with {unpack!r} (16-bit unpacking)")
    src_tv, dst_tv, calls = tmem.copy_calls(atom, dst.size, src.size, "tcgen05.st", False, site)
    per_src, per_dst = src_tv.shape[1], dst_tv.shape[1]
    rows = np.arange(32)
    S = _rows_of(np.asarray(src.elements()), rows)
    regs = atoms._gather(src, S, np.ones(S.shape, dtype=bool), rows, w.tids, site)
    tiles = np.zeros((calls, src_tv.size), dtype=np.float32)
    tiles[:, src_tv] = regs.reshape(32, calls, per_src).transpose(1, 0, 2)
    values = tiles[:, dst_tv[0]]  # (calls, per_dst): the warp's TMEM side is one "thread"
    elems = np.asarray(dst.elements())
    addresses = (elems[0] if elems.ndim == 2 else elems).reshape(calls, per_dst)
    tmem.check_warp_lanes(w, addresses, "writes", "tcgen05.st", site)
    space: tmem.Tmem = dst.iterator.memory
    space.write(addresses, values, f"warp {w.index}'s tcgen05.st writes", site)
    _pending(space).setdefault(w, []).append((np.unique(addresses), site))


def _pending(space: tmem.Tmem) -> dict:
    """warp -> [(addresses, site)] of its tcgen05.st not waited for yet."""
    return space.__dict__.setdefault("stores_pending", {})


def _waited(space: tmem.Tmem) -> dict:
    """warp -> {address: the clock a reader must know of it}: its stores waited for."""
    return space.__dict__.setdefault("stores_waited", {})


def wait_st(*_, **__) -> None:
    """tcgen05.wait::st: this warp's tcgen05.st have completed; a reader is ordered after
    them once it knows this warp's next synchronisation (its clock then)."""
    w = machine.warp()
    spaces = [s for s in (w.cta.__dict__.get("tmem"),) if s is not None]
    for space in spaces:
        for addresses, _ in _pending(space).pop(w, []):
            need = _waited(space).setdefault(w, {})
            need.update(dict.fromkeys(addresses.tolist(), w.clock + 1))


def check_stored(w, space: tmem.Tmem, addresses: np.ndarray, site: Site) -> None:
    """At a tcgen05.ld of `addresses` by warp w: no tcgen05.st of them is still pending,
    and w is ordered after the wait::st of each that another warp stored."""
    wanted = np.unique(addresses)
    for issuer, stores in _pending(space).items():
        for stored, at in stores:
            if np.isin(wanted, stored).any():
                raise Hazard(
                    tmem.TMEM,
                    f"warp {w.index}'s tcgen05.ld reads TMEM of {space.name} that the "
                    f"tcgen05.st of warp {issuer.index} at {at.describe()} wrote with no "
                    f"tcgen05.wait::st since (cute.arch.fence_view_async_tmem_store)",
                    site,
                )
    for issuer, need in _waited(space).items():
        if issuer is w:
            continue
        clocks = [need[a] for a in wanted.tolist() if a in need]
        if clocks and max(clocks) > w.knows.get(issuer, 0):
            raise Hazard(
                tmem.TMEM,
                f"warp {w.index}'s tcgen05.ld reads TMEM of {space.name} that warp "
                f"{issuer.index} stored with tcgen05.st, with nothing ordering the read after "
                f"its tcgen05.wait::st (an mbarrier it arrived on after the wait, or a barrier)",
                site,
            )


def _copy_module() -> dict:
    """cute.nvgpu.tcgen05.copy: the module CuTe DSL's tcgen05 copy ops live in (the same
    objects as tcgen05's)."""
    names = ("Ld32x32bOp", "Cp4x32x128bOp", "Repetition", "Pack", "Unpack", "CtaGroup", *OPS)
    return {name: Alias(TCGEN05, name) for name in names}


NAMES = {
    TCGEN05: {name: recipe_maker(f"cute.nvgpu.tcgen05.{name}") for name in OPS},
    f"{TCGEN05}.copy": _copy_module(),
}
