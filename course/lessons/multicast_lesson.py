"""Notebook 08's TMA multicast: checked and timed on a Hopper GPU, recorded or compiled
elsewhere, and the Nsight Compute counters that test the model's L2 -> SM bytes (each byte
read from L2 once per cluster: an n-fold saving the counters have to confirm or refute).

  measure_multicast  the live cell: check every variant and time it, or its fallback
  multicast_executed every variant's own code on the CPU executor (fallback, then the record)
  multicast_ptx      the multicast load and its CTA mask in PTX (compile-only fallback)
  traffic_report     the recorded Nsight Compute counters, or how to record them
  counter_table      what the SMs asked for, what the coalescer merged, what L2 read
  model_vs_counters  per cluster size: requests and L2 sectors against the model's 1/n
  gemm_with_and_without  notebook 11's GEMM with and without multicast, under ncu
"""

from __future__ import annotations

from course.bench import tma_multicast as tma_bench
from course.runtime import results
from course.lessons.gemm_profiles import profiler_banner
from course.runtime.live import (
    Mode,
    Outcome,
    compile_only,
    executed,
    live_or,
    recorded_or,
    show,
)

RECORD_COMMAND = "python -m course.bench tma --record"
TRAFFIC_COMMAND = "python -m course.bench.tma_traffic --record"


def check_and_time() -> dict:
    """Every CTA of every variant received exactly the tiles; then the four variants timed
    in alternating rounds (needs a Hopper GPU)."""
    for name, cfg in tma_bench.variants(tiles=4).items():
        print(f"{name:28s} every CTA received exactly the tiles: {tma_bench.check_variant(cfg)}")
    data = tma_bench.measure()
    tma_bench.print_rows(data)
    return data


def multicast_executed(tiles: int = 2) -> dict[str, bool]:
    """check_and_time's check without a Hopper GPU: kernels/tma.py's TmaMulticast run on the
    course's CPU executor for each of the four variants (one cluster, `tiles` tiles), every
    CTA's tiles compared bit for bit. Nothing is timed."""
    from course.execute import ladder_runs

    verdicts = {}
    for name, cfg in tma_bench.variants(tiles=tiles).items():
        run = ladder_runs.run_tma("multicast", config=cfg)
        verdicts[name] = run.ok
        said = f"stopped by a hazard: {run.hazard}" if run.hazard else run.ok
        print(f"{name:28s} every CTA received exactly the tiles: {said} ({run.seconds:.1f} s)")
    return verdicts


def multicast_ptx(arch: str):
    """A cluster-of-4 multicast load in PTX, the mask that names its CTAs, and the count of
    cluster barriers."""
    from kernels import tma

    art = tma.artifacts(arch, "multicast", config=tma.MulticastConfig(cluster=4, tiles=2))
    print(art.ptx_lines(r"multicast::cluster")[0])
    print(art.ptx_lines(r"mov\.b16\s+%rs\d+, 15;")[0], "  <- the mask: CTAs 0-3 of the cluster")
    print("cluster barriers:", art.count_ptx(r"barrier\.cluster"))
    return art


def measure_multicast() -> Outcome:
    """Live on Hopper; elsewhere the check on the CPU executor, then the recorded timings
    (printed like the live ones) or, before any are recorded, the compiled kernel."""
    timings = recorded_or("tma", compile_only(multicast_ptx), RECORD_COMMAND)
    out = live_or(
        "sm_90+",
        check_and_time,
        executed(multicast_executed, "kernels/tma.py's TmaMulticast (one cluster)", then=timings),
    )
    if out.mode is Mode.RECORDED:
        tma_bench.print_rows(out.value)
    return out


