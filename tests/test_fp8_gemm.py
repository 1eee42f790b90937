"""Notebook 12: the FP8 GEMM (kernels.fp8_gemm) -- compiled for sm_90a, run on the CPU
executor against the float64 reference of the dequantized operands, its inputs refused
before a launch; on an H100, compared with torch._scaled_mm."""

import dataclasses

import pytest
import torch

from course.execute import ladder_runs
from kernels import fp8_gemm
from kernels.host import KernelInputError
from kernels.selftest import TOLERANCE, relative_error

from .helpers import capture_launches, refuse_launch

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2

# (label, config, A/B dtype, C dtype): every preset, e5m2, C in fp16 and fp32, a 256-wide
# tile of block scales (two blocks of B per tile), and ping-pong consumers
COMPILED = [
    *((name, cfg, E4M3, torch.bfloat16) for name, cfg in fp8_gemm.PRESETS.items()),
    ("row e5m2", fp8_gemm.PRESETS["row"], E5M2, torch.bfloat16),
    ("tensor fp16", fp8_gemm.PRESETS["tensor"], E4M3, torch.float16),
    ("tensor fp32", fp8_gemm.PRESETS["tensor"], E4M3, torch.float32),
    ("block tile_n=256", fp8_gemm.Config(scales="block"), E4M3, torch.bfloat16),
    # a 1 x 2 cluster: a partner CTA past N's edge when one tile spans all of N
    (
        "block tile_n=256 cluster 1x2",
        fp8_gemm.Config(scales="block", cluster_m=1, cluster_n=2),
        E4M3,
        torch.bfloat16,
    ),
    (
        "row pingpong",
        fp8_gemm.Config(scales="row", tile_n=128, pingpong=True, epi_stages=2),
        E4M3,
        torch.bfloat16,
    ),
]


