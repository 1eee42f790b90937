"""A comparison with cuBLAS carries its control, and the results table shows one row per
GPU and configuration, the latest."""

from course.bench import report
from course.bench.gemm_bench import PairedResult, standing
from course.bench.timing import Timing, round_ratios
from course.runtime import results


def test_per_round_ratios_pair_each_round_and_cancel_drift():
    # the GPU slows down round by round; the kernel is always 2% faster than cuBLAS
    cublas = Timing("cublas", [1.00, 1.00, 1.10, 1.10, 1.20, 1.20])
    kernel = Timing("kernel", [t / 1.02 for t in cublas.samples_ms])
    assert round_ratios(cublas, kernel, reps=2) == (102.0, 102.0, 102.0)
    # pooled medians would mix rounds; per round, the ratio is exact
    assert cublas.round_medians(2) == [1.00, 1.10, 1.20]


def test_above_cuBLAS_only_outside_the_controls_range():
    control = (100.0, 97.5, 103.0)
    assert standing(104.0, (104.0, 101.0, 107.0), control) == "above cuBLAS"
    assert standing(102.0, (102.0, 96.0, 106.0), control) == "level with cuBLAS"
    assert standing(95.0, (95.0, 93.0, 97.0), control) == "below cuBLAS"
    assert standing(104.0, (104.0, 101.0, 107.0), ()) == "no control"


def test_a_ratio_and_a_median_round_on_different_sides_are_not_called():
    """The recorded 4096^3 run of notebook 11's specialized kernel: 712.7 against 706.9
    TFLOP/s (100.8%), but a median round of 94.3%: neither above nor below."""
    control = (99.9, 99.23, 100.61)
    assert standing(100.8, (94.35, 93.36, 102.94), control) == report.DISAGREE
    assert standing(96.8, (99.78, 93.46, 101.89), (99.97, 97.41, 101.18)) == report.DISAGREE


def test_a_result_reports_the_ratio_of_its_two_rates_and_its_rounds():
    r = PairedResult(
        "4096x4096x4096 bfloat16",
        "hopper",
        0.18,
        0.19,
        760.0,
        720.0,
        0.01,
        0.01,
        4,
        150,
        "eager",
        (105.5, 103.0, 108.0),
        (100.1, 98.0, 102.2),
    )
    d = r.as_dict()
    assert d["pct_of_cublas"] == round(100 * 0.19 / 0.18, 1) == 105.6
    assert d["standing"] == "above cuBLAS"
    assert report.pct_with_control(d) == (
        "105.6% of cuBLAS (per round 105.5%, 103.0-108.0%; "
        "control 100.1%, 98.0-102.2%): above cuBLAS"
    )
    old = {"pct_of_cublas": 93.1}  # a record from before the control, without its rates
    assert report.pct_with_control(old) == "93.1% of cuBLAS (no control)"


def _recorded_rows():
    for family in ("gemm", "stage_sweep"):
        for rec in results.load(family):
            yield from rec.data["results"]


def test_every_printed_percentage_is_the_ratio_of_the_rates_beside_it():
    """No row may look like wrong arithmetic: the % printed is kernel / cuBLAS TFLOP/s, to
    the digit shown (a median of per-round ratios, which can differ, is labelled 'per round')."""
    rows = list(_recorded_rows())
    assert len(rows) > 50
    for row in rows:
        printed = report.pct_with_control(row)
        pct = float(printed.split("%")[0])
        assert pct == round(100 * row["kernel_tflops"] / row["cublas_tflops"], 1), printed
        if row.get("rounds_pct"):
            assert f"per round {row['rounds_pct'][0]:.1f}%" in printed


def test_the_ladder_names_the_cublas_each_cell_was_measured_against():
    """cuBLAS varies between records: a ladder cell shows the cuBLAS its % is of."""
    from course.lessons import ladder

    table = ladder.table()
    for rung in ladder.rungs():
        for size in (2048, 4096, 8192):
            row = rung.at(size)
            if row:
                assert (
                    f"{report.pct_of_cublas(row):.0f}% ({row['kernel_tflops']:.0f} of "
                    f"{row['cublas_tflops']:.0f})"
                ) in table


def test_the_table_keeps_the_latest_row_per_key_in_its_first_place():
    class Rec:
        def __init__(self, rows):
            self.rows = rows

    def fmt(rec):
        return rec.rows

    records = [
        Rec([(("h100", "a"), "a old"), (("h100", "b"), "b old")]),
        Rec([(("h100", "a"), "a new")]),
        Rec(["plain line"]),
    ]
    assert report.latest_rows(fmt, records) == ["a new", "b old", "plain line"]


def test_the_guide_takes_a_recorded_row_apart_with_its_own_numbers(capsys):
    from course.lessons import timing_rows

    row = timing_rows.explain_recorded("naive", "2048x2048x2048 bfloat16")
    out = capsys.readouterr().out
    k, c = row["kernel_tflops"], row["cublas_tflops"]
    assert f"{k:.1f} / {c:.1f}: the ratio of the two numbers before it" in out
    assert f"{100 * k / c:.1f}% of cuBLAS" in out and report.row_standing(row) in out


def test_the_guide_shows_a_recorded_row_of_each_verdict_it_can_find(capsys):
    from course.lessons import timing_rows

    examples = timing_rows.print_verdict_examples()
    assert {"below cuBLAS", report.DISAGREE} <= set(examples)
    for verdict, (_, row) in examples.items():
        assert report.row_standing(row) == verdict
