"""The block-scaled formats' model (notebook 16): value tables against torch, block quantization,
NVFP4's two-level scale, the blocked SF layout against CuTe DSL's and torch's, the MMA's bytes,
and the pictures."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch

from course.models import block_formats as bs

matplotlib.use("Agg")


def _torch_quantized_helpers():
    """torch's own helpers for sub-byte floats and scale layouts, from its test suite
    (torch/testing/_internal/common_quantized.py: the FP4 converters, pack_uint4, to_blocked,
    to_mxfp). Importing that module needs `expecttest`, a test-only dependency the course does
    not install, so each top-level statement is run on its own and those that need the rest of
    torch's test suite are left out. torch 2.13 cannot convert to float4_e2m1fn_x2 (its
    "copy_kernel" is not implemented), so e2m1 is checked against these helpers -- which torch's
    own FP4 GEMM tests use -- and against the OCP MX spec's formula."""
    import ast
    import types
    from pathlib import Path

    import torch.testing._internal as internal

    path = Path(internal.__file__).parent / "common_quantized.py"
    ns: dict = {"torch": torch, "np": np, "Tensor": torch.Tensor, "__name__": "torch_helpers"}
    for node in ast.parse(path.read_text()).body:
        try:
            exec(compile(ast.Module([node], []), str(path), "exec"), ns)  # noqa: S102
        except Exception:  # noqa: BLE001 -- statements that need torch's test suite
            pass
    return types.SimpleNamespace(**ns)


cq = _torch_quantized_helpers()


# --- e2m1 ------------------------------------------------------------------------------------


def test_e2m1_values_follow_the_ocp_formula():
    """OCP MX v1.0, 5.3.3: E2M1, bias 1, no inf/NaN; subnormal 0.M x 2^0, normal 1.M x 2^(E-1)."""
    assert bs.E2M1_VALUES[:8] == (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
    assert bs.E2M1_VALUES[8:] == tuple(-v for v in bs.E2M1_VALUES[:8])
    assert math.copysign(1, bs.E2M1_VALUES[8]) == -1  # 1000 is -0
    assert bs.E2M1_MAX == max(bs.E2M1_VALUES) == 1.5 * 2**bs.E2M1_EMAX


def test_e2m1_values_match_torchs_fp4_decoder():
    codes = torch.arange(16, dtype=torch.uint8)
    theirs = cq._floatx_unpacked_to_f32(codes, 2, 1).to(torch.float64)
    assert torch.equal(theirs, torch.tensor(bs.E2M1_VALUES, dtype=torch.float64))


def test_e2m1_rounding_matches_torchs_fp4_encoder_ties_included():
    """Every multiple of 0.25 in -7..7 (all ties between e2m1 values are among them) and a
    random sample: the same code as torch's encoder, which rounds to nearest-even and clamps."""
    grid = torch.arange(-28, 29, dtype=torch.float64) / 4
    sample = torch.randn(4096, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 3
    for x in (grid, sample):
        ours = bs.e2m1_codes(bs.e2m1_round(x))
        theirs = cq._f32_to_floatx_unpacked(x.to(torch.float32), 2, 1)
        assert torch.equal(ours[x != 0], theirs[x != 0])


def test_e2m1_ties_go_to_even_and_overflow_saturates():
    r = bs.e2m1_round(
        torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.1, 7.0, 1e9, math.inf, -7.0])
    )
    assert r.tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, 6.0, 6.0, -6.0]
    assert math.isnan(float(bs.e2m1_round(math.nan)))


def test_packing_puts_the_first_element_in_the_low_nibble_as_torch_does():
    codes = torch.randint(
        0, 16, (4, 32), generator=torch.Generator().manual_seed(2), dtype=torch.uint8
    )
    packed = bs.pack_e2m1(codes)
    assert packed.dtype == torch.float4_e2m1fn_x2 and packed.shape == (4, 16)
    assert torch.equal(packed.view(torch.uint8), cq.pack_uint4(codes))


# --- UE8M0 -----------------------------------------------------------------------------------


def test_ue8m0_decodes_as_torch_reads_every_pattern():
    codes = torch.arange(256, dtype=torch.int64)
    theirs = codes.to(torch.uint8).view(torch.float8_e8m0fnu).to(torch.float64)
    ours = torch.tensor([bs.ue8m0_decode(int(c)) for c in codes], dtype=torch.float64)
    assert torch.equal(ours[:255], theirs[:255])
    assert math.isnan(bs.ue8m0_decode(0xFF)) and torch.isnan(theirs[255])
    assert min(ours[:255]) > 0, "no zero, no sign"


def test_ue8m0_encode_clamps_to_its_range():
    e = torch.tensor([-200, -127, 0, 5, 127, 300])
    assert bs.ue8m0_encode(e).to(torch.float64).tolist() == [
        2.0**-127,
        2.0**-127,
        1,
        32,
        2.0**127,
        2.0**127,
    ]


