"""Notebook 13, the last five percent: waves and the tail, launch overhead, tile order and a
fused epilogue, each measured (live on a Hopper GPU, else recorded in
results/last_percent.json by `python -m course.bench.last_percent PART --record`) and read
against a model.

  waves_table      the model alone: work items, waves and busy share for a few N (any machine)
  waves_sweep      time against N, the SOL kernel and cuBLAS (live or recorded)
  waves_figure     that sweep with the step model fitted to it
  tail_table       SM-active cycles against elapsed around a wave edge (Nsight Compute, recorded)
  launch_overhead  host time per call, and time per GEMM eager and from a CUDA graph
  launch_figure    the latter drawn
  order_table      tile order (group_m): L2 sectors, hit rate, DRAM bytes (recorded) beside
                   the panels a wave touches (course.models.tile_order)
  hints_table      L2 eviction priorities on the TMA loads: the same counters, and the time
  split_check_*    the split-K presets against torch (live on sm_90a, else on the CPU executor)
  split_check      section 2's cell: split_check_live, else split_check_executed (a live cell)
  split_table      the split-K presets, the SOL kernel and cuBLAS where cuBLAS splits K (recorded)
  fusion           bias + GELU fused against the unfused pair and cuBLASLt's own fusion
  fusion_figure    the latter drawn
  fused_check      section 5's cell: fused_check_live, else fused_check_executed (a live cell)
"""

from __future__ import annotations

from course.bench import last_percent as bench
from course.models import tile_order
from course.models import waves as waves_model
from course.runtime import results
from course.runtime.live import Outcome, live_or, live_or_executed, recorded
from course.viz import last_percent_pictures as pictures

RESULTS = "last_percent"
SMS = 132  # an H100 SXM's or H200's SMs: the GPU the records were measured on
PANEL_BYTES = 256 * 8192 * 2  # one cluster's panel of A or B at 8192^3 bf16: 256 rows x K


def _part(name: str):
    return lambda rec: rec.data.get("part") == name


def _recorded(part: str):
    return recorded(RESULTS, match=_part(part))


def _source(out: Outcome, what: str) -> str:
    return out.caption(what, otherwise=what)


def _sms(data: dict) -> int:
    return data.get("sms") or SMS


def _recorded_everywhere(part: str, args: str, why: str) -> results.Record | None:
    """The newest record of `part`, announced as shown on every machine (`why`), or None
    with the command that records it (`python -m course.bench.last_percent {args}`)."""
    from course.runtime.live import Banner, Mode, show as display

    rec = results.latest(RESULTS, match=_part(part))
    if rec is None:
        print(f"not recorded yet: `{bench.__name__} {args}` on a Hopper GPU")
        return None
    display(Banner(Mode.RECORDED, f"{why}, so this cell shows a recording on every machine: "
                                  f"{rec.citation()}."))  # fmt: skip
    return rec


# ------------------------------------------------------------------ waves


def waves_table(m: int = 4096, ns=(1024, 1152, 2048, 2176, 4096, 4224), sms: int = SMS) -> None:
    """Work items, waves and busy share of the SOL kernel's persistent schedule."""
    clusters = sms // 2
    print(f"M = {m}, 128 x 256 tiles, 2 x 1 clusters: {sms} SMs hold {clusters} clusters")
    print(f"{'N':>6} {'work items':>11} {'items/cluster':>14} {'waves':>6} {'busy':>6}")
    for n in ns:
        w = waves_model.of_problem(m, n, sms)
        print(f"{n:>6} {w.work:>11} {w.fraction:>14.2f} {w.waves:>6} {w.busy:>6.0%}")


def waves_sweep() -> Outcome:
    """The SOL kernel and cuBLAS at M = K = 4096 over N (about a minute on a Hopper GPU)."""
    return live_or("sm_90a", bench.waves, _recorded("waves"))


def waves_figure(sweep: Outcome):
    """The sweep with the step model (start + waves x per-wave, fitted to the points of
    two waves or more: one wave is shorter than the course's host launch, see section 3)."""
    data = sweep.value
    rows, sms = data["rows"], _sms(data)
    ns = [r["n"] for r in rows]
    kernel = [r["kernel_ms"] for r in rows]
    fit = [
        (r["n"], r["kernel_ms"])
        for r in rows
        if waves_model.of_problem(data["m"], r["n"], sms).waves > 1
    ]
    start, per = waves_model.fit_per_wave([n for n, _ in fit], [t for _, t in fit], data["m"], sms)
    model = [start + per * waves_model.of_problem(data["m"], n, sms).waves for n in ns]
    print(f"fitted: {per * 1e3:.1f} µs per wave, {start * 1e3:+.1f} µs besides")
    edges = waves_model.wave_edges(data["m"], ns, sms)
    return pictures.waves(
        ns, kernel, [r["cublas_ms"] for r in rows], model, edges, _source(sweep, "sweep")
    )


