"""Notebook 08: TMA load / store / multicast kernels and the raw tensor map."""

from dataclasses import replace

import pytest
import torch

from course.models import tensormap
from course.cute import kernel_traces
from kernels import tma
from kernels.host import KernelInputError

from .helpers import pretend_gpu

CASES = [
    (torch.bfloat16, tma.Config()),
    (torch.float16, tma.Config(box_rows=32)),
    (torch.float32, tma.Config(box_cols=32)),
    (torch.bfloat16, tma.Config(box_cols=32, swizzle=64)),
    (torch.bfloat16, tma.Config(box_cols=16, swizzle=32, box_rows=128)),
    (torch.bfloat16, tma.Config(box_cols=24, swizzle=0, box_rows=16, threads=128)),
]
CASE_IDS = [
    "bf16-sw128",
    "fp16-sw128-32rows",
    "fp32-sw128",
    "bf16-sw64",
    "bf16-sw32",
    "bf16-noswizzle-24cols",
]

# ------------------------------------------------------------------ the raw tensor map (CPU)


def test_seed_arguments_are_exactly_the_hopper_notes_example():
    s = tensormap.SEED
    assert (s.dtype, s.rank) == ("bf16", 2)
    assert s.global_dim == (8192, 8192)  # fastest dimension first
    assert s.global_strides == (16384,)  # bytes; dimension 0's stride is implicit
    assert s.box_dim == (64, 64) and s.element_strides == (1, 1)
    assert (s.interleave, s.swizzle, s.l2_promotion, s.oob_fill) == ("NONE", "128B", "NONE", "NONE")
    assert s.boxes == (128, 128) and s.box_bytes == 8192
    assert tensormap.rule_violations(s) == []
    call = s.call()
    for piece in (
        "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
        "{8192, 8192}",
        "{16384}",
        "{64, 64}",
        "CU_TENSOR_MAP_SWIZZLE_128B",
        "CU_TENSOR_MAP_L2_PROMOTION_NONE",
        "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
        "CU_TENSOR_MAP_INTERLEAVE_NONE",
    ):
        assert piece in call


def test_tiled_handles_strides_dtypes_and_ragged_shapes():
    a = tensormap.tiled(200, 136, "fp32", box=(64, 32), swizzle=128, ld=144, address=0x1000)
    assert a.global_dim == (136, 200) and a.global_strides == (576,) and a.box_dim == (32, 64)
    assert a.boxes == (5, 4) and a.box_bytes == 64 * 32 * 4
    with pytest.raises(ValueError):
        tensormap.tiled(8, 8, "fp64")
    with pytest.raises(ValueError):
        tensormap.tiled(8, 8, swizzle=16)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (tensormap.tiled(100, 100, box=(64, 64)), "globalStrides[0] = 200"),
        (tensormap.tiled(64, 64, box=(64, 64), address=8), "16-byte aligned"),
        (tensormap.tiled(64, 512, box=(64, 300), swizzle=0), "boxDim[0] = 300"),
        (tensormap.tiled(64, 256, box=(64, 128), swizzle=128), "swizzle span"),
        (tensormap.tiled(64, 64, box=(64, 4), swizzle=0), "multiple of 16"),
    ],
)
def test_rule_violations_name_the_broken_rule(args, fragment):
    assert any(fragment in v for v in tensormap.rule_violations(args))


def test_without_a_driver_encoding_is_a_labelled_fallback():
    enc = tensormap.try_encode(tensormap.SEED)
    if enc.ok:  # a machine with a driver: the real thing
        assert len(enc.data) == tensormap.DESCRIPTOR_BYTES
    else:
        assert "fallback" in str(enc) and enc.reason


def test_swizzle_model_is_a_row_wise_xor_permutation():
    table = tensormap.chunk_map(128)
    for r, row in enumerate(table):
        assert sorted(row) == list(range(8))
        assert row == [s ^ (r % 8) for s in range(8)]
    assert tensormap.chunk_map(0) == [list(range(8))] * 8
    box = torch.arange(8 * 64, dtype=torch.int16).reshape(8, 64)  # 128-byte rows
    phys = torch.as_tensor(tensormap.swizzled_box(box, 128))
    assert torch.equal(phys[0], box[0])  # row 0 is not moved
    assert torch.equal(phys[1, :8], box[1, 8:16])  # row 1: chunks 0 and 1 swap
    assert torch.equal(phys[3, 8:16], box[3, 16:24])  # row 3, slot 1 holds chunk 1 ^ 3 = 2


@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
def test_swizzle_model_matches_cutes_own_functor(swizzle):
    model = [tensormap.swizzle_byte_offset(b, swizzle) for b in range(0, 2048, 16)]
    assert kernel_traces.cute_swizzle_offsets(swizzle, 2048) == model


