"""A comparison with cuBLAS carries its control, and the results table shows one row per
GPU and configuration, the latest."""
from course.bench import report
from course.bench.gemm_bench import PairedResult, standing
from course.bench.timing import Timing, round_ratios


def test_per_round_ratios_pair_each_round_and_cancel_drift():
    # the GPU slows down round by round; the kernel is always 2% faster than cuBLAS
    cublas = Timing("cublas", [1.00, 1.00, 1.10, 1.10, 1.20, 1.20])
    kernel = Timing("kernel", [t / 1.02 for t in cublas.samples_ms])
    assert round_ratios(cublas, kernel, reps=2) == (102.0, 102.0, 102.0)
    # pooled medians would mix rounds; per round, the ratio is exact
    assert cublas.round_medians(2) == [1.00, 1.10, 1.20]


def test_above_cuBLAS_only_outside_the_controls_range():
    control = (100.0, 97.5, 103.0)
    assert standing((104.0, 101.0, 107.0), control) == "above cuBLAS"
    assert standing((102.0, 96.0, 106.0), control) == "level with cuBLAS"
    assert standing((95.0, 93.0, 97.0), control) == "below cuBLAS"
    assert standing((104.0, 101.0, 107.0), ()) == "no control"


def test_a_result_reports_its_per_round_median_and_control():
    r = PairedResult("4096x4096x4096 bfloat16", "hopper", 0.18, 0.19, 760.0, 720.0, 0.01, 0.01,
                     4, 150, "eager", (105.5, 103.0, 108.0), (100.1, 98.0, 102.2))
    d = r.as_dict()
    assert d["pct_of_cublas"] == 105.5 and d["standing"] == "above cuBLAS"
    assert report.pct_with_control(d) == ("105.5% of cuBLAS (103.0-108.0%; control 100.1%, "
                                          "98.0-102.2%: above cuBLAS)")
    old = {"pct_of_cublas": 93.1}  # a record from before the control
    assert report.pct_with_control(old) == "93.1% of cuBLAS (no control)"


def test_the_table_keeps_the_latest_row_per_key_in_its_first_place():
    class Rec:
        def __init__(self, rows):
            self.rows = rows

    def fmt(rec):
        return rec.rows

    records = [Rec([(("h100", "a"), "a old"), (("h100", "b"), "b old")]),
               Rec([(("h100", "a"), "a new")]), Rec(["plain line"])]
    assert report.latest_rows(fmt, records) == ["a new", "b old", "plain line"]