def edge_ratios(sweep: Outcome) -> None:
    """The kernel's speed as a share of cuBLAS's just past each wave edge and at the last
    N before it (median of per-round ratios)."""
    data = sweep.value
    rows = {r["n"]: r for r in data["rows"]}
    ns = sorted(rows)
    pct = "% of cuBLAS"
    print(f"{'wave edge':>9} | {'N before':>8} {pct:>11} | {'N after':>7} {pct:>11}")
    for n in waves_model.wave_edges(data["m"], ns, _sms(data)):
        before = ns[ns.index(n) - 1]
        print(
            f"{n:>9} | {before:>8} {rows[before]['pct_of_cublas'][0]:>10.1f}% | {n:>7} "
            f"{rows[n]['pct_of_cublas'][0]:>10.1f}%"
        )


def _profiled(part: str) -> results.Record | None:
    """The newest recorded Nsight Compute part, its banner shown (the profiler runs outside
    the notebook: a recording on every machine); None, said, before one is recorded."""
    from course.lessons.gemm_profiles import profiler_banner
    from course.runtime.live import show

    rec = results.latest(RESULTS, match=_part(part))
    if rec is None:
        print(f"not recorded yet: `{bench.__name__} {part} --record` on a Hopper GPU")
    else:
        show(profiler_banner(rec.citation()))
    return rec


def tail_table() -> Outcome | None:
    """Nsight Compute's SM-active cycles (mean and most over the SMs) against the elapsed
    cycles, at N below and past a wave edge; the model's busy share beside them."""
    from course.runtime.live import Mode

    rec = _profiled("tail")
    if rec is None:
        return None
    data = rec.data
    print(f"{'N':>6} {'waves':>6} {'model busy':>10} {'active/elapsed':>15} {'busiest SM':>11}")
    for r in data["rows"]:
        w = waves_model.of_problem(data["m"], r["n"], rec.provenance.get("sm_count") or SMS)
        elapsed = r["sm__cycles_elapsed.max"]
        mean, most = r["sm__cycles_active.avg"] / elapsed, r["sm__cycles_active.max"] / elapsed
        print(f"{r['n']:>6} {w.fraction:>6.2f} {w.busy:>10.0%} {mean:>15.1%} {most:>11.1%}")
    return Outcome(Mode.RECORDED, data, None, rec)


# ------------------------------------------------------------------ launch overhead


def launch_overhead() -> Outcome:
    """Host microseconds per call and time per GEMM eager and graphed (live: ~15 s)."""
    out = live_or("sm_90a", bench.launch, _recorded("launch"))
    data = out.value
    print("host time per call (µs), 256^3 bf16:")
    for name, us in data["host_us"].items():
        print(f"  {name:40s} {us:7.1f}")
    print(f"\n{'size':>5} | {'course eager':>12} {'cuBLAS eager':>12} | "
          f"{'course graph':>12} {'cuBLAS graph':>12} | graph: % of cuBLAS")  # fmt: skip
    for r in data["sizes"]:
        e, g = r["eager"], r["graph"]
        print(
            f"{r['size']:>5} | {e['kernel_us']:>10.1f}µs {e['cublas_us']:>10.1f}µs | "
            f"{g['kernel_us']:>10.1f}µs {g['cublas_us']:>10.1f}µs | {g['pct_of_cublas'][0]:.1f}%"
        )
    return out


def launch_figure(out: Outcome):
    data = out.value
    sizes = [r["size"] for r in data["sizes"]]
    series = {
        f"{who}, {mode_label}": [r[mode][key] for r in data["sizes"]]
        for mode, mode_label in (("eager", "eager"), ("graph", "CUDA graph"))
        for who, key in (("course", "kernel_us"), ("cuBLAS", "cublas_us"))
    }
    return pictures.launch(sizes, series, _source(out, "times"))


# ------------------------------------------------------------------ tile order


