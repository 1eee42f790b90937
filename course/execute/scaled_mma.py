"""Block-scaled MMA on the executor (notebook 16's kernel): the stand-ins for
`cutlass.utils.blockscaled_layout` (the SF layouts, asked of CuTe traced for sm_100a, as
course.execute.blackwell's helpers are), in its `NAMES` table.

The hardware's side -- where tcgen05.cp puts SFs and which TMEM byte the MMA reads -- is
course.execute.block_scale's, written from the PTX ISA.
"""

from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from course.execute import block_scale, hazards, oracle, tmem
from course.execute.hazards import Unmodelled
from course.execute.oracle import Recipe
from course.execute.standins import Wraps

LAYOUTS = "cutlass.utils.blockscaled_layout"
# the block-scaled MMAs and the SF copy to TMEM (tcgen05.cp .32x128b.warpx4)
OPS = ("MmaMXF8F6F4Op", "MmaMXF4Op", "MmaMXF4NVF4Op", "Cp4x32x128bOp")
# the block-scaled MMAs the executor runs, as the ISA's scale_vec and SF type (fp4 A/B:
# course.execute.numeric.Float4, packed two a byte)
MMAS = {  # CuTe DSL's block-scaled tcgen05.mma ops: (the ISA's scale vector, the SFs' type)
    "MmaMXF8F6F4Op": (block_scale.MXF8F6F4_1X, "ue8m0"),  # kind::mxf8f6f4.block_scale
    "MmaMXF4Op": (block_scale.MXF4_2X, "ue8m0"),  # kind::mxf4.block_scale.scale_vec::2X
    "MmaMXF4NVF4Op": (block_scale.NVF4_4X, None),  # kind::mxf4nvf4 .scale_vec::4X, SFs of
}  # the op's first argument (e4m3: NVFP4; ue8m0)
SF_TYPES = {"Float8E4M3FN": "ue4m3", "Float8E8M0FNU": "ue8m0"}
TWO_CTAS = "CtaGroup.TWO"  # a tcgen05 op's argument: .cta_group::2
HELPERS = ("make_smem_layout_sfa", "make_smem_layout_sfb", "make_tmem_layout_sfa",
           "make_tmem_layout_sfb", "tile_atom_to_shape_SF")  # fmt: skip


def _helper(name: str):
    """A helper of blockscaled_layout whose answer is a layout: asked of CuTe for sm_100a."""

    def call(*args, **kwargs):
        def job():
            import cutlass.utils.blockscaled_layout as blockscaled

            fn = getattr(blockscaled, name)
            return oracle.from_real(fn(*oracle.to_real(args), **oracle.to_real(kwargs)))

        return oracle.ask((LAYOUTS, "tcgen05", name, oracle.key_of(args),
                           oracle.key_of(kwargs)), job)  # fmt: skip

    call.__name__ = name
    return call


class BlockScaledBasicChunk:
    """The 128 x 4 SF atom ((32, 4), (vec, 4)), its layout asked of CuTe."""

    def __init__(self, sf_vec_size: int, major_mode=None):
        if major_mode is not None and getattr(major_mode, "name", "K") != "K":
            from course.execute.hazards import Unmodelled

            raise Unmodelled("an MN-major SF atom")
        self.sf_vec_size = int(sf_vec_size)

    @property
    def layout(self):
        vec = self.sf_vec_size

        def job():
            import cutlass.utils.blockscaled_layout as blockscaled

            return oracle.from_real(blockscaled.BlockScaledBasicChunk(vec).layout)

        return oracle.ask((LAYOUTS, "tcgen05", "BlockScaledBasicChunk", vec), job)


def _filter_zeros_of_tma_views(filter_zeros):
    """cute.filter_zeros of a TMA partition (the SFs' views drop the stride-0 K-elements an
    SF covers): on its tensor, the box shrunk to what is left of mode 0, this CTA's part of
    it (a multicast's) the same elements (course.execute.tma.TmaView.filtered)."""

    def call(x, *args, **kwargs):
        from course.execute import tma

        if not isinstance(x, tma.TmaView):
            return filter_zeros(x, *args, **kwargs)
        return x.filtered(filter_zeros(x.tensor, *args, **kwargs))

    call.__name__ = "filter_zeros"
    return call


def find_tmem_tensor_col_offset(tmem_tensor, **_) -> int:
    """The TMEM columns a tensor spans: the cosize of its layout counted in 32-bit cells
    (its low 16 bits: the column part of a TMEM address), as CuTe computes it."""
    width = tmem_tensor.element_type.width
    layout = tmem_tensor.layout
    if width != 32:
        layout = oracle.call("recast_layout", 32, width, layout)
    return int(layout.cosize) & 0xFFFF