def test_cute_side_by_side_shows_the_same_tensor_map():
    view = kernel_traces.cute_tensor_map(8192, 8192, torch.bfloat16)
    assert "(8192,8192):(8192,1)" in view["global tensor"]
    assert view["shared-memory box layout"].startswith("S<3,4,3>")  # 128B swizzle
    assert "copy_bits = 65536" in view["descriptor (atom type)"]  # 64 x 64 x 16 bits
    assert "(1@1,1@0)" in view["TMA tensor"]  # rows -> TMA coordinate 1, columns -> 0
    assert "(64,64,128,128)" in view["TMA tensor, tiled into boxes"]
    assert view["box (1, 2)"].startswith("tensor<(128,64)")  # TMA coords {col 128, row 64}


# ------------------------------------------------------------------ the kernels (compile, CPU)


@pytest.mark.compile
@pytest.mark.parametrize("kernel", ["load", "boxes", "physical"])
def test_load_kernels_use_tma_and_an_expect_tx_mbarrier(kernel):
    art = tma.artifacts("sm_90a", kernel)
    assert (
        art.count_ptx(
            r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.tile\."
            r"mbarrier::complete_tx::bytes"
        )
        == 1
    )
    assert art.count_ptx(r"mbarrier\.init\.shared") == 1
    assert art.count_ptx(r"mbarrier\.arrive\.expect_tx") == 1
    assert art.count_ptx(r"mbarrier\.try_wait\.parity") >= 1
    assert art.count_ptx(r"elect\.sync") >= 2  # expect_tx and the copy each elect a lane
    assert art.count_ptx(r"st\.global") > 0  # shared -> global by plain stores
    assert "UTMALDG" in art.sass()