def order_table() -> dict | None:
    """Recorded Nsight Compute counters of the SOL kernel at 8192^3 for each group_m, with
    the panels of A and B a wave of 66 work items touches (course.models.tile_order), and
    the run's speed against cuBLAS."""
    rec = _profiled("order")
    if rec is None:
        return None
    data = rec.data
    size = data["size"]
    blocks = size // 256  # cluster blocks per side: 2 x 128 rows, 256 columns
    clusters = (rec.provenance.get("sm_count") or SMS) // 2
    print(
        f"{size}^3 bf16; A and B are {2 * size * size * 2 / 1e9:.2f} GB together, read once at best"
    )
    print(f"{'group_m':>7} {'panels/wave':>11} {'model GB':>8} | {'DRAM GB':>7} {'L2 sectors':>11} "
          f"{'L2 hit':>6} | {'% of cuBLAS':>11}")  # fmt: skip
    for r in data["rows"]:
        panels = tile_order.wave_panels(blocks, blocks, r["group_m"], clusters)
        model_gb = sum(panels) * PANEL_BYTES / 1e9
        print(
            f"{r['group_m']:>7} {sum(panels) / len(panels):>11.1f} {model_gb:>8.2f} | "
            f"{_counters(r['counters'])} | {r['pct_of_cublas'][0]:>10.1f}%"
        )
    print(f"{'cuBLAS':>7} {'':>11} {'':>8} | {_counters(data['cublas'])} |")
    return data


def hints_table() -> dict | None:
    """Recorded Nsight Compute counters of the SOL kernel at 8192^3 with each pair of L2
    eviction priorities on its TMA loads, and its speed against cuBLAS at 4096^3 and 8192^3."""
    rec = _profiled("hints")
    if rec is None:
        return None
    data = rec.data
    print(f"{data['size']}^3 bf16 counters; % of cuBLAS: median round (lowest-highest)")
    sizes = [r["problem"].split("x")[0] for r in data["rows"]]
    timed = " | ".join(f"{f'% of cuBLAS at {n}^3':>18s}" for n in sizes)
    print(f"{'hints':18s} | {'DRAM GB':>7} {'L2 sectors':>11} {'L2 hit':>6} | {timed}")
    for name in (f"A {a}, B {b}" for a, b in bench.HINTS):
        counters = data["counters"][name]
        cells = " | ".join(
            "{:>18s}".format("{:.1f}% ({:.0f}-{:.0f})".format(*r["pct_of_cublas"][name]))
            for r in data["rows"]
        )
        print(f"{name:18s} | {_counters(counters)} | {cells}")
    control = " | ".join(
        "{:>18s}".format("{:.1f}% ({:.0f}-{:.0f})".format(*r["pct_of_cublas"]["cuBLAS (control)"]))
        for r in data["rows"]
    )
    print(f"{'cuBLAS (control)':18s} | {'':>7} {'':>11} {'':>6} | {control}")
    return data


def _counters(c: dict) -> str:
    """DRAM GB read, L2 sectors read (millions) and their hit rate, as one table cell."""
    dram, sectors = c["dram__bytes_read.sum"] / 1e9, c["lts__t_sectors_op_read.sum"] / 1e6
    return f"{dram:>7.2f} {sectors:>10.0f}M {c['lts__t_sector_op_read_hit_rate.pct']:>5.0f}%"


# ------------------------------------------------------------------ fusion


def fusion() -> Outcome:
    """y = GELU(A . B^T + bias), five ways, alternating rounds (live: ~15 s)."""
    out = live_or("sm_90a", bench.fusion, _recorded("fusion"))
    for r in out.value["rows"]:
        m, n, k = r["shape"]
        print(f"{m} x {n} x {k} (max relative error of the fused kernel {r['max_rel_error']:.1e}):")
        for name, ms in r["ms"].items():
            pct = r["pct_of_cublaslt_fused"].get(name)
            share = f"{pct[0]:6.1f}% of cuBLASLt fused" if pct else "(the reference)"
            print(f"  {name:26s} {ms * 1e3:8.1f} µs  {share}")
        extra = 4 * m * n * 2  # C + bias: read C, write T; GELU: read T, write y
        gap = r["ms"]["GEMM (course) + torch"] - r["ms"]["fused (course)"]
        print(f"  the unfused pair moves {extra / 1e6:.0f} MB more through HBM; it takes "
              f"{gap * 1e3:.0f} µs more: {extra / gap / 1e9:.2f} TB/s")  # fmt: skip
    return out


def fusion_figure(out: Outcome):
    rows = out.value["rows"]
    shapes = ["x".join(map(str, r["shape"])) for r in rows]
    ms = {s: r["ms"] for s, r in zip(shapes, rows)}
    order = ("fused (course)", "cuBLASLt fused", "GEMM (course) alone", "GEMM (course) + torch",
             "cuBLAS + torch")  # fmt: skip
    contenders = [c for c in order if c in rows[0]["ms"]]
    return pictures.fusion(shapes, contenders, ms, _source(out, "times"))


