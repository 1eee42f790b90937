"""Notebook 00's lessons: the ceilings (recorded here), the roofline and tiling table of
the GEMM model, and the vector add's check (judged on torch's add, right and wrong),
compile view and compile cache."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course.lessons import ceilings_lesson, vector_add_lesson  # noqa: E402
from course.models.datasheet import datasheet  # noqa: E402
from course.models.gemm_model import Gemm  # noqa: E402
from course.runtime import results  # noqa: E402

from .helpers import CPU, use_machine  # noqa: E402


def test_machine_ceilings_come_from_the_record_with_its_gpu(monkeypatch, capsys):
    use_machine(monkeypatch, CPU)
    ceil = ceilings_lesson.machine_ceilings()
    rec = results.latest("ceilings")
    assert ceil.gpu == rec.gpu and ceil.source == rec.citation()
    assert ceil.ridge == pytest.approx(ceil.matmul_tflops * 1e3 / ceil.bandwidth_gbps, rel=1e-6)
    out = capsys.readouterr().out
    assert f"{ceil.matmul_tflops:7.1f} TFLOP/s" in out and "(measured)" in out
    ds = datasheet(rec.gpu)  # the recorded GPU is in the datasheet table
    assert f"{100 * ceil.matmul_tflops / ds.tflops:.0f}% (matmul)" in out
    assert (
        f"{100 * ceil.bandwidth_gbps / ds.gbps:.0f}% (copy)" in out
        and "NVIDIA H100 datasheet" in out
    )


def test_the_datasheet_table_names_its_source_and_knows_only_listed_gpus():
    h100 = datasheet("NVIDIA H100 80GB HBM3")
    assert (h100.tflops, h100.gbps) == (989.4, 3350.0) and "NVIDIA H100 datasheet" in h100.source
    assert datasheet("GPU X") is None and datasheet(None) is None
    text = ceilings_lesson.datasheet_fractions(
        ceilings_lesson.Ceilings(700.0, 3000.0, 233.3, "GPU X", "test source")
    )
    assert text.startswith("no datasheet entry for GPU X")


def test_gemm_roofline_places_the_model_and_cublas():
    ceil = ceilings_lesson.Ceilings(700.0, 3000.0, 233.3, "GPU X", "test source")
    g = Gemm(4096, 4096, 4096)
    fig = ceilings_lesson.gemm_roofline(ceil, g, tile=128, measured=8192)
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    # GPU X has no datasheet entry: the measured roofs only
    assert labels == [
        "measured (cuBLAS / copy): 700 TFLOP/s, 3,000 GB/s",
        "1x1 tiles: one thread per cell of C, no reuse",
        "128x128 tiles, no L2 reuse",
        "4096^3, each operand read once",
        "cuBLAS 8192^3 (measured)",
    ]
    assert ax.get_title() == "Roofline of GPU X"
    assert any(t.get_text() == "ceilings test source" for t in fig.texts)
    cublas = ax.get_lines()[-1]
    assert (
        cublas.get_ydata()[0] == 700.0
        and cublas.get_xdata()[0] == Gemm(8192, 8192, 8192).intensity()
    )
    plt.close(fig)


def test_gemm_roofline_draws_the_datasheet_beside_the_measured_roofs():
    ceil = ceilings_lesson.Ceilings(741.0, 3008.0, 246.3, "NVIDIA H100 80GB HBM3", "test source")
    fig = ceilings_lesson.gemm_roofline(ceil, Gemm(4096, 4096, 4096))
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:2] == [
        "datasheet: 989 TFLOP/s, 3,350 GB/s",
        "measured (cuBLAS / copy): 741 TFLOP/s, 3,008 GB/s",
    ]
    datasheet_roof, measured_roof = ax.get_lines()[:2]
    assert max(datasheet_roof.get_ydata()) == 989.4 and max(measured_roof.get_ydata()) == 741.0
    assert ax.get_ylim()[1] > 989.4
    plt.close(fig)


def test_tiling_table_rows_follow_the_model():
    g = Gemm(1024, 1024, 1024)
    lines = ceilings_lesson.tiling_table(g, tiles=(1, 64)).splitlines()
    assert len(lines) == 4 and lines[0].split() == ["tile", "CTAs", "DRAM", "traffic", "FLOP/byte"]
    assert lines[2].split()[:2] == ["64x64", f"{g.tiles(64, 64):,}"]
    assert lines[2].split()[-1] == f"{g.intensity(64, 64):.1f}"
    assert lines[3].split()[0] == "ideal" and lines[3].split()[-1] == f"{g.intensity():.1f}"


def test_vector_add_check_passes_torch_and_catches_a_missed_element(capsys):
    def add(a, b, c):
        torch.add(a, b, out=c)

    assert all(v.ok for v in vector_add_lesson.check(add, sizes=(1, 257), device="cpu"))

    def forgets_the_last(a, b, c):
        c[:-1] = a[:-1] + b[:-1]

    verdicts = vector_add_lesson.check(forgets_the_last, sizes=(257,), device="cpu")
    assert not any(v.ok for v in verdicts)  # the poisoned element is never written
    assert "n=257" in capsys.readouterr().out


@pytest.mark.compile
def test_vector_add_compiles_to_a_load_add_store(capsys):
    vector_add_lesson.compiled("sm_90a")
    out = capsys.readouterr().out
    assert "add.f32" in out and "FADD" in out and "STG.E" in out


def test_a_second_request_is_answered_by_the_cache(monkeypatch, capsys):
    use_machine(monkeypatch, CPU)
    from kernels.compile_cache import COMPILE_LOG

    vector_add_lesson.compile_again()  # first request: may compile
    compiles = len(COMPILE_LOG)
    vector_add_lesson.compile_again()
    assert len(COMPILE_LOG) == compiles  # nothing compiled the second time
    assert "(cached)" in capsys.readouterr().out


@pytest.mark.gpu
def test_vector_add_is_checked_and_timed_on_a_gpu():
    gbps = vector_add_lesson.check_and_time(3000.0, n=2**20)
    assert gbps["cute"] > 0 and gbps["torch"] > 0