@pytest.mark.compile
def test_store_kernel_uses_tma_store_and_bulk_groups():
    art = tma.artifacts("sm_90a", "store")
    assert art.count_ptx(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group") == 1
    assert art.count_ptx(r"fence\.proxy\.async\.shared::cta") == 1
    assert art.count_ptx(r"cp\.async\.bulk\.commit_group") == 1
    assert art.count_ptx(r"cp\.async\.bulk\.wait_group") == 1
    assert art.count_ptx(r"mbarrier") == 0
    assert "UTMASTG" in art.sass()


@pytest.mark.compile
@pytest.mark.parametrize("cluster", [2, 4])
def test_multicast_kernel_multicasts_within_the_cluster(cluster):
    cfg = tma.MulticastConfig(cluster=cluster, tiles=2)
    art = tma.artifacts("sm_90a", "multicast", config=cfg)
    lines = art.ptx_lines(r"cp\.async\.bulk\.tensor")
    assert lines and all("multicast::cluster" in ln and "shared::cluster" in ln for ln in lines)
    assert art.count_ptx(r"barrier\.cluster\.(arrive|wait)") >= 4
    assert art.count_ptx(rf"mov\.b16\s+%rs\d+, {2**cluster - 1};") > 0  # mask: every CTA
    off = tma.artifacts(
        "sm_90a", "multicast", config=tma.MulticastConfig(cluster=cluster, tiles=2, multicast=False)
    )
    assert off.count_ptx(r"multicast::cluster") == 0


@pytest.mark.compile
@pytest.mark.parametrize("kernel", ["load", "store"])
def test_every_gpu_test_configuration_compiles(kernel):
    """The GPU tests' dtypes, boxes and swizzle modes all build a tensor map and compile."""
    for dtype, cfg in CASES:
        art = tma.artifacts("sm_90a", kernel, dtype, cfg)
        assert art.count_ptx(r"cp\.async\.bulk\.tensor\.2d") == 1, (dtype, cfg)


@pytest.mark.compile
def test_tma_kernels_also_compile_for_blackwell():
    art = tma.artifacts("sm_100a", "load")
    assert art.count_ptx(r"cp\.async\.bulk\.tensor") == 1


@pytest.mark.compile
def test_descriptor_dump_copies_the_kernel_parameter():
    art = tma.artifacts("sm_90a", "descriptor")
    assert ".param .align 64 .b8" in art.ptx and "[128]" in art.ptx  # the 128-byte map
    stores = art.ptx_lines(r"st\.global\.v2\.b64")
    assert len(stores) * 16 == tma.DESCRIPTOR_COPIED


def test_configs_are_validated():
    with pytest.raises(ValueError, match="swizzle"):
        tma.Config(swizzle=16)
    with pytest.raises(ValueError, match="256"):
        tma.Config(box_rows=512)
    with pytest.raises(ValueError, match="cluster"):
        tma.MulticastConfig(cluster=3)
    with pytest.raises(ValueError, match="divide"):
        tma.MulticastConfig(cluster=4, box=tma.Config(box_rows=6, box_cols=64, threads=128 * 3))
    with pytest.raises(KernelInputError, match="exactly"):
        tma.Config().check(4)  # 64 fp32 = 256-byte rows do not fit the 128B swizzle
    tma.Config(box_cols=32).check(4)
    with pytest.raises(KernelInputError, match="16 bytes"):
        tma.Config(box_cols=4, swizzle=0, box_rows=32).check(2)


def test_inputs_are_validated_before_launch(monkeypatch):
    pretend_gpu(monkeypatch)
    x = torch.zeros(64, 64, dtype=torch.bfloat16)
    with pytest.raises(KernelInputError, match="move it to the GPU"):
        tma.load(x)
    monkeypatch.setattr(tma, "check_tensor", lambda *a, **k: None)
    with pytest.raises(KernelInputError, match="16 bytes"):
        tma.load(torch.zeros(64, 100, dtype=torch.bfloat16)[:, :60])
    with pytest.raises(KernelInputError, match="columns"):
        tma.store(torch.zeros(64, 16, dtype=torch.bfloat16)[:, :4])
    with pytest.raises(KernelInputError, match="tiles_src must be"):
        tma.multicast(torch.zeros(3, 64, 64, dtype=torch.bfloat16))


# ------------------------------------------------------------------ on a Hopper (or newer) GPU

SHAPES = [(64, 64), (200, 136), (1, 8), (127, 72), (300, 520), (1024, 1024)]


def _random(shape, dtype, ld=None):
    """A (rows, cols) view with row stride ld inside a buffer of sentinel values."""
    rows, cols = shape
    ld = ld or cols
    buf = torch.full((rows + 3, ld), 7.0, device="cuda").to(dtype)
    view = buf[:rows, :cols]
    view.copy_(torch.randn(rows, cols, device="cuda").to(dtype))
    return view, buf


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("dtype, cfg", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_load_is_exact(shape, dtype, cfg):
    x, _ = _random(shape, dtype)
    out = tma.load(x, config=cfg)
    torch.cuda.synchronize()
    assert torch.equal(out, x)


@pytest.mark.gpu(needs="sm_90+")
def test_load_from_a_strided_view_fills_out_of_bounds_with_zeros():
    x, buf = _random((100, 72), torch.bfloat16, ld=96)  # the sentinel 7s sit just outside
    got = tma.boxes(x)  # (2, 2, 64, 64)
    assert got.shape == (2, 2, 64, 64)
    mosaic = got.permute(0, 2, 1, 3).reshape(128, 128)
    assert torch.equal(mosaic[:100, :72], x)
    assert (mosaic[100:] == 0).all() and (mosaic[:, 72:] == 0).all()  # zeros, not the 7s


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("dtype, cfg", CASES[:5], ids=CASE_IDS[:5])
def test_physical_boxes_show_the_swizzle_the_model_predicts(dtype, cfg):
    x, _ = _random((2 * cfg.box_rows, 3 * cfg.box_cols), dtype)
    logical = tma.boxes(x, cfg)
    physical = tma.boxes(x, cfg, physical=True)
    for i in range(2):
        for j in range(3):
            want = tensormap.swizzled_box(
                logical[i, j].view(torch.int16 if dtype != torch.float32 else torch.int32).cpu(),
                cfg.swizzle,
            )
            got = physical[i, j].view(torch.int16 if dtype != torch.float32 else torch.int32)
            assert torch.equal(got.cpu(), torch.as_tensor(want)), (i, j)


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("dtype, cfg", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_store_is_exact_and_clips_at_the_edges(shape, dtype, cfg):
    x, _ = _random(shape, dtype)
    out, buf = _random(shape, dtype, ld=shape[1] + 16)
    buf.fill_(7.0)  # poison: TMA must write only inside the (rows, cols) view
    tma.store(x, out, cfg)
    torch.cuda.synchronize()
    assert torch.equal(out, x)
    outside = buf.clone()
    outside[: shape[0], : shape[1]] = 7.0
    assert (outside == 7.0).all(), "the TMA store wrote outside the tensor"


@pytest.mark.gpu(needs="sm_90+")
@pytest.mark.parametrize("cluster", [1, 2, 4])
@pytest.mark.parametrize("multicast", [True, False], ids=["multicast", "separate"])
@pytest.mark.parametrize("rounds", [1, 3])
def test_multicast_delivers_every_tile_to_every_cta(cluster, multicast, rounds):
    cfg = tma.MulticastConfig(cluster=cluster, tiles=3, multicast=multicast)
    src = torch.randn(3, 64, 64, device="cuda").to(torch.bfloat16)
    got = tma.multicast(src, cfg, clusters=5, rounds=rounds)
    torch.cuda.synchronize()
    assert got.shape == (5 * cluster, 3, 64, 64)
    assert torch.equal(got, src.expand_as(got))


@pytest.mark.gpu(needs="sm_90+")
def test_driver_encodes_the_seed_tensor_map():
    x = torch.empty(8192, 8192, dtype=torch.bfloat16, device="cuda")
    data = tensormap.encode(tensormap.for_tensor(x))
    assert len(data) == 128 and any(data)
    with pytest.raises(ValueError, match="rejected"):
        tensormap.encode(tensormap.tiled(100, 100, address=x.data_ptr()))  # 200-byte rows


@pytest.mark.gpu(needs="sm_90+")
def test_cute_and_the_driver_describe_the_same_tensor():
    """CuTe's tensor map for TmaLoad vs the driver's with CuTe's likely choices. The
    128-byte format is undocumented; on the H100 (2026-11-22) the first 64 bytes agreed
    except bytes 8 and 10, which hold encoding choices rather than the tensor itself
    (the notebook shows the diff). The address (bytes 0-7) must agree."""
    x = torch.empty(8192, 8192, dtype=torch.bfloat16, device="cuda")
    cute_bytes = tma.descriptor(x)
    driver = tensormap.encode(tensormap.for_tensor(x, l2_promotion="L2_128B"))
    assert len(cute_bytes) == tma.DESCRIPTOR_COPIED
    differ = tensormap.differing_bytes(cute_bytes, driver[: len(cute_bytes)])
    assert not [b for b in differ if b < 8], "the two maps point at different memory"
    assert len(differ) <= 2, differ
    # read by difference: every bit that differs lies in the bytes of the settings word
    found = tensormap.compare_with_encodings(cute_bytes, tensormap.encode, tensormap.for_tensor(x))
    assert {byte for byte, _ in found.differing} <= {8, 9, 10, 11}, found


def _fake_encoder():
    """A stand-in for the driver with a made-up layout: the address in bytes 0-7, a word of
    settings in bytes 8-11 (swizzle bits 13-14, L2 promotion bits 17-18, OOB fill bit 20),
    the row stride / 16 in bytes 12-15. It refuses a swizzle narrower than the box, as the
    driver does."""

    def encode(args):
        if tensormap.rule_violations(args):
            raise ValueError("rejected")
        swz = list(tensormap.SWIZZLES.values()).index(args.swizzle)
        word = (
            swz << 13
            | tensormap.L2_PROMOTIONS.index(args.l2_promotion) << 17
            | tensormap.OOB_FILLS.index(args.oob_fill) << 20
            | 0x10
        )
        return (
            args.global_address.to_bytes(8, "little")
            + word.to_bytes(4, "little")
            + (args.global_strides[0] // 16).to_bytes(4, "little")
            + bytes(112)
        )

    return encode


def test_reading_a_map_by_difference_finds_where_each_setting_lives():
    encode = _fake_encoder()
    bits = tensormap.setting_bits(encode, tensormap.SEED, 64)
    assert bits["l2_promotion"] == {(10, 1), (10, 2)}
    assert bits["oob_fill"] == {(10, 4)}
    assert bits["swizzle"] <= {(9, 5), (9, 6)}  # 32B/64B refused for a 128-byte box row


def test_a_map_with_other_settings_is_the_same_tensor_and_box():
    encode = _fake_encoder()
    theirs = encode(replace(tensormap.SEED, l2_promotion="L2_256B"))[:64]
    found = tensormap.compare_with_encodings(theirs, encode, tensormap.SEED)
    assert found.identical and found.same_tensor_and_box
    assert found.nearest.l2_promotion == "L2_256B" and found.nearest.oob_fill == "NONE"


def test_a_bit_no_setting_produces_is_reported_as_the_encoders_own(capsys):
    from course.lessons import tma_lesson

    encode = _fake_encoder()
    theirs = bytearray(encode(replace(tensormap.SEED, l2_promotion="L2_256B"))[:64])
    theirs[8] |= 0b10  # a bit this "driver" never sets
    found = tensormap.compare_with_encodings(bytes(theirs), encode, tensormap.SEED)
    assert found.nearest.l2_promotion == "L2_256B" and found.differing == ((8, 1),)
    assert (8, 1) not in found.owner and not found.same_tensor_and_box
    tma_lesson.print_map_comparison(found)
    out = capsys.readouterr().out
    assert "byte 8 bit 1: no argument of cuTensorMapEncodeTiled changes it" in out
    assert "in byte(s) [8], no setting of the driver's produces" in out
