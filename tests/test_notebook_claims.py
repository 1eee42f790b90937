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


def test_notebook_12_reading_the_table_quotes_the_fp8_record():
    """Section 6's reading of the steps table: each preset's range over the three shapes is
    the recorded median rounds', and the overlapped preset's gain over the staged one is
    claimed only where the record shows it."""
    text = " ".join(_markdown("12_fp8.ipynb").split())
    record = results.latest("last_percent", match=lambda r: r.data.get("part") == "fp8").data
    rows = {r["problem"].split()[0]: r["pct_of_tensor"] for r in record["rows"]}

    def spans(name):
        medians = [row[name][0] for row in rows.values()]
        return f"{min(medians):.1f}% to {max(medians):.1f}%"

    for name in ("block_prefetch", "block_staged", "block_overlapped"):
        assert f"`{name}` runs at {spans(name)}" in text, name
    assert f"({spans('tensor, 128x128 tiles')})" in text
    assert f"more ({spans('promoted every k-tile')})" in text
    gains = {p: row["block_overlapped"][0] - row["block_staged"][0] for p, row in rows.items()}
    assert f"gains {gains['4096x4096x4096']:.1f} point more at 4096³" in text
    assert f"and {gains['4096x7168x16384']:.1f} at 4096 × 7168 × 16384" in text
    assert f"read {-gains['8192x8192x8192']:.1f} points below `block_staged`" in text
    control = rows["8192x8192x8192"]["cuBLAS (control)"]
    assert f"from {control[1]:.1f}% to {control[2]:.1f}% of the tensorwise kernel" in text
    assert "not met** at any of the three shapes" in text
    assert max(row["block_overlapped"][0] for row in rows.values()) < 90


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


# ---------------------------------------------------------------- notebooks 05-08 (issue 42)


def _cells(name: str) -> list[dict]:
    return json.loads((ROOT / "notebooks" / name).read_text())["cells"]


def _stored_outputs(cells: list[dict]) -> str:
    text = []
    for cell in cells:
        for out in cell.get("outputs", []):
            text.append("".join(out.get("text", "")))
            for kind in ("text/plain", "text/markdown", "text/html"):
                text.append("".join(out.get("data", {}).get(kind, "")))
    return "".join(text)


def test_notebook_05_names_tma_wgmma_umma_and_ldmatrix_where_it_first_uses_them():
    cells = [" ".join("".join(c["source"]).split()) for c in _cells("05_swizzle.ipynb")]
    markdown = [i for i, c in enumerate(_cells("05_swizzle.ipynb")) if c["cell_type"] == "markdown"]
    defined = {
        "TMA": "**TMA**, the Tensor Memory Accelerator",
        "WGMMA": "**WGMMA** (notebook 10): Hopper's *warpgroup* MMA",
        "UMMA": "**UMMA** (notebooks 14-15): CUTLASS's name for Blackwell's `tcgen05.mma`",
        "ldmatrix": "`ldmatrix` (notebook 07) is the warp instruction",
    }
    for term, definition in defined.items():
        first = next(i for i in markdown if term in cells[i])
        assert definition in cells[first], (term, first, cells[first][:200])
    modes = [i for i in markdown if "swizzle modes" in cells[i]]  # named ahead, said later
    assert "(none, 32B, 64B, 128B; section 5 says what they are)" in cells[modes[0]]
    assert any("**swizzle modes**, **none, 32B, 64B and 128B**" in cells[i] for i in modes)


def test_notebook_11_ladder_cells_carry_the_verdict_of_their_row():
    """The whole ladder is printed once, in notebook 11 (07, 09 and 10 print their own rows)."""
    from course.lessons import ladder

    table = ladder.table()
    stored = _stored_outputs(_cells("11_hopper_sol.ipynb"))
    unsteady = 0
    for rung in ladder.rungs():
        for size in (2048, 4096, 8192):
            row = rung.at(size)
            if not row:
                continue
            cell = (
                f"{report.pct_of_cublas(row):.0f}% ({row['kernel_tflops']:.0f} of "
                f"{row['cublas_tflops']:.0f}), {ladder.verdict(row)}"
            )
            assert cell in table and cell in stored, cell
            if report.row_standing(row) == report.DISAGREE:
                unsteady += 1
                assert f"unsteady (median round {row['rounds_pct'][0]:.1f}%)" in cell
    assert unsteady, "the 4096^3 warp-specialized row is unsteady in its record"
    assert ladder.VERDICT_NOTE in table


def test_notebook_07_recorded_configs_name_their_gpu_and_date():
    from course.lessons.gemm_lesson import recorded_rows

    text = " ".join(_markdown("07_tiled_gemm.ipynb").split())
    configs = [
        {},
        {"stages": 4},
        {"stages": 2},
        {"tile_n": 128, "warps_n": 2, "stages": 4},
        {"tile_k": 32, "stages": 5},
    ]
    recs = [recorded_rows("sm80", config=c)[1] for c in configs]
    assert {(r.gpu, r.date) for r in recs} == {("NVIDIA H100 80GB HBM3", "2026-11-24")}
    assert "Recorded on an H100 80GB HBM3 on 2026-11-24" in text
    stored = _stored_outputs(_cells("07_tiled_gemm.ipynb"))
    for rec in recs:
        assert rec.citation() in stored


