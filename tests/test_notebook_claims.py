"""Numbers the notebooks' text states, recomputed from the results and models they come
from: a sentence that no longer matches its source fails here."""

import json

from course.bench import report
from course import ROOT
from course.runtime import results


def _markdown(name: str) -> str:
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_notebook_09_stage_sweeps_and_shared_memory():
    from kernels import wgmma_gemm

    text = " ".join(_markdown("09_pipelines.ipynb").split())

    def sweep(config):
        return results.latest(
            "stage_sweep",
            match=lambda r: r.data["kernel"] == "wgmma" and (r.data.get("config") or {}) == config,
        ).data["results"]

    for rows, claims in (
        (sweep({}), {2: 42, 3: 74, 4: 83}),
        (sweep({"tile_n": 128}), {2: 53, 3: 77, 4: 63}),
    ):
        for stages, claimed in claims.items():  # as a row prints it: the ratio of the rates
            pct = report.pct_of_cublas(next(r for r in rows if r["stages"] == stages))
            assert round(pct) == claimed, (stages, pct, claimed)
            assert f"{claimed}%" in text
    three = wgmma_gemm.Config(tile_n=128, stages=3).smem_bytes(2)
    four = wgmma_gemm.Config(tile_n=128, stages=4).smem_bytes(2)
    per_sm, reserved = 228 * 1024, 1024  # an H100 SM; the system's share per resident CTA
    assert f"{four:,} bytes ({four // 1024} KiB)" in text
    assert f"{three:,} bytes, {three // 1024} KiB" in text
    assert 2 * (three + reserved) <= per_sm < 2 * (four + reserved)
    assert f"{2 * (three + reserved):,}" in text and f"{2 * (four + reserved):,}" in text
    assert f"{per_sm:,}" in text


def test_notebook_15_explorer_draws_and_table():
    from course.sim import schedule_sim
    from course.widgets import schedule_explorer as explorer

    def ratio(draw):
        kw = explorer.config(4, 2, 2, "clc", "uneven tiles", 800, 100, draw=draw)
        clc = schedule_sim.simulate(**kw)
        static = schedule_sim.simulate(**(kw | {"scheduler": "static"}))
        return static.total_cycles / clc.total_cycles

    text = " ".join(_markdown("15_cta_pair_clc_gemm.ipynb").split())
    assert f"static is {ratio(0):.2f}x as long as CLC, so CLC loses by under 1%" in text
    assert 0.99 <= ratio(0) < 1 and round(ratio(2), 2) == 1.0
    uneven = schedule_sim.scheduler_lesson().rows[1]
    assert f"by {uneven[5]:.2f}x to {uneven[6]:.2f}x" in text and uneven[5] > 1


def _gemm_row(kernel: str, preset: str, problem: str, dtype: str) -> dict:
    """The latest recorded `course.bench gemm` row of one kernel's preset at one problem
    ("MxNxK") and operand type, as its notebook's table shows it."""
    wanted = f"{problem} {dtype}"

    def has(r):
        config = r.data.get("config") or {}
        rows = r.data.get("results", ())
        return (
            r.data.get("kernel") == kernel
            and config.get("preset") == preset
            and any(x["problem"] == wanted for x in rows)
        )

    rec = results.latest("gemm", match=has)
    return next(x for x in rec.data["results"] if x["problem"] == wanted)


E4M3 = "float8_e4m3fn"


