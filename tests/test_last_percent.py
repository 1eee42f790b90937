"""Notebook 13, the last five percent: the wave model against the recorded sweep and counters,
the tile-order model, and every number the notebook's text states against its record."""

import json
from pathlib import Path

import pytest

from course.bench import last_percent as bench
from course.models import tile_order
from course.models import waves
from course.runtime import results

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "13_last_percent.ipynb"


def notebook_text() -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return " ".join(text.split())  # line breaks of the source are spaces to a reader


def record(part: str) -> results.Record:
    rec = results.latest("last_percent", match=lambda r: r.data.get("part") == part)
    assert rec is not None, f"no recorded {part!r} in results/last_percent.json"
    return rec


# ---------------------------------------------------------------- the models


def test_work_items_count_cluster_blocks_of_ceiled_tiles():
    assert waves.work_items(4096, 4096) == 16 * 16  # 32 tile rows in pairs, 16 columns
    assert waves.work_items(4096, 4097) == 16 * 17  # one column more, mostly empty
    assert waves.work_items(129, 1) == 1  # two tile rows, one cluster block
    assert waves.work_items(4096, 4096, tile_n=128, cluster_m=1, cluster_n=2) == 32 * 16


CASES = [(256, 66, 4, 256 / 264), (272, 66, 5, 272 / 330), (66, 66, 1, 1.0), (1, 66, 1, 1 / 66)]


@pytest.mark.parametrize("work, clusters, count, busy", CASES)
def test_waves_and_busy_share(work, clusters, count, busy):
    w = waves.Waves(work, clusters)
    assert w.waves == count and w.busy == pytest.approx(busy)
    assert w.waves - 1 < w.fraction <= w.waves


def test_wave_edges_lie_where_the_work_passes_a_multiple_of_the_clusters():
    ns = range(1024, 8193, 128)
    edges = waves.wave_edges(4096, ns, 132)
    assert edges == [1152, 2176, 3200, 4224, 5248, 6272, 7296]
    for n in edges:
        assert (
            waves.of_problem(4096, n, 132).waves == waves.of_problem(4096, n - 128, 132).waves + 1
        )


def test_the_step_fit_recovers_a_step_function():
    ns = list(range(1152, 8193, 128))
    ms = [0.01 + 0.05 * waves.of_problem(4096, n, 132).waves for n in ns]
    start, per = waves.fit_per_wave(ns, ms, 4096, 132)
    assert start == pytest.approx(0.01) and per == pytest.approx(0.05)


def test_the_panel_model_of_tile_order_counts_what_a_wave_touches():
    """Row by row, 66 work items of a 32 x 32 grid span 3 rows and all 32 columns; in groups
    of 8 rows, 8 rows and 9 columns (the table of section 4)."""
    assert tile_order.wave_panels(32, 32, 1, 66)[0] == 3 + 32
    assert tile_order.wave_panels(32, 32, 8, 66)[0] == 8 + 9


# ---------------------------------------------------------------- the records agree with them


def test_the_recorded_sweep_steps_where_the_model_says():
    """Each wave edge past the first (host-bound) one costs the kernel at least half a
    wave's time more than the N before it; between edges the time stays within a third of a
    wave, but where the clock moved."""
    data = record("waves").data
    rows = {r["n"]: r["kernel_ms"] for r in data["rows"]}
    ns = sorted(rows)
    fitted = [n for n in ns if waves.of_problem(data["m"], n, data["sms"]).waves > 1]
    _, per = waves.fit_per_wave(fitted, [rows[n] for n in fitted], data["m"], data["sms"])
    edges = waves.wave_edges(data["m"], ns, data["sms"])
    for n in edges[1:]:
        assert rows[n] - rows[n - 128] > per / 2, n
    within = sorted(
        abs(rows[b] - rows[a])
        for a, b in zip(ns, ns[1:])
        if b not in edges and waves.of_problem(data["m"], a, data["sms"]).waves > 1
    )
    # the clock moves during a sweep (the notebook names where): nine steps in ten are flat
    assert within[int(0.9 * len(within))] < per / 3, within


