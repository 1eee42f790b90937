"""`cute.copy` and `cute.gemm`: one call in CuTe DSL, several units on the GPU. Which unit
runs it is the atom's type, decided here and nowhere else: a TMA atom's copy is the TMA
unit's (course.execute.tma), a tcgen05.ld's the TMEM load (course.execute.tcgen05), a
tcgen05.st's the TMEM store (course.execute.tmem_store), a tcgen05.cp's the scale-factor
copy (course.execute.scaled_mma), the rest the SIMT copies (course.execute.atoms); a
tcgen05 TiledMma's gemm is course.execute.tcgen05's, the rest course.execute.atoms'
(mma.sync, WGMMA, the universal FMA).

A new copy or MMA unit adds its branch here.
"""

from __future__ import annotations

from course.execute import atoms, dsmem_stores, hazards, scaled_mma, tcgen05, tma, tmem_store
from course.execute.hazards import Unmodelled


def copy(atom, src, dst, *args, **kwargs):
    kind = getattr(atom, "kind", "")
    if kind == "tcgen05.ld":
        if args or kwargs:
            raise Unmodelled("a tcgen05.ld copy with a predicate or options")
        return tcgen05.tmem_load(atom, src, dst, hazards.site(2))
    if kind == "tcgen05.st":
        if args or kwargs:
            raise Unmodelled("a tcgen05.st copy with a predicate or options")
        return tmem_store.tmem_store(atom, src, dst, hazards.site(2))
    if kind == "tcgen05.cp":
        if args or kwargs:
            raise Unmodelled("a tcgen05.cp copy with a predicate or options")
        return scaled_mma.sf_copy(atom, src, dst, hazards.site(2))
    if isinstance(atom, tma.TmaAtom):
        return tma.copy(atom, src, dst, *args, **kwargs)
    if kind == "st.async":
        return dsmem_stores.copy(atom, src, dst, *args, **kwargs)
    return atoms.copy(atom, src, dst, *args, **kwargs)


def gemm(mma, d, a, b, c, **kwargs):
    if isinstance(mma, tcgen05.TiledMma):
        scaled = scaled_mma.scaled if mma.op.name in scaled_mma.MMAS else None
        return tcgen05.gemm(mma, d, a, b, c, scaled, **kwargs)
    return atoms.gemm(mma, d, a, b, c, **kwargs)
