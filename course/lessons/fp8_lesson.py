"""Notebook 12 (FP8 on Hopper): the formats, their scales and their sums, each cell a call.

values_figure        every positive finite value of e4m3 and e5m2 on a log axis
formats_table        the two formats' properties, read off their bit patterns
rounding_examples    a few floats rounded into each format: the model beside torch
granularity_table    the GEMM's error for each scaling scheme on data with outliers
outlier_figure       the same against the outliers' size
wgmma_widths         what one FP8 WGMMA and one k-tile hold, from kernels.gemm_host
accumulation_figure  the accumulation model's error against K, with the GPU's
                     measurements (results/fp8_accuracy.json) when they are recorded
print_presets        the FP8 kernel's presets: scales, promotion, tile
check_live           every preset on an H100 against torch._scaled_mm and float64 (live)
check_executed       every preset's own code on the CPU executor, exact inputs (fallback)
timings_table        every preset against cuBLAS FP8 as recorded on the H100
presets_check        section 4's cell: check_live, else check_executed (a live cell)
"""

from __future__ import annotations

import math

import torch

from course.models import fp8
from course.notebook import Markdown, rows_table
from course.runtime import results
from course.runtime.live import Outcome, live_or_executed
from course.viz import fp8_pictures
from kernels import gemm_host

RECORD = "fp8_accuracy"
SCHEME_NAMES = {
    "tensorwise": "tensorwise",
    "rowwise": "rowwise",
    "blockwise": "blocks: 1×128 (A), 128×128 (B)",
}
RECORD_COMMAND = "python -m course.tools.record_fp8_accuracy"


def values_figure():
    return fp8_pictures.format_values(fp8.FORMATS)


def _number(x: float) -> str:
    if isinstance(x, float) and (x >= 1 or x == 0):
        return f"{x:g}"
    if isinstance(x, float):
        return f"2^{math.log2(x):.0f} = {x:.3g}"
    return str(x)


def formats_table() -> Markdown:
    """One row per property, one column per format."""
    props = [fp8.properties(f) for f in fp8.FORMATS]
    rows = [
        {"": key, **{p["format"]: _number(p[key]) for p in props}}
        for key in props[0]
        if key != "format"
    ]
    return rows_table(rows)


def rounding_examples(xs=(0.3, 1.0625, 300.0, 465.0, 1000.0, 70000.0, math.inf)) -> None:
    """Each float rounded into each format by the course's model and by torch's conversion
    (which, beyond e4m3's largest value, differs between torch versions)."""
    print(f"torch {torch.__version__}")
    print(
        f"{'float32':>10} | "
        + " | ".join(f"{f.name + ' (model / torch)':>24}" for f in fp8.FORMATS)
    )
    for x in xs:
        cells = []
        for f in fp8.FORMATS:
            model = float(fp8.round_to(f, torch.tensor(x, dtype=torch.float32).double()))
            theirs = float(torch.tensor(x, dtype=torch.float32).to(f.dtype).float())
            cells.append(f"{model:>11g} / {theirs:<10g}")
        print(f"{x:>10g} | " + " | ".join(f"{c:>24}" for c in cells))


def granularity_table(outlier_scale: float = 100.0, **data) -> list[fp8.SchemeError]:
    """The errors of each scheme, exact and power-of-two scales, on activations whose outlier
    channels are `outlier_scale` times larger; shows them as a table and returns them."""
    from IPython.display import display

    a, b, outliers = fp8.activations_and_weights(outlier_scale=outlier_scale, **data)
    errors = fp8.granularity_errors(a, b, outliers)
    print(
        f"A {tuple(a.shape)} with {len(outliers)} outlier channels {outlier_scale:g}x larger, "
        f"B {tuple(b.shape)}; e4m3 operands, products summed exactly (float64)"
    )
    display(
        rows_table(
            [
                {
                    "scales": SCHEME_NAMES[e.scheme],
                    "scale": "power of two" if e.power_of_two else "amax / 448",
                    "error of C = A·Bᵀ": f"{100 * e.gemm_error:.2f}%",
                    "error of the ordinary channels' part": f"{100 * e.ordinary_error:.2f}%",
                    "ordinary values of A below e4m3's smallest normal": (
                        f"{100 * e.below_normal:.2f}%"
                    ),
                }
                for e in errors
            ]
        )
    )
    return errors


def outlier_figure(magnitudes=(1.0, 1e1, 1e2, 1e3, 1e4, 1e5)):
    """Each scheme's error on the ordinary channels' part of C against the outliers' size:
    printed, then drawn."""
    sweep = fp8.outlier_sweep(magnitudes)
    print("outliers x " + "".join(f"{m:>8g}" for m in magnitudes))
    for scheme, errors in sweep.items():
        if scheme != "outlier scale":
            print(f"{scheme:>10} " + "".join(f"{100 * e:>7.1f}%" for e in errors))
    return fp8_pictures.outlier_errors(sweep)


