"""Notebook 16's kernel (kernels/blockscaled_gemm.py): compiled for sm_100a here (no GPU); its
host side (the blocked scale-factor layout, validation up to the launch) checked on the CPU.

No Blackwell GPU is available to this project: nothing here claims the kernel's values.
"""

import re

import pytest
import torch

from kernels import blockscaled_gemm as bg
from kernels.host import KernelInputError

from .blackwell_helpers import fake_b200_host
from .helpers import pretend_gpu

FP8 = torch.float8_e4m3fn

# kind -> what its MMA must be in the PTX
MMA_KIND = {
    "mxfp8": "kind::mxf8f6f4.block_scale.block32",
    "nvfp4": "kind::mxf4nvf4.block_scale.block16",
    "mxfp4": "kind::mxf4nvf4.block_scale.block32",
}


@pytest.fixture(scope="module", params=list(MMA_KIND))
def compiled(request):
    return request.param, bg.artifacts("sm_100a", bg.Config(request.param)).ptx


@pytest.mark.compile
def test_ptx_has_the_block_scaled_mma_and_the_sf_copies(compiled):
    kind, ptx = compiled
    mmas = [line for line in ptx.splitlines() if "tcgen05.mma" in line]
    assert mmas and all(f"tcgen05.mma.cta_group::1.{MMA_KIND[kind]}" in line for line in mmas), mmas
    assert len(mmas) == 4  # one k-tile: 4 MMAs, unrolled
    copies = re.findall(r"tcgen05\.cp\.cta_group::1\.32x128b\.warpx4", ptx)
    fmt = bg.KINDS[kind]
    blocks = 128 * 8 // fmt.ab_bits // (4 * fmt.vec)  # 128 x 4 SF blocks in one k-tile's K
    assert len(copies) == 2 * blocks  # SFA's and SFB's, each k-tile
    assert "tcgen05.commit" in ptx
    assert "cp.async.bulk.tensor" in ptx


@pytest.mark.compile
def test_the_kernel_keeps_the_blackwell_ptx_protocol(compiled):
    from course.cute import ptx_protocol

    assert ptx_protocol.check(compiled[1]) == []


@pytest.mark.compile
def test_the_sf_copies_come_before_the_mmas_of_their_k_tile(compiled):
    _, ptx = compiled
    lines = ptx.splitlines()
    first_cp = next(i for i, x in enumerate(lines) if "tcgen05.cp" in x)
    first_mma = next(i for i, x in enumerate(lines) if "tcgen05.mma" in x)
    assert first_cp < first_mma


@pytest.mark.compile
@pytest.mark.parametrize("kind,stages,out", [("mxfp8", 4, torch.float16),
                                             ("nvfp4", 3, torch.float32)])  # fmt: skip
def test_wide_tiles_and_other_output_types_compile(kind, stages, out):
    config = bg.Config(kind, tile_n=256, stages=stages)
    ptx = bg.artifacts("sm_100a", config, out_dtype=out).ptx
    assert MMA_KIND[kind] in ptx