# --- block quantization ----------------------------------------------------------------------


def _data(rows=64, k=256, seed=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=g, dtype=torch.float64)
    return x * torch.exp(2 * torch.randn(rows, 1, generator=g, dtype=torch.float64))


@pytest.mark.parametrize("fmt", bs.BLOCK_FORMATS, ids=lambda f: f.name)
def test_quantization_has_the_formats_dtypes_and_shapes(fmt):
    x = _data(k=200)  # ragged: the last block is partial
    q = bs.quantize(x, fmt)
    assert q.scales.dtype == {"ue8m0": torch.float8_e8m0fnu, "e4m3": torch.float8_e4m3fn}[fmt.scale]
    assert q.scales.shape == (64, -(-200 // fmt.vec))
    assert q.elements.shape == x.shape and q.global_scale.dtype == torch.float32
    on_grid = q.elements.to(torch.float64)
    if fmt.element == "e2m1":
        assert torch.equal(bs.e2m1_round(on_grid), on_grid)
        assert q.codes().max() < 16
    else:
        assert q.elements.dtype == torch.float8_e4m3fn
    tol = {"MXFP8": 0.04, "MXFP4": 0.2, "NVFP4": 0.15}[fmt.name]
    assert bs.fp8.relative_error(q.dequantize(), x) < tol


@pytest.mark.parametrize("fmt", bs.BLOCK_FORMATS, ids=lambda f: f.name)
def test_quantization_is_idempotent(fmt):
    """Quantizing what a quantized tensor stands for gives it back, bit for bit."""
    q = bs.quantize(_data(), fmt)
    again = bs.quantize(q.dequantize(), fmt)
    assert torch.equal(again.dequantize(), q.dequantize())
    assert torch.equal(again.scales.view(torch.uint8), q.scales.view(torch.uint8))


def test_values_on_the_grid_round_trip_exactly():
    """Elements on the e2m1 grid times a power-of-two SF whose block reaches 6 x SF (OCP:
    floor(log2 6) - 2 = 0) come back unchanged."""
    g = torch.Generator().manual_seed(4)
    codes = torch.randint(0, 16, (8, 64), generator=g)
    x = torch.tensor(bs.E2M1_VALUES, dtype=torch.float64)[codes]
    x[:, ::32] = 6.0
    x = x * torch.pow(2.0, torch.randint(-20, 20, (8, 1), generator=g).to(torch.float64))
    assert torch.equal(bs.quantize(x, bs.MXFP4).dequantize(), x)


@pytest.mark.parametrize("fmt, emax", [(bs.MXFP8, 8), (bs.MXFP4, 2)], ids=["MXFP8", "MXFP4"])
def test_mx_scale_is_the_ocp_shared_exponent_and_clamps_the_top(fmt, emax):
    """SF = 2^(floor(log2 amax) - emax): amax 7.5 x 2^10 gets 2^(12 - emax), and its element,
    1.875 x 2^emax (480 for e4m3, 7.5 for e2m1), is above max and clamped to it."""
    x = torch.zeros(1, 32, dtype=torch.float64)
    x[0, 0], x[0, 1] = 7.5 * 2**10, 1.0
    q = bs.quantize_mx(x, fmt)
    assert int(q.scales.view(torch.uint8)[0, 0]) - 127 == 12 - emax
    top = 448.0 if fmt is bs.MXFP8 else 6.0
    assert float(q.elements[0, 0].to(torch.float64)) == top


@pytest.mark.parametrize(
    "fmt, name", [(bs.MXFP8, "mxfp8"), (bs.MXFP4, "mxfp4")], ids=["MXFP8", "MXFP4"]
)
def test_rceil_rule_matches_torchs_to_mxfp_bit_for_bit(fmt, name):
    """torch's test helper (from torchao) picks SF = 2^ceil(log2(amax / max)); our "rceil" rule
    gives the same SF bytes and the same element bits. bf16 input: torch's FP4 path rounds
    through bf16, exact here since SFs are powers of two."""
    x = _data(rows=16, k=128).to(torch.bfloat16)
    sf, data = cq.to_mxfp(x, format=name)
    q = bs.quantize_mx(x.to(torch.float64), fmt, rule="rceil")
    assert torch.equal(q.scales.view(torch.uint8), sf.view(torch.uint8))
    mine = (
        q.elements.view(torch.uint8)
        if fmt is bs.MXFP8
        else bs.pack_e2m1(q.codes()).view(torch.uint8)
    )
    assert torch.equal(mine, data.view(torch.uint8))


def test_nvfp4_global_scale_puts_the_largest_block_at_the_top_of_e4m3():
    x = _data()
    q = bs.quantize_nvfp4(x)
    assert float(q.global_scale) == pytest.approx(float(x.abs().max()) / (448 * 6), rel=1e-7)
    assert float(q.scales.to(torch.float64).max()) == 448.0


def test_nvfp4_two_level_scaling_keeps_e4m3_scales_in_range():
    """Blocks whose amax spans 1e-3..1e4: with the per-tensor scale no SF saturates (the largest
    is 448), every block within e4m3's normal range of the top (448 / 2^-6 = 28672) gets a
    normal SF and a small error, and the blocks below lose precision (SF subnormal) or, below
    448 x 2^10 times less than the top, everything (SF 0);
    without it (global scale 1) every block above 6 x 448 = 2688 saturates its SF."""
    g = torch.Generator().manual_seed(5)
    rows, blocks = 64, 32
    amax = torch.logspace(-3, 4, rows * blocks, dtype=torch.float64).reshape(rows, blocks)
    x = torch.rand(rows, blocks, 16, generator=g, dtype=torch.float64) * 2 - 1
    x[..., 0] = 1.0
    x = (x * amax[..., None]).reshape(rows, blocks * 16)
    q = bs.quantize_nvfp4(x)
    sf = q.scales.to(torch.float64)
    exact = amax / 6 / float(q.global_scale)  # the SF before rounding to e4m3
    assert float(exact.max()) == pytest.approx(448.0) and float(sf.max()) == 448.0
    normal = amax >= amax.max() / 28672 * (1 + 1 / 16)  # SF >= 2^-6 after rounding
    assert (sf[normal] >= 2.0**-6).all()
    assert torch.allclose(sf[normal], exact[normal], rtol=1 / 16, atol=0), "rounded, not clamped"
    err = (q.dequantize() - x).reshape(rows, blocks, 16).norm(dim=2) / x.reshape(
        rows, blocks, 16
    ).norm(dim=2)
    assert float(err[normal].max()) < 0.2
    assert (sf[amax < amax.max() / 28672 / 2] < 2.0**-6).all()
    # e4m3 covers 2^-9..448 (about 5.4 decades), the data 7: blocks whose SF is below half the
    # smallest subnormal (amax < 1e4 x 2^-10 / 448, about 0.022) get SF 0 and are stored as 0
    lost = amax < amax.max() * 2.0**-10 / 448
    assert lost.any() and (sf[lost] == 0).all() and (sf[~lost] > 0).all()
    assert (q.dequantize().reshape(rows, blocks, 16)[lost] == 0).all()
    flat = bs.quantize_nvfp4(x, global_scale=torch.tensor(1.0))
    over = amax > 6 * 448 * (1 + 1 / 16)
    assert (flat.scales.to(torch.float64)[over] == 448).all()
    flat_err = (flat.dequantize() - x).reshape(rows, blocks, 16).norm(dim=2) / x.reshape(
        rows, blocks, 16
    ).norm(dim=2)
    big = amax > 2 * 6 * 448  # half the range of these blocks is clamped to 6 x 448
    assert float(flat_err[big].min()) > 0.3 and float(err[big].max()) < 0.2


def test_format_errors_table_shows_what_fine_scales_buy():
    table = bs.format_errors(rows=64, k=1024, outlier_scale=1e3)
    by = {(r["data"], r["format"]): r for r in table}
    assert {f for _, f in by} == {"FP8 tensorwise", "FP8 1x128", "MXFP8", "MXFP4", "NVFP4"}
    out = "outlier channels"
    # FP4 needs its fine scales: NVFP4 (e4m3 SFs per 16) beats MXFP4 (power of two per 32)
    assert (
        by[(out, "NVFP4")]["error (ordinary channels)"]
        < by[(out, "MXFP4")]["error (ordinary channels)"]
    )
    assert by[("gaussian", "NVFP4")]["error (all)"] < by[("gaussian", "MXFP4")]["error (all)"]
    # 8 bits: MXFP8 is about as good as FP8 with a float scale on the ordinary channels
    assert by[(out, "MXFP8")]["error (ordinary channels)"] < 0.05
    assert (
        by[(out, "MXFP4")]["bits per element"] == 4.25
        and by[(out, "NVFP4")]["bits per element"] == 4.5
    )


# --- the blocked layout ----------------------------------------------------------------------


def _cute_sf_layout(rows: int, k: int, vec: int):
    """CuTe DSL's own tile_atom_to_shape_SF for an operand (rows, k, 1), traced for sm_100a on
    the CPU: a static layout (course.models.layout.Layout)."""
    from course.cute.trace import on_cpu

    def job():
        import cutlass.utils.blockscaled_layout as blockscaled

        return blockscaled.tile_atom_to_shape_SF((rows, k, 1), vec)

    return on_cpu(job, arch="sm_100a")


@pytest.mark.parametrize(
    "rows, k, vec", [(128, 64, 16), (256, 256, 32), (256, 256, 16), (200, 96, 16)]
)
def test_blocked_offsets_match_cutes_sf_layout(rows, k, vec):
    """CuTe's layout maps (row, k element, 0) to the SF's byte; ours maps (row, k // vec)."""
    pytest.importorskip("cutlass")
    layout = _cute_sf_layout(rows, k, vec)
    kblocks = -(-k // vec)
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    cute = np.vectorize(lambda a, b: layout((a, b, 0)))(r, kk)
    assert np.array_equal(bs.blocked_offset(r, kk // vec, rows, kblocks), cute)


def test_cutes_atom_is_the_32x4_interleave():
    pytest.importorskip("cutlass")
    layout = _cute_sf_layout(128, 64, 16)
    assert str(layout) == "(((32,4),1),((16,4),1),(1,1)):(((16,4),0),((0,1),0),(0,0))"


@pytest.mark.parametrize("rows, kblocks", [(128, 4), (256, 16), (200, 6), (1, 1), (300, 9)])
def test_to_blocked_matches_torchs_to_blocked_and_round_trips(rows, kblocks):
    g = torch.Generator().manual_seed(rows + kblocks)
    sf = torch.randint(1, 255, (rows, kblocks), generator=g, dtype=torch.uint8)
    ours = bs.to_blocked(sf.view(torch.float8_e8m0fnu))
    assert ours.dtype == torch.float8_e8m0fnu
    assert torch.equal(ours.view(torch.uint8), cq.to_blocked(sf).reshape(-1))
    assert torch.equal(bs.from_blocked(ours, rows, kblocks).view(torch.uint8), sf)


def test_blocked_offset_formula_within_an_atom_and_across_atoms():
    assert bs.blocked_offset(0, 0, 128, 4) == 0
    assert bs.blocked_offset(1, 0, 128, 4) == 16
    assert bs.blocked_offset(32, 0, 128, 4) == 4
    assert bs.blocked_offset(127, 3, 128, 4) == 31 * 16 + 3 * 4 + 3
    assert bs.blocked_offset(0, 4, 256, 8) == 512  # K-inner: the next atom along K
    assert bs.blocked_offset(128, 0, 256, 8) == 1024  # then M
    with pytest.raises(IndexError):
        bs.blocked_offset(128, 0, 128, 4)


def test_each_16_byte_line_holds_rows_32_apart():
    own = bs.blocked_owner()
    for line in range(32):
        rows = sorted(set(np.argwhere(own["chunk"] == line)[:, 0]))
        assert rows == [line, line + 32, line + 64, line + 96]


# --- one MMA's bytes -------------------------------------------------------------------------


def test_mma_bytes_of_a_128x256_mma():
    b = bs.mma_bytes(128, 256)
    assert b["NVFP4"] == {"K": 64, "A": 4096, "B": 8192, "SFA": 512, "SFB": 1024}
    assert b["MXFP4"] == {"K": 64, "A": 4096, "B": 8192, "SFA": 256, "SFB": 512}
    assert b["MXFP8"] == {"K": 32, "A": 4096, "B": 8192, "SFA": 128, "SFB": 256}


def test_mma_bytes_agree_with_the_ptx_model():
    """course.execute.block_scale (written from the PTX ISA): K and SFs per row of each kind."""
    from course.execute import block_scale as ptx

    b = bs.mma_bytes()
    for name, sv in (("MXFP8", ptx.MXF8F6F4_1X), ("MXFP4", ptx.MXF4_2X), ("NVFP4", ptx.NVF4_4X)):
        assert b[name]["K"] == sv.k
        assert b[name]["SFA"] == 128 * sv.per_row


# --- pictures --------------------------------------------------------------------------------


def _pictures():
    from course.viz import block_format_pictures as pics

    return {
        "e2m1 values": lambda: pics.e2m1_values(),
        "one block": lambda: pics.one_block(),
        "format errors": lambda: pics.format_errors(bs.format_errors(rows=32, k=512)),
        "blocked layout": lambda: pics.blocked_layout(),
        "blocked layout, two atoms": lambda: pics.blocked_layout(256, 8),
    }


@pytest.mark.parametrize("name", list(_pictures()))
def test_every_picture_renders_with_title_and_labels(name):
    import matplotlib.pyplot as plt

    fig = _pictures()[name]()
    try:
        assert isinstance(fig, matplotlib.figure.Figure)
        fig.canvas.draw()
        titled = [ax for ax in fig.axes if ax.get_title()]
        assert titled, "a title"
        assert all(ax.get_xlabel() for ax in fig.axes), "every axis labelled"
        assert any(ax.get_ylabel() or ax.get_yticklabels() for ax in fig.axes)
    finally:
        plt.close(fig)
