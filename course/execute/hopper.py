"""Hopper's pieces registered into the executor's stand-ins (course.execute.api calls
`register(globals())` once): `cute.arch`'s mbarriers, clusters, fences and bulk groups
(course.execute.sm90), TMA (course.execute.tma) with `cute.copy` dispatching a TMA atom
to it, and `cutlass.pipeline` (course.execute.pipeline).

Kept apart from api so that api stays the SIMT core and each Hopper piece one module.
"""

from __future__ import annotations

import functools
import types

from course.execute import oracle, pipeline, sm90, tma
from course.execute.hazards import Unmodelled

TMA_OPS = tma.LOADS + tma.STORES


def _copy_dispatch(simt_copy):
    """cute.copy: a TMA atom's copy is the TMA unit's (course.execute.tma), the rest SIMT."""

    def copy(atom, src, dst, *args, **kwargs):
        if isinstance(atom, tma.TmaAtom):
            return tma.copy(atom, src, dst, *args, **kwargs)
        return simt_copy(atom, src, dst, *args, **kwargs)

    copy.__name__ = "copy"
    return copy


def slice_(x, crd):
    """cute.slice_: a tensor's slice is the executor's; a layout's is asked of CuTe."""
    if hasattr(x, "slice") and hasattr(x, "iterator"):
        return x.slice(crd)
    return oracle.call("slice_", x, crd)


def create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode, **_):
    coord = tuple(int(c) for c in cta_coord_vmnk)
    return int(oracle.call("make_layout_image_mask", cta_layout_vmnk, coord, int(mcast_mode)))


def _no_op(*_, **__):
    """A hint to the hardware (a descriptor prefetch): nothing to model."""


def _copy_tensormap(*_, **__):
    raise Unmodelled(
        "cute.nvgpu.cpasync.copy_tensormap (a tensor map's bytes come from the driver)"
    )


def register(g: dict) -> None:
    g["arch"].__dict__.update(
        sm90.ARCH,
        cp_async_bulk_commit_group=tma.bulk_commit_group,
        cp_async_bulk_wait_group=tma.bulk_wait_group,
    )
    cpasync = g["cpasync"]
    for name in TMA_OPS:
        cpasync.__dict__[name] = g["_recipe_maker"](f"cute.nvgpu.cpasync.{name}")
    cpasync.__dict__.update(
        make_tiled_tma_atom=tma.make_tiled_tma_atom,
        tma_partition=tma.tma_partition,
        prefetch_descriptor=_no_op,
        create_tma_multicast_mask=create_tma_multicast_mask,
        copy_tensormap=_copy_tensormap,
    )
    cute = g["cute"]
    cute.__dict__.update(
        copy=_copy_dispatch(cute.copy), slice_=slice_, is_static=pipeline.is_static
    )
    # NVIDIA's cutlass.pipeline runs translated (course.execute.translate); what it imports
    # from the DSL's internals:
    dsl = g["Namespace"]("cutlass.cutlass_dsl", **pipeline.DSL)
    g["MODULES"]["cutlass.cutlass_dsl"] = dsl
    g["cutlass"].__dict__.update(if_generate=pipeline.if_generate)
    g["MODULES"]["cutlass.cute.core"] = g["Namespace"](
        "cutlass.cute.core", is_static=pipeline.is_static
    )
    pipeline.patch_types()
    for ns in (g["arch"], cute, cpasync):
        for key, value in list(vars(ns).items()):
            if isinstance(value, types.FunctionType):
                ns.__dict__[key] = _without_location(value)


def _without_location(fn):
    """The DSL's functions take `loc=`/`ip=` (MLIR locations): NVIDIA's library code passes
    them; the stand-ins have no use for them."""

    @functools.wraps(fn)
    def call(*args, loc=None, ip=None, **kwargs):
        return fn(*args, **kwargs)

    return call