def wgmma_widths() -> None:
    """K of one WGMMA and of one k-tile, 16-bit against FP8 (kernels.gemm_host)."""
    for name, bits in (("bf16", 16), ("e4m3/e5m2", 8)):
        k, tile = gemm_host.mma_k(bits), gemm_host.tile_k(bits)
        print(
            f"{name:>10}: one WGMMA takes K = {k:3d} ({gemm_host.MMA_K_BYTES} bytes of each row "
            f"of A and B); one k-tile (a 128-byte swizzle row) holds K = {tile:3d}: "
            f"{tile // k} WGMMAs"
        )


KERNEL_SERIES = (
    "fp8_gemm, promote_every=None",
    "fp8_gemm, promote_every=4",
    "fp8_gemm, promote_every=1",
)
GPU_SERIES = ("fast accumulation", "promotion")


def recorded_accuracy() -> tuple[dict | None, str, str]:
    """The newest GPU measurement as {"k": [...], series: [...]} (cuBLAS's two series, and the
    course kernel's where the record holds them), its label in the figure and its citation;
    or None, "" and a sentence saying that nothing is recorded yet."""
    rec = results.latest(RECORD)
    if rec is None:
        return (
            None,
            "",
            (
                "No GPU measurement is recorded yet: the figure shows the model alone. "
                f"`{RECORD_COMMAND}` records it on a GPU with FP8 tensor cores into "
                f"results/{RECORD}.json."
            ),
        )
    rows = rec.data["results"]
    series = {"k": [r["k"] for r in rows]}
    for name in GPU_SERIES + KERNEL_SERIES:
        if all(name in r for r in rows):
            series[name] = [r[name] for r in rows]
    return series, f"recorded on {rec.gpu} {rec.date}", rec.citation()


def accumulation_figure(**model_args):
    """The model's error against K (both places to cut the bits) beside the recorded
    measurement (or a note that there is none yet); prints where each comes from."""
    model = fp8.accumulation_errors(**model_args)
    other = fp8.accumulation_errors(**{**model_args, "cut": "sum"})
    measured, label, note = recorded_accuracy()
    print(
        f"MODEL: {model['keep_bits']} fraction bits kept, 32 products at a time; addends cut: "
        "the products and the running sum aligned on the largest, the bits below cut off "
        "before adding; sum cut: the running sum cut after each addition. Promoted into "
        f"float32 every {model['promote_every_k']} K, or never."
    )
    print(f"GPU: cuBLAS's FP8 GEMM, {label}; {note}" if measured else note)
    kernel = [s for s in KERNEL_SERIES if measured and s in measured]
    if measured and not kernel:
        print(
            "The course's own kernel is not recorded yet: "
            f"`{RECORD_COMMAND}` on an H100 records it beside cuBLAS."
        )
    by_k = {k: i for i, k in enumerate(measured["k"])} if measured else {}
    cols = ["addends cut: no promotion", "addends cut: promotion"]
    cols += ["sum cut: no promotion", "sum cut: promotion"]
    if measured:
        cols += ["cuBLAS: fast accumulation", "cuBLAS: promotion"]
        cols += [s.replace("fp8_gemm, ", "kernel: ") for s in kernel]
    print(f"{'K':>6} " + " ".join(f"{c:>{max(len(c), 9)}}" for c in cols))
    for i, k in enumerate(model["k"]):
        vals = [model["no promotion"][i], model["promotion"][i]]
        vals += [other["no promotion"][i], other["promotion"][i]]
        if k in by_k:
            vals += [measured[s][by_k[k]] for s in GPU_SERIES + tuple(kernel)]
        print(f"{k:>6} " + " ".join(f"{v:>{max(len(c), 9)}.1e}" for c, v in zip(cols, vals)))
    return fp8_pictures.accumulation_errors(model, measured, label, other=other)


# --- sections 4 and 5: the course's FP8 kernel -----------------------------------------------

KERNEL = "fp8"  # course.bench's name of kernels.fp8_gemm
PRESET_ORDER = ("tensor", "row", "tensor_promoted", "block")
# on the CPU executor: ragged in M, N and K (a last k-tile 16 wide), 4 k-tiles
EXECUTOR_SHAPE = (129, 264, 400)
LIVE_SHAPES = ((129, 264, 400), (1000, 1024, 528), (4096, 4096, 4096))


def print_presets(presets: dict) -> None:
    """One line per preset: its scales, how often it promotes, its CTA tile."""
    for name in PRESET_ORDER:
        cfg = presets[name]
        every = "never"
        if cfg.promotion_interval is not None:
            k_tiles = cfg.promotion_interval
            every = f"every {k_tiles} k-tile{'s' if k_tiles > 1 else ''} ({128 * k_tiles} K)"
        tile = f"{cfg.tile_m}x{cfg.tile_n}"
        print(f"{name:16s} scales {cfg.scales:6s}  promotes {every:22s}  tile {tile}")


def _reference_scaled_mm(a, b, sa, sb, scales):
    import torch

    if scales == "row":
        sa, sb = sa[:, None], sb[None, :]
    return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


