"""Numbers and claims in the prose of notebooks 00-06 that a computation or a recorded result
decides: each is checked against that computation, so the text cannot drift from it."""

import json

import pytest

from course import ROOT
from course.runtime import results


def _prose(number: str) -> str:
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    return " ".join(
        " ".join("".join(c["source"]).split())
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "markdown"
    )


def test_00_cublas_reads_above_the_measured_roof_at_4096_and_only_below_at_8192(capsys):
    from course.lessons import ceilings_lesson

    ceil = ceilings_lesson.machine_ceilings()  # the recorded H100's (no GPU in CI)
    roof = results.latest("ceilings", gpu="H100").data["matmul"]["tflops"]
    rates = ceilings_lesson.cublas_in_recorded_runs(ceil=ceil)
    lo, hi, runs, above = rates[4096]
    # "a few percent above this roof in most runs and below it in the rest"
    assert runs / 2 < above < runs and lo < roof < hi <= 1.06 * roof
    assert rates[2048][3] == 0 and rates[8192][3] == 0 and roof > rates[8192][1]
    assert (
        "at 4096³ cuBLAS has read a few percent above this roof in most runs and below it in "
        "the rest, at 2048³ and 8192³ only below it" in _prose("00")
    )
    out = capsys.readouterr().out
    assert f"above the {roof:.1f} roof in {above} of them, by at most" in out
    assert "recorded on NVIDIA H100 80GB HBM3, 2026-" in out


def test_01_loop_branches_are_as_the_text_counts_them():
    from course.lessons import dsl_basics_lesson

    rows = {r["loop"]: r for r in dsl_basics_lesson.loop_table()}
    assert [
        (r["add.f32"], r["branches"], r["of them backward (a loop)"]) for r in rows.values()
    ] == [(8, 0, 0), (1, 2, 1), (5, 5, 2)]
    assert "One add and two branches" in _prose("01") and "Five adds and five branches" in _prose(
        "01"
    )


def test_01_occupancy_claims_follow_from_the_compiled_registers():
    from course.lessons import dsl_basics_lesson
    from course.models.occupancy import occupancy

    registers = {r["kernel"]: r["registers"] for r in dsl_basics_lesson.local_memory_report()}
    live = registers["live_values, 200 values"]
    occ = occupancy(256, live)
    text = _prose("01")
    assert (
        f"The 200-value kernel needs {live} registers per thread, so only {occ.warps} of its "
        f"warps fit"
        in text
        and f"{100 * occ.fraction:.3g}% occupancy" in text
    )
    assert occupancy(128, 64, 100 * 1024).ctas == 2 and "100 KiB each leaves room for two" in text


def test_03_the_naive_gemm_holds_one_cta_per_sm():
    from course.lessons import tiling_lesson

    occ = tiling_lesson.naive_occupancy()
    assert occ.ctas == 1 and occ.warps == 8
    assert "an SM holds one CTA of it at a time" in _prose("03") and "its 8 warps" in _prose("03")


def test_03_the_clock_statements_are_backed_by_recorded_rows():
    rows = [r for rec in results.load("gemm") if "H100" in rec.gpu for r in rec.data["results"]]
    clocks = [(r["problem"], r["sm_clock"]) for r in rows if r.get("sm_clock")]
    assert any(c["median_mhz"] == 1965 and c["power_capped"] == 1.0 for _, c in clocks)
    assert max(c["max_mhz"] for _, c in clocks) == 1980
    assert any(p.startswith("8192x") and c["median_mhz"] < 1700 for p, c in clocks)
    assert "power-capped in 100% of samples* at 1965 MHz is a clock one 15 MHz step" in _prose("03")


def test_04_strided_costs_between_its_bytes_and_its_lines(capsys):
    from course.lessons import copies_lesson

    cost = copies_lesson.strided_cost(copies_lesson.measure_copies())
    assert cost["bytes"] == 8 and cost["lines"] == 32 and 8 < cost["time"] < 32
    assert "between 8 times (bytes) and 32 times (lines)" in _prose("04")


def test_04_the_three_vector_copies_land_within_two_percent():
    rec = results.latest("copies", gpu="H100")
    pct = {r["variant"]: r["pct_of_ceiling"] for r in rec.data["variants"]}
    near = [pct[v] for v in ("vector", "tiled", "cp_async")]
    assert max(near) - min(near) < 2 and min(near) > 95


def test_05_padding_costs_124_bytes():
    from course.models import smem_access as sa

    plain, padded = (sa.case(n).tile.bytes for n in ("transpose_rows", "transpose_rows_padded"))
    assert padded - plain == 124 and f"{padded} bytes instead of {plain}, 124 more" in _prose("05")


def test_05_a_32_way_conflict_costs_about_20_times_and_a_cycle_per_wavefront(capsys):
    from course.bench import bank_conflicts
    from course.lessons import bank_measurement

    cost = bank_measurement.conflict_cost(bank_measurement.measure_banks(bank_conflicts.predict()))
    assert round(cost["time_ratio"]) == 20 and cost["wavefront_ratio"] == 32
    assert "costs about 20 times the padded one, not 32" in _prose("05")
    cycle_ns = 1 / 1.98  # one cycle at the H100's top clock
    assert all(0.9 * cycle_ns < ns < 1.15 * cycle_ns for ns in cost["ns_per_wavefront"].values())


@pytest.mark.parametrize("mode, row_bytes", [("32B", 32), ("64B", 64), ("128B", 128)])
def test_05_each_swizzle_mode_is_conflict_free_on_rows_of_its_own_length(mode, row_bytes):
    from course.models import smem_access as sa

    case = sa.case(f"tma_{mode}")
    assert case.tile.layout.shape[1] * 2 == row_bytes and case.predict().conflicts == 0