def traffic_report() -> results.Record | None:
    """Print the newest recorded Nsight Compute counters of the multicast benchmark (what the
    SMs asked for, what the L2 Request Coalescer merged, what L2 read), or the command
    that records them."""
    rec = results.latest("tma_traffic")
    if rec is None:
        print(
            f"No Nsight Compute measurement recorded yet: run `{TRAFFIC_COMMAND}` on an H100 "
            "and commit results/tma_traffic.json."
        )
        return None
    show(profiler_banner(rec.citation()))
    rounds = sorted({row["rounds"] for row in rec.data.get("rows", []) if "rounds" in row})
    if rounds:
        timed = results.latest("tma")
        line = (
            f"one launch of {' / '.join(map(str, rounds))} round(s) per variant, on the "
            "same grid as the timing above; bytes scale with the rounds"
        )
        if timed is not None and len(rounds) == 1:
            line += (
                f" (the timing ran {timed.data['rounds']}: its model bytes are "
                f"{timed.data['rounds'] / rounds[0]:g}x these)"
            )
        print(line)
    print("\n".join(counter_table(rec.data)))
    print("\n".join(model_vs_counters(rec.data)))
    return rec


# What each variant asked L2 for, and where the requests went (Hopper's L2 Request Coalescer,
# `lrc`, sits between the crossbar and the L2 slices). Older records lack the lrc counters.
COUNTERS = {
    "lrc__xbar2lrc_requests_op_read.sum": "read requests the SMs sent towards L2",
    "lrc__request_sectors_op_read_coalescable.sum": "sectors those requests asked for",
    "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum": "  of which merged by the coalescer (hardware)",  # noqa: E501  (a metric's name)
    "lrc__request_sectors_op_read_coalescing_type_programmatic.sum": "  of which multicast requests (programmatic)",  # noqa: E501
    "lts__t_sectors_srcunit_tex_op_read.sum": "sectors L2 actually read",
    "l1tex__m_xbar2l1tex_read_bytes.sum": "bytes delivered into the SMs",
    "gpu__time_duration.sum": "duration (ns, one launch)",
}
L2_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
REQUESTS = "lrc__xbar2lrc_requests_op_read.sum"
MERGED = "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum"
ASKED = "lrc__request_sectors_op_read_coalescable.sum"


def _ratio(data: dict, cluster: int, metric: str) -> dict | None:
    return next(
        (r for r in data["ratios"] if r["cluster"] == cluster and r["metric"] == metric), None
    )


def counter_table(data: dict) -> list[str]:
    """Per cluster size, separate loads against multicast, for the counters in COUNTERS."""
    lines = []
    for n in sorted({r["cluster"] for r in data["ratios"]}):
        lines.append(f"cluster of {n}:{'separate loads':>44s} {'multicast':>14s}  ratio")
        for metric, what in COUNTERS.items():
            r = _ratio(data, n, metric)
            if r is not None:
                ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"
                lines.append(
                    f"  {what:46s} {r['separate']:>12,.0f} {r['multicast']:>14,.0f}  {ratio}"
                )
    return lines


def model_vs_counters(data: dict) -> list[str]:
    """One line per cluster size: the read requests (what the model counts) and the L2 sectors
    read with multicast against separate loads, and the share of the separate loads'
    sectors the coalescer merged in hardware, which the model leaves out."""
    lines = []
    for n in sorted({r["cluster"] for r in data["ratios"]}):
        sectors, requests = _ratio(data, n, L2_SECTORS), _ratio(data, n, REQUESTS)
        merged, asked = _ratio(data, n, MERGED), _ratio(data, n, ASKED)
        if sectors is None or sectors["ratio"] is None:
            continue
        line = f"cluster {n}: model 1/{n} = {1 / n:.2f}x;"
        if requests is not None:
            line += f" requests {requests['ratio']:.2f}x;"
        line += f" L2 sectors read {sectors['ratio']:.2f}x"
        if merged is not None and asked is not None and asked["separate"]:
            line += (
                f"; separate loads had {merged['separate'] / asked['separate']:.0%} of their "
                f"sectors merged by the coalescer, multicast "
                f"{merged['multicast'] / max(asked['multicast'], 1):.0%}"
            )
        lines.append(line)
    return lines


def gemm_with_and_without(presets=("persistent", "cluster"), size: int = 4096) -> list[dict]:
    """Notebook 11's GEMM under Nsight Compute without multicast ("persistent") and with B
    multicast in clusters of 2 ("cluster"), at the clock held at base and running free."""
    from course.lessons import gemm_profiles

    return gemm_profiles.show(presets, size, cublas_beside=None)
