"""What TMA multicast saves: many clusters read the same tiles, with and without it.

Every CTA of the grid receives the same `tiles` 64 x 64 bf16 tiles, `rounds` times
(kernels/tma.py, TmaMulticast). Without multicast each CTA loads every tile itself,
so L2 serves each byte once per CTA; with multicast in a cluster of n, each CTA loads
1/n of every tile and TMA delivers it to all n, so L2 serves each byte once per
cluster. The bytes landing in shared memory are the same either way.

This module times the four variants (cluster 2 and 4, multicast off and on) in
alternating rounds, after checking that every CTA received exactly the source tiles.
The L2 -> SM bytes it reports are the model's (delivered / n with multicast); the
counters that confirm them come from Nsight Compute (course.bench.tma_traffic).
"""

from __future__ import annotations

import torch

from course.bench.timing import alternating

TILE = (64, 64)


def variants(tiles: int = 8) -> dict[str, object]:
    """name -> MulticastConfig for the four measured variants."""
    from kernels.tma import MulticastConfig

    return {
        f"cluster {n}, {'multicast' if mc else 'separate loads'}": MulticastConfig(
            cluster=n, tiles=tiles, multicast=mc
        )
        for n in (2, 4)
        for mc in (False, True)
    }


def check_variant(
    config, dtype: torch.dtype = torch.bfloat16, clusters: int = 3, rounds: int = 2
) -> bool:
    """Every CTA of `clusters` clusters received the source tiles bit for bit."""
    from kernels import tma

    src = torch.randn(config.tiles, *TILE, device="cuda").to(dtype)
    got = tma.multicast(src, config, clusters=clusters, rounds=rounds)
    torch.cuda.synchronize()
    return bool(torch.equal(got, src.expand_as(got)))


def measure(
    tiles: int = 8,
    rounds: int = 40,
    waves: int = 4,
    timing_rounds: int = 6,
    reps: int = 10,
    dtype: torch.dtype = torch.bfloat16,
) -> dict:
    """Time every variant on a grid of `waves` CTAs per SM; returns a results dict."""
    from kernels import tma

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    src = torch.randn(tiles, *TILE, device="cuda").to(dtype)
    tile_bytes = TILE[0] * TILE[1] * src.element_size()
    configs = variants(tiles)
    launches, meta = {}, {}
    for name, cfg in configs.items():
        if not check_variant(cfg, dtype):
            raise AssertionError(f"{name}: a CTA received wrong data; refusing to time it")
        clusters = max(1, waves * sms // cfg.cluster)
        launches[name] = [tma.multicast_launcher(src, cfg, clusters, rounds)]
        delivered = clusters * cfg.cluster * tiles * tile_bytes * rounds
        meta[name] = {
            "cluster": cfg.cluster,
            "multicast": cfg.multicast,
            "ctas": clusters * cfg.cluster,
            "delivered_bytes": delivered,
            "l2_to_sm_bytes_model": delivered // (cfg.cluster if cfg.multicast else 1),
        }
    timings = alternating(launches, rounds=timing_rounds, reps=reps)
    rows = []
    for name, t in timings.items():
        m = meta[name]
        rows.append(
            {
                "variant": name,
                **m,
                "median_ms": t.median_ms,
                "spread": round(t.spread, 4),
                "delivered_gbps": m["delivered_bytes"] / t.median_ms / 1e6,
                "samples": len(t.samples_ms),
            }
        )
    for n in (2, 4):
        off = next(r for r in rows if r["cluster"] == n and not r["multicast"])
        on = next(r for r in rows if r["cluster"] == n and r["multicast"])
        on["speedup_vs_separate"] = off["median_ms"] / on["median_ms"]
    return {
        "dtype": str(dtype).replace("torch.", ""),
        "tile": list(TILE),
        "tiles_per_cta": tiles,
        "rounds": rounds,
        "sms": sms,
        "waves": waves,
        "checked": True,
        "results": rows,
    }


def print_rows(data: dict) -> None:
    """One line per variant."""
    ctas = data["waves"] * data["sms"]
    print(
        f"{data['tiles_per_cta']} tiles of {data['tile'][0]}x{data['tile'][1]} "
        f"{data['dtype']} per CTA, {data['rounds']} rounds; a grid of {ctas} CTAs "
        f"({data['waves']} per SM: more than fit at once, so they run in waves):"
    )
    for r in data["results"]:
        extra = (
            f"  {r['speedup_vs_separate']:.2f}x the speed of separate loads"
            if "speedup_vs_separate" in r
            else ""
        )
        print(
            f"  {r['variant']:28s} {r['median_ms']:8.3f} ms  delivered {r['delivered_gbps']:7.0f} "
            f"GB/s  L2->SM (model) {r['l2_to_sm_bytes_model'] / 2**20:8.1f} MiB{extra}"
        )
