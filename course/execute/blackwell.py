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
from course.execute import tma, tmem, tmem_store
from course.execute.hazards import Unmodelled
from course.execute.layout_enum import LayoutEnum
from course.execute.numeric import DType
from course.execute.oracle import Recipe
from course.execute.standins import Alias, OperandMajorMode, Wraps, ops_names
from course.execute.tensor import Tensor

# modelled: the 16-bit MMA (exact products, fp32 accumulation), the tf32 MMA (its operands
# read as tf32, the executor's choice of how: course.execute.tcgen05, noted on the launch),
# the block-scaled MXF8F6F4 MMA and the SF copy tcgen05.cp (course.execute.scaled_mma, as the
# PTX ISA places the SFs), kind::f8f6f4 of 8-bit A/B (exact products, as the 16-bit MMA's)
# and the 32x32b TMEM load; f8f6f4's unpacked fp6 / fp4 and the 16xNb loads are not (their
# layouts and lane maps would be made up)
TCGEN05_OPS = ("MmaF16BF16Op", tcgen05.TF32_OP, tcgen05.F8F6F4_OP, "Ld32x32bOp", *scaled_mma.OPS)
TCGEN05_ENUMS = {
    "CtaGroup": ("ONE", "TWO"),
    "OperandSource": ("SMEM", "TMEM"),
    "Field": ("ACCUMULATE", "NEGATE_A", "NEGATE_B", "SFA", "SFB"),
    "Repetition": tuple(f"x{2**i}" for i in range(8)),
    "Pack": ("NONE", "PACK_16b_IN_32b"),
    "Unpack": ("NONE", "UNPACK_32b_IN_16b"),
    "SmemLayoutAtomKind": tuple(
        f"{mode}_{sw}" for mode in ("MN", "K") for sw in ("INTER", "SW32", "SW64", "SW128")
    )
    + ("MN_SW128_32B",),
}
HELPERS = "cutlass.utils.blackwell_helpers"
# CuTe DSL modules of pure kernel-side Python over CuTe calls, run translated (as
# course.execute.translate runs cutlass.pipeline): the Blackwell GEMM epilogues of
# cutlass.utils.gemm.sm100 (epilogue, epilogue_tma_store and their partition helpers) and
# the mixed-input GEMM's transform of A (cutlass.utils.mixed_input_helpers)
LIBRARIES = ("cutlass.utils.gemm", "cutlass.utils.mixed_input_helpers")


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


_MMA_PARAMS = ("a_leading_mode", "b_leading_mode", "acc_dtype", "cta_group", "mma_tiler_mn",
               "a_source")  # fmt: skip
# a_dtype (and b_dtype) -> the op make_trivial_tiled_mma picks and its K per instruction, as
# CuTe DSL 4.8.1's blackwell_helpers picks it
_TRIVIAL_OPS = {"Float16": ("MmaF16BF16Op", 16), "BFloat16": ("MmaF16BF16Op", 16),
                "TFloat32": ("MmaTF32Op", 8), "Float32": ("MmaTF32Op", 8),
                "Int8": ("MmaI8Op", 32), "Uint8": ("MmaI8Op", 32)}  # fmt: skip


def _dtype_name(x) -> str | None:
    """A numeric type's name (the executor's DType or CuTe DSL's own class), else None."""
    if isinstance(x, DType):
        return x.name
    return x.__name__ if isinstance(x, type) and hasattr(x, "width") else None


def _bound_mma_args(what: str, args: tuple, kwargs: dict, params: tuple) -> dict:
    """The helpers' two call forms, as CuTe DSL binds them: (a_dtype, b_dtype, *params) or
    the deprecated (ab_dtype, *params), told apart by whether the second argument is a
    numeric type; bound by name, with a_dtype and b_dtype both set."""
    legacy = "ab_dtype" in kwargs or (
        "a_dtype" not in kwargs and len(args) >= 2 and _dtype_name(args[1]) is None
    )
    names = (("ab_dtype",) if legacy else ("a_dtype", "b_dtype")) + params
    if len(args) > len(names) or set(kwargs) - set(names):
        raise TypeError(f"{what}{args + tuple(kwargs)}: not its parameters")
    bound = {**dict(zip(names, args)), **kwargs}
    if legacy:
        bound["a_dtype"] = bound["b_dtype"] = bound.pop("ab_dtype")
    bound.setdefault("a_source", Recipe("cute.nvgpu.tcgen05.OperandSource.SMEM"))
    return bound


