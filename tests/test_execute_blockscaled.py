"""Block scaling on the CPU, as the PTX ISA specifies it (course.execute.block_scale), against
notebook 16's kernel (kernels/blockscaled_gemm.py): its host rearrangement of the scale
factors (to_blocked), its TMEM layouts of them (CuTe's make_tmem_layout_sfa/sfb, from which
each MMA's SFA/SFB address comes), and the block-scaled MMA's values against float64.

Then the kernel's own code on the executor ("mxfp8", and "nvfp4"/"mxfp4" with A and B in
e2m1, two a byte): exact against float64, a wrong SF seen, planted mistakes named.
"""

import numpy as np
import pytest
import torch

from course.cute import trace
from course.execute import blackwell_runs, hazards
from course.execute import block_scale as bs
from kernels import blockscaled_gemm as bg
from tests import plants

SCALE = {"mxfp8": bs.MXF8F6F4_1X, "nvfp4": bs.NVF4_4X, "mxfp4": bs.MXF4_2X}
SF_TYPE = {"mxfp8": "ue8m0", "nvfp4": "ue4m3", "mxfp4": "ue8m0"}
TMEM_COLUMNS = 64


def _tmem() -> np.ndarray:
    """TMEM as bytes, poisoned: 0xFF is NaN as UE8M0 and as e4m3 (a missing copy shows)."""
    return np.full((128, TMEM_COLUMNS, 4), 0xFF, dtype=np.uint8)


# ---------------------------------------------------------------- tcgen05.cp and the SF path


def test_cp_warpx4_puts_each_line_in_the_same_lanes_of_all_four_partitions():
    tmem = _tmem()
    lines = np.arange(32 * 16, dtype=np.uint8).reshape(32, 16)
    bs.tcgen05_cp_32x128b_warpx4(tmem, 8, lines)
    for q in range(4):
        assert (tmem[32 * q : 32 * q + 32, 8:12].reshape(32, 16) == lines).all()
    assert (tmem[:, :8] == 0xFF).all() and (tmem[:, 12:] == 0xFF).all()