def test_notebook_12_fp8_readings_match_their_rows():
    text = " ".join(_markdown("12_fp8.ipynb").split())
    # c0: notebook 11's tma_store preset at 2048^3 is below cuBLAS, not level with it
    eleven = _gemm_row("hopper", "tma_store", "2048x2048x2048", "bfloat16")
    assert report.row_standing(eleven) == "below cuBLAS"
    assert f"{report.pct_of_cublas(eleven):.1f}% at 2048³, below cuBLAS" in text
    # c28: the "unsteady" row whose two numbers both print as 98.8%
    odd = _gemm_row("fp8", "tensor", "4096x7168x16384", E4M3)
    pct, median, low = report.pct_of_cublas(odd), odd["rounds_pct"][0], odd["control_pct"][1]
    assert median < low <= pct, (median, low, pct)
    assert report.row_standing(odd).startswith("unsteady")
    assert f"lowest round is {low:.2f}%, the ratio {pct:.2f}%" in text
    assert f"median round {median:.2f}% just below" in text
    # c28: the row preset called level at 4096^3 only because the control ranged widely
    row = _gemm_row("fp8", "row", "4096x4096x4096", E4M3)
    assert report.row_standing(row) == "level with cuBLAS"
    control = row["control_pct"]
    assert (
        f"reads {report.pct_of_cublas(row):.1f}% (median round {row['rounds_pct'][0]:.1f}%)" in text
    )
    assert f"from {control[1]:.1f}% to {control[2]:.1f}%" in text
    # c28: block over tensor preset, each from its own run
    sizes = ("2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "4096x7168x16384")
    ratios = [
        100
        * _gemm_row("fp8", "block", s, E4M3)["kernel_tflops"]
        / _gemm_row("fp8", "tensor", s, E4M3)["kernel_tflops"]
        for s in sizes
    ]
    assert (
        f"{min(ratios):.0f}% to {max(ratios):.0f}% of the course's own tensor-scaled kernel" in text
    )


def test_notebook_13_numbers_agree_with_the_record():
    from course.models import waves as waves_model

    text = " ".join(_markdown("13_last_percent.ipynb").split())

    def part(name):
        return results.latest("last_percent", match=lambda r: r.data.get("part") == name).data

    # c5: the ratio of median times beside the median round, and the control's range
    sol = next(r for r in part("sol")["rows"] if r["problem"] == "4096x4096x4096 bfloat16")
    ms, pct = sol["ms"], sol["pct_of_cublas"]
    times = 100 * ms["cuBLAS"] / ms["course SOL"]
    assert f"{ms['cuBLAS']} / {ms['course SOL']} ms gives the course's kernel {times:.1f}%" in text
    assert f"median round reads {pct['course SOL'][0]:.1f}%" in text
    control = pct["cuBLAS (control)"]
    assert control[1] <= control[0] <= control[2]
    assert f"ran from {control[1]:.2f}% to {control[2]:.2f}%" in text
    # c9-c10: the fitted offset the text explains
    waves = part("waves")
    fit = [
        r
        for r in waves["rows"]
        if waves_model.of_problem(waves["m"], r["n"], waves["sms"]).waves > 1
    ]
    start, per = waves_model.fit_per_wave(
        [r["n"] for r in fit], [r["kernel_ms"] for r in fit], waves["m"], waves["sms"]
    )
    assert start < 0
    assert f"about {per * 1e3:.1f}·w − {-start * 1e3:.1f} µs" in text
    # c22: split-K's speed-up and the tail's saving, from the printed percentages and the times
    rows = {r["problem"]: r for r in part("split")["rows"]}
    few, edge = rows["1024x1024x16384 bfloat16"], rows["4096x4224x4096 bfloat16"]
    k2, solo = few["pct_of_cublas"]["split_k2"][0], few["pct_of_cublas"]["course SOL"][0]
    assert f"{k2:.1f}% of cuBLAS (rounds" in text and f"{k2 / solo:.2f} times as fast" in text
    assert f"give {few['ms']['course SOL'] / few['ms']['split_k2']:.2f})" in text
    tail, solo = edge["pct_of_cublas"]["split_tail"][0], edge["pct_of_cublas"]["course SOL"][0]
    assert f"{100 * (1 - solo / tail):.1f}% less time" in text
    assert (
        f"median times give {100 * (1 - edge['ms']['split_tail'] / edge['ms']['course SOL']):.1f}%"
        in text
    )
    # c22, c40: the same shape in two runs, both quoted
    swept = next(r for r in waves["rows"] if r["n"] == 4224)["pct_of_cublas"][0]
    assert f"SOL kernel at {swept:.1f}% for the same shape" in text
    assert f"79% of it (N = 4224) in the sweep of section 1 ({solo:.0f}% in section 2's run" in text
    # c25: graphed 4096^3, the median round and the ratio of the printed times
    big = next(s for s in part("launch")["sizes"] if s["size"] == 4096)
    graph, eager = big["graph"], big["eager"]
    assert (
        graph["kernel_us"] > 1.05 * eager["kernel_us"]
        and graph["cublas_us"] > 1.05 * eager["cublas_us"]
    )
    assert f"{graph['pct_of_cublas'][0]:.1f}%; the two median times" in text
    assert f"give {100 * graph['cublas_us'] / graph['kernel_us']:.1f}%" in text
