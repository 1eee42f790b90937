"""Nsight Compute from Python: find `ncu`, run a command under it, read its counters.

Used by `python -m course.bench banks` to measure shared-memory bank conflicts. The
counters it asks for by default (Volta and newer, Hopper included):

    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum   extra wavefronts of shared loads
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum       wavefronts of shared loads
    smsp__inst_executed_op_shared_ld.sum                       warp-level shared load instructions

`ncu --csv` prints one row per (kernel launch, metric); `parse_csv` reads that, skipping
the profiler's own `==PROF==` lines and whatever the application prints. Failures
(no ncu, no permission to read counters, an unknown metric, no kernel matched) raise
`NcuError` with a message that says what to do.
"""

from __future__ import annotations

import csv
import glob
import io
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

SHARED_LOAD_METRICS = {
    "conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "requests": "smsp__inst_executed_op_shared_ld.sum",
}


class NcuError(RuntimeError):
    """Nsight Compute could not give the counters; the message says why and what to do."""


def find_ncu() -> str | None:
    """The ncu executable: $COURSE_NCU, then PATH, then the usual CUDA install places."""
    explicit = os.environ.get("COURSE_NCU")
    if explicit:
        return explicit if Path(explicit).exists() else None
    found = shutil.which("ncu")
    if found:
        return found
    candidates = [
        "/usr/local/cuda/bin/ncu",  # then the newest versioned installs
        *sorted(glob.glob("/usr/local/cuda-*/bin/ncu"), reverse=True),
        *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True),
    ]
    for c in candidates:
        if Path(c).exists():
            return c
    return None


def version(ncu: str | None = None) -> str | None:
    """`ncu --version`'s last line (e.g. 'Version 2025.3.0.0 (build ...)'), None if unavailable."""
    ncu = ncu or find_ncu()
    if ncu is None:
        return None
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else None


def command(ncu: str, metrics: Sequence[str], kernel_regex: str, argv: Sequence[str]) -> list[str]:
    """The ncu command line that profiles kernels matching `kernel_regex` in `argv`."""
    return [
        ncu,
        "--csv",
        "--print-units",
        "base",
        "--target-processes",
        "all",
        "--metrics",
        ",".join(metrics),
        "--kernel-name",
        f"regex:{kernel_regex}",
        *argv,
    ]


@dataclass
class Launch:
    """One profiled kernel launch and its metric values."""

    id: int
    kernel: str
    metrics: dict[str, float] = field(default_factory=dict)


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_csv(text: str) -> list[Launch]:
    """The launches in `ncu --csv` output (details page: one row per launch and metric)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    header_at = next(
        (i for i, ln in enumerate(lines) if '"Metric Name"' in ln and '"Metric Value"' in ln), None
    )
    if header_at is None:
        raise NcuError(
            'ncu printed no CSV table (no line with "Metric Name" and '
            '"Metric Value"): did any kernel match, and did ncu run at all?'
        )
    rows = csv.DictReader(io.StringIO("\n".join(lines[header_at:])))
    launches: dict[int, Launch] = {}
    for row in rows:
        if not row.get("Metric Name") or row.get("ID") in (None, "", "ID"):
            continue
        try:
            lid = int(row["ID"])
        except ValueError:
            continue
        launch = launches.setdefault(lid, Launch(lid, row.get("Kernel Name", "")))
        value = _number(row.get("Metric Value", ""))
        if value is not None:
            launch.metrics[row["Metric Name"]] = value
    return [launches[k] for k in sorted(launches)]


def explain(returncode: int, output: str) -> str:
    """A one-paragraph reason for an ncu failure, from its output."""
    text = output or ""
    if "ERR_NVGPUCTRPERM" in text or "permission" in text.lower():
        return (
            "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM). Run "
            "as root, or allow profiling for all users (NVreg_RestrictProfilingToAdminUsers=0) "
            "and reload the driver."
        )
    for marker in ("Failed to find metric", "unknown metric", "Invalid metric", "not available"):
        if marker.lower() in text.lower():
            return (
                f"ncu does not know one of the metrics on this GPU ({marker!r}). List the "
                "shared-memory ones with `ncu --query-metrics | grep shared`."
            )
    if "No kernels were profiled" in text:
        return "ncu ran but profiled no kernel: the kernel-name filter matched nothing."
    tail = "\n".join(text.strip().splitlines()[-15:])
    return f"ncu exited with status {returncode}. Its last lines:\n{tail}"


def profile(
    argv: Sequence[str],
    kernel_regex: str,
    metrics: Sequence[str] = tuple(SHARED_LOAD_METRICS.values()),
    timeout: float = 900,
    env: dict | None = None,
    cwd: str | None = None,
) -> list[Launch]:
    """Run `argv` under ncu and return every matching launch's metrics (in launch order)."""
    ncu = find_ncu()
    if ncu is None:
        raise NcuError(
            "Nsight Compute (ncu) was not found: put it on PATH, set COURSE_NCU, or "
            "install it with the CUDA toolkit (/usr/local/cuda/bin/ncu)."
        )
    cmd = command(ncu, metrics, kernel_regex, argv)
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as exc:
        raise NcuError(f"ncu did not finish in {timeout:.0f} s: {' '.join(cmd)}") from exc
    output = done.stdout + "\n" + done.stderr
    if done.returncode != 0:
        raise NcuError(explain(done.returncode, output))
    try:
        launches = parse_csv(done.stdout)
    except NcuError as exc:
        raise NcuError(f"{exc}\n{explain(done.returncode, output)}") from None
    missing = [m for m in metrics if launches and m not in launches[0].metrics]
    if missing:
        raise NcuError(f"ncu returned no value for {missing}; " + explain(done.returncode, output))
    return launches