_F8F6F4 = ("Float8E4M3FN", "Float8E5M2", "Float6E2M3FN", "Float6E3M2FN", "Float4E2M1FN")


def make_blockscaled_trivial_tiled_mma(*args, **kwargs):
    """blackwell_helpers.make_blockscaled_trivial_tiled_mma(a_dtype, b_dtype, a_major,
    b_major, sf_dtype, sf_vec_size, cta_group, mma_tiler_mn[, a_source]) (or the ab_dtype
    form): the block-scaled tcgen05 op CuTe DSL picks -- fp4 x fp4 with 32-wide blocks
    MXF4, with 16-wide ones MXF4NVF4 (its SF type given), other f8f6f4 pairs MXF8F6F4; K
    per instruction 64 (fp4) or 32 -- made into a tiled MMA as `cute.make_tiled_mma(op)`."""
    from course.execute.standins import MODULES

    params = ("a_leading_mode", "b_leading_mode", "sf_dtype", "sf_vec_size", "cta_group",
              "mma_tiler_mn", "a_source")  # fmt: skip
    bound = _bound_mma_args("make_blockscaled_trivial_tiled_mma", args, kwargs, params)
    a, b = _dtype_name(bound["a_dtype"]), _dtype_name(bound["b_dtype"])
    tiler, vec = tuple(bound["mma_tiler_mn"]), int(bound["sf_vec_size"])
    modes = (bound["cta_group"], bound["a_source"])
    ns = MODULES["cutlass.cute.nvgpu.tcgen05"]
    if a == b == "Float4E2M1FN":
        if vec == 32:
            op = ns.MmaMXF4Op((*tiler, 64), *modes)
        elif vec == 16:
            op = ns.MmaMXF4NVF4Op(bound["sf_dtype"], (*tiler, 64), *modes)
        else:
            raise ValueError(f"unsupported sf_vec_size, got {vec}")
    elif a in _F8F6F4 and b in _F8F6F4:
        op = ns.MmaMXF8F6F4Op(bound["a_dtype"], bound["b_dtype"], (*tiler, 32), *modes,
                              bound["a_leading_mode"], bound["b_leading_mode"])  # fmt: skip
    else:
        raise TypeError(f"unsupported a_dtype/b_dtype, got a_dtype: {a}, b_dtype: {b}")
    return MODULES["cutlass.cute"].make_tiled_mma(op)


def make_trivial_tiled_mma(*args, **kwargs):
    """blackwell_helpers.make_trivial_tiled_mma(a_dtype, b_dtype, a_major, b_major,
    acc_dtype, cta_group, mma_tiler_mn[, a_source]) (or the deprecated single ab_dtype
    form): the tcgen05 op CuTe DSL picks for the operand types, with (M, N) the tiler's and
    K one instruction's, made into a tiled MMA as `cute.make_tiled_mma(op)` is. Only the
    ops the executor runs are made; the others are Unmodelled."""
    from course.execute.standins import MODULES

    bound = _bound_mma_args("make_trivial_tiled_mma", args, kwargs, _MMA_PARAMS)
    a_name, b_name = _dtype_name(bound["a_dtype"]), _dtype_name(bound["b_dtype"])
    source = bound["a_source"]
    picked = _TRIVIAL_OPS.get(a_name) if a_name == b_name else None
    if a_name in _F8F6F4 and b_name in _F8F6F4:  # kind::f8f6f4 (its types: the op's own)
        op = MODULES["cutlass.cute.nvgpu.tcgen05"].MmaF8F6F4Op(
            bound["a_dtype"], bound["b_dtype"], bound["acc_dtype"],
            (*tuple(bound["mma_tiler_mn"]), 32), bound["cta_group"], source,
            bound["a_leading_mode"], bound["b_leading_mode"],
        )  # fmt: skip
        return MODULES["cutlass.cute"].make_tiled_mma(op)
    if picked is None:
        raise Unmodelled(f"make_trivial_tiled_mma of {a_name} x {b_name} (a tcgen05 f8f6f4 MMA)")
    op_name, k = picked
    if op_name not in TCGEN05_OPS:
        raise Unmodelled(f"{tcgen05.PATH}.{op_name} (make_trivial_tiled_mma of {a_name})")
    shape = (*tuple(bound["mma_tiler_mn"]), k)
    modes = (bound["cta_group"], source, bound["a_leading_mode"], bound["b_leading_mode"])
    lead = (bound["a_dtype"], bound["acc_dtype"]) if op_name == "MmaF16BF16Op" else ()
    op = getattr(MODULES["cutlass.cute.nvgpu.tcgen05"], op_name)(*lead, shape, *modes)
    return MODULES["cutlass.cute"].make_tiled_mma(op)


