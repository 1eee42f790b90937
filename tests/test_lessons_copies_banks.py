"""Notebooks 04 and 05's lessons: the copy ceiling, the copies' instructions and
measurement (recorded, or the model's bound), the TiledCopy's description, the bank
model's tables, its check against CuTe DSL, and the figures."""

import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course.bench import bank_conflicts as bench_banks  # noqa: E402
from course.cute.tiled_copy import tiled_copy_map  # noqa: E402
from course.lessons import bank_measurement, banks_lesson, ceilings_lesson, copies_lesson  # noqa: E402
from course.models import smem_access as sa  # noqa: E402
from course.models.swizzle import Swizzle  # noqa: E402
from course.runtime import live  # noqa: E402
from course.viz.bank_pictures import bank_maps  # noqa: E402


def test_copy_ceiling_is_the_recorded_one_with_its_citation(cpu_results, capsys):
    cpu_results("ceilings")
    out = ceilings_lesson.copy_ceiling()
    assert out.mode is live.Mode.RECORDED
    text = capsys.readouterr().out
    assert f"copy ceiling: {out.value['copy']['gbps']:,.0f} GB/s" in text
    assert out.record.citation() in text


def test_describe_tiled_copy_names_each_threads_cells(capsys):
    copy = tiled_copy_map((4, 8), (1, 4), (4, 1), (1, 4))
    copies_lesson.describe_tiled_copy(copy, threads=(1, 31))
    text = capsys.readouterr().out
    assert "T01 owns rows 4-7 of column 0" in text and "T31 owns rows 12-15 of column 7" in text
    assert copy.description in text and copy.tv_layout in text


def test_memory_ops_are_counted_per_instruction_and_width(capsys):
    lines = [
        "/*0010*/ LDG.E.128 R4, desc[UR4][R2.64] ;",
        "/*0020*/ LDG.E.128 R8, [R2+0x10] ;",
        "/*0030*/ STG.E R0, [R6] ;",
    ]
    art = types.SimpleNamespace(arch="sm_90a", sass_lines=lambda pattern: lines)
    ops = copies_lesson.print_memory_ops({"demo": art})
    assert ops["demo"] == {"LDG.E.128": 2, "STG.E": 1}
    assert "demo      (sm_90a): 2 x LDG.E.128, 1 x STG.E" in capsys.readouterr().out


@pytest.mark.compile
def test_copy_kernels_compile_to_the_expected_loads(capsys):
    arts = copies_lesson.compile_variants("sm_90a")
    ops = copies_lesson.print_memory_ops(arts)
    assert ops["vector"]["LDG.E.128"] == 1 and ops["tiled"]["LDG.E.128"] == 4
    assert not any(op.startswith("LDGSTS") for op in ops["tiled"])
    assert any(op.startswith("LDGSTS") for op in ops["cp_async"])
    copies_lesson.show_cp_async(arts["cp_async"])
    assert "LDGSTS" in capsys.readouterr().out.split("SASS:")[-1]


def test_the_coalescing_bound_ranks_strided_last():
    bound = copies_lesson.coalescing_prediction()
    assert all(0 < eff <= 1 for eff in bound.values())
    assert bound["strided"] < bound["scalar"] <= bound["vector"] == 1


def test_copies_before_a_record_show_the_models_bound_and_draw_nothing(cpu_results, capsys):
    bw = copies_lesson.measure_copies()
    assert bw.mode is live.Mode.SIMULATED
    text = capsys.readouterr().out
    assert copies_lesson.RECORD_COMMAND in text and "at most  12.5% of moved bytes" in text
    assert copies_lesson.bandwidth_figure(bw) is None
    copies_lesson.tiled_vs_cp_async(bw)
    assert "once an H100 run is recorded" in capsys.readouterr().out


def test_recorded_copies_are_tabled_and_drawn(cpu_results, capsys):
    cpu_results("copies")
    bw = copies_lesson.measure_copies()
    assert bw.mode is live.Mode.RECORDED
    out = capsys.readouterr().out
    assert f"best: {bw.value['best']} at" in out and "spread" in out
    assert ("Above 100%" in out) == (bw.value["best_pct_of_ceiling"] > 100)
    fig = copies_lesson.bandwidth_figure(bw)
    assert len(fig.axes[0].patches) == len(bw.value["variants"])
    assert any("copies measured on" in t.get_text() for t in fig.texts)
    copies_lesson.tiled_vs_cp_async(bw)
    rows = {r["variant"]: r for r in bw.value["variants"]}
    assert f"{rows['cp_async']['gbps']:7,.0f} GB/s" in capsys.readouterr().out
    plt.close("all")