@pytest.mark.compile
@pytest.mark.parametrize("label, cfg, dtype, out_dtype", COMPILED, ids=[c[0] for c in COMPILED])
def test_every_configuration_compiles_to_fp8_wgmma(label, cfg, dtype, out_dtype):
    art = fp8_gemm.artifacts("sm_90a", dtype, cfg, out_dtype=out_dtype)
    ab = "e4m3" if dtype == E4M3 else "e5m2"
    wgmma = rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.tile_n}k32\.f32\.{ab}\.{ab}"
    assert art.count_ptx(wgmma) > 0
    assert art.count_ptx(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16") == 0
    assert art.count_ptx(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;") == 1
    promotes = cfg.promotion_interval is not None
    # one wgmma group in flight, and (promoting) a wait for all before each promotion
    assert art.count_ptx(r"wgmma\.wait_group\.sync\.aligned\s+1;") > 0
    assert (art.count_ptx(r"wgmma\.wait_group\.sync\.aligned\s+0;") > 1) == promotes
    # the wgmmas stay asynchronous: a k-tile's four end in one wait group (gsb0); where ptxas
    # serializes them (its warning C7514, e.g. two accumulators in flight across a loop's
    # back edge) every wgmma ends its own group and is waited for
    qgmma = art.sass_lines(r"QGMMA\.")
    assert 4 * sum("gsb0" in line for line in qgmma) <= len(qgmma), qgmma
    (res,) = art.resource_usage().values()
    # two 128 x 256 accumulators do not fit in a thread's 232 registers: that one spills
    spills = cfg.promotion_interval is not None and cfg.tile_n > 128
    assert (res["stack_frame_bytes"] > 0) == spills, res


def test_config_rules():
    with pytest.raises(ValueError, match="for block scales"):
        fp8_gemm.Config(prefetch_scales=2)
    with pytest.raises(ValueError, match="0 to 4"):
        fp8_gemm.Config(scales="block", prefetch_scales=5)
    with pytest.raises(ValueError, match="scales must be"):
        fp8_gemm.Config(scales="blocks")
    with pytest.raises(ValueError, match="promote every k-tile"):
        fp8_gemm.Config(scales="block", promote_every=2)
    with pytest.raises(ValueError, match="at least 1"):
        fp8_gemm.Config(promote_every=0)
    with pytest.raises(ValueError, match="stage_scales is for block scales"):
        fp8_gemm.Config(stage_scales=True)
    with pytest.raises(ValueError, match="without prefetch_scales"):
        fp8_gemm.Config(scales="block", stage_scales=True, prefetch_scales=1)
    with pytest.raises(ValueError, match="overlap_group is for block scales"):
        fp8_gemm.Config(promote_every=1, tile_n=128, overlap_group=4)
    with pytest.raises(ValueError, match="overlap_group is for block scales"):
        fp8_gemm.Config(scales="block", tile_n=128, pingpong=True, epi_stages=2, overlap_group=2)
    with pytest.raises(ValueError, match="0 \\(off\\) or 2 to 8"):
        fp8_gemm.Config(scales="block", tile_n=128, overlap_group=1)
    with pytest.raises(ValueError, match="release_sync must be"):
        fp8_gemm.Config(scales="block", stage_scales=True, release_sync="cta")
    with pytest.raises(ValueError, match="stage_scales=True"):
        fp8_gemm.Config(scales="block", release_sync="warpgroup")
    # a stage of staged scales holds 128 of A and one (128-wide tiles) to three of B's
    assert fp8_gemm.PRESETS["block_staged"].stage_extra_bytes() == (128 + 1) * 4
    assert (
        fp8_gemm.Config(scales="block", tile_n=192, stage_scales=True).stage_extra_bytes()
        == (128 + 3) * 4
    )
    assert fp8_gemm.PRESETS["block"].stage_extra_bytes() == 0
    assert fp8_gemm.Config(scales="block").promotion_interval == 1
    assert fp8_gemm.PRESETS["tensor_promoted"].promotion_interval == 4
    assert fp8_gemm.PRESETS["tensor"].promotion_interval is None
    assert fp8_gemm.scale_shapes(129, 264, 400, "block") == ((129, 4), (3, 4))


# ---------------------------------------------------------------- on the CPU executor

# (label, config, run_fp8_gemm's keywords): integer-valued operands and power-of-two
# scales, so C must equal the float64 reference rounded to C's type (tolerance 0).
# Ragged in M, N (tiles of 128 x 128/256) and, where K = 400, in K (a 16-wide last k-tile).
EXACT = [
    ("tensor", fp8_gemm.PRESETS["tensor"], {}),
    ("row", fp8_gemm.PRESETS["row"], {}),
    ("block", fp8_gemm.PRESETS["block"], {}),
    # the last k-tile prefetches nothing new: 3 k-tiles, and 1
    ("block_prefetch", fp8_gemm.PRESETS["block_prefetch"], {}),
    ("block_prefetch, 1 k-tile", fp8_gemm.PRESETS["block_prefetch"], {"m": 65, "k": 112}),
    # scales staged by the producer: 3 k-tiles a tile over 5 stages (the ring wraps), one
    # k-tile with a partner CTA past M, 256- and 192-wide tiles (two blocks of B; the 192-wide
    # tile's staged array holds three, b_blocks_per_tile's bound), a 1 x 2 cluster with a
    # partner past N (its tile past N on the GPU and the executor alike: fp8_gemm.tile_origin)
    ("block_staged", fp8_gemm.PRESETS["block_staged"], {}),
    (
        "block_staged, 1 k-tile, partner past M",
        fp8_gemm.PRESETS["block_staged"],
        {"m": 65, "k": 112},
    ),
    (
        "block staged tile_n=256, ragged K",
        fp8_gemm.Config(scales="block", stage_scales=True),
        {"m": 65, "k": 400},
    ),
    (
        "block staged tile_n=192, cluster 1x2",
        fp8_gemm.Config(scales="block", tile_n=192, stage_scales=True, cluster_m=1, cluster_n=2),
        {"m": 129, "n": 520, "k": 300},
    ),
    # a 160-wide tile starts 0, 32, 64 or 96 columns into a block of B (fp8_gemm.tile_offsets):
    # four tile columns, each element's block picked for its tile's offset
    (
        "block tile_n=160, four tile offsets",
        fp8_gemm.Config(scales="block", tile_n=160),
        {"m": 65, "n": 520, "k": 256},
    ),
    (
        "block tile_n=256, cluster 1x2, partner past N",
        fp8_gemm.Config(scales="block", cluster_m=1, cluster_n=2),
        {"m": 65, "n": 200, "k": 256},
    ),
    (
        "block staged tile_n=256, cluster 1x2, partner past N",
        fp8_gemm.Config(scales="block", stage_scales=True, cluster_m=1, cluster_n=2),
        {"m": 65, "n": 200, "k": 256},
    ),
    # the lanes' reads of a stage's scales ordered by a named barrier over the warpgroup
    (
        "block_staged, release_sync warpgroup",
        dataclasses.replace(fp8_gemm.PRESETS["block_staged"], release_sync="warpgroup"),
        {},
    ),
    (
        "block_overlapped, release_sync warpgroup, 7 k-tiles",
        dataclasses.replace(fp8_gemm.PRESETS["block_overlapped"], release_sync="warpgroup"),
        {"k": 784},
    ),
    ("tensor promoted every 2, ragged K", fp8_gemm.Config(promote_every=2, tile_n=128), {"k": 400}),
    # overlapped promotions (two temporary accumulators, groups of overlap_group k-tiles):
    # 4 k-tiles (one group, the last 16 wide), 7 (a group and three alone), 1 (none in a
    # group), groups of 2 and 3 with global scales, a 1 x 2 cluster with a partner past N
    ("block_overlapped", fp8_gemm.PRESETS["block_overlapped"], {}),
    ("block_overlapped, 7 k-tiles", fp8_gemm.PRESETS["block_overlapped"], {"k": 784}),
    ("block_overlapped, 1 k-tile", fp8_gemm.PRESETS["block_overlapped"], {"m": 65, "k": 112}),
    (
        "block, groups of 2, 3 k-tiles",
        fp8_gemm.Config(scales="block", tile_n=128, overlap_group=2),
        {"k": 384},
    ),
    (
        "block, groups of 3, 7 k-tiles",
        fp8_gemm.Config(scales="block", tile_n=128, overlap_group=3),
        {"n": 136, "k": 784},
    ),
    (
        "block staged tile_n=256, groups of 2, cluster 1x2, partner past N",
        fp8_gemm.Config(
            scales="block", stage_scales=True, cluster_m=1, cluster_n=2, overlap_group=2
        ),
        {"m": 65, "n": 200, "k": 256},
    ),
    ("block tile_n=256, ragged K", fp8_gemm.Config(scales="block"), {"m": 65, "k": 400}),
    ("row e5m2", fp8_gemm.PRESETS["row"], {"dtype": E5M2, "m": 65}),
    ("tensor into fp32", fp8_gemm.PRESETS["tensor"], {"out_dtype": torch.float32, "m": 65}),
]


def test_the_executor_puts_a_partner_past_ns_one_tile_where_the_gpu_does(monkeypatch):
    """A 1 x 2 cluster at N = 200 (one 256-wide tile): the partner CTA's tile lies past N. On
    the GPU, whose C extents are run-time values, it starts at column 256: an H200 ran the
    kernel with B's first block taken from tile_col * tile_n (2026-12-04) and got C right.
    The executor holds a jit's Int32 extents dynamic too, so the same formula is right on it
    (it put the partner on tile 0 before, and this run was wrong by 0.78 relative)."""

    def by_tile_index(c_shape, tile, tile_row, tile_col):
        return tile_row * tile[0], tile_col * tile[1]

    monkeypatch.setattr(fp8_gemm, "tile_origin", by_tile_index)
    cfg = fp8_gemm.Config(scales="block", cluster_m=1, cluster_n=2)
    r = ladder_runs.run_fp8_gemm(cfg, m=65, n=200, k=256)
    assert r.ok, r


@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_the_executors_float8_types_are_torchs(dtype):
    from course.execute import numeric

    t = numeric.of_torch(dtype)
    name = {E4M3: "Float8E4M3FN", E5M2: "Float8E5M2"}[dtype]  # CuTe DSL's names
    assert (t.name, t.width, t.itemsize) == (name, 8, 1)
    values = torch.randn(4096, generator=torch.Generator().manual_seed(1)) * 64
    bits = values.to(dtype).view(torch.uint8).numpy()
    assert (t.encode(values.numpy()) == bits).all()
    decoded = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).float()
    assert torch.equal(torch.from_numpy(t.decode(bits)), values.to(dtype).float())
    assert torch.allclose(torch.from_numpy(t.table()), decoded, equal_nan=True)
    assert t(1000.0) == float(torch.tensor(1000.0).to(dtype).float())


@pytest.mark.parametrize("label, cfg, kw", EXACT, ids=[e[0] for e in EXACT])
def test_the_executor_gives_the_exact_product(label, cfg, kw):
    r = ladder_runs.run_fp8_gemm(cfg, **kw)
    assert r.hazard is None, r.summary()
    assert r.written_past == 0, r.summary()
    out_dtype = kw.get("out_dtype", torch.bfloat16)
    assert r.output.dtype == out_dtype
    assert torch.equal(r.output.double(), r.reference), r.summary()  # exact, no NaN left


def test_the_executor_agrees_with_the_dequantized_reference_on_random_values():
    r = ladder_runs.run_fp8_gemm(fp8_gemm.PRESETS["row"], m=65, exact=False, seed=3)
    assert r.hazard is None and r.ok, r.summary()
    assert 0 < r.relative_error <= TOLERANCE[torch.bfloat16]


def test_block_scales_are_applied_per_block():
    """Each k-tile's partial sum takes its own scales: with every scale of k-block 1 set to
    zero, C is the product of k-block 0 alone (a promotion once at the end would not be)."""
    x = ladder_runs.fp8_inputs(65, 136, 256, "block", seed=5)
    x["a_scale"][:, 1] = 0.0
    x["b_scale"][1, 0] = 0.0  # and block 0 of K of B's second 128 rows
    r = ladder_runs.run_fp8_gemm(fp8_gemm.PRESETS["block"], m=65, n=136, k=256, x=x)
    ref = (x["a"][:, :128].double() * x["a_scale"][:, :1]) @ (x["b"][:, :128].double().T)
    ref *= torch.cat([x["b_scale"][0, 0].expand(128), x["b_scale"][1, 0].expand(8)]).double()
    assert torch.equal(r.output.double(), ref.to(torch.bfloat16).double()), r.summary()


# ---------------------------------------------------------------- refused before a launch


def _operands(m=64, n=64, k=128, dtype=E4M3, scales="tensor"):
    a = torch.zeros(m, k, dtype=dtype)
    b = torch.zeros(n, k, dtype=dtype)
    sa, sb = (torch.ones(s) for s in fp8_gemm.scale_shapes(m, n, k, scales))
    return a, b, sa, sb


@pytest.fixture
def no_launch(monkeypatch):
    refuse_launch(monkeypatch, fp8_gemm.GEMM)


def _refused(match, *args, **kwargs):
    with pytest.raises(KernelInputError, match=match):
        fp8_gemm.run(*args, **kwargs)


def test_operands_are_refused_before_a_launch(no_launch):
    a, b, sa, sb = _operands()
    _refused("float8_e4m3fn", a, b.to(torch.float32).to(E5M2), sa, sb)  # A e4m3, B e5m2
    _refused("takes float8_e4m3fn, float8_e5m2", a.to(torch.bfloat16), b, sa, sb)
    a40, b40, sa40, sb40 = _operands(k=40)
    _refused("not a multiple of 16", a40, b40, sa40, sb40)
    _refused("same K", a, _operands(k=64)[1], sa, sb)
    _refused("K-major", a.t().contiguous().t(), b, sa, sb)
    _refused("out has dtype", a, b, sa, sb, torch.empty(64, 64, dtype=E4M3))


def test_scales_are_refused_before_a_launch(no_launch):
    a, b, sa, sb = _operands()
    _refused("a_scale has dtype float64", a, b, sa.double(), sb)
    _refused(r"b_scale must have shape \(1,\)", a, b, sa, torch.ones(2))
    _refused("a_scale must be 1-D", a, b, sa.view(1, 1), sb)
    _refused("b_scale must be a torch.Tensor", a, b, sa, 1.0)
    _refused("move it to the GPU", a, b, sa, sb.to("meta"))
    row = fp8_gemm.PRESETS["row"]
    _refused(r"a_scale must have shape \(64,\) for 'row'", a, b, sa, sb, config=row)
    a, b, sa, sb = _operands(m=100, n=200, k=256, scales="block")
    block = fp8_gemm.PRESETS["block"]
    _refused(r"b_scale must have shape \(2, 2\)", a, b, sa, sb[:1], config=block)
    _refused("contiguous", a, b, torch.ones(2, 100).t(), sb, config=block)


def test_valid_inputs_reach_the_launch_with_their_scales(monkeypatch):
    launched = capture_launches(monkeypatch, fp8_gemm.GEMM)
    a, b, sa, sb = _operands(m=100, n=200, k=256, scales="row")
    out = fp8_gemm.run(a, b, sa, sb, config=fp8_gemm.PRESETS["row"])
    assert out.dtype == torch.bfloat16 and out.shape == (100, 200)
    (args,) = launched
    assert len(args) == 3 + 3 + 1 + 2  # A, B, C, m, n, k, max_clusters, a_scale, b_scale


# ---------------------------------------------------------------- on an H100

SCALED_MM_SHAPES = [(128, 256, 128), (1040, 1056, 528), (144, 272, 400), (4096, 4096, 4096)]
# (65, 200, 256): one tile spans all of N, so a 1 x 2 cluster's partner CTA lies past it
RAGGED_SHAPES = [
    (129, 264, 400),
    (1000, 1016, 528),
    (1, 16, 16),
    (3000, 2056, 1008),
    (65, 200, 256),
]


def _gpu_inputs(m, n, k, scales, seed=0):
    torch.manual_seed(seed)
    a, sa = fp8_gemm.quantize(torch.randn(m, k, device="cuda"), scales)
    b, sb = fp8_gemm.quantize(torch.randn(n, k, device="cuda"), scales, rows_of="b")
    return a, b, sa, sb


def _dequantized_reference(a, b, sa, sb, scales):
    x = {"a": a.cpu(), "b": b.cpu(), "a_scale": sa.cpu(), "b_scale": sb.cpu()}
    return ladder_runs.fp8_reference(x, scales).cuda()


def _poisoned(m, n, dtype=torch.bfloat16):
    return torch.full((m, n), float("nan"), dtype=dtype, device="cuda")


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize("preset", ["tensor", "row", "tensor_promoted"])
@pytest.mark.parametrize("mnk", SCALED_MM_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fp8_gemm_matches_scaled_mm(mnk, preset):
    cfg = fp8_gemm.PRESETS[preset]
    m, n, k = mnk
    a, b, sa, sb = _gpu_inputs(m, n, k, cfg.scales)
    out = fp8_gemm.run(a, b, sa, sb, _poisoned(m, n), cfg)
    if cfg.scales == "tensor":
        ref = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    else:
        ref = torch._scaled_mm(
            a, b.t(), scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16
        )
    exact = _dequantized_reference(a, b, sa, sb, cfg.scales)
    assert relative_error(out, exact) <= TOLERANCE[torch.bfloat16]
    assert relative_error(out, ref) <= TOLERANCE[torch.bfloat16]


@pytest.mark.gpu(needs="sm_90a")
@pytest.mark.parametrize(
    "label",
    [
        "tensor",
        "row",
        "block",
        "block_prefetch",
        "block_staged",
        "block_overlapped",
        "block tile_n=256",
        "block tile_n=256 cluster 1x2",
        "tensor fp32",
    ],
)
@pytest.mark.parametrize("mnk", RAGGED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fp8_gemm_matches_the_dequantized_reference(mnk, label):
    _, cfg, dtype, out_dtype = next(c for c in COMPILED if c[0] == label)
    m, n, k = mnk
    a, b, sa, sb = _gpu_inputs(m, n, k, cfg.scales)
    out = fp8_gemm.run(a, b, sa, sb, _poisoned(m, n, out_dtype), cfg)
    exact = _dequantized_reference(a, b, sa, sb, cfg.scales)
    assert relative_error(out, exact) <= TOLERANCE[torch.bfloat16]  # fp32 C: no looser


@pytest.mark.gpu(needs="sm_90a")
def test_promotion_bounds_the_error_of_a_long_k():
    """K = 16384: the tensor cores' fp8 accumulation loses bits over a long K; promoting
    into fp32 every 4 k-tiles brings the error down (printed for the notebook)."""
    m = n = 256
    k = 16384
    a, b, sa, sb = _gpu_inputs(m, n, k, "tensor")
    exact = _dequantized_reference(a, b, sa, sb, "tensor")
    errors = {}
    for every in (None, 1, 4, 16):
        cfg = fp8_gemm.Config(promote_every=every, tile_n=128)
        out = fp8_gemm.run(a, b, sa, sb, _poisoned(m, n, torch.float32), cfg)
        errors[every] = relative_error(out, exact)
    print("relative error by promote_every:", errors)
    assert errors[4] <= errors[None]