@pytest.mark.parametrize("rows", [128, 256])
def test_blocked_sfs_copied_by_cp_reach_every_row_as_the_isa_reads_them(rows):
    """to_blocked (the host) + tcgen05.cp per 128 x 4 block + the MMA's read (the ISA) give
    SF[r, s] for every row r, in every lane partition that reads it."""
    g = torch.Generator().manual_seed(rows)
    plain = torch.randint(0, 254, (rows, 4), generator=g, dtype=torch.uint8)
    blocked = bg.to_blocked(plain.view(torch.float8_e8m0fnu)).view(torch.uint8).numpy()
    tmem = _tmem()
    for block in range(rows // 128):  # one 512-byte block = 32 lines of 16 bytes, 4 columns
        bs.tcgen05_cp_32x128b_warpx4(tmem, 4 * block, blocked[512 * block : 512 * block + 512])
    for s in range(4):  # scale_vec::1X, SF_ID = s: the s-th SF of each row
        for q in range(4):
            got = bs.read_sfs(tmem, 0, s, rows, 1, q)[:, 0]
            assert (got == plain[:, s].numpy()).all()
    both = bs.read_sfs(tmem, 0, 0, rows, 4, 2)  # scale_vec::4X: all four at once
    assert (both == plain.numpy()).all()


def test_sf_id_is_checked_as_the_isa_allows():
    bs.MXF4_2X.check_sf_id(2)
    for scale, bad in ((bs.MXF4_2X, 1), (bs.NVF4_4X, 2), (bs.MXF8F6F4_1X, 4)):
        with pytest.raises(ValueError, match="SF_ID"):
            scale.check_sf_id(bad)


# ---------------------------------------------------------------- the kernel's TMEM layouts


def _kernel_sf_tmem_layouts(kind: str, tile_n: int):
    """CuTe's TMEM layouts of SFA and SFB in notebook 16's kernel, (shape, stride) each."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.blockscaled_layout as blockscaled

    from kernels.gemm_host import GemmTypes
    from kernels.host import cutlass_dtype

    cfg = bg.Config(kind, tile_n=tile_n)
    types = GemmTypes(cutlass_dtype(cfg.format.ab), cutlass.Float32, cutlass.BFloat16)
    gemm = bg.BlockscaledGemm(types, cfg)

    def job():
        mma = bg.make_blockscaled_mma(gemm.kind, gemm.ab_dtype, gemm.sf_dtype, gemm.tile)
        out = []
        for smem, tmem in (
            (blockscaled.make_smem_layout_sfa, blockscaled.make_tmem_layout_sfa),
            (blockscaled.make_smem_layout_sfb, blockscaled.make_tmem_layout_sfb),
        ):
            staged = smem(mma, gemm.tile.mma_tiler, gemm.vec, 1)
            stage = cute.slice_(staged, (None, None, None, 0))
            layout = tmem(mma, gemm.tile.mma_tiler, gemm.vec, stage)
            out.append((layout.shape, layout.stride))
        return out

    return trace.on_cpu(job, arch="sm_100a")


def _flat(x) -> list:
    return [e for y in x for e in _flat(y)] if isinstance(x, tuple) else [x]


@pytest.mark.compile
@pytest.mark.parametrize("kind", list(SCALE))
@pytest.mark.parametrize("tile_n", [128, 256])
def test_the_kernels_tmem_sf_layouts_are_where_the_isa_reads(kind, tile_n):
    """Each MMA kk points Field.SFA/SFB at CuTe's layout of (None, None, kk); the ISA then
    reads row r's SF s in lane 32 q + r % 32, column + r // 32, byte SF_ID + s. CuTe's layout
    must place every (row, partition, SF, kk) exactly there."""
    scale = SCALE[kind]
    for (shape, stride), rows in zip(_kernel_sf_tmem_layouts(kind, tile_n), (128, tile_n)):
        # ((((32, rows/32), 4), (vec, per_row)), 1, MMA_K) : byte offsets, lane << 18
        (mn_k, one, kks), (mn_k_d, _, kks_d) = shape, stride
        (row_shape, k_shape), (row_d, k_d) = mn_k, mn_k_d
        assert one == 1 and _flat(row_shape) == [32, rows // 32, 4]
        assert _flat(k_shape) == [scale.vec, scale.per_row] and _flat(k_d)[0] == 0
        (d0, d1, dq), ds = _flat(row_d), _flat(k_d)[1]
        kk_shape, kk_stride = _flat(kks), _flat(kks_d)
        assert int(np.prod(kk_shape)) == 4  # 4 MMAs per k-tile
        for kk in range(4):
            c = np.unravel_index(kk, kk_shape, order="F")
            base = sum(int(i) * d for i, d in zip(c, kk_stride))
            column, sf_id = base // 4, base % 4  # what the kernel sets Field.SFA/SFB to
            scale.check_sf_id(sf_id)
            for r in range(rows):
                for q in range(4):
                    for s in range(scale.per_row):
                        off = base + (r % 32) * d0 + (r // 32) * d1 + q * dq + s * ds
                        lane, byte = off >> 18, off & 0x3FFFF
                        assert (lane, byte // 4, byte % 4) == (
                            32 * q + r % 32,
                            column + r // 32,
                            sf_id + s,
                        ), (kind, tile_n, kk, r, q, s)


# ---------------------------------------------------------------- the MMA's values


def _quantized(kind: str, rows: int, k: int, g: torch.Generator):
    """Values (rows, k) a format holds exactly and their SF codes (rows, k // vec), chosen so
    that every product and every sum of one k-tile is exact in fp32."""
    fmt = bg.KINDS[kind]
    small = torch.tensor([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0])
    values = small[torch.randint(0, len(small), (rows, k), generator=g)]
    exps = torch.randint(-2, 3, (rows, k // fmt.vec), generator=g)
    if SF_TYPE[kind] == "ue8m0":
        codes = (exps + 127).to(torch.uint8)
    else:  # e4m3 powers of two
        codes = torch.pow(2.0, exps.double()).float().to(torch.float8_e4m3fn).view(torch.uint8)
    return values.double().numpy(), codes.numpy()


def _load_sfs(tmem, codes: np.ndarray, column: int, rows: int) -> None:
    """The kernel's path for one operand's SFs: to_blocked, then one tcgen05.cp per 128 x 4
    block (row blocks side by side, 4 columns each, then the next 4 SF columns)."""
    blocked = bg.to_blocked(torch.from_numpy(codes)).numpy()
    row_blocks, col_blocks = rows // 128, codes.shape[1] // 4
    for rb in range(row_blocks):
        for cb in range(col_blocks):
            start = 512 * (rb * col_blocks + cb)
            at = column + 4 * (cb * row_blocks + rb)
            bs.tcgen05_cp_32x128b_warpx4(tmem, at, blocked[start : start + 512])


def _addresses(kind: str, kk: int, column: int, rows: int) -> bs.SfAddress:
    """MMA kk's SF address under _load_sfs: 1X a byte per MMA, 2X a half word, 4X a block."""
    per_row = SCALE[kind].per_row
    first_sf = kk * per_row  # the first SF column this MMA uses
    block, within = divmod(first_sf, 4)
    return bs.SfAddress(column + 4 * block * (rows // 128), within)


def _ktile(kind, m, n, tmem, a, b, sfa_col, sfb_col) -> np.ndarray:
    """4 MMAs of one k-tile accumulated in fp32, as the kernel issues them."""
    scale = SCALE[kind]
    acc = np.zeros((m, n), dtype=np.float32)
    for kk in range(4):
        ks = slice(kk * scale.k, (kk + 1) * scale.k)
        sfa, sfb = _addresses(kind, kk, sfa_col, m), _addresses(kind, kk, sfb_col, n)
        part = bs.blockscaled_mma(a[:, ks], b[:, ks], tmem, sfa, sfb, scale, SF_TYPE[kind])
        acc = (acc + part).astype(np.float32)
    return acc


def _reference(kind, a, b, sfa, sfb) -> np.ndarray:
    vec = SCALE[kind].vec
    sa = np.repeat(bs.decode_sf(sfa, SF_TYPE[kind]), vec, axis=1)
    sb = np.repeat(bs.decode_sf(sfb, SF_TYPE[kind]), vec, axis=1)
    return (a * sa) @ (b * sb).T


def _problem(kind: str, n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed + n + len(kind))
    k = 4 * SCALE[kind].k
    a, sfa = _quantized(kind, 128, k, g)
    b, sfb = _quantized(kind, n, k, g)
    return a, b, sfa, sfb


@pytest.mark.parametrize("kind", list(SCALE))
@pytest.mark.parametrize("n", [128, 256])
def test_a_k_tile_of_block_scaled_mmas_matches_float64(kind, n):
    a, b, sfa, sfb = _problem(kind, n)
    tmem = _tmem()
    _load_sfs(tmem, sfa, 0, 128)
    _load_sfs(tmem, sfb, 16, n)
    got = _ktile(kind, 128, n, tmem, a, b, 0, 16)
    assert np.array_equal(got, _reference(kind, a, b, sfa, sfb))


def test_e2m1_codes_decode_as_the_format_says():
    packed = np.array([[0x21, 0xF7]], dtype=np.uint8)  # (1, 0.5), (6, -6)
    assert bs.decode_e2m1x2(packed).tolist() == [[0.5, 1.0, 6.0, -6.0]]
    torch_fp4 = torch.tensor([[0x21, 0xF7]], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    assert torch_fp4.shape == (1, 2)  # torch packs the same two a byte


def test_a_doubled_sf_block_changes_exactly_its_rows():
    """The check can fail: SFA of rows 0-31, K-block 0 doubled doubles that block's share of
    rows 0-31 of C and nothing else."""
    kind = "mxfp8"
    a, b, sfa, sfb = _problem(kind, 128)
    wrong = sfa.copy()
    wrong[:32, 0] += 1  # UE8M0: one more in the exponent doubles the SF
    tmem = _tmem()
    _load_sfs(tmem, wrong, 0, 128)
    _load_sfs(tmem, sfb, 16, 128)
    got = _ktile(kind, 128, 128, tmem, a, b, 0, 16)
    ref = _reference(kind, a, b, sfa, sfb)
    block0 = (a[:, :32] * bs.decode_sf(sfa[:, :1], "ue8m0")) @ (
        b[:, :32] * bs.decode_sf(sfb[:, :1], "ue8m0")
    ).T
    assert np.array_equal(got[32:], ref[32:])
    assert np.array_equal(got[:32], ref[:32] + block0[:32])
    assert not np.array_equal(got, ref)


def test_an_mma_without_its_sf_copy_is_caught_by_the_values():
    """Planted: the SF copy of a k-tile not issued (TMEM still holds poison, or the previous
    k-tile's SFs): the output is wrong, NaN for never-written TMEM."""
    kind = "nvfp4"
    a, b, sfa, sfb = _problem(kind, 128)
    ref = _reference(kind, a, b, sfa, sfb)
    tmem = _tmem()
    _load_sfs(tmem, sfb, 16, 128)  # SFB copied, SFA forgotten
    assert np.isnan(_ktile(kind, 128, 128, tmem, a, b, 0, 16)).all()
    _, _, stale, _ = _problem(kind, 128, seed=1)  # the previous k-tile's SFA (stale stage)
    _load_sfs(tmem, stale, 0, 128)
    assert not np.array_equal(_ktile(kind, 128, 128, tmem, a, b, 0, 16), ref)


def test_sfs_not_duplicated_in_every_partition_are_wrong_for_rows_32_up():
    """The ISA requires SFs in all four lane partitions: a copy into partition 0 only (a
    plain 32x128b without .warpx4) scales rows 0-31 right and no other row."""
    kind = "mxfp8"
    a, b, sfa, sfb = _problem(kind, 128)
    tmem = _tmem()
    _load_sfs(tmem, sfa, 0, 128)
    _load_sfs(tmem, sfb, 16, 128)
    tmem[32:, :] = 0xFF  # only partition 0 written
    got = _ktile(kind, 128, 128, tmem, a, b, 0, 16)
    ref = _reference(kind, a, b, sfa, sfb)
    assert np.array_equal(got[:32], ref[:32]) and np.isnan(got[32:]).all()


# ---------------------------------------------------------------- the kernel's own code, run


def _exact(run):
    """No hazard, and the fp32 output equal to the exact float64 product (the operands are
    chosen so that every sum is exact in fp32)."""
    assert run.hazard is None, run.hazard
    assert run.output is not None and torch.equal(run.output.double(), run.reference), run.summary()


@pytest.mark.parametrize(
    "m,n,k,tile_n,stages",
    [
        (256, 256, 256, 128, 4),
        (200, 136, 256, 128, 4),
        (256, 256, 384, 256, 3),
        (200, 136, 128, 256, 3),
    ],
    ids=["tiles-128", "ragged-128", "tiles-256", "ragged-256"],
)
def test_the_mxfp8_kernel_computes_the_dequantized_product_exactly(m, n, k, tile_n, stages):
    run = blackwell_runs.run_blockscaled("mxfp8", m, n, k, tile_n=tile_n, stages=stages)
    _exact(run)  # the output was NaN-poisoned before the run: every element written
    assert run.seconds < 60, run.summary()


def test_bf16_output_is_within_the_course_tolerance():
    run = blackwell_runs.run_blockscaled("mxfp8", 200, 136, 256, out_dtype=torch.bfloat16)
    assert run.ok, run.summary()


@pytest.mark.parametrize(
    "kind,m,n,k,tile_n,stages",
    [
        ("nvfp4", 256, 256, 512, 128, 4),
        ("nvfp4", 200, 136, 256, 128, 4),
        ("nvfp4", 256, 256, 512, 256, 3),
        ("nvfp4", 200, 136, 256, 256, 3),
        ("mxfp4", 256, 256, 512, 128, 4),
        ("mxfp4", 200, 136, 256, 128, 4),
    ],
    ids=[
        "nvfp4-tiles-128",
        "nvfp4-ragged-128",
        "nvfp4-tiles-256",
        "nvfp4-ragged-256",
        "mxfp4-tiles-128",
        "mxfp4-ragged-128",
    ],  # fmt: skip
)
def test_the_fp4_kernels_compute_the_dequantized_product_exactly(kind, m, n, k, tile_n, stages):
    """A and B in e2m1, two a byte (torch.float4_e2m1fn_x2): TMA moves their bytes, the
    block-scaled MMA (kind::mxf4nvf4 scale_vec::4X with e4m3 SFs, kind::mxf4 2X with ue8m0)
    reads them packed K-major, the lower K in the low nibble."""
    run = blackwell_runs.run_blockscaled(kind, m, n, k, tile_n=tile_n, stages=stages)
    _exact(run)  # the output was NaN-poisoned before the run: every element written
    assert run.seconds < 60, run.summary()


def test_nvfp4_bf16_output_is_within_the_course_tolerance():
    run = blackwell_runs.run_blockscaled("nvfp4", 200, 136, 256, out_dtype=torch.bfloat16)
    assert run.ok, run.summary()


def _swap_nibbles(t: torch.Tensor) -> torch.Tensor:
    u = t.view(torch.uint8)
    return ((u & 0x0F) << 4 | u >> 4).view(t.dtype)


def test_fp4_operands_with_swapped_nibbles_are_caught():
    """Planted: A's e2m1 pairs in the wrong order within each byte (high nibble first): the
    run computes the product of what memory holds, and the check against the intended
    operands fails (the values, not a hazard: the bytes are legal e2m1 either way)."""
    x = blackwell_runs.blockscaled_operands("nvfp4", 200, 136, 256)
    wrong = dict(x, a=_swap_nibbles(x["a"]))
    run = blackwell_runs.run_blockscaled("nvfp4", 200, 136, 256, operands=wrong, reference=x)
    assert run.hazard is None and not run.ok, run.summary()
    right = blackwell_runs.run_blockscaled("nvfp4", 200, 136, 256, operands=wrong)
    _exact(right)  # what the swapped bytes mean, computed exactly


def test_memory_holds_4_bit_elements_low_nibble_first():
    from course.execute.memory import GMEM, Memory
    from course.execute.numeric import TYPES, of_torch

    fp4 = TYPES["Float4E2M1FN"]
    assert of_torch(torch.float4_e2m1fn_x2) is fp4 and fp4.width == 4
    data = np.array([0x21, 0xF7], dtype=np.uint8)  # (0.5, 1.0), (6.0, -6.0)
    mem = Memory(GMEM, data, "x")
    assert mem.load(fp4, None, np.array([[0, 1, 2, 3]])).tolist() == [[0.5, 1.0, 6.0, -6.0]]
    mem.store(fp4, None, np.array([[1, 2]]), np.array([[-0.5, 0.0]]))
    assert data.tolist() == [0x91, 0xF0]  # only the nibbles written changed
    with pytest.raises(hazards.Unmodelled, match="e2m1"):
        fp4.encode(np.float32(0.25))  # not an e2m1 value: rounding is not modelled


@pytest.mark.parametrize("kind", ["nvfp4", "mxfp4"])
def test_a_doubled_fp4_sf_block_changes_only_its_rows_by_its_share(kind):
    """The check can fail: A's SF of rows 0-31, K-block 1 doubled (one 16-block for nvfp4,
    a 32-block for mxfp4): only rows 0-31 of C change, by exactly that block's share."""
    fmt = bg.KINDS[kind]
    x = blackwell_runs.blockscaled_operands(kind, 200, 136, 256)
    wrong = dict(x, a_sf=x["a_sf"].clone())
    wrong["a_sf"][:32, 1] = (wrong["a_sf"][:32, 1].float() * 2).to(fmt.sf)
    run = blackwell_runs.run_blockscaled(kind, 200, 136, 256, operands=wrong, reference=x)
    assert run.hazard is None and not run.ok
    diff = (run.output.double() - run.reference).abs().sum(dim=1)
    assert (diff[:32] > 0).any() and (diff[32:] == 0).all()
    a = torch.from_numpy(bs.decode_e2m1x2(x["a"].view(torch.uint8).numpy()))
    b = torch.from_numpy(bs.decode_e2m1x2(x["b"].view(torch.uint8).numpy()))
    ks = slice(fmt.vec, 2 * fmt.vec)
    share = (a[:32, ks] * x["a_sf"][:32, 1:2].double()) @ (b[:, ks] * x["b_sf"][:, 1:2].double()).T
    assert torch.equal(run.output[:32].double(), run.reference[:32] + share)


@pytest.mark.parametrize("kind", ["nvfp4", "mxfp4"])
def test_fp4_operands_pack_two_codes_a_byte_and_decode_back(kind):
    x = blackwell_runs.blockscaled_operands(kind, 4, 4, 64)
    assert x["a"].dtype == torch.float4_e2m1fn_x2 and x["a"].shape == (4, 32)
    values = bs.decode_e2m1x2(x["a"].view(torch.uint8).numpy())
    assert set(np.unique(values)) <= {-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2}
    sf = x["a_sf"].float()
    assert x["a_sf"].shape == (4, 64 // bg.KINDS[kind].vec) and (sf > 0).all()


def test_a_doubled_sf_block_changes_the_output_where_expected():
    """The check can fail: A's SFs of rows 0-31, K-block 1 doubled: only rows 0-31 of C
    differ from the product of the SFs given, by exactly that block's share."""
    x = blackwell_runs.blockscaled_operands("mxfp8", 200, 136, 256)
    wrong = dict(x, a_sf=x["a_sf"].clone())
    wrong["a_sf"][:32, 1] = (wrong["a_sf"][:32, 1].float() * 2).to(torch.float8_e8m0fnu)
    run = blackwell_runs.run_blockscaled("mxfp8", 200, 136, 256, operands=wrong, reference=x)
    assert run.hazard is None and not run.ok
    diff = (run.output.double() - run.reference).abs().sum(dim=1)
    assert (diff[:32] > 0).any() and (diff[32:] == 0).all()
    ks = slice(32, 64)
    share = (x["a"][:32, ks].double() * x["a_sf"][:32, 1:2].double()) @ (
        x["b"][:, ks].double() * x["b_sf"][:, 1:2].double()
    ).T
    assert torch.equal(run.output[:32].double(), run.reference[:32] + share)


@pytest.mark.parametrize("kind,k", [("mxfp8", 128), ("nvfp4", 256)])
def test_an_mma_issued_without_the_sf_copy_is_named(monkeypatch, kind, k):
    from course.execute import scaled_mma, tmem

    plants.no_op(monkeypatch, scaled_mma, "sf_copy")  # tcgen05.cp left out
    run = blackwell_runs.run_blockscaled(kind, 128, 128, k)
    assert run.hazard is not None and run.hazard.kind == tmem.TMEM, run.summary()
    assert "no tcgen05.cp" in str(run.hazard)


class _NextStage:
    """An SF source view whose stage coordinate is one ahead: the copy of the wrong stage."""

    def __init__(self, smem, stages: int):
        self.smem, self.stages = smem, stages

    def __getitem__(self, crd):
        return self.smem[(*crd[:-1], (crd[-1] + 1) % self.stages)]


@pytest.mark.parametrize("kind,k", [("mxfp8", 512), ("nvfp4", 1024)])
def test_an_sf_copy_of_the_wrong_stage_is_caught(monkeypatch, kind, k):
    real = bg.make_sf_copy

    def wrong_stage(sf_dtype, sSF, tCtSF):
        made = real(sf_dtype, sSF, tCtSF)
        return made._replace(smem=_NextStage(made.smem, 4))

    plants.replaced(monkeypatch, bg, "make_sf_copy", wrong_stage)
    run = blackwell_runs.run_blockscaled(kind, 128, 128, k)  # 4 k-tiles, 4 stages
    # k-tile 0 copies stage 1's SFs, which the TMA may still be writing
    assert run.hazard is not None and run.hazard.kind == hazards.IN_FLIGHT, run.summary()
    assert "tcgen05.cp reads" in str(run.hazard)


def test_a_stage_released_before_its_copies_and_mmas_ran_is_named(monkeypatch):
    """A stage released when its tcgen05.cp and MMAs are issued, not when they ran
    (tcgen05.commit): the next TMA load into it writes bytes they still read."""
    import cutlass.pipeline as pipeline

    from course.execute import mbarriers

    def release_at_once(self, state, *args, **kwargs):
        mbarriers.arrive_once(self.sync_object_empty.get_barrier(state.index))

    plants.replaced(monkeypatch, pipeline.PipelineTmaUmma, "consumer_release", release_at_once)
    run = blackwell_runs.run_blockscaled("mxfp8", 128, 128, 768, stages=2)
    assert run.hazard is not None and run.hazard.kind == hazards.STAGE_OVERWRITE, run.summary()


@pytest.mark.parametrize("seed", [1, 3])
def test_the_mxfp8_kernel_under_other_interleavings(seed):
    _exact(blackwell_runs.run_blockscaled("mxfp8", 200, 136, 384, seed=seed))


@pytest.mark.parametrize("kind", ["nvfp4", "mxfp4"])
def test_the_fp4_kernels_under_another_interleaving(kind):
    _exact(blackwell_runs.run_blockscaled(kind, 200, 136, 512, seed=3))


def test_an_fp4_operand_view_not_packed_k_major_is_refused():
    """The MMA reads 64 e2m1 of a row as 32 bytes, K 2j and 2j + 1 in one byte (2j low): an
    operand view naming the nibbles otherwise (high first, or pairs split across bytes)
    is refused, not read some other way."""
    from course.execute import tcgen05

    rows = np.arange(128)[:, None] * 128  # 64-byte rows, 2 * 64 nibbles apart
    good = rows + np.arange(64)[None, :]
    tcgen05._check_packed_k_major(good, "A", hazards.UNKNOWN)
    swapped = good.reshape(128, 32, 2)[:, :, ::-1].reshape(128, 64)  # high nibble first
    split = rows + 2 * np.arange(64)[None, :]  # one element a byte
    for bad in (swapped, split):
        with pytest.raises(hazards.Unmodelled, match="packed K-major"):
            tcgen05._check_packed_k_major(bad, "A", hazards.UNKNOWN)