class S2tTmemOperand:
    """A TMEM tensor of SFs passed to CuTe (make_s2t_copy): its layout on a TMEM pointer of
    its element type."""

    def __init__(self, t):
        self.layout, self.dtype = t.layout, t.element_type

    def oracle_key(self):
        return ("tmem-tensor", self.dtype.name, oracle.key_of(self.layout))

    def to_real(self):
        import cutlass
        import cutlass.cute as cute

        dtype = getattr(cutlass, self.dtype.name)
        ptr = cute.make_ptr(dtype, 0, cute.AddressSpace.tmem, assumed_align=16)
        return cute.make_tensor(ptr, oracle.to_real(self.layout))


def make_s2t_copy(atom, tmem_tensor, **_):
    """tcgen05.make_s2t_copy: CuTe's tiled copy shared -> TMEM (its partitions asked of it);
    what each copy does is the ISA's (course.execute.block_scale)."""
    from course.execute import atoms, tcgen05
    from course.execute.hazards import Unmodelled

    if not isinstance(atom, atoms.CopyAtom) or atom.op.name != "Cp4x32x128bOp":
        raise Unmodelled(f"tcgen05.make_s2t_copy of {getattr(atom, 'op', atom)!r}")
    recipe = Recipe(f"{tcgen05.PATH}.make_s2t_copy", (atom, S2tTmemOperand(tmem_tensor)))
    tiled = atoms.TiledCopy(recipe, atom)
    tiled.kind = "tcgen05.cp"
    return tiled


def get_s2t_smem_desc_tensor(atom, smem_tensor, **_):
    """The shared-memory descriptors of a tcgen05.cp source: on the executor the partition
    itself (each descriptor names exactly those bytes, as make_fragment_A's do)."""
    return smem_tensor


def _tmem_bytes(space) -> np.ndarray:
    """A CTA's TMEM cells as (lanes, columns, 4) bytes, the layout block_scale reads."""
    return space.cells.view(np.uint8).reshape(space.cells.shape[0], space.cells.shape[1], 4)


@dataclass
class SfCopy:
    """One issued tcgen05.cp .32x128b.warpx4: 32 lines of 16 bytes of shared memory into
    4 TMEM columns of every lane partition; run, in issue order with the warp's MMAs, when
    a tcgen05.commit of its warp lands (course.execute.tcgen05)."""

    cta: object
    smem_bytes: np.ndarray  # (32, 16) byte indices in the CTA's shared memory
    column: int  # the first TMEM column it writes
    hold: int  # its hold on the shared bytes until it runs
    site: object
    done: bool = False
    known_at: tuple = ()

    def run(self) -> None:
        if self.done:
            return
        self.done = True
        smem = self.cta.smem
        smem.unhold(self.hold)
        lines = smem.data[self.smem_bytes.reshape(-1)].reshape(block_scale.PARTITION, 16)
        space = tmem.of_cta(self.cta)
        block_scale.tcgen05_cp_32x128b_warpx4(_tmem_bytes(space), self.column, lines)
        space.written[:, self.column : self.column + 4] = True


