"""Nsight Compute's count of L2 -> SM traffic for TMA multicast, with and without it.

    python -m course.bench.tma_traffic [--cluster 2 4] [--record]

For each variant of course.bench.tma_multicast (cluster 2 / 4, multicast off / on) this runs a
child process under `ncu`, profiles one launch of the multicast benchmark kernel and
reads these Hopper metrics (raw counters, --print-units base):

  lts__t_sectors_op_read.sum             32-byte sectors read out of L2 by anyone: the
                                         supply side. The model says multicast divides
                                         it by n (each byte read once per cluster).
  lts__t_sectors_srcunit_tex_op_read.sum the same, restricted to requests from the SMs'
                                         memory pipeline (L1TEX, which TMA loads go
                                         through): the model says n-fold less too.
  l1tex__m_xbar2l1tex_read_bytes.sum     bytes the crossbar delivered into the SMs: the
                                         receive side. Every CTA still receives its
                                         tiles, so expect little change here -- multicast
                                         saves L2 reads, not shared-memory fills.
  dram__bytes_read.sum                   DRAM reads: ~0, the tiles live in L2 (a control).
  gpu__time_duration.sum                 the launch's duration under the profiler.

These counters test the model; they are not assumed to agree with it (on the H100 run in
results/tma_traffic.json they did not, and why is still open). Which counter a
given ncu/driver attributes TMA traffic to is also part of what this measures; the report
prints every ratio (multicast / separate) so the right one is
visible rather than assumed. A metric this ncu does not know is retried alone and
then reported as missing. `parse_csv` reads `ncu --csv` output (tested on canned
output); results go to results/tma_traffic.json with provenance.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys

from course.bench.profile import ncu_binary

METRICS = {
    "lts__t_sectors_op_read.sum": "L2 sectors read (all requesters)",
    "lts__t_sectors_srcunit_tex_op_read.sum": "L2 sectors read for SM (L1TEX/TMA) requests",
    "lts__t_requests_srcunit_tex_op_read.sum": "L2 read requests from the SMs",
    "l1tex__m_xbar2l1tex_read_bytes.sum": "bytes delivered from the crossbar into the SMs",
    "dram__bytes_read.sum": "DRAM bytes read",
    "gpu__time_duration.sum": "duration",
}
UNIT_SCALE = {
    "byte": 1,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "sector": 1,
    "nsecond": 1,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
    "": 1,
}
KERNEL_REGEX = "regex:TmaMulticast"


def parse_csv(text: str) -> dict[str, dict[str, float | str]]:
    """`ncu --csv` output -> {metric: {"value": float (base units), "unit": str,
    "kernel": str}} for the first profiled launch (ID); ncu's banner lines are skipped
    and thousands separators removed."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError("no ncu CSV table in the output")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    if not rows:
        raise ValueError("the ncu CSV table is empty")
    first = rows[0]["ID"]
    out = {}
    for r in rows:
        if r["ID"] != first:
            continue
        unit = r.get("Metric Unit", "") or ""
        raw = (r.get("Metric Value") or "").replace(",", "")
        try:
            value = float(raw) * UNIT_SCALE.get(unit, 1)
        except ValueError:
            continue  # "n/a" and other non-numbers
        base = "byte" if unit.endswith("byte") else "nsecond" if unit.endswith("second") else unit
        out[r["Metric Name"]] = {"value": value, "unit": base, "kernel": r.get("Kernel Name", "")}
    return out


def unit_metrics(unit: str = "lrc") -> list[str]:
    """Every counter this GPU's ncu knows for a hardware unit, as `<name>.sum`. `lrc` is the
    L2 Request Coalescer, which sits in front of the L2 and, by Nsight Compute's own
    description, merges read requests and serves multicast before anything reaches an
    L2 slice; its counters are listed at run time because they differ between ncu
    versions."""
    out = subprocess.run(
        [ncu_binary(), "--query-metrics"], capture_output=True, text=True, timeout=120
    )
    # "name  type  unit  description": only counters add up (.sum); ratios would be
    # rejected and retried one by one
    names = [
        fields[0]
        for fields in map(str.split, out.stdout.splitlines())
        if len(fields) > 1 and fields[0].startswith(unit + "__") and fields[1] == "Counter"
    ]
    return [f"{n}.sum" for n in dict.fromkeys(names)]


