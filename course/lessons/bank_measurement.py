"""Notebook 05's measurement of bank conflicts: the load widths the measuring kernel
compiles to, the model's prediction table, and the prediction beside Nsight Compute's
counters (measured now, recorded, or the prediction alone before anything is recorded).

  load_widths        the measuring kernel compiled for each load width (4, 8, 16 bytes)
  print_load_widths  the shared-memory loads each width compiles to, in PTX and SASS
  print_prediction   the prediction table of every measured case
  measure_banks      the live cell: counted by Nsight Compute, recorded, or predicted only
  bank_figures       predicted against measured wavefronts, and time against wavefronts
"""

from __future__ import annotations

import re

from course.bench import bank_conflicts as bench_banks
from course.bench import ncu
from course.runtime.live import Outcome, executed, live_or, recorded_or, simulated
from course.viz.bank_pictures import predicted_vs_measured, time_vs_wavefronts

RECORD_COMMAND = "python -m course.bench banks --record"


def load_widths(arch: str) -> dict:
    """vector width (4-byte words) -> the measuring kernel compiled for `arch`."""
    from kernels import smem_banks

    return {vec: smem_banks.artifacts(arch, n_req=2, vec=vec) for vec in smem_banks.VECTORS}


def print_load_widths(arts: dict) -> dict[int, tuple[list, list]]:
    """Per width, the distinct shared-memory load instructions in PTX and in SASS."""
    found = {}
    for vec, art in arts.items():
        ptx = sorted({line.split()[0] for line in art.ptx_lines(r"ld\.shared")})
        sass = sorted({re.search(r"LDS(\.\d+)?", line).group(0) for line in art.sass_lines(r"LDS")})
        found[vec] = (ptx, sass)
        print(f"{4 * vec:2d} bytes per lane: PTX {ptx}, SASS {sass}")
    return found


def print_prediction(predicted: dict) -> None:
    """The prediction table: bytes per lane, requests, wavefronts, ideal and conflicts."""
    print(
        f"{'case':26s} {'bytes/lane':>10s} {'requests':>8s} {'wavefronts':>10s} {'ideal':>6s} "
        f"{'conflicts':>9s}"
    )
    for name, p in predicted.items():
        print(
            f"{name:26s} {p['width_bytes']:10d} {p['requests']:8d} {p['wavefronts']:10d} "
            f"{p['ideal']:6d} {p['conflicts']:9d}"
        )


def measure_now() -> dict:
    """Replay every case on the GPU, timed, and counted by Nsight Compute when installed."""
    data = bench_banks.run(with_ncu=ncu.find_ncu() is not None)
    if data["ncu"] is None:
        data["ncu_error"] = "Nsight Compute (ncu) is not installed on this machine"
    return data


def prediction_only(predicted: dict) -> dict:
    """The record's shape with the model's prediction and nothing measured."""
    return {
        "cases": [
            {
                "case": n,
                "predicted": {k: p[k] for k in ("requests", "wavefronts", "ideal", "conflicts")},
                "measured": None,
                "timing": None,
                "agree": None,
                "width_bytes": p["width_bytes"],
            }
            for n, p in predicted.items()
        ],
        "ncu_error": None,
    }


def transposes_on_the_executor() -> str:
    """The transpose's own code on the CPU executor with each tile layout: its values, and
    the shared-memory wavefronts the executor counted per line (its bank model)."""
    from course.execute.ladder_runs import run_transpose

    return "\n".join(run_transpose(layout).summary() for layout in ("plain", "padded", "swizzled"))


def measure_banks(predicted: dict) -> Outcome:
    """Measured now, recorded, or the prediction alone (labelled); prints the table and, when
    there are counters, on how many cases Nsight Compute agrees with the model."""
    out = live_or(
        "gpu",
        measure_now,
        executed(
            transposes_on_the_executor,
            "the transpose of kernels/smem_transpose.py with each tile layout",
            then=recorded_or(
                "bank_conflicts",
                simulated(lambda: prediction_only(predicted), "the model's prediction"),
                RECORD_COMMAND,
            ),
        ),
    )
    print(bench_banks.table(out.value))
    verdicts = [r["agree"] for r in out.value["cases"]]
    if any(v is not None for v in verdicts):
        print(
            f"\nNsight Compute agrees with the model on {verdicts.count(True)} of "
            f"{len(verdicts)} cases"
            + (f"; disagrees on {verdicts.count(False)}" if False in verdicts else "")
        )
    return out


def bank_figures(meas: Outcome) -> list:
    """Wavefronts predicted against measured, and (when timed) time per request against the
    predicted wavefronts; captioned with where the numbers came from."""
    src = meas.caption(
        "bank_conflicts",
        otherwise="course.models.bank_model model only: no GPU measurement recorded yet",
    )
    figs = [
        predicted_vs_measured(
            meas.value["cases"], "Wavefronts per pass: the model and Nsight Compute", source=src
        )
    ]
    if any(r.get("timing") for r in meas.value["cases"]):
        figs.append(
            time_vs_wavefronts(
                meas.value["cases"],
                "Measured time per request follows the predicted wavefronts",
                source=src,
            )
        )
    return figs


def conflict_cost(
    meas: Outcome, slow: str = "transpose_rows", fast: str = "transpose_rows_padded"
) -> dict | None:
    """What a conflict costs in time against what it costs in wavefronts: the ratio of two
    cases' times per request beside the ratio of their wavefronts, and the time per
    wavefront of every case with conflicts (one wavefront per clock cycle per SM predicts
    one cycle each). None when nothing was timed."""
    cases = {r["case"]: r for r in meas.value["cases"]}
    if not (cases.get(slow, {}).get("timing") and cases.get(fast, {}).get("timing")):
        print("not timed: no GPU measurement to compare")
        return None
    a, b = cases[slow], cases[fast]
    per_request = {n: r["timing"]["ns_per_request"] for n, r in ((slow, a), (fast, b))}
    wf = {
        n: r["predicted"]["wavefronts"] / r["predicted"]["requests"]
        for n, r in ((slow, a), (fast, b))
    }
    time_ratio, wf_ratio = per_request[slow] / per_request[fast], wf[slow] / wf[fast]
    print(
        f"{slow}: {wf[slow]:.0f} wavefronts and {per_request[slow]:.2f} ns per request; "
        f"{fast}: {wf[fast]:.0f} and {per_request[fast]:.2f} ns"
    )
    print(f"  {wf_ratio:.0f}x the wavefronts, {time_ratio:.1f}x the time")
    per_wf = {
        n: r["timing"]["ns_per_request"] * r["predicted"]["requests"] / r["predicted"]["wavefronts"]
        for n, r in cases.items()
        if r.get("timing") and r["predicted"]["conflicts"]
    }
    print(
        f"  cases with conflicts: {min(per_wf.values()):.2f}-{max(per_wf.values()):.2f} ns "
        f"per wavefront"
    )
    return {"time_ratio": time_ratio, "wavefront_ratio": wf_ratio, "ns_per_wavefront": per_wf}
