"""Notebook 05's measurement: bank conflicts predicted by the model, then counted by the GPU.

For every case of `course.models.smem_access.cases()`:

* predict: the bank model's wavefronts, ideal wavefronts and conflicts per pass over
  the access pattern (one warp issuing each request once);
* time: kernels/smem_banks.py replays the pattern thousands of times in every warp of
  a full GPU; time per request should follow the predicted wavefronts;
* count: the same kernel, one warp and one pass, runs under Nsight Compute, whose
  shared-load counters must equal the prediction exactly.

The counting runs in a child process (`python -m course.bench banks-probe`) launched by
ncu; the child launches the measuring kernel once per case, in order, and writes a
manifest so each profiled launch is matched to its case.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from course import ROOT
from course.bench import ncu
from course.models.smem_access import Case, case, cases

KERNEL_REGEX = "smem_read_kernel"
TIMING_REQUESTS = 4096  # requests each warp issues per timed launch (iters x pattern length)


def _words() -> torch.Tensor:
    """The shared buffer's contents: small integers, so every sum is exact in float32."""
    from kernels.smem_banks import SMEM_WORDS

    return (torch.arange(SMEM_WORDS, dtype=torch.int64) * 7 % 13).to(torch.float32)


def _vec(c: Case) -> int:
    return c.width // 4


def prepare(c: Case, iters: int = 1, blocks: int = 1, threads: int = 32):
    """Upload one case and validate it once; returns a function that launches the kernel."""
    from kernels import smem_banks

    if c.width < 4:
        raise ValueError(f"{c.name}: the measuring kernel reads 4, 8 or 16 bytes per lane")
    offsets = torch.from_numpy(c.kernel_offsets()).cuda()
    return smem_banks.launcher(
        offsets,
        _words().cuda(),
        iters=iters,
        blocks=blocks,
        vec=_vec(c),
        config=smem_banks.Config(threads),
    )


def run_case(c: Case, iters: int = 1, blocks: int = 1, threads: int = 32) -> torch.Tensor:
    """Launch the measuring kernel for one case; returns its output (blocks * threads sums)."""
    return prepare(c, iters, blocks, threads)()


def check_case(c: Case, out: torch.Tensor, iters: int) -> bool:
    """Did every warp sum exactly what its lanes were told to read?"""
    from kernels import smem_banks

    want = smem_banks.reference(torch.from_numpy(c.kernel_offsets()), _words(), _vec(c), iters)
    got = out.detach().cpu().double().reshape(-1, 32)
    return bool(torch.equal(got, want.expand_as(got)))


def predict(names: Sequence[str] | None = None) -> dict[str, dict]:
    """The model's numbers per case (no GPU)."""
    out = {}
    for c in _select(names):
        t = c.predict()
        out[c.name] = {
            **t.as_dict(),
            "width_bytes": c.width,
            "title": c.title,
            "group": c.group,
            "tile": str(c.tile),
        }
    return out


def _select(names: Sequence[str] | None) -> list[Case]:
    return [case(n) for n in names] if names else list(cases())


# ---------------------------------------------------------------- timing (in process)


