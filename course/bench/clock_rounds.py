"""At what clock did each contender run? Paired rounds with the GPU's clock sampled.

    python -m course.bench clocks --kernel hopper --configs preset=specialized preset=persistent
        [--size 4096] [--rounds 12] [--reps 100] [--record]

A paired timing cancels drift that hits every contender alike. It cannot cancel a
slowdown a contender brings on itself: a kernel that draws more power is clocked down
during its own rounds, and Nsight Compute, which fixes the clock while it profiles, does
not see that. So this runs the kernels and cuBLAS (twice: the second is the control) in
alternating rounds while a side thread reads the SM clock, the board power and the
clock-event reasons (power cap, thermal) from NVML about every millisecond. A sample
belongs to the contender whose round was running. Per contender it reports the median
time per launch, the median SM clock in its rounds, their product (the clock cycles one
launch took, which the clock cannot change), the power, and how often a power or thermal
limit was holding the clock down.

NVML's clock reading moves in steps tens of milliseconds apart (on the H100 it stayed the
same across several 12 ms rounds), so a round must be long enough to own its samples: hence
rounds of 100 launches by default, and a cycle ratio that is coarser than the time ratio.
"""

from __future__ import annotations

import statistics

import torch

from course.bench.clocks import POWER_CAP, THERMAL, ClockSampler, Sample
from course.bench.gemm_bench import RotatingInputs, check_gemm, cublas, prepare, problem_for
from course.bench.timing import alternating, spread


def summarize_rounds(rounds: list[dict]) -> dict[str, dict]:
    """Per contender, from its rounds ({name, ms, mhz, watts, capped, thermal} each): the
    median ms and MHz, mega-cycles per launch, mean power, and the share of its rounds'
    samples with a power or thermal limit active."""
    out = {}
    for name in dict.fromkeys(r["name"] for r in rounds):
        mine = [r for r in rounds if r["name"] == name and r["mhz"] is not None]
        ms = statistics.median(r["ms"] for r in mine)
        mhz = statistics.median(r["mhz"] for r in mine)
        out[name] = {
            "ms": ms,
            "mhz": mhz,
            "mcycles": ms * mhz / 1e3,
            "watts": statistics.fmean(r["watts"] for r in mine),
            "power_capped": statistics.fmean(r["capped"] for r in mine),
            "thermal": statistics.fmean(r["thermal"] for r in mine),
            "rounds": len(mine),
        }
    return out


def paired_pct(
    rounds: list[dict], name: str, reference: str = "cublas", cycles: bool = False
) -> tuple[float, float, float]:
    """(median, lowest, highest) of 100 x reference / `name` per round pair: in time, or
    (`cycles`) in clock cycles, time x clock, which a clock difference cannot move."""

    def cost(r):
        return r["ms"] * r["mhz"] if cycles else r["ms"]

    ref = [r for r in rounds if r["name"] == reference and r["mhz"] is not None]
    mine = [r for r in rounds if r["name"] == name and r["mhz"] is not None]
    by_round = {r["round"]: r for r in ref}
    return spread(
        [100 * cost(by_round[r["round"]]) / cost(r) for r in mine if r["round"] in by_round]
    )


def _round_record(name: str, index: int, ms: list[float], got: list[Sample]) -> dict:
    return {
        "name": name,
        "round": index,
        "ms": statistics.median(ms),
        "mhz": statistics.median(s.mhz for s in got) if got else None,
        "watts": statistics.fmean(s.watts for s in got) if got else 0.0,
        "capped": sum(bool(s.reasons & POWER_CAP) for s in got) / max(len(got), 1),
        "thermal": sum(bool(s.reasons & THERMAL) for s in got) / max(len(got), 1),
        "samples": len(got),
    }


def measure(
    kernel: str,
    configs: list[dict],
    size: int = 4096,
    rounds: int = 12,
    reps: int = 100,
    dtype=None,
) -> dict:
    """Alternating rounds of cuBLAS, each configuration of `kernel`, and cuBLAS again,
    every result checked against torch first; returns per-round and summary records."""
    problem = problem_for(kernel, size, size, size, dtype or torch.bfloat16)
    calls = RotatingInputs(problem).calls
    contenders = {"cublas": calls(cublas)}
    for config in configs:
        gemm = prepare(kernel, problem, **dict(config))
        verdict = check_gemm(gemm, problem)
        if not verdict.ok:
            raise AssertionError(f"refusing to time a wrong kernel ({config}): {verdict}")
        contenders[label(config)] = calls(gemm)
    contenders["control"] = calls(cublas)
    per_round: list[dict] = []
    with ClockSampler() as sampler:

        def round_done(name, start, end, ms):
            index = sum(r["name"] == name for r in per_round)
            per_round.append(_round_record(name, index, ms, sampler.between(start, end)))

        alternating(contenders, rounds, reps, round_done=round_done)
    summary = summarize_rounds(per_round)
    for name, row in summary.items():
        row["tflops"] = problem.flops / row["ms"] / 1e9
        if name != "cublas":
            row["pct_of_cublas"] = paired_pct(per_round, name)
            row["pct_of_cublas_in_cycles"] = paired_pct(per_round, name, cycles=True)
    return {
        "kernel": kernel,
        "problem": str(problem),
        "rounds": rounds,
        "reps": reps,
        "configs": [label(c) for c in configs],
        "summary": summary,
        "per_round": per_round,
    }


def label(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items()) or "default"


def print_summary(data: dict) -> None:
    """One line per contender: time, clock, cycles, power, and the ratio to cuBLAS both in
    time and in cycles (the part of the difference that is not the clock's)."""
    print(f"{data['problem']}, {data['rounds']} alternating rounds of {data['reps']} launches:")
    print(
        f"  {'contender':34s} {'ms':>7} {'TFLOP/s':>8} {'SM MHz':>7} {'Mcycles':>8} "
        f"{'W':>5} {'capped':>7}  % of cuBLAS per round, median (range): time | cycles"
    )
    for name, r in data["summary"].items():
        pct = ""
        if "pct_of_cublas" in r:
            t, c = r["pct_of_cublas"], r["pct_of_cublas_in_cycles"]
            pct = f"{t[0]:6.1f} ({t[1]:.1f}-{t[2]:.1f}) | {c[0]:6.1f} ({c[1]:.1f}-{c[2]:.1f})"
        print(
            f"  {name:34s} {r['ms']:7.3f} {r['tflops']:8.1f} {r['mhz']:7.0f} "
            f"{r['mcycles']:8.3f} {r['watts']:5.0f} {100 * r['power_capped']:6.0f}%  {pct}"
        )