def check_live(shapes=LIVE_SHAPES, presets=PRESET_ORDER) -> list[bool]:
    """On a GPU that runs sm_90a: every preset on each shape, random operands quantized with
    the preset's scales, C (bf16, poisoned with NaN first) against the float64 product of the
    dequantized operands, and (tensor, row) against torch._scaled_mm (cuBLAS)."""
    import torch

    from course.execute.ladder_runs import fp8_reference
    from kernels import fp8_gemm, fp8_scales
    from kernels.selftest import TOLERANCE, relative_error

    tol = TOLERANCE[torch.bfloat16]
    verdicts = []
    for name in presets:
        cfg = fp8_gemm.PRESETS[name]
        for m, n, k in shapes:
            torch.manual_seed(0)
            a, sa = fp8_scales.quantize(torch.randn(m, k, device="cuda"), cfg.scales)
            b, sb = fp8_scales.quantize(torch.randn(n, k, device="cuda"), cfg.scales, rows_of="b")
            out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
            fp8_gemm.run(a, b, sa, sb, out, cfg)
            x = {"a": a.cpu(), "b": b.cpu(), "a_scale": sa.cpu(), "b_scale": sb.cpu()}
            exact = fp8_reference(x, cfg.scales).cuda()
            err = relative_error(out, exact)
            line = f"{name:16s} {m}x{n}x{k}: rel. error {err:.2e} against float64"
            ok = err <= tol
            if cfg.scales in ("tensor", "row") and n % 16 == 0 and k % 16 == 0:
                theirs = relative_error(out, _reference_scaled_mm(a, b, sa, sb, cfg.scales))
                line += f", {theirs:.2e} against torch._scaled_mm"
                ok = ok and theirs <= tol
            elif cfg.scales in ("tensor", "row"):
                line += " (torch._scaled_mm takes only N and K that are multiples of 16)"
            print(f"{'PASS' if ok else 'FAIL'} {line} (tolerance {tol:.0e})")
            verdicts.append(ok)
    print(f"{sum(verdicts)}/{len(verdicts)} passed")
    return verdicts


def check_executed(shape=EXECUTOR_SHAPE, presets=PRESET_ORDER) -> list:
    """Without a Hopper GPU: every preset of kernels/fp8_gemm.py run on the course's CPU
    executor at a small ragged shape, on integer-valued e4m3 operands and power-of-two scales:
    every sum is exact, so C must equal the float64 reference rounded to bf16 (tolerance 0)."""
    from course.execute import ladder_runs
    from course.lessons.gemm_lesson import executor_line
    from kernels import fp8_gemm

    runs = []
    for name in presets:
        print(f"preset {name}:")
        runs.append(executor_line(ladder_runs.run_fp8_gemm(fp8_gemm.PRESETS[name], *shape)))
    return runs


def recorded_timings(presets=PRESET_ORDER) -> dict:
    """{preset: (rows, record)}: each preset's newest e4m3 rows against cuBLAS on the H100."""
    from course.lessons.gemm_lesson import recorded_rows

    return {name: recorded_rows(KERNEL, preset=name, dtype="e4m3") for name in presets}


def timings_table(presets=PRESET_ORDER) -> Markdown:
    """The recorded rows of every preset as one table (TFLOP/s, % of cuBLAS FP8, per round,
    control, standing), each preset's record cited under it; says so when none is recorded."""
    from course.bench.report import pct_of_cublas, pct_range, row_standing

    recorded = recorded_timings(presets)
    rows, cites = [], {}
    for name, (found, rec) in recorded.items():
        for r in found:
            rows.append(
                {
                    "preset": name,
                    "M×N×K": r["problem"].split()[0],
                    "kernel TFLOP/s": f"{r['kernel_tflops']:.0f}",
                    "cuBLAS FP8 TFLOP/s": f"{r['cublas_tflops']:.0f}",
                    "% of cuBLAS": f"{pct_of_cublas(r):.1f}%",
                    "per round: median (lowest-highest)": pct_range(r["rounds_pct"]),
                    "control: cuBLAS against itself": pct_range(r["control_pct"]),
                    "standing": row_standing(r),
                }
            )
        if rec is not None:
            cites[name] = rec.citation()
    if not rows:
        return Markdown(
            "Nothing recorded yet: `python -m course.bench gemm --kernel fp8 --dtype e4m3 "
            "--config preset=<preset> --record` measures a preset on an H100."
        )
    table = rows_table(rows).text
    notes = "\n".join(f"* {name}: {cite}" for name, cite in cites.items())
    return Markdown(f"{table}\n\nRecorded (each preset's own run):\n\n{notes}")


def presets_check() -> Outcome:
    """Section 4's cell. On an sm_90a GPU: every preset against float64 and cuBLAS
    (`check_live`). Elsewhere: every preset's own code on the CPU executor at EXECUTOR_SHAPE,
    on exact inputs (`check_executed`), then the recorded GPU output (label 12.fp8_check)."""
    return live_or_executed(
        "sm_90a",
        check_live,
        check_executed,
        "kernels/fp8_gemm.py (every preset)",
        label="12.fp8_check",
    )
