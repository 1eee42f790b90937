"""Notebook 08's TMA multicast: checked and timed on a Hopper GPU, recorded or compiled
elsewhere, and the Nsight Compute counters that test the model's L2 -> SM bytes (each byte
read from L2 once per cluster: an n-fold saving the counters have to confirm or refute).

  measure_multicast  the live cell: check every variant and time it, or its fallback
  multicast_ptx      the multicast load and its CTA mask in PTX (compile-only fallback)
  traffic_report     the recorded Nsight Compute counters, or how to record them
  model_vs_counters  per cluster size: the L2 sectors multicast read, against the model's 1/n
"""
from __future__ import annotations

from course.bench import tma_multicast as tma_bench
from course.runtime import results
from course.runtime.live import Mode, Outcome, compile_only, live_or, recorded_or

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
    """Live on Hopper; elsewhere the recorded timings (printed like the live ones) or, before
    any are recorded, the compiled kernel."""
    out = live_or("sm_90+", check_and_time,
                  recorded_or("tma", compile_only(multicast_ptx), RECORD_COMMAND))
    if out.mode is Mode.RECORDED:
        tma_bench.print_rows(out.value)
    return out


def traffic_report() -> results.Record | None:
    """Print the newest recorded Nsight Compute L2 -> SM counters (multicast against separate
    loads), or the command that records them."""
    rec = results.latest("tma_traffic")
    if rec is None:
        print(f"No Nsight Compute measurement recorded yet: run `{TRAFFIC_COMMAND}` on an H100 "
              "and commit results/tma_traffic.json.")
        return None
    from course.bench.tma_traffic import report

    print(f"recorded: {rec.citation()}")
    print(report(rec.data))
    print("\n".join(model_vs_counters(rec.data)))
    return rec


L2_SECTORS = "lts__t_sectors_op_read.sum"


def model_vs_counters(data: dict) -> list[str]:
    """One line per cluster size: the L2 sectors read with multicast over those with separate
    loads, against the model's prediction 1/n, and which of the two the counters side with."""
    lines = []
    for r in data["ratios"]:
        if r["metric"] != L2_SECTORS or r["ratio"] is None:
            continue
        model = 1 / r["cluster"]
        if r["ratio"] <= 1.1 * model:
            verdict = "as the model predicts"
        elif r["ratio"] < 1:
            verdict = "fewer, but far from the model's n-fold saving"
        else:
            verdict = "more, not fewer: the model's saving is not seen"
        lines.append(f"cluster {r['cluster']}: multicast read {r['ratio']:.2f}x the L2 sectors of "
                     f"separate loads (model: {model:.2f}x) -> {verdict}")
    return lines