def test_notebooks_06_to_08_print_no_kernel_solution_under_its_exercise():
    """The course's own version of a kernel exercise is shown only once it is solved in the
    session, so no stored output (GitHub, nbviewer) holds it; and 07.smem asks for a ring the
    page does not print."""
    from course import source
    from course.exercises.check import check
    from kernels import mma_atom, sm80_gemm, tma

    for name, obj, region, marks in (
        ("06_mma_atoms.ipynb", mma_atom._Kernels.gemm_kernel, "micro-gemm", ("make_fragment",)),
        ("07_tiled_gemm.ipynb", sm80_gemm.Sm80Gemm.mainloop, "main-loop", ("wait_group", "kb")),
        ("08_tma.ipynb", tma._arm_and_load, None, ("expect_tx", "tma_bar_ptr")),
    ):
        cells = _cells(name)
        body = [line.strip() for line in source.excerpt(obj, region).splitlines()]
        calls = [line for line in body if any(m in line for m in marks)]
        assert calls, name
        stored = _stored_outputs(cells)
        for line in calls:
            assert line not in stored, (name, line)
    cells = _cells("07_tiled_gemm.ipynb")
    assert "147,456" in _stored_outputs(cells)  # the default ring, printed by section 0
    assert not check("07.smem", 147456, quiet=True).ok
    assert check("07.smem", (256 + 128) * 32 * 2 * 5, quiet=True).ok
    assert f"{(256 + 128) * 32 * 2 * 5:,}" not in _stored_outputs(cells)
    hint = check("08.arm_and_load", ..., quiet=True).message
    assert "tma_bar_ptr" not in hint and "mbarrier_arrive_and_expect_tx" not in hint


def test_notebook_08_copy_counts_are_warp_instructions():
    from course.lessons import tma_lesson
    from kernels import sm80_gemm

    cfg = sm80_gemm.Config()
    counts = tma_lesson.copy_instructions(cfg)
    assert counts["cp.async"] == 3072 and counts["warp instructions"] == 96
    stored = _stored_outputs(_cells("08_tma.ipynb"))
    assert "3,072 copies" in stored and "96 warp instructions" in stored
    assert f"{counts['warp instructions'] // counts['tma']}x fewer" in stored
    assert "3,072 instructions" not in stored


def test_notebook_08_descriptor_bytes_are_those_of_the_recorded_dumps():
    from course.runtime import live_outputs

    text = " ".join(_markdown("08_tma.ipynb").split())
    driver = live_outputs.latest("08.encode").data["text"]
    cute = live_outputs.latest("08.descriptor").data["text"]
    (address,) = [w for w in driver.split() if w.startswith("0x7f")]
    address = address.rstrip(":")
    little_endian = " ".join(f"{b:02x}" for b in int(address, 16).to_bytes(6, "little"))
    assert f"(`{little_endian}` = {address})" in text
    assert ("000: " + little_endian) in driver and ("000: " + little_endian) in cute
    word = {
        who: int("".join(reversed(dump.split("\n000: ")[1].split()[8:12])), 16)
        for who, dump in (("driver", driver), ("cute", cute))
    }
    assert f"{word['driver']:#010x} from the driver" in text
    assert f"{word['cute']:#010x} from CuTe, three bits apart" in text
    assert bin(word["driver"] ^ word["cute"]).count("1") == 3


