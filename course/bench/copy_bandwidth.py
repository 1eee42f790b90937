"""Notebook 04's benchmark: every copy variant's bandwidth against the device's copy ceiling.

Each variant is first checked (exact equality with its source over ragged sizes, the
output NaN-poisoned first); then all of them and torch's own device-to-device copy
(the ceiling of `course.bench.ceilings`) are timed in alternating rounds in one
process, so the percentages compare like with like. Bandwidth counts bytes read plus
bytes written, in GB/s (10^9 bytes per second).
"""

from __future__ import annotations

import torch

from course.bench.correctness import Check, compare, poison_
from course.bench.timing import alternating

CEILING = "torch copy_ (ceiling)"
SIZES = (1, 3, 4, 1020, 1028, 4 * 100_003 + 4, 2**20 + 4)  # ragged against every tile


def check_variant(config) -> list[Check]:
    """The copy must equal its source exactly, including every ragged end."""
    from kernels import copies

    verdicts = []
    for n in SIZES:
        if config.variant in copies.VECTOR_VARIANTS and n % copies.VEC:
            continue
        src = torch.randn(n, device="cuda")
        dst = poison_(torch.empty_like(src))
        copies.run(src, dst, config)
        torch.cuda.synchronize()
        verdicts.append(compare(dst, src.double(), what=f"{config.variant} n={n:,}", tol=0.0))
    return verdicts


def configs(values: int = 4):
    from kernels import copies

    return [copies.Config(v, values=values) for v in copies.VARIANTS]


def measure(nbytes: int = 2**30, rounds: int = 6, reps: int = 10, values: int = 4) -> dict:
    """Check, then time every variant and the ceiling; GB/s and % of the ceiling for each."""
    from kernels import copies

    cfgs = configs(values)
    checks = {c.variant: check_variant(c) for c in cfgs}
    bad = [str(v) for vs in checks.values() for v in vs if not v.ok]
    if bad:
        raise AssertionError("refusing to time a wrong copy: " + "; ".join(bad))
    n = nbytes // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    contenders = {c.variant: [lambda c=c: copies.run(src, dst, c)] for c in cfgs}
    contenders[CEILING] = [lambda: dst.copy_(src)]
    for c in cfgs:  # compile before timing
        copies.compile(c)
    timings = alternating(contenders, rounds=rounds, reps=reps)
    ceiling = 2 * nbytes / timings[CEILING].median_ms / 1e6
    rows = []
    for c in cfgs:
        t = timings[c.variant]
        gbps = 2 * nbytes / t.median_ms / 1e6
        rows.append(
            {
                "variant": c.variant,
                "threads_per_block": c.threads_per_block,
                "values": c.values if c.variant in ("tiled", "cp_async") else None,
                "median_ms": t.median_ms,
                "gbps": gbps,
                "pct_of_ceiling": 100 * gbps / ceiling,
                "spread": round(t.spread, 4),
                "samples": len(t.samples_ms),
                "checks": [str(v) for v in checks[c.variant]],
            }
        )
    best = max(rows, key=lambda r: r["gbps"])
    return {
        "bytes": nbytes,
        "ceiling_gbps": ceiling,
        "ceiling_spread": round(timings[CEILING].spread, 4),
        "best": best["variant"],
        "best_pct_of_ceiling": best["pct_of_ceiling"],
        "variants": rows,
    }


def table(data: dict) -> str:
    """A fixed-width table of a measure() result; `spread` is each median's interquartile
    range over the median (course.bench.timing.Timing.spread), so a percentage of the ceiling
    can be read against the noise of both timings."""
    lines = [f"{'variant':10s} {'GB/s':>8s} {'% of ceiling':>13s} {'ms':>9s} {'spread':>7s}"]
    for r in data["variants"]:
        lines.append(
            f"{r['variant']:10s} {r['gbps']:8.0f} {r['pct_of_ceiling']:12.1f}% "
            f"{r['median_ms']:9.3f} {100 * r['spread']:6.2f}%"
        )
    spread = f"{100 * data['ceiling_spread']:6.2f}%" if "ceiling_spread" in data else f"{'-':>7s}"
    lines.append(
        f"{'ceiling':10s} {data['ceiling_gbps']:8.0f} {'100.0':>12s}% "
        f"{2 * data['bytes'] / data['ceiling_gbps'] / 1e6:9.3f} {spread}   "
        f"(torch copy_ of {data['bytes'] / 2**30:.2f} GiB, read + write, same rounds)"
    )
    return "\n".join(lines)


def above_ceiling(data: dict) -> str | None:
    """Why the best copy reads more than 100% of the ceiling, with the numbers that say how
    far past it and how noisy both timings were; None when it does not."""
    best = next(r for r in data["variants"] if r["variant"] == data["best"])
    if best["pct_of_ceiling"] <= 100:
        return None
    edge = best["pct_of_ceiling"] - 100
    noise = max(best["spread"], data.get("ceiling_spread", 0.0)) * 100
    verdict = (
        "within the larger of the two spreads: a tie, within the noise"
        if edge <= noise
        else f"more than either spread, so in this run {best['variant']} was measurably, "
        "if only slightly, faster than torch's copy_"
    )
    return (
        f"Above 100%: {best['variant']} is {edge:.1f}% past the ceiling. The ceiling is not "
        f"the DRAM's limit but torch's copy_ (for a contiguous tensor, CUDA's device-to-device "
        f"memcpy), timed in the same alternating rounds on the same "
        f"{data['bytes'] / 2**30:.2f} GiB. The spreads (interquartile range / median) of the "
        f"two timings are {100 * best['spread']:.2f}% ({best['variant']}) and "
        f"{100 * data.get('ceiling_spread', 0.0):.2f}% (ceiling); {edge:.1f}% is {verdict}."
    )