def test_footprint_counts_the_sfs_in_every_stage():
    fp = bg.footprint(bg.Config("mxfp8"))
    # A and B: 128 rows of 128 bytes each; SFs: one byte per 32 K-elements of 256 rows
    assert fp["sf_bytes_per_stage"] == (128 + 128) * (128 // 32)
    assert fp["stage_bytes"] == 256 * 128 + fp["sf_bytes_per_stage"]
    nv = bg.footprint(bg.Config("nvfp4", tile_n=256))
    assert nv["mma"] == "128x256x64" and nv["mma_per_k_block"] == 4
    assert nv["sf_bytes_per_stage"] == (128 + 256) * (256 // 16)
    assert nv["tmem_columns"] == 512


def test_a_ring_too_deep_for_shared_memory_is_refused_before_compiling():
    # 4 stages of 128 + 256 rows and their SFs, and an fp32 staging buffer: over 227 KiB
    with pytest.raises(KernelInputError, match="shared memory"):
        bg.artifacts("sm_100a", bg.Config("nvfp4", tile_n=256), out_dtype=torch.float32)
    assert bg.GEMM.kernel_object(FP8, bg.Config("mxfp8", tile_n=256), out_dtype=torch.bfloat16
                                 ).smem_bytes <= 232448  # fmt: skip


def test_config_is_validated():
    for bad in (dict(kind="fp8"), dict(tile_n=64), dict(stages=1)):
        with pytest.raises(ValueError):
            bg.Config(**bad)


# ---------------------------------------------------------------- the blocked SF layout


def _blocked_offset(row: int, col: int, cols: int) -> int:
    """cuBLAS's block-scaling-factor layout, written from its documentation: 128 x 4 blocks
    of 512 bytes, row-block-major; inside, row r = 32 i + j, column c at 16 j + 4 i + c."""
    blocks_c = -(-cols // 4)
    block = (row // 128) * blocks_c + col // 4
    r = row % 128
    return block * 512 + (r % 32) * 16 + (r // 32) * 4 + col % 4


@pytest.mark.parametrize("rows,cols", [(128, 4), (200, 7), (136, 9), (1, 1), (256, 8)])
def test_to_blocked_is_cublas_layout_padded_with_zeros(rows, cols):
    g = torch.Generator().manual_seed(rows * 100 + cols)
    plain = torch.randint(1, 255, (rows, cols), generator=g, dtype=torch.uint8)
    blocked = bg.to_blocked(plain.view(torch.float8_e8m0fnu)).view(torch.uint8)
    assert blocked.numel() == -(-rows // 128) * 128 * -(-cols // 4) * 4
    expected = torch.zeros_like(blocked)
    for r in range(rows):
        for c in range(cols):
            expected[_blocked_offset(r, c, cols)] = plain[r, c]
    assert torch.equal(blocked, expected)
    back = bg.from_blocked(bg.to_blocked(plain.view(torch.float8_e8m0fnu)), rows, cols)
    assert torch.equal(back.view(torch.uint8), plain)


# ---------------------------------------------------------------- validation before launch


def _operands(kind: str, m=200, n=136, k=128):
    fmt = bg.KINDS[kind]
    a = torch.zeros(m, fmt.ab_cols(k), dtype=torch.uint8).view(fmt.ab)
    b = torch.zeros(n, fmt.ab_cols(k), dtype=torch.uint8).view(fmt.ab)
    sfa = torch.full((m, k // fmt.vec), 127, dtype=torch.uint8).view(fmt.sf)
    sfb = torch.full((n, k // fmt.vec), 127, dtype=torch.uint8).view(fmt.sf)
    return dict(a=a, b=b, a_sf=sfa, b_sf=sfb, config=bg.Config(kind))


def _refused(message, **changes):
    kwargs = {**_operands(changes.pop("kind", "mxfp8")), **changes}
    with pytest.raises(KernelInputError, match=re.escape(message)):
        bg.run(**kwargs)


def test_inputs_are_validated_before_launch(monkeypatch):
    pretend_gpu(monkeypatch, (10, 0), accept_cpu_tensors=True)
    ops = _operands("mxfp8")
    _refused("dtype bfloat16", a=ops["a"].to(torch.bfloat16))
    _refused("dtype float4_e2m1fn_x2", kind="mxfp8", **{
        k: v for k, v in _operands("nvfp4").items() if k in ("a", "b")})  # fmt: skip
    _refused("same K", b=torch.zeros(136, 64, dtype=torch.uint8).view(torch.float8_e4m3fn))
    _refused("K = 48", a=ops["a"][:, :48].contiguous(), b=ops["b"][:, :48].contiguous())
    _refused("a_sf must be (200, 4)", a_sf=ops["a_sf"][:, :2].contiguous())
    _refused("dtype float8_e4m3fn", a_sf=ops["a_sf"].view(torch.uint8).view(torch.float8_e4m3fn))
    _refused("N = 4", b=ops["b"][:4].contiguous(), b_sf=ops["b_sf"][:4].contiguous())
    _refused("contiguous", a=torch.zeros(128, 200, dtype=torch.uint8).view(
        torch.float8_e4m3fn).t())  # fmt: skip
    _refused("out must be 200x136", out=torch.zeros(200, 128, dtype=torch.bfloat16))
    nv = _operands("nvfp4")
    _refused("b_sf must be (136, 8)", kind="nvfp4", b_sf=nv["b_sf"][:, :4].contiguous())


def test_cpu_tensors_are_refused(monkeypatch):
    pretend_gpu(monkeypatch, (10, 0))
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        bg.run(**_operands("mxfp8"))


@pytest.mark.compile
@pytest.mark.parametrize("kind", ["mxfp8", "nvfp4"])
def test_run_reaches_the_launch_on_a_fake_b200(monkeypatch, kind):
    recorder = fake_b200_host(monkeypatch, bg)
    ops = _operands(kind)
    out = bg.run(**ops)
    assert out.shape == (200, 136) and out.dtype == torch.bfloat16
    (kernel, args), = recorder.calls  # fmt: skip
    assert kernel is bg.compile(ops["config"])
    a_ptr, b_ptr, c_ptr, m, n, k, sfa_ptr, sfb_ptr = args
    assert [int(x) for x in (m, n, k)] == [200, 136, 128]
    assert [p._pointer for p in (a_ptr, b_ptr, c_ptr)] == [
        t.data_ptr() for t in (ops["a"], ops["b"], out)
    ]


def test_degenerate_shapes_never_launch(monkeypatch):
    recorder = fake_b200_host(monkeypatch, bg)
    assert bg.run(**_operands("mxfp8", m=0)).shape == (0, 136)
    out = bg.run(**_operands("mxfp8", k=0))
    assert out.shape == (200, 136) and (out == 0).all()  # K = 0: C = 0 without a launch
    assert recorder.calls == []