def test_the_recorded_tail_counters_agree_with_the_model():
    rec = record("tail")
    for r in rec.data["rows"]:
        busy = waves.of_problem(rec.data["m"], r["n"], rec.provenance["sm_count"]).busy
        measured = r["sm__cycles_active.avg"] / r["sm__cycles_elapsed.max"]
        assert busy - 0.05 < measured <= busy, r["n"]


# ---------------------------------------------------------------- the notebook's numbers


def pct(x: float) -> str:
    return f"{x:.1f}%"


def test_notebook_13_states_the_recorded_waves_and_tail():
    text = notebook_text()
    sweep = record("waves").data
    rows = {r["n"]: r for r in sweep["rows"]}
    edges = waves.wave_edges(sweep["m"], sorted(rows), sweep["sms"])
    assert "at N = " + ", ".join(map(str, edges[:4])) + ", ..." in text
    fitted = [n for n in rows if waves.of_problem(sweep["m"], n, sweep["sms"]).waves > 1]
    _, per = waves.fit_per_wave(fitted, [rows[n]["kernel_ms"] for n in fitted], 4096, 132)
    assert f"({round(per * 1e3)} µs in the recorded" in text
    assert f"to {round(rows[4224]['pct_of_cublas'][0])}% of it (N = 4224)" in text
    tail = {r["n"]: r for r in record("tail").data["rows"]}

    def busy(n):
        return tail[n]["sm__cycles_active.avg"] / tail[n]["sm__cycles_elapsed.max"]

    assert f"{pct(100 * busy(4096))} busy at 3.88 waves, {pct(100 * busy(4224))} at 4.12" in text
    most = {
        round(100 * r["sm__cycles_active.max"] / r["sm__cycles_elapsed.max"]) for r in tail.values()
    }
    assert f"active for {min(most)}-{max(most)}% of the run" in text


def test_notebook_13_states_the_recorded_launch_times():
    text = notebook_text()
    data = record("launch").data
    host = data["host_us"]
    run, direct = host["course run()"], host["compiled kernel, arguments made once"]
    mm, replay = host["torch.mm (cuBLAS)"], host["CUDA graph replay (one GEMM)"]
    assert f"takes {run:.1f} µs of host time per call" in text
    assert f"arguments {direct:.1f} µs" in text
    assert f"`torch.mm` takes {mm:.1f} µs, and a graph replay {replay:.1f} µs" in text
    eager = [r["eager"]["kernel_us"] for r in data["sizes"] if r["size"] <= 2048]
    assert f"takes {round(min(eager))}-{round(max(eager))} µs" in text
    sizes = {r["size"]: r for r in data["sizes"]}
    assert f"takes {sizes[256]['graph']['kernel_us']:.1f} µs at 256³" in text
    assert f"and {round(sizes[1024]['graph']['kernel_us'])} µs at 1024³" in text
    assert f"reads {pct(sizes[256]['graph']['pct_of_cublas'][0])} of cuBLAS at 256³" in text


def test_notebook_13_states_the_recorded_tile_order_counters():
    text = notebook_text()
    data = record("order").data
    by = {r["group_m"]: r["counters"] for r in data["rows"]}

    def gb(c):
        return f"{c['dram__bytes_read.sum'] / 1e9:.2f} GB"

    assert f"reads the least from DRAM: {gb(by[8])}" in text
    assert f"against {gb(by[1])} when the work items run row by row" in text
    assert f"({gb(by[2])})" in text and f"cuBLAS reads {gb(data['cublas'])}" in text
    best = min(by, key=lambda g: by[g]["dram__bytes_read.sum"])
    assert best == 8
    pcts = [r["pct_of_cublas"][0] for r in data["rows"]]
    assert f"runs at {round(min(pcts))}-{round(max(pcts))}% of cuBLAS" in text