@pytest.mark.parametrize("sw", [Swizzle(3, 2, 3), Swizzle(2, 1, 3)])
def test_the_swizzle_model_agrees_with_cute(sw, capsys):
    assert banks_lesson.compare_with_cute(sw)
    assert "course.models.swizzle agrees: True" in capsys.readouterr().out


def test_padding_and_swizzling_remove_the_transposes_conflicts():
    totals = banks_lesson.print_cases(
        ["transpose_rows", "transpose_rows_padded", "transpose_rows_swizzled"]
    )
    assert totals["transpose_rows"].conflicts > 0
    assert (
        totals["transpose_rows_padded"].conflicts
        == totals["transpose_rows_swizzled"].conflicts
        == 0
    )


def test_every_tma_mode_is_conflict_free_and_its_plain_layout_is_not(capsys):
    totals = banks_lesson.print_tma_cases()
    assert {n for n in totals if n.endswith("_plain")}
    for name, t in totals.items():
        assert (t.conflicts > 0) == name.endswith("_plain"), name
        assert t.wavefronts == t.ideal + t.conflicts


def test_tma_modes_are_listed_with_cutes_atoms(capsys):
    atoms = banks_lesson.print_tma_modes()
    assert list(atoms) == ["none", "32B", "64B", "128B"]
    lines = capsys.readouterr().out.splitlines()
    assert "rows of 128 B" in lines[3] and atoms["128B"][0] in lines[3]


@pytest.mark.compile
def test_each_load_width_compiles_to_its_lds(capsys):
    found = bank_measurement.print_load_widths(bank_measurement.load_widths("sm_90a"))
    assert {vec: sass for vec, (_, sass) in found.items()} == {
        1: ["LDS"],
        2: ["LDS.64"],
        4: ["LDS.128"],
    }


def test_prediction_table_has_a_row_per_case(capsys):
    predicted = bench_banks.predict()
    bank_measurement.print_prediction(predicted)
    assert len(capsys.readouterr().out.splitlines()) == len(predicted) + 1


def test_banks_before_a_record_are_the_prediction_only(cpu_results, capsys):
    predicted = bench_banks.predict()
    meas = bank_measurement.measure_banks(predicted)
    assert meas.mode is live.Mode.SIMULATED
    assert [r["case"] for r in meas.value["cases"]] == list(predicted)
    text = capsys.readouterr().out
    assert bank_measurement.RECORD_COMMAND in text and "agrees with the model" not in text
    figs = bank_measurement.bank_figures(meas)
    assert len(figs) == 1 and any("model only" in t.get_text() for t in figs[0].texts)
    plt.close("all")


def test_recorded_banks_report_the_agreement(cpu_results, capsys):
    cpu_results("bank_conflicts")
    meas = bank_measurement.measure_banks(bench_banks.predict())
    agree = [r["agree"] for r in meas.value["cases"]]
    assert (
        f"agrees with the model on {agree.count(True)} of {len(agree)} cases"
        in capsys.readouterr().out
    )
    assert len(bank_measurement.bank_figures(meas)) == 2
    plt.close("all")


def test_phase_zero_maps_outline_the_same_cells_in_both_tiles():
    fig = banks_lesson.phase_zero_maps(("tma_128B_plain", "tma_128B"), rows=8, elems=8)
    assert len(fig.axes) == 2
    for ax, name in zip(fig.axes, ("tma_128B_plain", "tma_128B")):
        assert ax.get_title().startswith(sa.case(name).title) and "phase 0" in ax.get_title()
        assert len(ax.patches) == 64
    plt.close(fig)


def test_bank_maps_draw_one_panel_per_tile_with_its_caption():
    tiles = [sa.case("transpose_rows").tile, sa.case("transpose_rows_swizzled").tile]
    fig = bank_maps(tiles, ["a", "b"], lanes={(0, 0): 0}, source="src")
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
    assert [len(ax.patches) for ax in fig.axes] == [1, 1]
    assert any(t.get_text() == "src" for t in fig.texts)
    plt.close(fig)
