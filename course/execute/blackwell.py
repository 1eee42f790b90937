"""Blackwell's pieces in the executor's stand-ins (its `NAMES` table, built into them by
course.execute.api after Hopper's and WGMMA's): `cute.nvgpu.tcgen05` (course.execute.tcgen05),
TMEM and `cutlass.memory.TmemAllocator` (course.execute.tmem), the TMA atoms of an MMA's
operands (`make_tiled_tma_atom_A/B`, as course.execute.tma's `TmaInfo`), and the host-side
recipes of `cutlass.utils.blackwell_helpers` and `cutlass.tensor_utils.LayoutEnum`, asked of
CuTe traced for sm_100a (course.execute.oracle).

Kept apart from api so that api stays the SIMT core and each piece one module.
"""

from __future__ import annotations

from course.execute import atoms, launch_control, oracle, scaled_mma, smem_struct, tcgen05
from course.execute import tma, tmem
from course.execute.hazards import Unmodelled
from course.execute.layout_enum import LayoutEnum
from course.execute.oracle import Recipe
from course.execute.standins import Alias, OperandMajorMode, Wraps, ops_names
from course.execute.tensor import Tensor

# modelled: the 16-bit MMA (exact products, fp32 accumulation), the block-scaled MXF8F6F4 MMA
# and the SF copy tcgen05.cp (course.execute.scaled_mma, as the PTX ISA places the SFs) and
# the 32x32b TMEM load; the tf32 / plain fp8 / fp4 MMAs and the 16xNb loads are not (their
# rounding and lane maps would be made up)
TCGEN05_OPS = ("MmaF16BF16Op", "Ld32x32bOp", *scaled_mma.OPS)
TCGEN05_ENUMS = {
    "CtaGroup": ("ONE", "TWO"),
    "OperandSource": ("SMEM", "TMEM"),
    "Field": ("ACCUMULATE", "NEGATE_A", "NEGATE_B", "SFA", "SFB"),
    "Repetition": tuple(f"x{2**i}" for i in range(8)),
    "Pack": ("NONE", "PACK_16b_IN_32b"),
    "Unpack": ("NONE", "UNPACK_32b_IN_16b"),
}
HELPERS = "cutlass.utils.blackwell_helpers"


def _operand_tma(mode: int):
    """make_tiled_tma_atom_A (mode 2 of the cluster multicasts A) or _B (mode 1): the box
    is one stage of the operand's shared layout, in the MMA's partition order -- the order
    tma_partition pairs it with the MMA-partitioned global tile."""

    def make(op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk=None,
             **kwargs):  # fmt: skip
        # internal_type (Int16 for the scale factors) is how the tensor map names the
        # elements; the bytes copied are the same
        if not isinstance(gmem_tensor, Tensor):
            raise Unmodelled("make_tiled_tma_atom_A/B of a tensor not in global memory")
        multicast = 1
        if op.name.endswith("MulticastOp"):
            if cluster_shape_vmnk is None:
                raise ValueError("cluster_shape_vmnk must be provided for multicast loads")
            multicast = int(oracle.call("size", cluster_shape_vmnk, mode=[mode]))
        atom = tma.TmaAtom(op, gmem_tensor, smem_layout, mma_tiler_mnk, multicast)
        return tma.TmaInfo(atom, tma.tma_tensor(gmem_tensor), smem_layout)

    return make


def _helper(name: str):
    """A host-side helper of blackwell_helpers whose answer is a layout or tile: asked of
    CuTe traced for sm_100a."""

    def call(*args, **kwargs):
        def job():
            import cutlass.utils.blackwell_helpers as sm100_utils

            fn = getattr(sm100_utils, name)
            return oracle.from_real(fn(*oracle.to_real(args), **oracle.to_real(kwargs)))

        return oracle.ask((HELPERS, name, oracle.key_of(args), oracle.key_of(kwargs)), job)

    call.__name__ = name
    return call


def get_smem_store_op(layout_d, elem_ty_d, elem_ty_acc, tiled_tmem_load, **_):
    """The registers -> shared copy atom of the epilogue (CuTe picks it; the executor runs
    the universal copies it names)."""
    import cutlass.utils.blackwell_helpers  # noqa: F401 -- the recipe replays it

    recipe = Recipe(
        f"{HELPERS}.get_smem_store_op", (layout_d, elem_ty_d, elem_ty_acc, tiled_tmem_load)
    )
    kind = oracle.ask(("op-kind", recipe.key), lambda: type(recipe.real().op).__name__)
    if kind != "CopyUniversalOp":
        raise Unmodelled(f"get_smem_store_op giving {kind}")
    return atoms.CopyAtom(recipe, Recipe("cute.nvgpu.CopyUniversalOp"), elem_ty_d, None)


def _tiled_mma_of(make):
    def make_tiled_mma(op_or_atom, *args, **kwargs):
        made = make(op_or_atom, *args, **kwargs)
        if tcgen05.is_tcgen05(made.op):
            return tcgen05.TiledMma(made.recipe, made.op)
        return made

    return make_tiled_mma


def _tma_view_aware(fn, rewrap: bool):
    """cute.size / rank / group_modes on a TMA partition (tma.TmaView): on its tensor, mode 0
    (the box) left as it is -- the epilogue groups its sub-tiles into one mode."""

    def call(x, *args, **kwargs):
        if isinstance(x, tma.TmaView):
            if rewrap and args and int(args[0]) < 1:
                raise Unmodelled("group_modes of a TMA partition's box (mode 0)")
            out = fn(x.tensor, *args, **kwargs)
            return tma.TmaView(out, x.select, x.box) if rewrap else out
        return fn(x, *args, **kwargs)

    call.__name__ = fn.__name__
    return call


