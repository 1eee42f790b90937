"""Hopper's pieces in the executor's stand-ins (its `NAMES` table, built into the stand-ins
by course.execute.api): `cute.arch`'s mbarriers, clusters, fences and bulk groups
(course.execute.sm90), TMA (course.execute.tma; `cute.copy` of a TMA atom is dispatched to
it by course.execute.dispatch), and `cutlass.pipeline` (course.execute.pipeline).

Kept apart from api so that api stays the SIMT core and each Hopper piece one module.
"""

from __future__ import annotations

from course.execute import oracle, pipeline, sm90, tile_schedulers, tma
from course.execute.hazards import Unmodelled
from course.execute.standins import Alias, Gap, Replaces, recipe_maker

TMA_OPS = tma.LOADS + tma.STORES


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


# tensor maps a kernel writes itself (grouped GEMM): their 128 bytes are the driver's format
_TENSORMAPS = Gap(
    "device-side tensor maps (cutlass.utils.TensorMapManager, TensorMapUpdateMode: TMA "
    "descriptors a kernel rewrites in memory and fences, whose 128-byte format is the CUDA "
    "driver's)"
)

# what Hopper adds to the stand-ins (course.execute.standins.build, called by api)
NAMES = {
    "cutlass.utils": {"TensorMapManager": _TENSORMAPS, "TensorMapUpdateMode": _TENSORMAPS},
    "cutlass.cute.arch": {
        **sm90.ARCH,
        # named barriers (an id and a thread count) in place of the core's barrier 0
        "barrier": Replaces(sm90.ARCH["barrier"]),
        "cp_async_bulk_commit_group": tma.bulk_commit_group,
        "cp_async_bulk_wait_group": tma.bulk_wait_group,
    },
    # NVVM ops kernels write inline (Hopper fmha's own mbarrier wait)
    "cutlass._mlir.dialects.nvvm": {
        "mbarrier_try_wait_parity_timelimit": sm90.mbarrier_try_wait_parity_timelimit,
    },
    "cutlass.cute.nvgpu.cpasync": {
        **{name: recipe_maker(f"cute.nvgpu.cpasync.{name}") for name in TMA_OPS},
        "make_tiled_tma_atom": tma.make_tiled_tma_atom,
        "tma_partition": tma.tma_partition,
        "prefetch_descriptor": _no_op,
        "create_tma_multicast_mask": create_tma_multicast_mask,
        "copy_tensormap": _copy_tensormap,
    },
    "cutlass.cute": {
        "slice_": slice_,
        "is_static": pipeline.is_static,
        "fast_divmod_create_divisor": tile_schedulers.fast_divmod_create_divisor,
        "FastDivmodDivisor": tile_schedulers.FastDivmodDivisor,
    },
    # NVIDIA's cutlass.pipeline runs translated (course.execute.translate); what it imports
    # from the DSL's internals, and what NVIDIA's tile schedulers
    # (course.execute.tile_schedulers) import from there
    "cutlass.cutlass_dsl": {
        **pipeline.DSL,
        "Integer": Alias("cutlass", "Integer"),
        "min": Alias("cutlass", "min"),
        "max": Alias("cutlass", "max"),
        "const_expr": Alias("cutlass", "const_expr"),
    },
    "cutlass": {"if_generate": pipeline.if_generate},
    "cutlass.cute.core": {"is_static": pipeline.is_static},
}

# the modules whose functions take (and drop) MLIR's loc=/ip=, as NVIDIA's library code
# passes them
LOCATION_FREE = ("cutlass.cute.arch", "cutlass.cute", "cutlass.cute.nvgpu.cpasync")