def _ncu(metrics: list[str], cluster: int, multicast: bool, tiles: int, rounds: int) -> str:
    cmd = [
        ncu_binary(),
        "--csv",
        "--print-units",
        "base",
        "-k",
        KERNEL_REGEX,
        "--launch-skip",
        "1",
        "--launch-count",
        "1",
        "--metrics",
        ",".join(metrics),
        sys.executable,
        "-m",
        "course.bench.tma_traffic",
        "_launch",
        str(cluster),
        str(int(multicast)),
        str(tiles),
        str(rounds),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"ncu failed ({out.returncode}): {(out.stderr or out.stdout)[-1500:]}")
    return out.stdout


def profile(
    cluster: int, multicast: bool, tiles: int = 8, rounds: int = 10, extra: tuple[str, ...] = ()
) -> dict:
    """The metrics of one launch of one variant (METRICS and `extra`); unknown metrics are
    listed, not fatal."""
    wanted = list(METRICS) + [m for m in extra if m not in METRICS]
    try:
        got = parse_csv(_ncu(wanted, cluster, multicast, tiles, rounds))
        missing = [m for m in wanted if m not in got]
    except RuntimeError:
        got, missing = {}, []
        for m in wanted:  # find out which one this ncu rejects
            try:
                got.update(parse_csv(_ncu([m], cluster, multicast, tiles, rounds)))
            except (RuntimeError, ValueError):
                missing.append(m)
    kernel = next(iter(got.values()))["kernel"][:100] if got else ""
    return {
        "cluster": cluster,
        "multicast": multicast,
        "tiles": tiles,
        "rounds": rounds,
        "kernel": kernel,
        "metrics": {k: v["value"] for k, v in got.items()},
        "units": {k: v["unit"] for k, v in got.items()},
        "missing": missing,
    }


def ratios(rows: list[dict]) -> list[dict]:
    """Per cluster size and metric: multicast / separate loads (1/n = n-fold saving)."""
    out = []
    for n in sorted({r["cluster"] for r in rows}):
        off = next((r for r in rows if r["cluster"] == n and not r["multicast"]), None)
        on = next((r for r in rows if r["cluster"] == n and r["multicast"]), None)
        if off is None or on is None:
            continue
        for metric in dict.fromkeys(m for row in (off, on) for m in row["metrics"]):
            a, b = off["metrics"].get(metric), on["metrics"].get(metric)
            if a is None or b is None:
                continue
            out.append(
                {
                    "cluster": n,
                    "metric": metric,
                    "separate": a,
                    "multicast": b,
                    "ratio": (b / a) if a else None,
                }
            )
    return out


def report(data: dict) -> str:
    lines = [
        f"{'cluster':>7}  {'metric':42s} {'separate':>14} {'multicast':>14} {'ratio':>7}"
        "  (the model predicts 1/n)"
    ]
    for r in data["ratios"]:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        lines.append(
            f"{r['cluster']:>7}  {r['metric']:42s} {r['separate']:>14,.0f} "
            f"{r['multicast']:>14,.0f} {ratio:>7}"
        )
    missing = sorted({m for row in data["rows"] for m in row["missing"]})
    if missing:
        lines.append("not available in this ncu: " + ", ".join(missing))
    return "\n".join(lines)


def _launch(argv: list[str]) -> None:
    """Child: check once, then launch the benchmark kernel three times."""
    import torch

    from kernels import tma
    from kernels.tma import MulticastConfig

    from course.bench.tma_multicast import TILE

    cluster, multicast, tiles, rounds = (int(a) for a in argv)
    cfg = MulticastConfig(cluster=cluster, tiles=tiles, multicast=bool(multicast))
    src = torch.randn(tiles, *TILE, device="cuda").to(torch.bfloat16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    launch = tma.multicast_launcher(src, cfg, max(1, 4 * sms // cluster), rounds)
    for _ in range(3):
        launch()
    torch.cuda.synchronize()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_launch":
        _launch(argv[1:])
        return 0
    p = argparse.ArgumentParser(
        prog="python -m course.bench.tma_traffic",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cluster", type=int, nargs="+", default=[2, 4])
    p.add_argument("--tiles", type=int, default=8)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument(
        "--unit",
        nargs="*",
        default=["lrc"],
        help="also read every counter of these hardware units (default: lrc)",
    )
    p.add_argument("--record", action="store_true")
    args = p.parse_args(argv)
    extra = tuple(m for unit in args.unit for m in unit_metrics(unit))
    rows = [
        profile(n, mc, args.tiles, args.rounds, extra) for n in args.cluster for mc in (False, True)
    ]
    data = {"metrics": METRICS, "rows": rows, "ratios": ratios(rows)}
    print(report(data))
    if args.record:
        from course.runtime import results
        from course.bench import report as table

        results.record("tma_traffic", data)
        print(f"recorded; wrote {table.write()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
