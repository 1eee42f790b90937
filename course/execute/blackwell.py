"""Blackwell's pieces registered into the executor's stand-ins (course.execute.api calls
`register(globals())` once, after Hopper's): `cute.nvgpu.tcgen05` (course.execute.tcgen05),
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
from course.execute.oracle import Recipe
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


def _gemm_dispatch(simt_gemm):
    def gemm(mma, d, a, b, c, **kwargs):
        if isinstance(mma, tcgen05.TiledMma):
            return tcgen05.gemm(mma, d, a, b, c, **kwargs)
        return simt_gemm(mma, d, a, b, c, **kwargs)

    return gemm


def _copy_dispatch(other_copy):
    def copy(atom, src, dst, *args, **kwargs):
        if getattr(atom, "kind", "") == "tcgen05.ld":
            if args or kwargs:
                raise Unmodelled("a tcgen05.ld copy with a predicate or options")
            from course.execute import hazards

            return tcgen05.tmem_load(atom, src, dst, hazards.site(2))
        if getattr(atom, "kind", "") == "tcgen05.cp":
            if args or kwargs:
                raise Unmodelled("a tcgen05.cp copy with a predicate or options")
            from course.execute import hazards

            return scaled_mma.sf_copy(atom, src, dst, hazards.site(2))
        return other_copy(atom, src, dst, *args, **kwargs)

    copy.__name__ = "copy"
    return copy


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


def get_flat_coord(self, index, **_):
    """Layout.get_flat_coord: a linear index's coordinate, flattened (the CTA-pair kernels
    find their (V, M, N, K) place in the cluster with it)."""
    from course.execute.pipeline import get_hier_coord

    def flat(c):
        return sum((flat(e) for e in c), ()) if isinstance(c, tuple) else (c,)

    return flat(get_hier_coord(self, index))


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


def register(g: dict) -> None:
    from course.execute.api import Namespace

    make_ops = g["_ops_namespace"]
    ns = make_ops("cute.nvgpu.tcgen05", *TCGEN05_OPS, enums=TCGEN05_ENUMS)
    ns.__dict__.update(
        make_tmem_copy=tcgen05.make_tmem_copy,
        commit=tcgen05.commit,
        wait=tcgen05.wait_ld,
        is_tmem_load=lambda atom: getattr(atom, "kind", "") == "tcgen05.ld",
    )
    nvgpu = g["nvgpu"]
    major = make_ops("cute.nvgpu", enums={"OperandMajorMode": ("K", "MN")})
    nvgpu.__dict__.update(
        OperandMajorMode=major.OperandMajorMode,
        make_tiled_tma_atom_A=_operand_tma(2),
        make_tiled_tma_atom_B=_operand_tma(1),
    )
    g["cpasync"].__dict__.update(TmaInfo=tma.TmaInfo)
    g["arch"].__dict__.update(
        alloc_tmem=tmem.alloc_tmem,
        dealloc_tmem=tmem.dealloc_tmem,
        retrieve_tmem_ptr=tmem.retrieve_tmem_ptr,
        relinquish_tmem_alloc_permit=tmem.relinquish_tmem_alloc_permit,
        fence_view_async_tmem_load=tcgen05.wait_ld,
        fence_view_async_tmem_store=tcgen05.wait_st,
        issue_clc_query=launch_control.issue_clc_query,
        clc_response=launch_control.clc_response,
    )
    arch = g["arch"]
    arch.__dict__.update(
        fence_proxy=_clc_aware(arch.fence_proxy, ("async", "async.shared")),
        fence_view_async_shared=_clc_aware(arch.fence_view_async_shared),
    )
    g["memory"].__dict__.update(TmemAllocator=tmem.TmemAllocator)
    g["Layout"].get_flat_coord = get_flat_coord
    from course.execute import pipeline  # the sm100 pipelines call cutlass.if_generate

    g["cutlass"].__dict__.setdefault("if_generate", pipeline.if_generate)
    cute = g["cute"]
    if not hasattr(g["SmemAllocator"], "allocate"):
        g["SmemAllocator"].allocate = smem_struct.allocate
    cute.__dict__.update(
        struct=smem_struct.struct,
        size=_tma_view_aware(cute.size, False),
        rank=_tma_view_aware(cute.rank, False),
        group_modes=_tma_view_aware(cute.group_modes, True),
        make_tiled_mma=_tiled_mma_of(cute.make_tiled_mma),
        gemm=_gemm_dispatch(cute.gemm),
        copy=_copy_dispatch(cute.copy),
    )
    from course.execute.wgmma import _merge  # the one way stand-ins of a module combine

    modules, cutlass = g["MODULES"], g["cutlass"]
    _merge(modules, nvgpu, "cutlass.cute.nvgpu.tcgen05", "tcgen05", ns)
    helpers = Namespace(
        HELPERS,
        make_smem_layout_a=_helper("make_smem_layout_a"),
        make_smem_layout_b=_helper("make_smem_layout_b"),
        make_smem_layout_epi=_helper("make_smem_layout_epi"),
        compute_epilogue_tile_shape=_helper("compute_epilogue_tile_shape"),
        get_smem_store_op=get_smem_store_op,
    )
    utils = _merge(modules, cutlass, "cutlass.utils", "utils", Namespace("cutlass.utils"))
    _merge(modules, utils, HELPERS, "blackwell_helpers", helpers)
    scaled_mma.register(g)
    layout_enum = make_ops(
        "cutlass.tensor_utils", enums={"LayoutEnum": ("ROW_MAJOR", "COL_MAJOR")}
    ).LayoutEnum
    tensor_utils = Namespace("cutlass.tensor_utils", LayoutEnum=layout_enum)
    tensor_utils = _merge(modules, cutlass, "cutlass.tensor_utils", "tensor_utils", tensor_utils)
    # the real LayoutEnum is re-exported by cutlass.utils and its helper modules: the
    # translator may find it under any of them
    for name in ("cutlass.utils", HELPERS, "cutlass.utils.hopper_helpers"):
        if name in modules:
            modules[name].__dict__.setdefault("LayoutEnum", tensor_utils.LayoutEnum)