def _clc_aware(fence, kinds=None):
    """fence.proxy.async (fence_proxy, fence_view_async_shared): also orders this warp's
    reads of CLC answers before the next query's write (course.execute.launch_control)."""

    def call(*args, **kwargs):
        fence(*args, **kwargs)
        kind = str(args[0] if args else kwargs.get("kind", ""))
        if kinds is None or kind in kinds:
            from course.execute import machine

            launch_control.fenced(machine.warp())

    call.__name__ = getattr(fence, "__name__", "fence")
    return call


def prefetch(atom, src, **_) -> None:
    """cute.prefetch(tma_atom, gmem_tile): a TMA prefetch (cp.async.bulk.prefetch.tensor)
    into L2, a hint that moves no data the kernel can see: nothing to model beyond the
    atom's kind (CuTe DSL takes only TMA atoms)."""
    if not isinstance(atom, tma.TmaAtom):
        raise Unmodelled(f"cute.prefetch with a {type(atom).__name__} (CuTe DSL: TMA atoms only)")


def _reexported(helpers: dict) -> dict:
    """`cutlass.utils.<name>`: the Blackwell helpers CuTe DSL's cutlass.utils re-exports
    (those that are the same object there as in blackwell_helpers), as their stand-ins."""
    import cutlass.utils as real_utils
    import cutlass.utils.blackwell_helpers as real_helpers

    import warnings

    names = {}
    for name in helpers:
        real = getattr(real_helpers, name, None)
        if name.startswith("_") or real is None:
            continue
        with warnings.catch_warnings():  # asking is no use of a deprecated name
            warnings.simplefilter("ignore", DeprecationWarning)
            same = getattr(real_utils, name, None) is real
        if same:
            names[name] = Alias(HELPERS, name)
    return names


def _names() -> dict:
    """What Blackwell adds to the stand-ins: `cute.nvgpu.tcgen05`, TMEM's `cute.arch`
    instructions and `cutlass.memory.TmemAllocator`, CLC, the operand TMA atoms,
    `cutlass.utils.blackwell_helpers` (and its re-exports in cutlass.utils), `cute.struct`,
    and the names CuTe DSL 4.8.1 still accepts as deprecated aliases where NVIDIA's examples
    use them: `tcgen05.OperandMajorMode` (now `cute.nvgpu.OperandMajorMode`; the MMA op
    takes either) and `cutlass.utils.SmemAllocator` / `TmemAllocator` (now in
    `cutlass.memory`)."""
    tcgen05_ns = {
        **ops_names("cute.nvgpu.tcgen05", *TCGEN05_OPS, enums=TCGEN05_ENUMS),
        "make_tmem_copy": tcgen05.make_tmem_copy,
        "commit": tcgen05.commit,
        "wait": tcgen05.wait_ld,
        "is_tmem_load": lambda atom: getattr(atom, "kind", "") == "tcgen05.ld",
        "OperandMajorMode": OperandMajorMode,
    }
    helpers = {
        "make_smem_layout_a": _helper("make_smem_layout_a"),
        "make_smem_layout_b": _helper("make_smem_layout_b"),
        "make_smem_layout_epi": _helper("make_smem_layout_epi"),
        "compute_epilogue_tile_shape": _helper("compute_epilogue_tile_shape"),
        "get_smem_store_op": get_smem_store_op,
        # the real LayoutEnum is re-exported by cutlass.utils and its helper modules: the
        # translator may find it under any of them
        "LayoutEnum": LayoutEnum,
    }
    return {
        "cutlass.cute.nvgpu": {
            "make_tiled_tma_atom_A": _operand_tma(2),
            "make_tiled_tma_atom_B": _operand_tma(1),
        },
        "cutlass.cute.nvgpu.cpasync": {"TmaInfo": tma.TmaInfo},
        "cutlass.cute.arch": {
            "alloc_tmem": tmem.alloc_tmem,
            "dealloc_tmem": tmem.dealloc_tmem,
            "retrieve_tmem_ptr": tmem.retrieve_tmem_ptr,
            "relinquish_tmem_alloc_permit": tmem.relinquish_tmem_alloc_permit,
            "fence_view_async_tmem_load": tcgen05.wait_ld,
            "fence_view_async_tmem_store": tcgen05.wait_st,
            "issue_clc_query": launch_control.issue_clc_query,
            "clc_response": launch_control.clc_response,
            "fence_proxy": Wraps(lambda fence: _clc_aware(fence, ("async", "async.shared"))),
            "fence_view_async_shared": Wraps(_clc_aware),
        },
        "cutlass.memory": {"TmemAllocator": tmem.TmemAllocator},
        "cutlass.cute": {
            "struct": smem_struct.struct,
            "size": Wraps(lambda fn: _tma_view_aware(fn, False)),
            "rank": Wraps(lambda fn: _tma_view_aware(fn, False)),
            "group_modes": Wraps(lambda fn: _tma_view_aware(fn, True)),
            "make_tiled_mma": Wraps(_tiled_mma_of),
            "prefetch": prefetch,
        },
        "cutlass.cute.nvgpu.tcgen05": tcgen05_ns,
        HELPERS: helpers,
        "cutlass.utils": {
            "SmemAllocator": Alias("cutlass.memory", "SmemAllocator"),
            "TmemAllocator": Alias("cutlass.memory", "TmemAllocator"),
            "LayoutEnum": LayoutEnum,
            **_reexported(helpers),
        },
        "cutlass.utils.hopper_helpers": {"LayoutEnum": LayoutEnum},
    }


NAMES = _names()