def test_notebook_13_states_the_recorded_fusion_times():
    text = notebook_text()
    rows = {tuple(r["shape"]): r for r in record("fusion").data["rows"]}
    wide = rows[(16384, 8192, 512)]["ms"]
    unfused, fused = round(wide["GEMM (course) + torch"] * 1e3), round(wide["fused (course)"] * 1e3)
    assert f"the unfused pair takes {unfused} µs and the fused kernel {fused} µs" in text
    square = rows[(4096, 4096, 4096)]["ms"]
    pair, one = round(square["GEMM (course) + torch"] * 1e3), round(square["fused (course)"] * 1e3)
    assert f"{pair} against {one} µs" in text

    def share(name):
        return [r["pct_of_cublaslt_fused"][name][0] for r in rows.values()]

    fused_pct = share("fused (course)")
    assert f"({pct(fused_pct[0])}, {pct(fused_pct[1])} and {pct(fused_pct[2])})" in text
    assert all(abs(p - 100) < 5 for p in fused_pct)

    def cost(name):
        return [
            round(100 * (r["ms"][name] / r["ms"]["GEMM (course) alone"] - 1)) for r in rows.values()
        ]

    c = cost("fused (course)")
    assert f"{c[0]}% slower at 4096³ but {c[1]}% at 8192 × 8192 × 1024 and {c[2]}% at" in text
    p = cost("fused, ping-pong (course)")
    assert p[1] < 0 < p[0] < p[2]
    said = f"{p[0]}% slower than the course's plain GEMM at 4096³, {-p[1]}% faster at 8192"
    assert said in text and f"{p[2]}% slower at 16384" in text
    faster = [round(x - 100) for x in share("fused, ping-pong (course)")]
    assert f"{faster[0]}%, {faster[1]}% and {faster[2]}% faster than cuBLASLt's" in text
    assert f"loop, {min(faster)}-{max(faster)}% faster than it" in text