def time_cases(
    names: Sequence[str] | None = None, blocks_per_sm: int = 8, threads: int = 256, reps: int = 20
) -> dict[str, dict]:
    """Median time of a full-GPU replay of each pattern, and time per request and wavefront."""
    from course.bench.timing import time_calls

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    blocks, warps = sms * blocks_per_sm, threads // 32
    out = {}
    for c in _select(names):
        pred = c.predict()
        iters = max(1, TIMING_REQUESTS // pred.requests)
        launch = prepare(c, iters=iters, blocks=blocks, threads=threads)
        result = launch()
        torch.cuda.synchronize()
        if not check_case(c, result, iters):
            raise AssertionError(f"{c.name}: the measuring kernel summed the wrong words")
        ms = float(np.median(time_calls([launch], reps=reps, warmup=3)))
        per_sm = blocks * warps * iters / sms  # passes over the pattern per SM
        out[c.name] = {
            "ms": ms,
            "iters": iters,
            "blocks": blocks,
            "threads": threads,
            "ns_per_request": ms * 1e6 / (per_sm * pred.requests),
            "ns_per_wavefront": ms * 1e6 / (per_sm * pred.wavefronts),
        }
    return out


# ---------------------------------------------------------------- counting (under ncu)


def probe(names: Sequence[str], manifest: Path) -> None:
    """Child side: launch each case's kernel once (1 warp, 1 pass), in order; write the manifest."""
    rows = []
    for c in _select(names):
        out = run_case(c, iters=1, blocks=1, threads=32)
        torch.cuda.synchronize()
        if not check_case(c, out, 1):
            raise AssertionError(f"{c.name}: the measuring kernel summed the wrong words")
        rows.append({"case": c.name, "warps": 1, "passes": 1, "requests": c.predict().requests})
    Path(manifest).write_text(json.dumps(rows))


def measure_counters(names: Sequence[str] | None = None, timeout: float = 900) -> dict:
    """Parent side: run the probe under ncu; the counters per pass, per case."""
    chosen = [c.name for c in _select(names)]
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "manifest.json"
        argv = [
            sys.executable,
            "-m",
            "course.bench",
            "banks-probe",
            "--manifest",
            str(manifest),
            "--cases",
            ",".join(chosen),
        ]
        root = str(ROOT)  # the repository: `course` importable
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        launches = ncu.profile(
            argv, KERNEL_REGEX, timeout=timeout, cwd=root, env={"PYTHONPATH": path}
        )
        if not manifest.exists():
            raise ncu.NcuError("the probe wrote no manifest: it failed before finishing")
        rows = json.loads(manifest.read_text())
    if len(launches) != len(rows):
        raise ncu.NcuError(
            f"ncu profiled {len(launches)} launches of {KERNEL_REGEX} but the "
            f"probe launched {len(rows)}: cannot match them to cases"
        )
    out = {}
    for row, launch in zip(rows, launches):
        per = row["warps"] * row["passes"]
        out[row["case"]] = {
            key: launch.metrics[metric] / per for key, metric in ncu.SHARED_LOAD_METRICS.items()
        }
        out[row["case"]]["kernel"] = launch.kernel
    return out


def compare(predicted: dict, measured: dict | None) -> dict:
    """One case's prediction beside its measurement; agree only if all three counts match."""
    if measured is None:
        return {"agree": None}
    agree = all(
        round(measured[k]) == predicted[k] and abs(measured[k] - round(measured[k])) < 1e-6
        for k in ("conflicts", "wavefronts", "requests")
    )
    return {"agree": agree}


def run(
    names: Sequence[str] | None = None, with_ncu: bool = True, with_timing: bool = True
) -> dict:
    """Predict, time and count every case: the record `python -m course.bench banks` keeps."""
    pred = predict(names)
    timing = time_cases(names) if with_timing else {}
    counters, ncu_error = {}, None
    if with_ncu:
        try:
            counters = measure_counters(names)
        except ncu.NcuError as exc:
            ncu_error = str(exc)
    rows = []
    for name, p in pred.items():
        m = counters.get(name)
        rows.append(
            {
                "case": name,
                **{k: p[k] for k in ("title", "group", "tile", "width_bytes")},
                "predicted": {k: p[k] for k in ("requests", "wavefronts", "ideal", "conflicts")},
                "measured": None
                if m is None
                else {k: m[k] for k in ("requests", "wavefronts", "conflicts")},
                "timing": timing.get(name),
                **compare(p, m),
            }
        )
    return {
        "metrics": dict(ncu.SHARED_LOAD_METRICS),
        "ncu": ncu.find_ncu(),
        "ncu_version": ncu.version() if with_ncu else None,
        "ncu_error": ncu_error,
        "cases": rows,
    }


def table(data: dict) -> str:
    """Predicted vs measured, one line per case."""
    lines = [
        f"{'case':26s} {'width':>5s} {'req':>4s} | {'predicted wf/conf':>17s} | "
        f"{'measured wf/conf':>16s} | {'agree':5s} | {'ns/request':>10s}"
    ]
    for r in data["cases"]:
        p, m, t = r["predicted"], r["measured"], r["timing"]
        meas = f"{m['wavefronts']:8.0f} /{m['conflicts']:5.0f}" if m else f"{'-':>16s}"
        agree = {True: "yes", False: "NO", None: "-"}[r["agree"]]
        ns = f"{t['ns_per_request']:10.3f}" if t else f"{'-':>10s}"
        lines.append(
            f"{r['case']:26s} {r['width_bytes']:5d} {p['requests']:4d} | "
            f"{p['wavefronts']:9d} /{p['conflicts']:5d} | {meas} | {agree:5s} | {ns}"
        )
    if data.get("ncu_error"):
        lines.append(f"\nNsight Compute: {data['ncu_error']}")
    return "\n".join(lines)