def sf_copy(atom, src, dst, site) -> None:
    """cute.copy(s2t tiled copy, SFs in shared memory, their TMEM): one tcgen05.cp per atom
    call, queued on the issuing warp. Which bytes and columns: the kernel's partitions
    (CuTe's); what the copy does with them: the ISA's (course.execute.block_scale). CuTe's
    destination must be where the ISA puts each source byte, else the kernel and the
    hardware disagree and the run stops."""
    from course.execute import machine, tcgen05
    from course.execute.hazards import Hazard

    w = machine.collective(machine.SELF_ELECTED.format("tcgen05.cp (cute.copy)"), site)
    # .cta_group::2: "copied into the Tensor Memory of both the current and the peer CTAs"
    # (PTX ISA, tcgen05.cp), each from its own shared memory at the descriptor's address,
    # as a cta_group::2 MMA reads its operands
    ctas = tcgen05._pair(w.cta, site) if atom.op.names(TWO_CTAS) else [w.cta]
    per_call = block_scale.PARTITION * 16 * block_scale.PARTITIONS  # source bytes x 4 copies
    calls = src.size // per_call
    if src.element_type.width != 8 or calls * per_call != src.size or dst.size != src.size:
        raise Unmodelled(f"a tcgen05.cp of {src.shape} into {dst.shape}")
    s_elems = np.asarray(src.elements()).reshape(calls, per_call)
    t_bytes = dst.iterator.byte_offset + np.asarray(dst.layout.offsets, np.int64)
    t_bytes = t_bytes.reshape(calls, per_call)
    for call in range(calls):
        # the source as the ISA reads it: 32 rows of 16 bytes, row j at +16 j (a canonical
        # no-swizzle K-major matrix, core matrices of 8 rows 128 bytes apart)
        lines = np.unique(s_elems[call])
        by_descriptor = lines.size != 512 or lines[-1] - lines[0] != 511
        if by_descriptor:
            # CuTe's partition of a copy's source need not name its 512 bytes one by one
            # (nvfp4's 16 SFs a k-tile: ((32,4,4)):(16,4,4)); the descriptor it makes holds
            # the start address only (that of the atom's first element), and the ISA reads
            # 512 bytes from there
            start = int(s_elems[call][0])
            if start % 16:
                raise Unmodelled("a tcgen05.cp source not 16-byte aligned")
            lines = np.arange(start, start + 512)
        lines = lines.reshape(32, 16)
        address = int(t_bytes[call].min()) // 4
        lane, column = address >> tmem.LANE_SHIFT, address & ((1 << tmem.LANE_SHIFT) - 1)
        # the ISA: line j, byte 4c + b -> lane 32 q + j, column + c, byte b (every q)
        j, c, b, q = np.meshgrid(np.arange(32), np.arange(4), np.arange(4), np.arange(4),
                                 indexing="ij")  # fmt: skip
        isa = (((32 * q + j) << tmem.LANE_SHIFT) + column + c) * 4 + b
        isa_pairs = set(zip(lines[j, 4 * c + b].reshape(-1).tolist(), isa.reshape(-1).tolist()))
        cute_pairs = set(zip(s_elems[call].tolist(), t_bytes[call].tolist()))
        if by_descriptor:  # CuTe's destinations: the ISA's (columns), from this source
            isa_pairs = set(isa.reshape(-1).tolist())
            cute_pairs = set(t_bytes[call].tolist())
        if lane != 0 or isa_pairs != cute_pairs:
            raise Hazard(
                tmem.TMEM,
                f"a tcgen05.cp whose TMEM destination (from column {column}, lane {lane}) is "
                f"not where .32x128b.warpx4 writes its 32 x 16 source bytes",
                site,
            )
        byte_ids = np.asarray(lines, np.int64).reshape(-1)  # Float8 elements: one byte each
        reader = f"the tcgen05.cp issued at {site.describe()}"
        cause = hazards.Cause(hazards.NOT_RETIRED, "", expected=w.index, unit=hazards.UNIT_SF_COPY)
        for cta in ctas:
            tmem.of_cta(cta).locate(np.unique(isa.reshape(-1) // 4), "tcgen05.cp writes", site)
            tcgen05._check_landed(cta, byte_ids, site, "a tcgen05.cp", hazards.UNIT_SF_COPY)
            hold = cta.smem.hold(np.unique(byte_ids), reader, cause)
            tcgen05._queue(w).append(SfCopy(cta, byte_ids, column, hold, site))


def _sf_address(ptr, which: str, site) -> block_scale.SfAddress:
    """The TMEM column and SF_ID a Field.SFA/SFB pointer names (lane 0 of a column, then a
    byte of its cell)."""
    from course.execute.hazards import Hazard
    from course.execute.tensor import Pointer

    if not isinstance(ptr, Pointer) or not isinstance(ptr.memory, tmem.Tmem):
        raise Hazard(tmem.TMEM, f"tcgen05.mma's {which} is not a TMEM address: {ptr}", site)
    address, sf_id = divmod(int(ptr.byte_offset), 4)
    if address >> tmem.LANE_SHIFT:
        raise Unmodelled(f"{which} at TMEM lane {address >> tmem.LANE_SHIFT} (not lane 0)")
    return block_scale.SfAddress(address & ((1 << tmem.LANE_SHIFT) - 1), sf_id)


def scaled(issued, tiled_mma, site):
    """A tcgen05 Mma made block-scaled: its SFs are read from TMEM when it runs (after every
    tcgen05.cp its warp issued before it, in issue order: the ISA's pipelined pair)."""
    from course.execute import tcgen05
    from course.execute.hazards import Hazard

    scale, sf_type = MMAS[tiled_mma.op.name]
    if sf_type is None:
        sf = tiled_mma.op.args[0] if tiled_mma.op.args else None
        sf_type = SF_TYPES.get(getattr(sf, "name", ""))
        if sf_type is None:
            raise Unmodelled(f"{tiled_mma.op.name} with scale factors of {sf!r}")
    if scale.kind == "mxf4nvf4" and issued.dtype.name != "Float4E2M1FN":
        raise Unmodelled(f"kind::mxf4nvf4 with A/B of {issued.dtype} (only packed e2m1)")
    sfs = tiled_mma.__dict__.get("scale_factors", {})
    if set(sfs) != {"SFA", "SFB"}:
        raise Hazard(tmem.TMEM, "a block-scaled tcgen05.mma with no Field.SFA/SFB set", site)
    sfa, sfb = (_sf_address(sfs[name], name, site) for name in ("SFA", "SFB"))
    scale.check_sf_id(sfa.sf_id)
    scale.check_sf_id(sfb.sf_id)
    fields = {f: getattr(issued, f) for f in tcgen05.Mma.__dataclass_fields__}
    return BLOCK_SCALED[0](**fields, sfa=sfa, sfb=sfb, scale=scale, sf_type=sf_type)


def _block_scaled_mma_class():
    from course.execute import tcgen05

    @dataclass
    class BlockScaledMma(tcgen05.Mma):
        """A tcgen05.mma .block_scale: (A * SFA) . (B * SFB)^T, SFs from TMEM as the ISA
        places them (course.execute.block_scale); an SF column no tcgen05.cp wrote yet is a
        hazard (the copy not issued, or issued after the MMA)."""

        sfa: block_scale.SfAddress = None
        sfb: block_scale.SfAddress = None
        scale: block_scale.ScaleVec = None
        sf_type: str = ""

        def product(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
            """With cta_group::2 each CTA's datapath makes its own rows of D: its rows of A
            by the SFA in its own TMEM, all of B by the SFB in its own TMEM (the same
            addresses in both: one operand each). So both CTAs hold SFB for every column
            ("sfB don't support share among 2ctas", NVIDIA's nvfp4 tutorial says: it
            multicasts SFB to both while B is split between them)."""
            rows = self.d.shape[0]
            return np.concatenate([self._rows(cta, a[i * rows : (i + 1) * rows], b)
                                   for i, cta in enumerate(self.ctas)])  # fmt: skip

        def _rows(self, cta, a: np.ndarray, b: np.ndarray) -> np.ndarray:
            from course.execute.hazards import Hazard

            space = tmem.of_cta(cta)
            for name, at, rows in (("SFA", self.sfa, a.shape[0]), ("SFB", self.sfb, b.shape[0])):
                cols = at.column + np.arange(-(-rows // block_scale.PARTITION))
                if not space.written[:, cols].all():
                    raise Hazard(
                        tmem.TMEM,
                        f"the block-scaled tcgen05.mma issued at {self.site.describe()} reads "
                        f"its {name} from TMEM columns {int(cols[0])}-{int(cols[-1])} of CTA "
                        f"{cta.block} that no tcgen05.cp issued before it wrote",
                        self.site,
                        hazards.Cause(
                            hazards.SF_NOT_COPIED,
                            name,
                            observed=(int(cols[0]), int(cols[-1])),
                            unit=hazards.UNIT_MMA,
                        ),
                    )
            return block_scale.blockscaled_mma(a, b, _tmem_bytes(space), self.sfa, self.sfb,
                                               self.scale, self.sf_type)  # fmt: skip

    return BlockScaledMma


BLOCK_SCALED: list = []  # the Mma subclass, made at registration (tcgen05 imports this module)


def _names() -> dict:
    """What the block-scaled MMA adds to the stand-ins (after course.execute.blackwell's
    table): tcgen05's SF helpers, `cutlass.utils.blockscaled_layout`, and cute.filter_zeros
    of a TMA partition."""
    if not BLOCK_SCALED:
        BLOCK_SCALED.append(_block_scaled_mma_class())
    return {
        "cutlass.cute": {"filter_zeros": Wraps(_filter_zeros_of_tma_views)},
        "cutlass.cute.nvgpu.tcgen05": {
            "find_tmem_tensor_col_offset": find_tmem_tensor_col_offset,
            "make_s2t_copy": make_s2t_copy,
            "get_s2t_smem_desc_tensor": get_s2t_smem_desc_tensor,
        },
        LAYOUTS: {
            "BlockScaledBasicChunk": BlockScaledBasicChunk,
            **{name: _helper(name) for name in HELPERS},
        },
    }


NAMES = _names()