# ------------------------------------------------------------------ the fused kernel, checked

CHECK_SHAPES = ((129, 264, 400), (1000, 1016, 520), (4096, 4096, 4096))
EXECUTOR_SHAPE = (129, 264, 96)  # a partial tile in M and N, one and a half k-tiles


def fused_check_live() -> list[tuple]:
    """Every preset against torch over ragged shapes, output poisoned (needs sm_90a)."""
    from kernels import fused_gemm

    rows = fused_gemm.check(CHECK_SHAPES)
    for name, (m, n, k), err, ok in rows:
        print(f"{name:18s} {m}x{n}x{k}: relative error {err:.1e} {'ok' if ok else 'WRONG'}")
    return rows


def fused_check_executed() -> list:
    """Every preset's own code on the CPU executor at EXECUTOR_SHAPE, against torch."""
    from course.execute.ladder_runs import run_fused_gemm
    from kernels import fused_gemm

    runs = []
    for name, config in fused_gemm.PRESETS.items():
        run = run_fused_gemm(config, *EXECUTOR_SHAPE, seed=len(runs))
        print(f"{name:18s} {run.summary()}")
        runs.append(run)
    return runs


# ------------------------------------------------------------------ split-K

# (preset, m, n, k, clusters) on the CPU executor: ragged edges and a K of one k-tile split in
# two; split_tail over 5 x 2 tiles on 2 clusters (whole tiles for a wave, then 2 split)
SPLIT_EXECUTED = (("split_k2", 130, 264, 40, 1), ("split_tail", 600, 392, 192, 2))


def split_check_live() -> list[tuple]:
    """Every split-K preset against torch over its ragged shapes, C poisoned (needs sm_90a)."""
    from kernels import split_k_gemm

    rows = split_k_gemm.check()
    for name, (m, n, k), err, ok in rows:
        print(f"{name:11s} {m}x{n}x{k}: relative error {err:.1e} {'ok' if ok else 'WRONG'}")
    return rows


def split_check_executed() -> list:
    """Two presets' own code on the CPU executor (SPLIT_EXECUTED), against torch."""
    from course.execute.ladder_runs import run_split_k_gemm
    from kernels import split_k_gemm

    runs = []
    for name, m, n, k, clusters in SPLIT_EXECUTED:
        run = run_split_k_gemm(split_k_gemm.PRESETS[name], m, n, k, clusters=clusters)
        print(f"{name:11s} {run.summary()}")
        runs.append(run)
    return runs


def _cell(p) -> str:
    """A (median, lowest, highest) spread of per-round ratios as the tables print it."""
    return "{:5.1f}% ({:.0f}-{:.0f})".format(*p)


def split_table(dtype: str = "bfloat16") -> dict | None:
    """The recorded split-K run (`last_percent split`): each preset, the SOL kernel and cuBLAS's
    control as % of cuBLAS, median round (lowest-highest), with the SOL kernel's waves."""
    rec = _recorded_everywhere(
        "split", "split --record", "Timing the presets takes about a minute of a Hopper GPU"
    )
    if rec is None:
        return None
    rows = [r for r in rec.data["rows"] if r["problem"].split()[-1] == dtype]
    names = sorted(rows[0]["pct_of_cublas"], key=lambda name: "control" in name)
    print(f"{dtype}; model: the run's length in whole-tile times, the SOL kernel's waves and")
    print(
        "split_tail's (course.models.waves); measured: % of cuBLAS, median round (lowest-highest)"
    )
    head = f"{'M x N x K':17s} {'waves':>5s} {'SOL':>4s} {'tail':>4s} | "
    print(head + " | ".join(f"{n:>16s}" for n in names))
    for r in rows:
        m, n, k = r["shape"]
        sol = waves_model.of_problem(m, n, SMS)
        tail = waves_model.split_tail_length(m, n, SMS)
        cells = [_cell(r["pct_of_cublas"][name]) for name in names]
        model = f"{sol.fraction:5.2f} {sol.waves:4d} {tail:4.1f}"
        print(f"{m}x{n}x{k:<7d} {model} | " + " | ".join(f"{c:>16s}" for c in cells))
    return rec.data


# ------------------------------------------------------------------ where the SOL kernel stands