def get_num_tmem_alloc_cols(tmem_tensors, rounding: bool = True, *, arch: str = "sm_100",
                            **_) -> int:  # fmt: skip
    """cutlass.memory.get_num_tmem_alloc_cols (and its deprecated cutlass.utils and
    blackwell_helpers names): the columns the TMEM tensors span, summed, rounded up to a
    power of two no less than the architecture's minimum allocation, and refused (ValueError,
    as CuTe DSL) past its capacity."""
    import math

    from cutlass.cute.arch.tmem import get_max_tmem_alloc_cols, get_min_tmem_alloc_cols

    tensors = [tmem_tensors] if isinstance(tmem_tensors, Tensor) else list(tmem_tensors)
    most, least = get_max_tmem_alloc_cols(arch), get_min_tmem_alloc_cols(arch)
    columns = sum(scaled_mma.find_tmem_tensor_col_offset(t) for t in tensors)
    if rounding:
        columns = max(1 << math.ceil(math.log2(columns)), least)
    if not least <= columns <= most:
        raise ValueError(
            f"TMEM allocation columns {columns} exceeds the maximum capacity of {most} or "
            f"less than {least}"
        )
    return columns


def _cluster_tma_op(operand: str):
    """cluster_shape_to_tma_atom_A / _B / _SFB(cluster_shape_mnk, atom_thr_id): the TMA load
    op blackwell_helpers picks for an MMA operand -- multicast when other CTAs of the
    cluster read the same tile (A: the cluster is wider than one CTA along N; B: taller
    than the MMA's CTA group along M; SFB: a CTA pair, or more than one CTA along M), with
    the group's CtaGroup; refusals as CuTe DSL's."""

    def pick(cluster_shape_mnk, atom_thr_id, **_):
        from course.execute.standins import MODULES

        cute, cpasync = MODULES["cutlass.cute"], MODULES["cutlass.cute.nvgpu.cpasync"]
        group = int(cute.size(atom_thr_id))
        along_m = int(cute.size(cluster_shape_mnk, mode=[0]))
        shared = {
            "A": int(cute.size(cluster_shape_mnk, mode=[1])) != 1,
            "B": along_m != group,
            "SFB": group == 2 or along_m != 1,
        }[operand]
        if along_m % group != 0 or group not in (1, 2):
            raise ValueError(
                f"Unsupported Configuration for SM100 TMA: {cluster_shape_mnk} and {atom_thr_id}"
            )
        cta_group = MODULES["cutlass.cute.nvgpu.tcgen05"].CtaGroup
        op = "CopyBulkTensorTileG2SMulticastOp" if shared else "CopyBulkTensorTileG2SOp"
        return getattr(cpasync, op)(cta_group.TWO if group == 2 else cta_group.ONE)

    pick.__name__ = f"cluster_shape_to_tma_atom_{operand}"
    return pick