def test_notebook_08_each_swizzle_repeats_every_eight_of_its_rows():
    from course.models.swizzle import TMA_SWIZZLES

    text = " ".join(_markdown("08_tma.ipynb").split())
    assert "every 1024 bytes for 128B, 512 for 64B, 256 for 32B" in text
    for mode, period in (("32B", 256), ("64B", 512), ("128B", 1024)):
        sw, row = TMA_SWIZZLES[mode], int(mode[:-1])
        assert period == 8 * row
        chunks = [sw(a) - a for a in range(0, 4 * period, 16)]
        per = period // 16
        assert chunks[:per] == chunks[per : 2 * per]  # repeats after `period` bytes
        assert chunks[: per // 2] != chunks[per // 2 : per]  # and not after half of it


# ---------------------------------------------------------------- notebooks 09-11 (issue 42)


def test_notebook_09_fence_and_one_lane_copy_are_described_as_ptx_and_cute_dsl_define_them():
    import inspect

    from cutlass import pipeline
    from cutlass.cute.nvgpu.cpasync import CopyBulkTensorTileG2SOp

    text = " ".join(_markdown("09_pipelines.ipynb").split())
    assert "release fence at cluster scope" in text and "It is not a proxy fence" in text
    assert "beyond them (to the async proxy" not in text
    # CuTe DSL's pipelines fence their inits whatever the cluster, as the text says
    assert "mbarrier_init_fence" in inspect.getsource(pipeline.pipeline_init_arrive)
    assert "`pipeline_init_arrive`" in text
    # the one-lane TMA copy: CuTe DSL elects a lane inside the copy, PTX does not need it
    assert "elect_one()" in (CopyBulkTensorTileG2SOp.__doc__ or "")
    assert "wraps the copy in an `elect_one` of its own" in text
    assert "hung on an H100" not in text
    # warp specialization is defined where the simulator first names its roles
    assert "A **warp-specialized** kernel gives each warp" in text
    assert "notebooks 11-16" in text and "notebooks 11-14" not in text


def test_notebooks_09_10_wgmma_readings_quote_both_runs_of_one_configuration():
    from course.lessons import ladder

    def sweep_row(stages):
        rec = results.latest(
            "stage_sweep",
            match=lambda r: r.data["kernel"] == "wgmma" and not (r.data.get("config") or {}),
        )
        return next(r for r in rec.data["results"] if r["stages"] == stages)

    def ladder_row(rung_label, size):
        (rung,) = [r for r in ladder.rungs() if r.label.startswith(rung_label)]
        return rung.at(size)

    text09 = " ".join(_markdown("09_pipelines.ipynb").split())
    swept, laddered = sweep_row(4), ladder_row("10 ", 4096)
    assert f"read {report.pct_of_cublas(swept):.0f}% of cuBLAS in the sweep below" in text09
    assert f"and {report.pct_of_cublas(laddered):.0f}% in the ladder's run" in text09
    lo1, hi1 = swept["rounds_pct"][1:]
    lo2, hi2 = laddered["rounds_pct"][1:]
    assert f"({lo1:.1f}-{hi1:.1f}% and {lo2:.1f}-{hi2:.1f}%)" in text09
    assert max(lo1, lo2) < min(hi1, hi2)  # the two runs' rounds overlap, as the text says
    # notebook 10: the ranges of the mma.sync rungs and of WGMMA's, from the ladder's rows
    text10 = " ".join(_markdown("10_wgmma.ipynb").split())
    sync = [
        report.pct_of_cublas(ladder_row(label, s))
        for label in ("07 ", "09 ")
        for s in (2048, 4096, 8192)
    ]
    wgmma = [report.pct_of_cublas(ladder_row("10 ", s)) for s in (2048, 4096, 8192)]
    assert f"{min(sync):.0f}-{max(sync):.0f}% to {min(wgmma):.0f}-{max(wgmma):.0f}%" in text10
    assert all(
        report.row_standing(ladder_row("10 ", s)) == "below cuBLAS" for s in (2048, 4096, 8192)
    )
    # 07, 09 and 10 show their own rows of the ladder, 11 the whole of it, each cell with its
    # verdict (the table is printed in full once)
    for name, own in (
        ("07_tiled_gemm.ipynb", 7),
        ("09_pipelines.ipynb", 9),
        ("10_wgmma.ipynb", 10),
    ):
        stored = _stored_outputs(_cells(name))
        for rung in ladder.rungs():
            row = rung.at(4096)
            cell = f"{report.pct_of_cublas(row):.0f}% ({row['kernel_tflops']:.0f} of"
            assert (f"| {rung.label} | " in stored) == (rung.notebook == own), (name, rung.label)
            if rung.notebook == own:
                assert cell in stored and ladder.verdict(row) in stored


def test_notebook_10_and_11_cite_the_gpu_runs_of_their_exercises_wrong_variants():
    def verify_run(command):
        rec = results.latest("kernel_exercises", match=lambda r: r.command == command)
        return rec

    text09 = " ".join(_markdown("09_pipelines.ipynb").split())
    rec = verify_run("python -m course.exercises verify --record 07.mainloop 09.ring")
    assert rec.date == "2026-11-23" and f"({rec.date}, `{rec.command}`)" in text09
    for variant in ("ring__early_release", "ring__no_fence"):
        (case,) = [c for c in rec.data["cases"] if c["variant"] == variant]
        runs = [c for c in case["checks"] if "against torch" in c[0]]
        tools = [c for c in case["checks"] if c[0].startswith("compute-sanitizer")]
        assert len(runs) == 4 and all(c[1] == "pass" for c in runs)
        assert len(tools) == 3 and all(c[1] == "pass" and c[2] == "0 errors" for c in tools)
    text10 = " ".join(_markdown("10_wgmma.ipynb").split())
    assert "racecheck did not report them" not in text10
    rec = verify_run("python -m course.exercises verify --record 10.wgmma_mainloop 11.tma_store")
    assert f"({rec.date}, `{rec.command}`)" in text10
    wrong = [
        c
        for c in rec.data["cases"]
        if c["exercise"] == "10.wgmma_mainloop" and "__" in c["variant"]
    ]
    assert len(wrong) == 6
    for case in wrong:
        runs = [c for c in case["checks"] if "against torch" in c[0]]
        assert len(runs) == 8 and all(c[1] == "pass" for c in runs), case["variant"]


def test_notebooks_09_to_11_exercises_ask_what_the_page_does_not_print():
    from course import source
    from course.exercises.check import check
    from kernels import hopper_gemm, tma_gemm, wgmma_gemm

    # 09: section 3's table (3 stages), the kernel's counts (1, 8), section 4's depth (4) and
    # the printed producer_parity are all refused; the worked answers are accepted
    stored09 = _stored_outputs(_cells("09_pipelines.ipynb"))
    assert "4 = (load + MMA) / MMA" in stored09 and "return trip ^ 1" in stored09
    assert not check("09.parities", [((j // 3) % 2) ^ 1 for j in range(10)], quiet=True).ok
    assert check("09.parities", [((j // 4) % 2) ^ 1 for j in range(10)], quiet=True).ok
    assert not check("09.counts", (1, 8), quiet=True).ok
    assert check("09.counts", (1, 12), quiet=True).ok
    assert not check("09.depth", 4, quiet=True).ok and check("09.depth", 5, quiet=True).ok
    printed = lambda j, s: tma_gemm.producer_parity(j, s)  # noqa: E731
    assert not check("09.producer_parity", printed, quiet=True).ok
    assert check("09.producer_parity", lambda j, s: (j // s) % 2, quiet=True).ok
    assert check("09.producer_parity", lambda j, s: (j // s) & 1 == 1, quiet=True).ok
    # 11: 66 clusters (section 2), 232 registers (section 1), the factor 2 / 1.5 (section 3)
    stored11 = _stored_outputs(_cells("11_hopper_sol.ipynb"))
    assert "232 x 256" in stored11 and "1 MiB with a 2-CTA cluster" in stored11
    assert not check("11.clusters", 66, quiet=True).ok and check("11.clusters", 8, quiet=True).ok
    assert not check("11.regs", 232, quiet=True).ok and check("11.regs", 152, quiet=True).ok
    for page in (2, 1.5):
        assert not check("11.multicast", page, quiet=True).ok
    assert (
        check("11.multicast", 4 / 3, quiet=True).ok and check("11.multicast", "1.33", quiet=True).ok
    )
    # the kernels' own code of 10.wgmma_mainloop and 11.tma_store is in no stored output,
    # and neither exercise's prompt or hint lists the calls in order
    for name, obj, region, id in (
        ("10_wgmma.ipynb", wgmma_gemm.WgmmaGemm.mainloop, "k-tile-loop", "10.wgmma_mainloop"),
        ("11_hopper_sol.ipynb", hopper_gemm.HopperGemm.store_chunk, "tma-store", "11.tma_store"),
    ):
        stored = _stored_outputs(_cells(name))
        body = [line.strip() for line in source.excerpt(obj, region).splitlines()]
        calls = [line for line in body if ("cute." in line or "." in line) and len(line) > 30]
        assert calls
        for line in calls:
            assert line not in stored, (name, line)
        said = check(id, ..., quiet=True).message
        assert "->" not in said, said
        for call in ("consumer_release(release)", "producer_commit", "fence_proxy"):
            assert call not in said, (id, call)


def test_notebook_11_readings_match_their_rows():
    from course.bench import report as rep

    text = " ".join(_markdown("11_hopper_sol.ipynb").split())
    pct = lambda row: rep.pct_of_cublas(row)  # noqa: E731
    row = lambda preset, size, dtype="bfloat16": _gemm_row(  # noqa: E731
        "hopper", preset, f"{size}x{size}x{size}", dtype
    )
    # c0 and c25: the final rung's standings, row by row
    assert [rep.row_standing(row("tma_store", s)) for s in (2048, 4096, 8192)] == [
        "below cuBLAS",
        "level with cuBLAS",
        "level with cuBLAS",
    ]
    gap = 100 - pct(row("tma_store", 2048))
    assert "level with cuBLAS at 4096³ and 8192³ and 2% below" in text and round(gap) == 2
    fp16 = [row("tma_store", s, "float16") for s in (2048, 4096, 8192)]
    assert [rep.row_standing(r) for r in fp16][::2] == ["level with cuBLAS"] * 2
    assert rep.row_standing(fp16[1]) == rep.DISAGREE
    assert (
        f"({pct(fp16[1]):.1f}% by the ratio of the medians, {fp16[1]['rounds_pct'][0]:.1f}% "
        "by the median round)" in text
    )
    # c18: persistent and ping-pong at 4096^3
    p, q = pct(row("persistent", 4096)), pct(row("pingpong", 4096))
    assert f"({p:.0f}% and {q:.0f}% of cuBLAS in the rows" in text
    # c20: every recorded run of the persistent rung at 4096^3
    runs = sorted(
        rep.pct_of_cublas(x)
        for r in results.load("gemm")
        if r.data.get("kernel") == "hopper"
        and (r.data.get("config") or {}).get("preset") == "persistent"
        for x in r.data["results"]
        if x["problem"] == "4096x4096x4096 bfloat16"
    )
    quoted = ", ".join(f"{v:.1f}%" for v in runs[:-1]) + f" and {runs[-1]:.1f}%"
    assert f"the {len(runs)} recorded runs" in text.replace("four", "4") and quoted in text
    # c20: the clocks run, with its control
    clocks = results.latest(
        "clocks", match=lambda r: "preset=pingpong_2x2" in r.data["configs"]
    ).data["summary"]
    for name, words in (
        ("preset=persistent", "persistent read {0:.1f}% (its rounds {1:.1f}-{2:.1f}%)"),
        ("preset=pingpong", "ping-pong {0:.1f}% ({1:.1f}-{2:.1f}%)"),
        ("control", "read {0:.1f}% ({1:.1f}-{2:.1f}%)"),
    ):
        assert words.format(*clocks[name]["pct_of_cublas"]) in text, name
    lo, hi = clocks["control"]["pct_of_cublas"][1:]
    for name in ("preset=persistent", "preset=pingpong"):
        assert lo <= clocks[name]["pct_of_cublas"][0] <= hi  # level, as the text says
    kernels = sorted(v["watts"] for k, v in clocks.items() if k.startswith("preset="))
    assert f"at about {round(kernels[len(kernels) // 2], -1):.0f} W" in text
    # c20: ping-pong's bytes per FLOP, against the cooperative tile with and without multicast
    per_byte = lambda m, n, b_share: m * n / (m + n * b_share)  # noqa: E731
    assert per_byte(128, 128, 0.5) / per_byte(128, 256, 0.5) == 2 / 3
    assert per_byte(128, 128, 0.5) == per_byte(128, 256, 1.0)
    assert "two-thirds of the FLOPs per loaded byte" in text and "half as many FLOPs" not in text
    metric = "lts__t_sectors_srcunit_tex_op_read.sum"
    sectors = {}
    for r in results.load("profile"):  # the newest base-clock launch of each rung
        d = r.data
        if d.get("kernel") == "hopper" and d.get("clock_control") == "base":
            value = d["ours"]["headline"].get(metric, {}).get("value")
            if value:
                sectors[(d.get("config") or {}).get("preset")] = int(value.replace(",", ""))
    ratios = [
        sectors[a] / sectors[b]
        for a in ("persistent", "pingpong")
        for b in ("cluster", "tma_store")
    ]
    assert f"{min(ratios):.1f} to {max(ratios):.1f} times the multicast rungs'" in text
    assert 3 / 2 == (128 + 256) / (128 + 128)  # what the model predicts for that ratio
    # c8: notebook 08's counters, not "saves nothing"
    ratios = {
        r["cluster"]: r["ratio"]
        for r in results.latest("tma_traffic").data["ratios"]
        if r["metric"] == "lts__t_sectors_srcunit_tex_op_read.sum"
    }
    assert f"L2 read {ratios[2]:.2f}× the sectors with multicast at cluster 2" in text
    assert f"{ratios[4]:.2f}× at cluster 4" in text and "multicast saves nothing" not in text
    # c25: SM throughput is not a tensor-pipe counter; c13: "cooperative" is defined
    assert "tensor cores are busy about 90%" not in text and "The SMs are busy about 90%" in text
    assert "The kernel so far is **cooperative**" in text


# ---------------------------------------------------------------- issue 42: notebooks 12-16


def _cells(name: str) -> list:
    return json.loads((ROOT / "notebooks" / name).read_text())["cells"]


def _source_and_outputs(cell) -> str:
    out = "".join(cell["source"])
    for o in cell.get("outputs", []):
        out += "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
    return out


def test_every_live_cells_label_names_its_own_notebook():
    """A live cell's label ("NN.name") keys its recorded output: a label carried over from
    the notebook a cell was copied from (14's "13.tcgen05_*", 15's "14.cta_pair", 16's
    "15.blockscaled_check") files its record under the wrong notebook."""
    import ast
    import re

    # a cell's harness lives in its lesson: the label of each lesson function, by name
    in_lessons = {}
    for path in (ROOT / "course" / "lessons").glob("*.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef):
                found = re.findall(
                    r'label="(\d\d)\.\w+"', ast.get_source_segment(path.read_text(), fn)
                )
                if found:
                    in_lessons[f"{path.stem}.{fn.name}("] = found
    in_lessons |= {k.replace("last_percent_lesson.", "lesson."): v for k, v in in_lessons.items()}
    labels = 0
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for c in _cells(path.name):
            src = "".join(c["source"])
            found = re.findall(r'label="(\d\d)\.\w+"', src)
            found += [x for call, xs in in_lessons.items() if call in src for x in xs]
            for label in found:
                labels += 1
                assert label == path.name[:2], (path.name, label)
    assert labels >= 20


def test_notebook_15_asks_for_a_tile_width_it_does_not_print():
    """15.tmem_columns and 15.barrier_bytes: section 1 prints the footprint of tile_n = 128
    (256 columns, 49,152 bytes); the exercises ask for tile_n = 256, computed from the
    kernel's own footprint, and neither answer appears above its check."""
    import torch

    from course.exercises import nb15
    from course.exercises.check import REGISTRY, check
    from kernels import cta_pair_clc_gemm as pair

    plan = pair.footprint(torch.bfloat16, pair.Config(tile_n=nb15.ASKED_TILE_N))
    printed = pair.footprint()
    asked = {"15.tmem_columns": "tmem_columns", "15.barrier_bytes": "full_barrier_bytes"}
    cells = _cells("15_cta_pair_clc_gemm.ipynb")
    for id, key in asked.items():
        assert plan[key] != printed[key]
        assert check(id, plan[key], quiet=True).ok
        assert not check(id, printed[key], quiet=True).ok  # section 1's number is not it
        at = next(i for i, c in enumerate(cells) if f'check("{id}"' in "".join(c["source"]))
        above = "\n".join(_source_and_outputs(c) for c in cells[:at])
        for spelled in (str(plan[key]), f"{plan[key]:,}"):
            assert spelled not in above, (id, spelled)
        ex = REGISTRY[id]
        assert str(plan[key]) not in ex.hint and f"{plan[key]:,}" not in ex.hint


def test_notebook_15_teaches_the_pairs_tmem_rules_and_the_failed_try_cancel():
    from course.catalogue import LESSONS
    from course.cute import ptx_protocol

    text = " ".join(_markdown("15_cta_pair_clc_gemm.ipynb").split())
    isa = ptx_protocol.PAIR_DEALLOC_ISA
    for quote in (
        "one warp from each of the peer CTAs must collectively perform the allocation and "
        "de-allocation",
        "the issuing warp must make sure that peer CTA is launched and is still active",
    ):
        assert quote in isa and quote in text  # the course's one quotation of the ISA
    assert "**Both CTAs allocate.**" in text and "**The dealloc is a handshake.**" in text
    assert "`pair_dealloc_synced`" in text and "pair_dealloc_synced" in ptx_protocol.RULES
    assert "issuing a subsequent try_cancel instruction results in undefined behavior" in text
    # the header promised multicast, which section 3 says the one-pair cluster does not do
    (lesson,) = [x for x in LESSONS if x.number == 15]
    assert "multicast" not in lesson.idea
    assert "With one pair per cluster nothing is fanned out" in text


def test_the_pictures_of_split_k_and_the_cta_pair_are_drawn_by_course_viz():
    for name, call in (
        ("13_last_percent.ipynb", "dsmem_pictures.split_k_handoff("),
        ("15_cta_pair_clc_gemm.ipynb", "dsmem_pictures.cta_pair_flow("),
    ):
        cells = [c for c in _cells(name) if call in "".join(c["source"])]
        assert len(cells) == 1 and cells[0]["cell_type"] == "code", name
        assert cells[0].get("outputs"), f"{name}: the picture's cell was not executed"


def test_kernel_exercises_12_to_16_do_not_hand_over_their_lines():
    """The skeleton cells, the prompt and the first hint of the kernel exercises of 12-16
    name what to do, not the calls to write (issue 42): no line of the reference's body is in
    them."""
    import re

    from course.exercises import kernel_exercises

    cases = {
        ("12_fp8.ipynb", "12.promotion"): ("wait_group(0)", "scales.append", "tmp.fill"),
        ("12_fp8.ipynb", "12.overlap"): ("tmps[(j + 1) % 2]", "wait_group(1 if", "k_tiles.append"),
        ("13_last_percent.ipynb", "13.residual_epilogue"): (
            "make_identity_tensor",
            "partition_C",
        ),
        ("14_tcgen05.ipynb", "14.epilogue_role"): (
            "consumer_wait",
            "consumer_release",
            "producer_tail",
            "arrive_and_wait",
            "make_pipeline_state",
        ),
        ("15_cta_pair_clc_gemm.ipynb", "15.read_next_tile"): (
            "consumer_wait",
            "clc_response(clc_response)",
            "fence_proxy(",
            "consumer_release",
            "self.tile.ctas",
            ".advance()",
        ),
        ("16_blockscaled.ipynb", "16.sf_copy_and_mma"): (
            "cute.copy(",
            ".iterator",
            "sfa.mma[",
            "state.index",
            "consumer_wait",
            "cute.gemm(",
        ),
    }
    for (name, id), lines in cases.items():
        cells = _cells(name)
        at = next(i for i, c in enumerate(cells) if f'check("{id}"' in "".join(c["source"]))
        skeleton = "".join(cells[at - 1]["source"])
        ex = kernel_exercises.lookup(id)
        said = [skeleton, ex.prompt, ex.hint]
        for line in lines:
            for where in said:
                assert line not in where, (id, line, where[:80])
        body = re.sub(r'""".*?"""', "", skeleton, flags=re.S)
        assert "..." in body, id  # still a skeleton


def test_notebook_13s_residual_rule_matches_the_compiler():
    """13 c36: the bias fragment of section 5 compiles with no stack frame, and bias and
    residual gathered into one fragment compile to the 16-byte stack frame the text names
    (sm_90a, CuTe DSL 4.8.1): the claim is the compiler's, not a rule of thumb."""
    import torch

    from course.exercises import kernel_check, kernel_exercises, nb13_residual_kernel as ex
    from course.exercises.solutions import nb13_solutions as s13
    from course.exercises.verdicts import WRONG
    from kernels import fused_gemm

    text = " ".join(_markdown("13_last_percent.ipynb").split())
    (bias,) = (
        fused_gemm.artifacts("sm_90a", config=fused_gemm.PRESETS["bias"]).resource_usage().values()
    )
    assert bias["stack_frame_bytes"] == 0 and "still needs no stack frame" in text
    art = ex.gemm_with(s13.finish_accumulator__gathered_fragment).artifacts(
        "sm_90a", torch.bfloat16, ex.exercise_config(), out_dtype=torch.bfloat16,
        a_major="k", b_major="k",
    )  # fmt: skip
    (gathered,) = art.resource_usage().values()
    assert f"to a {gathered['stack_frame_bytes']}-byte stack frame" in text
    assert gathered["stack_frame_bytes"] > 0 and "does not fit beside it" not in text
    report = kernel_check.run_checks(
        kernel_exercises.lookup(ex.ID), s13.finish_accumulator__gathered_fragment, gpu=False,
        executor=False,
    )  # fmt: skip
    assert report.status == WRONG and "spill" in report.first_hint(), report.text()


def test_notebook_12s_promotion_exercise_asks_for_the_sections_lesson():
    """12.promotion: section 5's lesson (scale loads issued before wait_group(0)) is what
    the exercise checks, and the numbers it quotes are section 5's."""
    from course.exercises import kernel_exercises, nb12_promotion_kernel as ex

    text = " ".join(_markdown("12_fp8.ipynb").split())
    assert "ran at 34% to 47% of cuBLAS" in text and "34% to 47%" in ex.SCALES_LATE_HINT
    assert ex.loads_scales_before_the_wait in kernel_exercises.lookup("12.promotion").cpu_checks
    code = ["wgmma.wait_group.sync.aligned 0;", "ld.global.f32 %f1, [%rd1];", "wgmma.fence;"]
    assert ex._loads_after_each_wait(code) == [(0, 1)]
    assert ex._loads_after_each_wait(code[1:2] + code[:1] + code[2:]) == [(1, 0)]


# ---------------------------------------------------------------- issue 42: notebooks 00-04


def _nb_a_cells(number: str) -> list[dict]:
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    return json.loads(path.read_text())["cells"]


def _nb_a_prose(number: str) -> str:
    """The markdown of notebook `number`, whitespace folded to single spaces."""
    return " ".join(
        " ".join("".join(c["source"]).split())
        for c in _nb_a_cells(number)
        if c["cell_type"] == "markdown"
    )


def _nb_a_cell(number: str, cell_id: str) -> str:
    (cell,) = [c for c in _nb_a_cells(number) if c.get("id") == cell_id]
    return "".join(cell["source"])


def test_notebook_00_counts_its_facts_and_defines_sm_executor_and_hazard():
    facts = _nb_a_cell("00", "ad88faa2")
    bullets = [line for line in facts.splitlines() if line.startswith("* **")]
    assert facts.startswith("Three facts drive") and len(bullets) == 3
    sms = results.latest("ceilings", gpu="H100").provenance["sm_count"]
    assert f"an H100 SXM5 has {sms} of them" in " ".join(facts.split())
    assert "**SM** (streaming multiprocessor)" in facts
    first = _nb_a_cell("00", "e39102f2")  # before the header that uses the words
    assert "The **CPU executor** is" in first and "A **hazard** is" in first


def test_notebook_00_legend_names_every_mode_the_course_map_prints():
    from course.catalogue import course_map

    legend = _nb_a_cell("00", "1ea709db")
    modes = {m.strip() for row in course_map() for m in row["here"].split("+")}
    assert modes and all(f"* **{m}**" in legend for m in modes), modes


def test_notebook_00_places_notebook_03s_kernel_where_its_tiles_put_it(capsys):
    """The roofline's naive point is notebook 03's recorded kernel at its 128x128 tiles'
    intensity, not a 1x1-tile kernel; the memory roof there allows more than ten times what
    it reached, and it does four FMAs per load (its 8x8 cells per thread)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course.lessons import ceilings_lesson
    from course.models.gemm_model import Gemm
    from kernels import naive_gemm

    ceil = ceilings_lesson.machine_ceilings()
    g = Gemm(4096, 4096, 4096)
    tflops, citation = ceilings_lesson.naive_recorded(g, ceil.gpu)
    fig = ceilings_lesson.gemm_roofline(ceil, g)
    plt.close(fig)
    out = capsys.readouterr().out
    assert "notebook 03's naive GEMM 4096^3 (recorded)" in out and citation in out
    cfg = naive_gemm.Config()
    assert ceilings_lesson.NAIVE_TILE == cfg.tile_m == cfg.tile_n
    roof = g.intensity(cfg.tile_m, cfg.tile_n) * ceil.bandwidth_gbps / 1e3
    assert roof > 10 * tflops
    rows, cols = cfg.tile_m // cfg.atoms_m, cfg.tile_n // cfg.atoms_n  # a thread's 8x8 cells
    assert rows * cols // (rows + cols) == 4  # FMAs per loaded element, per k
    text = _nb_a_prose("00")
    assert "the memory roof would allow it more than ten times what it reached" in text
    assert (
        "four multiply-adds per load instruction" in text and "four multiply-adds per load;" in text
    )
    assert "one load per multiply-add" not in text and "well above" not in text


def test_notebook_00_bound_says_its_tile_cannot_be_built():
    from course.exercises.check import check
    from course.models.gemm_model import Gemm

    right = check("00.bound", 1024, quiet=True)
    g = Gemm(4096, 4096, 4096)
    assert right.ok and f"{g.intensity(512, 512):.1f} FLOP/B against 246" in right.message
    assert "not a tile anyone can build" in right.message
    assert f"{1024 * 1024 * 4 / 2**20:g} MiB" in right.message  # its fp32 accumulators
    assert "whether or not a CTA could hold" in check("00.bound", ..., quiet=True).message


def test_notebook_03_asks_for_b_and_c_and_keeps_the_timing_row_in_an_appendix():
    from course import source
    from kernels import naive_gemm

    shown = source.excerpt(naive_gemm.cta_tiles, "tile_a")
    assert "gA = cute.local_tile(" in shown and "gB" not in shown and "gC" not in shown
    assert 'source.show(naive_gemm.cta_tiles, "tile_a")' in _nb_a_cell("03", "a2eaf936")
    text = _nb_a_prose("03")
    assert "(None, 1, 1)" not in text and "(1, 1, None)" not in text
    skeleton = _nb_a_cell("03", "13ac0f6d")
    assert not any(call in skeleton for call in ("local_tile(", "get_slice", "partition_A"))
    assert "`tiled_mma.get_slice(tid)`" in text  # the API is taught, in section 5
    ids = [c.get("id") for c in _nb_a_cells("03")]
    heads = ["".join(c["source"]).split("\n")[0] for c in _nb_a_cells("03")]
    exercises = next(
        i for i, c in enumerate(_nb_a_cells("03")) if "## Exercises" in "".join(c["source"])
    )
    appendix = heads.index("## Appendix · How to read a timing row")
    assert exercises < appendix < ids.index("4d73ffdf") < ids.index("c078a4b2")
    assert "Darshan" not in text and "some CuTe tutorials" not in text


def test_notebook_03_names_nvml_and_nsight_and_the_power_flags_board():
    text = _nb_a_prose("03")
    assert "**NVML** (the NVIDIA Management Library" in text
    assert "**Nsight Compute** (`ncu`, NVIDIA's kernel profiler" in text
    boards = {rec.gpu for rec in results.load("clocks")} | {
        rec.gpu for rec in results.load("gemm") if "H100" in rec.gpu
    }
    assert boards == {"NVIDIA H100 80GB HBM3"} and "one board, an NVIDIA H100 80GB HBM3" in text
    capped_watts = [
        r["watts"]
        for rec in results.load("clocks")
        for r in rec.data["per_round"]
        if r["capped"] >= 0.5
    ]
    assert (
        150 < min(capped_watts) < 210
        and "the flag set at times while the board drew barely 200 W" in text
    )
    assert not any("limit" in k for rec in results.load("clocks") for k in rec.data["per_round"][0])


def test_notebook_03_coalesced_passes_every_layout_its_prompt_allows():
    from course.exercises.check import check

    prompt = check("03.coalesced", ..., quiet=True).message
    assert "32 aligned bytes" in prompt and "any value there passes" in prompt
    for answer in ("(1,32)", "(1,32):(0,1)", "(1,32):(99,1)", "(2,16):(16,1)", "(4,8):(8,1)"):
        assert check("03.coalesced", answer, quiet=True).ok, answer
    assert not check("03.coalesced", "(8,4):(4,1)", quiet=True).ok


def test_notebook_04_in_flight_bytes_and_the_scalar_copys_last_fifth():
    from course.models.occupancy import SM_90

    text = _nb_a_prose("04")
    per_sm = SM_90.threads
    assert per_sm == 2048 and f"at most {per_sm} per SM" in text
    kib = {v: per_sm * b // 1024 for v, b in (("vector", 16), ("tiled", 64), ("scalar", 4))}
    assert (
        f"at most {per_sm} × 16 B = {kib['vector']} KiB in flight with `vector`, {kib['tiled']} "
        f"KiB with `tiled`, and only {kib['scalar']} KiB with `scalar`" in text
    )
    pct = {
        v["variant"]: v["pct_of_ceiling"]
        for v in results.latest("copies", gpu="H100").data["variants"]
    }
    assert 15 < 100 - pct["scalar"] < 25 and "could cost it its last fifth" in text
    assert "keeps only a quarter of the bytes in flight" in text
    assert "Darshan" not in text and "blog" not in text


def test_notebook_04_skeleton_names_what_to_do_not_the_calls():
    skeleton = _nb_a_cell("04", "cbaa619f")
    assert "..." in skeleton and "make_copy_atom(" not in skeleton
    assert "make_tiled_copy_tv(" not in skeleton and "num_bits_per_copy" not in skeleton


def test_notebook_05_transpose_exercise_is_not_section_4s_tile():
    """The exercise's tile is 64 floats wide: section 4's fixes for its 32x32 tile, printed
    above the exercise, fail it, and no layout printed above it is the reference's."""
    from course.exercises import kernel_check, kernel_exercises, nb05
    from course.exercises.solutions import nb05_solutions as s
    from course.exercises.verdicts import WRONG
    from kernels import smem_transpose

    cells = _cells("05_swizzle.ipynb")
    at = next(i for i, c in enumerate(cells) if "05.transpose_swizzle" in "".join(c["source"]))
    above = "\n".join(_source_and_outputs(c) for c in cells[:at])
    assert smem_transpose.TILE == nb05.TILE == 64
    assert "Swizzle<5,0,6>" not in above and "(64,64):(65,1)" not in above
    assert "Swizzle<5,0,5> o (32,32):(1,32)" in above and "(32,32):(1,33)" in above
    exercise = kernel_exercises.lookup("05.transpose_swizzle")
    for copied in (
        s.transpose_tile_layout__section_4_swizzle,
        s.transpose_tile_layout__section_4_padding,
    ):
        assert kernel_check.run_checks(exercise, copied, gpu=False).status == WRONG


def test_notebooks_08_and_11_keep_their_byte_and_clock_detail_in_an_appendix():
    """The idea stays in front (a summary in the section), the machinery after the exercises:
    08's descriptor bytes and L2 counters, 11's clock and L2 profiles."""
    for name, calls in (
        ("08_tma.ipynb", ("descriptor_bytes()", "traffic_report()")),
        ("11_hopper_sol.ipynb", ("print_profiles(",)),
    ):
        cells = _cells(name)
        sources = ["".join(c["source"]) for c in cells]
        last_check = max(i for i, s in enumerate(sources) if "check(" in s)
        appendix = min(i for i, s in enumerate(sources) if s.startswith("## Appendix"))
        assert last_check < appendix, name
        for call in calls:
            (at,) = [i for i, s in enumerate(sources) if call in s]
            assert at > appendix, (name, call)
        front = " ".join(" ".join(sources[:appendix]).split())
        assert "Appendix" in front, name  # the section says where the detail went
    from course.lessons import multicast_lesson

    text = " ".join(_markdown("08_tma.ipynb").split())
    two, four = multicast_lesson.model_vs_counters(results.latest("tma_traffic").data)
    assert "requests 0.50x" in two and "requests 0.25x" in four  # the record's counters
    assert "**0.50×** at cluster 2 and **0.25×** at cluster 4" in text
    read = [line.split("L2 sectors read ")[1].split("x")[0] for line in (two, four)]
    assert f"**{read[0]}×** and **{read[1]}×** the sectors of separate loads" in text