def test_the_measurements_refuse_to_run_without_a_gpu(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the measurements would run")
    assert bench.main(["waves"]) == 2
    assert "need a CUDA GPU" in capsys.readouterr().out


def test_notebook_13_states_the_recorded_standing_against_cublas_and_nvidias_example():
    text = notebook_text()
    rows = {r["problem"]: r["pct_of_cublas"] for r in record("sol").data["rows"]}
    for size in (4096, 8192):
        for dtype in ("bfloat16", "float16"):
            r = rows[f"{size}x{size}x{size} {dtype}"]
            control = r["cuBLAS (control)"]
            for name in ("course SOL", "NVIDIA example"):
                side = (r[name][0] > control[2]) - (r[name][0] < control[1])  # above 1, below -1
                said = {4096: {"bfloat16": -1, "float16": -1}, 8192: {"bfloat16": 0, "float16": 0}}
                assert side == said[size][dtype], (size, dtype, name)
    small = rows["4096x4096x4096 float16"]
    below = (small["course SOL"][0], small["NVIDIA example"][0], small["cuBLAS (control)"][1])
    assert (
        "read {} and {}, just below the control's lowest round ({})".format(*map(pct, below))
        in text
    )
    big = [rows[f"8192x8192x8192 {d}"][n][0] for d in ("bfloat16", "float16")
           for n in ("course SOL", "NVIDIA example")]  # fmt: skip
    assert f"{pct(min(big))} to {pct(max(big))} in the median round" in text
    highs = [rows[f"8192x8192x8192 {d}"]["cuBLAS (control)"][2] for d in ("bfloat16", "float16")]
    assert f"({pct(highs[0])} in bf16, {pct(highs[1])} in fp16)" in text
    bf16 = rows["4096x4096x4096 bfloat16"]  # both just below the control's range in bf16 too
    assert f"{pct(bf16['course SOL'][0])} and {pct(bf16['NVIDIA example'][0])} in bf16" in text
    fp16 = rows["8192x8192x8192 float16"]["course SOL"]
    assert f"from {round(fp16[1])}% to {round(fp16[2])}% in fp16" in text


# ---------------------------------------------------------------- split-K and L2 hints


def test_split_tail_length_counts_whole_waves_then_half_rounds():
    # 4096 x 4224: 544 tiles; 4 waves of 132 whole, 16 left: one round of 66 clusters, halved
    assert waves.split_tail_length(4096, 4224, 132) == 4.5
    # 3000 x 5000: 480 tiles; 3 waves, 84 left: two rounds of 66 clusters -- no gain over 4
    assert waves.split_tail_length(3000, 5000, 132) == 4.0
    assert waves.split_tail_length(1024, 1024, 132) == 0.5  # 32 tiles, all split
    assert waves.of_problem(4096, 4224, 132).waves == 5


def test_notebook_13_states_the_recorded_split_k_run():
    rec = record("split").data
    rows = {r["problem"]: r for r in rec["rows"]}
    assert all(all(r["checked"].values()) for r in rec["rows"])
    text = notebook_text()
    few, edge = rows["1024x1024x16384 bfloat16"], rows["4096x4224x4096 bfloat16"]
    for row, name in ((few, "split_k2"), (few, "course SOL"), (edge, "split_tail"),
                      (edge, "course SOL")):  # fmt: skip
        assert f"{row['pct_of_cublas'][name][0]:.1f}%" in text, (row["problem"], name)
    # what the text concludes holds in the record: split-K pays with few tiles, and the split
    # tail pays just past an edge and not with a tail of more than half a wave
    assert few["ms"]["split_k2"] < few["ms"]["course SOL"]
    assert edge["ms"]["split_tail"] < edge["ms"]["course SOL"]
    ragged = rows["3000x5000x4096 bfloat16"]
    assert ragged["ms"]["split_tail"] > ragged["ms"]["course SOL"]


def test_notebook_13_states_the_recorded_l2_hints():
    rec = record("hints").data
    c = rec["counters"]
    text = notebook_text()
    none, first = c["A normal, B normal"], c["A last, B first"]
    assert f"reads {first['dram__bytes_read.sum'] / 1e9:.2f} GB from DRAM" in text
    assert first["dram__bytes_read.sum"] > 2 * none["dram__bytes_read.sum"]
    assert first["lts__t_sector_op_read_hit_rate.pct"] < none["lts__t_sector_op_read_hit_rate.pct"]


@pytest.mark.compile
def test_an_l2_hint_reaches_the_tma_loads():
    """a_l2 / b_l2 put CUTLASS's evict-last / evict-first policies on the loads' cache hint;
    the default puts none of them."""
    import torch

    from kernels import hopper_gemm

    hinted = hopper_gemm.artifacts(
        "sm_90a", torch.bfloat16, hopper_gemm.Config(a_l2="last", b_l2="first")
    )
    plain = hopper_gemm.artifacts("sm_90a", torch.bfloat16, hopper_gemm.Config())
    for policy in (hopper_gemm.L2_POLICIES["last"], hopper_gemm.L2_POLICIES["first"]):
        assert hinted.count_ptx(rf"mov\.b64\s+%rd\d+, {policy};") > 0
        assert plain.count_ptx(rf"mov\.b64\s+%rd\d+, {policy};") == 0
    with pytest.raises(ValueError, match="a_l2 and b_l2"):
        hopper_gemm.Config(a_l2="keep")


def test_an_fp8_variant_is_a_preset_with_fields_replaced():
    from kernels import fp8_gemm

    name, config = bench.fp8_variant("block_staged:tile_n=192")
    assert name == "block_staged:tile_n=192"
    assert config == fp8_gemm.Config(scales="block", tile_n=192, stage_scales=True)
    name, config = bench.fp8_variant("overlap_group=8,cluster_m=1")  # on block_overlapped
    assert (config.overlap_group, config.cluster_m, config.stage_scales) == (8, 1, True)
    assert bench.fp8_variant("block") == ("block", fp8_gemm.PRESETS["block"])  # a preset
    assert bench.fp8_variant("row:scales=block")[1].scales == "block"  # a bare word: a str


@pytest.mark.parametrize(
    "spec",
    ["nope:tile_n=128", "overlap_group", "tile_q=3", "overlap_group=8,prefetch_scales=1"],
    ids=["no such preset", "no value", "no such field", "a rule of Config broken"],
)
def test_a_wrong_fp8_variant_is_refused_before_any_gpu_time(spec):
    with pytest.raises(ValueError):
        bench.fp8_variant(spec)
    with pytest.raises(ValueError):  # main() refuses it before it asks for a GPU
        bench.main(["fp8", "--variant", spec])