def sol_table() -> None:
    """The recorded run of the course's SOL kernel, NVIDIA's CuTe DSL persistent example (same
    tile and cluster) and cuBLAS timed against itself (the control), 15 alternating rounds."""
    rec = _recorded_everywhere(
        "sol", "sol --example PATH --record", "NVIDIA's example is not part of the course"
    )
    if rec is None:
        return None
    print(f"{'problem':24s} | {'% of cuBLAS, median round (lowest-highest)':>44s}")
    for r in rec.data["rows"]:
        cells = ", ".join(
            f"{name} {p[0]:.1f}% ({p[1]:.0f}-{p[2]:.0f})" for name, p in r["pct_of_cublas"].items()
        )
        print(f"{r['problem']:24s} | {cells}")
    return rec.data


def fp8_block_table(goal_pct: float = 90.0) -> dict | None:
    """Notebook 12: the recorded run of the block-scaled presets against the course's
    tensorwise kernel and cuBLAS FP8 (`last_percent fp8`), median round (lowest-highest),
    and whether each block preset reaches `goal_pct` of the tensorwise kernel."""
    rec = _recorded_everywhere(
        "fp8", "fp8 --record", "Timing the FP8 kernels takes two minutes of a Hopper GPU"
    )
    if rec is None:
        return None
    steps = bench.FP8_STEPS  # the steps in order, where the record has them
    names = sorted(
        (name for name in rec.data["contenders"] if name != "tensor"),
        key=lambda name: steps.index(name) if name in steps else len(steps),
    )
    blocks = [name for name in names if name.startswith("block")]
    print("% of the course's tensorwise kernel | % of cuBLAS FP8 (tensorwise), per round:")
    print("median (lowest-highest); cuBLAS timed against itself is the control")
    for r in rec.data["rows"]:
        print(f"{r['problem']}  (all outputs checked against torch: {all(r['checked'].values())})")
        for name in [*names, "cuBLAS (control)"]:
            vs_tensor, vs_cublas = r["pct_of_tensor"][name], r["pct_of_cublas"][name]
            met = ""
            if name in blocks:
                met = f"  goal {goal_pct:.0f}%: {'met' if vs_tensor[0] >= goal_pct else 'not met'}"
            print(f"  {name:22s} {_cell(vs_tensor):>18s} | {_cell(vs_cublas):>18s}{met}")
        print(f"  {'tensor':22s} {'':>18s} | {_cell(r['pct_of_cublas']['tensor']):>18s}")
    return rec.data


def pdl_table() -> dict | None:
    """Notebook 13: the recorded chains of GEMMs replayed from one CUDA graph, the SOL kernel
    without and with programmatic dependent launch (`last_percent pdl`)."""
    rec = _recorded_everywhere(
        "pdl", "pdl --record", "Timing the chains takes about a minute of a Hopper GPU"
    )
    if rec is None:
        return None
    print("a chain of square bf16 GEMMs, x <- x . W^T, one CUDA graph per chain; per round:")
    print("median (lowest-highest)")
    head = f"{'size':>5s} {'layers':>6s} | {'SOL us':>7s} {'+ PDL us':>8s} {'cuBLAS us':>9s} |"
    print(head + f" {'PDL vs SOL':>18s} | {'SOL+PDL % of cuBLAS':>19s} | {'control':>18s}")
    for r in rec.data["rows"]:
        us = r["chain_us"]
        print(
            f"{r['size']:5d} {r['layers']:6d} | {us['SOL']:7.1f} {us['SOL + PDL']:8.1f} "
            f"{us['cuBLAS']:9.1f} | {_cell(r['pdl_pct_of_sol']):>18s} | "
            f"{_cell(r['pct_of_cublas']['SOL + PDL']):>19s} | "
            f"{_cell(r['pct_of_cublas']['cuBLAS (control)']):>18s}"
        )
    return rec.data


def split_check() -> Outcome:
    """Section 2's check of split-K. On an sm_90a GPU: every split-K preset against torch
    (`split_check_live`). Elsewhere: split_k2 and split_tail's own code on the CPU executor
    (`split_check_executed`), then the recorded GPU output (label 13.split_check)."""
    return live_or_executed(
        "sm_90a",
        split_check_live,
        split_check_executed,
        "kernels/split_k_gemm.py (split_k2, split_tail)",
        label="13.split_check",
    )


def fused_check() -> Outcome:
    """Section 5's check of the fused epilogue. On an sm_90a GPU: every preset against torch
    (`fused_check_live`). Elsewhere: every preset's own code on the CPU executor
    (`fused_check_executed`), then the recorded GPU output (label 13.fused_check)."""
    return live_or_executed(
        "sm_90a",
        fused_check_live,
        fused_check_executed,
        "kernels/fused_gemm.py (every preset)",
        label="13.fused_check",
    )