def get_tmem_load_op(cta_tile_shape, layout_d, elem_ty_d, elem_ty_acc, epi_tile,
                     use_2cta_instrs, **kwargs):  # fmt: skip
    """blackwell_helpers.get_tmem_load_op: the tcgen05.ld atom CuTe DSL picks for the
    epilogue tile (asked of CuTe: its shape, repetition and packing), made of the executor's
    tcgen05 ops; a shape the executor does not run (16xNb, packed 16-bit) is Unmodelled."""
    import cutlass.utils.blackwell_helpers  # noqa: F401 -- the recipe replays it

    args = (cta_tile_shape, layout_d, elem_ty_d, elem_ty_acc, epi_tile, use_2cta_instrs)
    recipe = Recipe(f"{HELPERS}.get_tmem_load_op", args, kwargs)

    def job():
        op = recipe.real().op
        return type(op).__name__, int(op.repeat.value), op.pack.name

    name, repeat, pack = oracle.ask(("tmem-load-op", recipe.key), job)
    if name not in TCGEN05_OPS or pack != "NONE":
        raise Unmodelled(f"{tcgen05.PATH}.{name} (get_tmem_load_op's pick, pack {pack})")
    from course.execute.standins import MODULES

    ns = MODULES["cutlass.cute.nvgpu.tcgen05"]
    op = getattr(ns, name)(getattr(ns.Repetition, f"x{repeat}"), ns.Pack.NONE)
    return atoms.make_copy_atom(op, elem_ty_acc)


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


def _real_tmem(name: str):
    """A pure-Python helper of cutlass.cute.arch.tmem (a table look-up), CuTe DSL's own."""
    import cutlass.cute.arch.tmem as real

    return getattr(real, name)


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
        "make_smem_layout_atom": oracle.static_function(f"{tcgen05.PATH}.make_smem_layout_atom"),
        "commit": tcgen05.commit,
        "wait": tcgen05.wait_ld,
        "is_tmem_load": lambda atom: getattr(atom, "kind", "") == "tcgen05.ld",
        "OperandMajorMode": OperandMajorMode,
        # the submodule that defines the ops and enums tcgen05 re-exports (tcgen05.mma.X)
        "mma": Alias("cutlass.cute.nvgpu", "tcgen05"),
    }
    helpers = {
        "make_smem_layout": _helper("make_smem_layout"),
        "make_smem_layout_a": _helper("make_smem_layout_a"),
        "make_smem_layout_b": _helper("make_smem_layout_b"),
        "make_smem_layout_epi": _helper("make_smem_layout_epi"),
        "compute_epilogue_tile_shape": _helper("compute_epilogue_tile_shape"),
        "get_smem_store_op": get_smem_store_op,
        "get_tmem_load_op": get_tmem_load_op,
        "make_trivial_tiled_mma": make_trivial_tiled_mma,
        "make_blockscaled_trivial_tiled_mma": make_blockscaled_trivial_tiled_mma,
        "get_num_tmem_alloc_cols": get_num_tmem_alloc_cols,
        "cluster_shape_to_tma_atom_A": _cluster_tma_op("A"),
        "cluster_shape_to_tma_atom_B": _cluster_tma_op("B"),
        "cluster_shape_to_tma_atom_SFB": _cluster_tma_op("SFB"),
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
            # TMEM's capacity and least allocation per architecture: CuTe DSL's own tables
            "get_max_tmem_alloc_cols": _real_tmem("get_max_tmem_alloc_cols"),
            "get_min_tmem_alloc_cols": _real_tmem("get_min_tmem_alloc_cols"),
            "fence_view_async_tmem_load": tcgen05.wait_ld,
            "fence_view_async_tmem_store": tmem_store.wait_st,
            "issue_clc_query": launch_control.issue_clc_query,
            "clc_response": launch_control.clc_response,
            "fence_proxy": Wraps(lambda fence: _clc_aware(fence, ("async", "async.shared"))),
            "fence_view_async_shared": Wraps(_clc_aware),
        },
        "cutlass.memory": {
            "TmemAllocator": tmem.TmemAllocator,
            "get_num_tmem_alloc_cols": get_num_tmem_alloc_cols,
        },
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
            "get_num_tmem_alloc_cols": Alias("cutlass.memory", "get_num_tmem_alloc_cols"),
            # CuTe DSL's short name of the helpers module (cutlass.utils.sm100 is the module
            # blackwell_helpers itself)
            "sm100": Alias("cutlass.utils", "blackwell_helpers"),
            **_reexported(helpers),
        },
        "cutlass.utils.hopper_helpers": {"LayoutEnum": LayoutEnum},
    }


NAMES = _names()
