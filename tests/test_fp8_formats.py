"""FP8 (notebook 12): the formats decoded from their bits agree with torch's dtypes, rounding
agrees with torch's conversion, scales of each granularity do what they say, the
accumulation model loses what it should, and the GPU recorder refuses a machine that
cannot measure."""

import math
import subprocess
import sys

import matplotlib
import pytest
import torch

from course import ROOT
from course.models import fp8
from course.runtime import results

from .helpers import A100, CPU, H100, use_machine

matplotlib.use("Agg")

E4M3, E5M2 = fp8.E4M3, fp8.E5M2


def same(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Equal, NaN where NaN, and the same sign of zero."""
    x, y = x.double(), y.double()
    nan = torch.isnan(x)
    return bool(
        torch.equal(nan, torch.isnan(y))
        and torch.equal(x[~nan], y[~nan])
        and torch.equal(torch.signbit(x[~nan]), torch.signbit(y[~nan]))
    )


# --- the formats -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", fp8.FORMATS, ids=lambda f: f.name)
def test_every_bit_pattern_decodes_as_torch_reads_it(fmt):
    theirs = torch.arange(256, dtype=torch.uint8).view(fmt.dtype).to(torch.float64)
    assert same(torch.tensor(fmt.patterns(), dtype=torch.float64), theirs)


@pytest.mark.parametrize(
    "fmt, distinct, largest, normal, subnormal, nans, infs",
    [
        (E4M3, 253, 448.0, 2.0**-6, 2.0**-9, 2, 0),
        (E5M2, 247, 57344.0, 2.0**-14, 2.0**-16, 6, 2),
    ],
    ids=["e4m3", "e5m2"],
)
def test_the_formats_limits(fmt, distinct, largest, normal, subnormal, nans, infs):
    props = fp8.properties(fmt)
    assert props["distinct finite values"] == distinct == len(fmt.finite_values())
    assert fmt.max == largest == torch.finfo(fmt.dtype).max
    assert fmt.smallest_normal == normal == torch.finfo(fmt.dtype).smallest_normal
    assert fmt.smallest_subnormal == subnormal == min(v for v in fmt.finite_values() if v > 0)
    assert (props["NaN patterns"], props["infinities"]) == (nans, infs)
    assert fmt.relative_precision == torch.finfo(fmt.dtype).eps


@pytest.mark.parametrize("fmt", fp8.FORMATS, ids=lambda f: f.name)
def test_binades_hold_every_value_and_their_spacing(fmt):
    binades = fmt.binades()
    positives = [v for v in fmt.finite_values() if v > 0]
    assert sum(b.count for b in binades) == len(positives)
    for b in binades:
        inside = [v for v in positives if 2.0**b.exponent <= v < 2.0 ** (b.exponent + 1)]
        gaps = {y - x for x, y in zip(inside, inside[1:])}
        assert gaps <= {b.step}
        if b.subnormal:
            assert b.exponent < fmt.min_exponent and b.relative_step > fmt.relative_precision
        else:
            assert b.relative_step == fmt.relative_precision
    full = [b for b in binades if not b.subnormal][:-1]  # the top binade stops at max
    assert all(b.count == 2**fmt.mantissa_bits for b in full)


# --- rounding --------------------------------------------------------------------------------


def probes(fmt) -> torch.Tensor:
    """Float32 values where rounding decides: every value, every midpoint between neighbours
    (ties), a float32 step either side of it, beyond the largest, specials, random floats."""
    v = torch.tensor(fmt.finite_values(), dtype=torch.float64)
    v = torch.cat([v, torch.tensor([fmt.max + fmt.max / 8 * k for k in range(1, 5)])])
    mid = ((v[1:] + v[:-1]) / 2).to(torch.float32)
    inf = torch.tensor(math.inf, dtype=torch.float32)
    g = torch.Generator().manual_seed(1)
    rand = torch.randn(20_000, generator=g) * torch.exp2(
        torch.randint(-20, 20, (20_000,), generator=g)
    )
    special = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e30, -1e30])
    return torch.cat(
        [
            v.to(torch.float32),
            mid,
            torch.nextafter(mid, inf),
            torch.nextafter(mid, -inf),
            -mid,
            rand.to(torch.float32),
            special,
        ]
    )


@pytest.mark.parametrize("fmt", fp8.FORMATS, ids=lambda f: f.name)
def test_rounding_agrees_with_torch(fmt):
    x = probes(fmt)
    assert same(fp8.round_to(fmt, x.double()), x.to(fmt.dtype).double())


def test_ties_go_to_even_and_overflow_as_torch_does():
    # 1.0625 lies halfway between e4m3's 1 and 1.125: the even mantissa (1.000) wins
    assert float(fp8.round_to(E4M3, 1.0625)) == 1.0
    assert float(fp8.round_to(E4M3, 1.1875)) == 1.25  # halfway between 1.125 and 1.25
    # e4m3fn has no inf: torch saturates every finite overflow and inf itself to 448
    assert fp8.round_to(E4M3, [465.0, 1e6, math.inf, -math.inf]).tolist() == [448, 448, 448, -448]
    assert math.isnan(float(fp8.round_to(E4M3, 1e6, saturate=False)))
    # e5m2 has: past the halfway point above 57344 it overflows, unless asked to saturate
    assert float(fp8.round_to(E5M2, 61439.0)) == 57344.0
    assert float(fp8.round_to(E5M2, 61440.0)) == math.inf
    assert float(fp8.round_to(E5M2, 1e6, saturate=True)) == 57344.0
    assert float(torch.tensor(61440.0).to(torch.float8_e5m2).float()) == math.inf


# --- scales ----------------------------------------------------------------------------------

SCALE_SHAPES = {
    "tensorwise": (1, 1),
    "rowwise": (130, 1),
    "1x128": (130, 2),
    "128x128": (2, 2),
}


@pytest.mark.parametrize("granularity", fp8.GRANULARITIES)
@pytest.mark.parametrize("pow2", [False, True], ids=["amax/448", "pow2"])
def test_each_group_fills_the_format_and_dequantizes_close(granularity, pow2):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(130, 200, generator=g, dtype=torch.float64)
    x *= torch.exp(2 * torch.randn(130, 1, generator=g, dtype=torch.float64))
    q = fp8.quantize(x, granularity, power_of_two=pow2)
    assert q.data.dtype == torch.float8_e4m3fn and tuple(q.scale.shape) == SCALE_SHAPES[granularity]
    top = fp8.group_amax(q.data.to(torch.float32), granularity)
    if pow2:
        assert torch.equal(torch.log2(q.scale), torch.log2(q.scale).round())
        assert bool(((top >= 224) & (top <= 448)).all())
    else:
        assert bool((top == 448).all()), "each group's largest value lands on e4m3's max"
    back = fp8.dequantize(q)
    normal = (x / q.expanded_scale()).abs() >= E4M3.smallest_normal  # before rounding
    assert bool(((back - x).abs()[normal] <= x.abs()[normal] * 2.0**-4 * 1.0001).all())


def test_a_block_scale_keeps_an_outlier_to_its_own_block():
    x = torch.ones(256, 256, dtype=torch.float64)
    x[3, 5] = 1e6
    for granularity, big, block in (
        ("1x128", (3, 0), (slice(3, 4), slice(0, 128))),
        ("128x128", (0, 0), (slice(0, 128), slice(0, 128))),
    ):
        q = fp8.quantize(x, granularity)
        scale = q.scale.clone()
        assert scale[big] == pytest.approx(1e6 / 448)
        scale[big] = 1 / 448
        assert torch.allclose(scale, torch.full_like(scale, 1 / 448))
        back = fp8.dequantize(q)
        # in the outlier's block 1 / (1e6 / 448) is below e4m3's smallest subnormal: zero
        lost = back[block] == 0
        assert int(lost.sum()) == lost.numel() - 1
        back[block] = x[block]
        assert torch.allclose(back, x, rtol=1e-6, atol=0), "every other block is intact"
    # one scale for the whole tensor: every 1 is lost
    assert int((fp8.dequantize(fp8.quantize(x, "tensorwise")) == 0).sum()) == 256 * 256 - 1


def test_outliers_cost_coarse_scales_and_not_block_scales():
    a, b, outliers = fp8.activations_and_weights(m=128, n=128, k=1024, outlier_scale=1e4)
    assert len(outliers) == 4 and bool((a[:, outliers].abs().mean() > 1000).all())
    by = {(e.scheme, e.power_of_two): e for e in fp8.granularity_errors(a, b, outliers)}
    err = {s: by[(s, False)].ordinary_error for s in ("tensorwise", "rowwise", "blockwise")}
    assert err["blockwise"] < err["rowwise"] < err["tensorwise"]
    assert by[("tensorwise", False)].below_normal > 0.5 > by[("blockwise", False)].below_normal
    again = fp8.granularity_errors(a, b, outliers)
    assert [e.gemm_error for e in again] == [
        by[(e.scheme, e.power_of_two)].gemm_error for e in again
    ]


def test_power_of_two_scales_round_alike_while_every_value_stays_normal():
    g = torch.Generator().manual_seed(4)
    mag = 0.5 + 3.5 * torch.rand(128, 256, generator=g, dtype=torch.float64)
    x = torch.where(torch.rand(128, 256, generator=g) < 0.5, -mag, mag)
    x[:, :128] *= 2.0  # groups differ in their amax, and so in their scale
    back = [fp8.dequantize(fp8.quantize(x, gr, power_of_two=True)) for gr in fp8.GRANULARITIES]
    assert all(torch.equal(back[0], other) for other in back[1:])
    exact = [fp8.dequantize(fp8.quantize(x, gr)) for gr in fp8.GRANULARITIES]
    assert not all(torch.equal(exact[0], other) for other in exact[1:])


def test_the_sweep_rises_with_the_outliers_for_tensorwise():
    sweep = fp8.outlier_sweep((1.0, 1e5), m=64, n=64, k=512)
    assert sweep["outlier scale"] == [1.0, 1e5]
    assert sweep["tensorwise"][1] > 5 * sweep["tensorwise"][0]
    assert sweep["blockwise"][1] < sweep["tensorwise"][1]


# --- accumulation ----------------------------------------------------------------------------


def test_truncate_keeps_bits_and_cuts_toward_zero():
    x = torch.tensor([1 + 2.0**-14, 1 + 2.0**-15, -(1 + 2.0**-15), 3.0, 0.0], dtype=torch.float64)
    assert fp8.truncate(x, 14).tolist() == [1 + 2.0**-14, 1.0, -1.0, 3.0, 0.0]
    assert fp8.truncate(torch.tensor([2.0**20 - 1]), 14).item() == 2.0**20 - 2**5


def test_the_model_matches_the_kernels_widths():
    from kernels import gemm_host

    assert fp8.MMA_K == gemm_host.mma_k(8)
    assert fp8.PROMOTE_EVERY * fp8.MMA_K == gemm_host.tile_k(8) == 128


def test_accumulate_is_exact_with_enough_bits_and_loses_without():
    a, b = fp8.fp8_dot_operands(16, 1024)
    p = a * b
    exact = p.sum(dim=1)
    assert torch.allclose(fp8.accumulate(p, keep_bits=52), exact, rtol=1e-12, atol=0)
    assert not torch.equal(fp8.accumulate(p, keep_bits=10), exact)
    promoted = fp8.accumulate(p, keep_bits=52, promote_every=4)  # float32 sums of exact parts
    assert torch.allclose(promoted, exact, rtol=1e-5) and not torch.equal(promoted, exact)


@pytest.mark.parametrize("cut, growth", [("sum", 20), ("addends", 4)])
def test_without_promotion_the_error_grows_with_k_and_with_it_stays_flat(cut, growth):
    """Cutting the sum shrinks it every time (the error grows about like K); cutting the
    addends loses bits in both directions (about like the square root of K)."""
    r = fp8.accumulation_errors(ks=(256, 2048, 16384), rows=32, cut=cut)
    lost, kept = r["no promotion"], r["promotion"]
    assert lost[0] < lost[1] < lost[2] and lost[2] > growth * lost[0]
    assert cut == "sum" or lost[2] < 20 * lost[0]
    assert all(k < n for k, n in zip(kept[1:], lost[1:]))
    assert max(kept) < 2 * min(kept) and max(kept) < 2.0**-11
    assert r["promote_every_k"] == 128 and r["keep_bits"] == fp8.KEEP_BITS == 14
    assert r["cut"] == cut


def test_align_keeps_bits_below_the_largest_term():
    t = torch.tensor([[4.0, 1 + 2.0**-13, -(2.0**-13) * 3]], dtype=torch.float64)
    # the largest term 4 = 2^2: the grid is 2^(2 - 14) = 2^-12
    assert fp8.align(t, 14).tolist() == [[4.0, 1.0, -(2.0**-12)]]
    with pytest.raises(ValueError, match="cut must be"):
        fp8.accumulate(t, cut="middle")


# --- the GPU recorder ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "m, says", [(CPU, "no GPU here"), (A100, "no FP8 tensor cores")], ids=["cpu", "a100"]
)
def test_recorder_refuses_a_machine_that_cannot_measure(monkeypatch, tmp_path, capsys, m, says):
    from course.tools import record_fp8_accuracy

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(record_fp8_accuracy, "machine", lambda: m)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: m.has_gpu)
    assert record_fp8_accuracy.main() == 2
    assert says in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing is recorded"


def test_recorder_as_a_command_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = subprocess.run(
        [sys.executable, "-m", "course.tools.record_fp8_accuracy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "COURSE_RESULTS_DIR": str(tmp_path)},
        timeout=120,
    )
    assert done.returncode == 2 and "no GPU here" in done.stderr and not done.stdout
    assert not list(tmp_path.iterdir())


# --- the lesson ------------------------------------------------------------------------------


def test_values_figure_is_labelled():
    from course.lessons import fp8_lesson

    fig = fp8_lesson.values_figure()
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_legend() is not None
    assert [t.get_text() for t in ax.get_yticklabels()] == ["e5m2", "e4m3"]
    ticks = sum(len(c.get_segments()) for c in ax.collections)
    assert ticks == sum(len([v for v in f.finite_values() if v > 0]) for f in fp8.FORMATS)


def test_formats_table_states_the_limits():
    from course.lessons import fp8_lesson

    text = fp8_lesson.formats_table().text
    for needle in ("| largest | 448 | 57344 |", "2^-6", "2^-14", "2^-9", "2^-16", "saturates"):
        assert needle in text, needle


def write_accuracy_record(monkeypatch, root):
    use_machine(monkeypatch, H100)
    rows = [
        {"k": k, "fast accumulation": 1e-5 * k, "promotion": 1e-6, "rounding into e4m3": 0.03}
        for k in (256, 512)
    ]
    results.record(
        "fp8_accuracy",
        {"results": rows},
        command="python -m course.tools.record_fp8_accuracy",
        root=root,
    )


def test_accumulation_figure_says_when_nothing_is_recorded(monkeypatch, tmp_path, capsys):
    from course.lessons import fp8_lesson

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    fig = fp8_lesson.accumulation_figure(ks=(256, 512), rows=8)
    out = capsys.readouterr().out
    assert "MODEL" in out and "No GPU measurement is recorded yet" in out
    assert "python -m course.tools.record_fp8_accuracy" in out
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert len(labels) == 4 and all(l.startswith("model") for l in labels)
    assert {"addends cut", "sum cut"} <= {c for l in labels for c in fp8_pictures_cuts(l)}


def fp8_pictures_cuts(label: str) -> set[str]:
    return {c for c in ("addends cut", "sum cut") if c in label}


def test_accumulation_figure_overlays_the_recorded_measurement(monkeypatch, tmp_path, capsys):
    from course.lessons import fp8_lesson

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    write_accuracy_record(monkeypatch, tmp_path)
    fig = fp8_lesson.accumulation_figure(ks=(256, 512), rows=8)
    out = capsys.readouterr().out
    date = results.latest("fp8_accuracy").date
    assert f"recorded on NVIDIA H100 80GB HBM3 {date}" in out and "driver 580.159.04" in out
    lines = {l.get_label(): l for l in fig.axes[0].get_lines()}
    measured = [l for name, l in lines.items() if "recorded on NVIDIA H100 80GB HBM3" in name]
    assert len(measured) == 2 and "not recorded yet" in out  # the course's kernel is not
    assert sorted(measured[0].get_ydata().tolist() + measured[1].get_ydata().tolist()) == sorted(
        [2.56e-3, 5.12e-3, 1e-6, 1e-6]
    )


def test_results_table_shows_a_recorded_accuracy(monkeypatch, tmp_path):
    from course.bench import report

    write_accuracy_record(monkeypatch, tmp_path)
    text = report.markdown(tmp_path)
    assert "## fp8_accuracy" in text
    assert (
        "| 256 | 2.6e-03 | 1.0e-06 | 3.0e-02 | `python -m course.tools.record_fp8_accuracy` |"
        in text
    )


# --- what notebook 12 says -------------------------------------------------------------------


def notebook_text() -> str:
    import json

    cells = json.loads((ROOT / "notebooks" / "12_fp8.ipynb").read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return " ".join(text.split())


def pct(x: float, digits: int = 2) -> str:
    return f"{100 * x:.{digits}f}%"


def test_notebook_12_states_what_the_model_computes():
    from kernels import gemm_host
    from course.models.datasheet import datasheet

    text = notebook_text()
    assert "from 2^-9 to 448" in text and "from 2^-16 to 57,344" in text
    assert f"{round(datasheet('NVIDIA H100 80GB HBM3').tflops)} in bf16" in text
    assert f"**K = {gemm_host.mma_k(8)}**" in text and f"bf16's K = {gemm_host.mma_k(16)}" in text

    a, b, outliers = fp8.activations_and_weights(outlier_scale=100)
    errors = fp8.granularity_errors(a, b, outliers)
    ordinary = [e.ordinary_error for e in errors]
    assert f"{pct(min(ordinary))} to {pct(max(ordinary))}" in text
    exact = [e for e in errors if not e.power_of_two]
    assert (
        f"{pct(exact[0].gemm_error)}, {pct(exact[1].gemm_error)} and {pct(exact[2].gemm_error)}"
        in text
    )
    assert exact[0].gemm_error > exact[1].gemm_error > exact[2].gemm_error
    assert f"only {pct(exact[0].below_normal)} of them fall below" in text
    pow2 = sorted({pct(e.gemm_error) for e in errors if e.power_of_two})
    assert f"read {' or '.join(pow2)}" in text

    every = [e.gemm_error for e in errors] + ordinary
    assert f"({pct(min(every))} to {pct(max(every))} in section 2's table)" in text

    sweep = fp8.outlier_sweep()
    calm = sorted(
        {pct(sweep[s][i], 1) for s in ("tensorwise", "rowwise", "blockwise") for i in range(4)}
    )
    assert f"stays at {' or '.join(calm)}" in text
    assert f"tensorwise rises to {pct(sweep['tensorwise'][4], 1)}" in text
    last = [pct(sweep[s][5], 1) for s in ("tensorwise", "rowwise", "blockwise")]
    assert f"reads {last[0]}, rowwise {last[1]} and blocks {last[2]}" in text

    r = fp8.accumulation_errors()
    summed = fp8.accumulation_errors(cut="sum")
    k = r["k"]
    assert r["cut"] == "addends" and summed["cut"] == "sum"

    def growth(errors):  # per doubling of K, from the first K to the last
        return (errors[-1] / errors[0]) ** (1 / (len(errors) - 1))

    assert f"grows about {growth(summed['no promotion']):.2f}× per doubling" in text
    assert f"grows about {growth(r['no promotion']):.2f}× per doubling" in text
    assert f"({summed['no promotion'][k.index(4096)]:.1e} at K = 4096" in text
    assert f"{summed['no promotion'][k.index(32768)]:.1e} at K = 32768)" in text
    assert f"reads {r['no promotion'][k.index(4096)]:.1e} at K = 4096" in text
    assert f"{r['no promotion'][k.index(32768)]:.1e} at K = 32768 against" in text
    assert f"stays between {min(r['promotion']):.1e} and {max(r['promotion']):.1e}, against" in text

    rows = results.latest("fp8_accuracy").data["results"]
    fast = [row["fast accumulation"] for row in rows]
    promoted = [row["promotion"] for row in rows]
    assert [row["k"] for row in rows] == k
    assert f"grows from {fast[0]:.1e} at K = 256 to {fast[-1]:.1e} at K = 32768" in text
    assert f"about {growth(fast):.2f}× each time K doubles" in text
    assert f"between {min(promoted):.2e} and {max(promoted):.2e} at every K" in text
    assert f"the measured {fast[k.index(4096)]:.1e}" in text
    assert f"against {fast[-1]:.1e}" in text and f"against the measured {min(promoted):.2e}" in text


def test_notebook_12_states_the_recorded_timings():
    """Every percentage section 5 states is a recorded row's, at the shape it names."""
    from course.bench.report import pct_of_cublas, row_standing
    from course.lessons import fp8_lesson

    text = notebook_text()
    text = text[text.index("## 5 ·") :]
    recorded = fp8_lesson.recorded_timings()
    pct = {
        (name, r["problem"].split()[0]): f"{pct_of_cublas(r):.1f}%"
        for name, (rows, _) in recorded.items()
        for r in rows
    }
    level = {
        (name, r["problem"].split()[0]): row_standing(r)
        for name, (rows, _) in recorded.items()
        for r in rows
    }
    cube = {s: f"{s}x{s}x{s}" for s in (2048, 4096, 8192)}
    long = "4096x7168x16384"
    assert level[("tensor", cube[4096])] == level[("tensor", cube[8192])] == "level with cuBLAS"
    assert (
        f"({pct[('tensor', cube[4096])]} and {pct[('tensor', cube[8192])]})" in text
        and f"2048³ ({pct[('tensor', cube[2048])]}) and at 4096 × 7168 × 16384 "
        f"({pct[('tensor', long)]})"
        in text
    )
    assert f"{pct[('row', cube[2048])]} at 2048³ and level" in text
    assert all(level[("row", p)] == "level with cuBLAS" for p in (cube[4096], cube[8192], long))
    promoted = [pct[("tensor_promoted", p)] for p in (cube[4096], cube[8192], long)]
    assert (
        f"({promoted[0]} at 4096³, {promoted[1]} at 8192³, {promoted[2]} at 4096 × 7168 × 16384)"
        in text
    )
    block = [pct[("block", p)] for p in (cube[2048], cube[4096], cube[8192], long)]
    assert (
        f"({block[0]} at 2048³, {block[1]} at 4096³, {block[2]} at 8192³, {block[3]} at "
        "4096 × 7168 × 16384)" in text
    )


def test_notebook_12_states_the_recorded_fp8_counters():
    """The cycles notebook 12 quotes for the FP8 presets at 4096^3 are the recorded ones
    (results/profile.json, the table the notebook prints above them)."""
    from course.lessons import gemm_profiles

    text = notebook_text()
    rows = gemm_profiles.profile_rows(
        ("tensor", "tensor_promoted", "block"), kernel="fp8", cublas_beside="tensor"
    )
    cycles = {r["who"]: r["Elapsed Cycles"] for r in rows if r["clock"] == "base"}
    assert set(cycles) == {"tensor", "tensor_promoted", "block", "cuBLAS"}
    assert (
        f"The block preset takes {cycles['block']} cycles where the tensor preset takes "
        f"{cycles['tensor']} and cuBLAS {cycles['cuBLAS']}" in text
    )
    assert f"({cycles['tensor_promoted']} cycles," in text


def test_recorder_writes_both_accumulations_per_k(monkeypatch, tmp_path, capsys):
    """The recorder's plumbing on the CPU: torch._scaled_mm stood in for by the float64
    product, cut to 14 bits (fast) or not (promoted), so the two series must differ."""
    from course.tools import record_fp8_accuracy as rec

    def fake_scaled_mm(qa, qb, sa, sb, fast):
        c = (qa.double() * sa) @ (qb.double() * sb).T
        return fp8.truncate(c, 10 if fast else 40).float()

    use_machine(monkeypatch, H100)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(rec, "machine", lambda: H100)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(rec, "scaled_mm", fake_scaled_mm)
    monkeypatch.setattr(
        rec,
        "course_gemm",
        lambda qa, qb, sa, sb, every: fake_scaled_mm(qa, qb, sa, sb, every is None),
    )
    monkeypatch.setattr(rec, "KS", (256, 512))
    monkeypatch.setattr("sys.argv", [rec.__file__])  # as `python -m`, whatever runs pytest
    real = rec.measure
    monkeypatch.setattr(rec, "measure", lambda k, **kw: real(k, m=32, n=16, device="cpu", **kw))
    assert rec.main() == 0
    assert "K=   256" in capsys.readouterr().out
    got = results.latest("fp8_accuracy")
    assert got.command.startswith("python -m") and got.gpu == H100.gpu_name
    rows = got.data["results"]
    assert [r["k"] for r in rows] == [256, 512]
    for r in rows:
        assert r["fast accumulation"] > 10 * r["promotion"] and r["promotion"] < 1e-6
        assert 0.01 < r["rounding into e4m3"] < 0.1
        none, every4 = (r[rec.kernel_series(e)] for e in (None, 4))
        assert none > 10 * every4 and set(rec.KERNEL_PROMOTE_EVERY) == {None, 4, 1}


def test_accumulation_figure_overlays_the_course_kernel_when_recorded(
    monkeypatch, tmp_path, capsys
):
    from course.lessons import fp8_lesson
    from course.tools import record_fp8_accuracy as rec

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    use_machine(monkeypatch, H100)
    rows = [
        {
            "k": k,
            "fast accumulation": 1e-5 * k,
            "promotion": 1e-6,
            "rounding into e4m3": 0.03,
            **{rec.kernel_series(e): 2e-6 * (k if e is None else 1) for e in (None, 4)},
        }
        for k in (256, 512)
    ]
    results.record(
        "fp8_accuracy", {"results": rows}, command=fp8_lesson.RECORD_COMMAND, root=tmp_path
    )
    fig = fp8_lesson.accumulation_figure(ks=(256, 512), rows=8)
    out = capsys.readouterr().out
    assert "not recorded yet" not in out and "kernel: promote_every=4" in out
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    kernel = [l for l in labels if l.startswith("course kernel")]
    assert len(kernel) == 2 and all("recorded on NVIDIA H100 80GB HBM3" in l for l in kernel)
    assert set(fp8_lesson.KERNEL_SERIES) == {rec.kernel_series(e) for e in rec.KERNEL_PROMOTE_EVERY}
