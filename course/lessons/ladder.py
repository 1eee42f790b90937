"""The performance ladder: every GEMM of the course against cuBLAS, as recorded.

Each rung of kernels/ladder.py (the one registry; its label starts with the notebook that
introduces it) is a (kernel, preset) pair in results/gemm.json; its newest record on a GPU
gives TFLOP/s and % of cuBLAS at each problem size, measured in the same process as cuBLAS
(see course.bench). Notebooks 07-11 extend the same table and bar chart, so a learner
always sees where the current idea puts the kernel. cuBLAS is timed anew in every record, so
each cell names the cuBLAS it was measured against.
"""

from __future__ import annotations

from dataclasses import dataclass

from course.bench import report
from course.bench.report import pct_of_cublas
from course.runtime import results
from kernels import ladder


@dataclass(frozen=True)
class Rung:
    label: str
    kernel: str
    preset: str
    record: results.Record | None
    notebook: int = 0  # the notebook that introduces it

    def at(self, size: int, dtype: str = "bfloat16") -> dict | None:
        """The recorded row for an n x n x n problem, or None."""
        if self.record is None:
            return None
        for row in self.record.data["results"]:
            if row["problem"] == f"{size}x{size}x{size} {dtype}":
                return row
        return None


def _matches(rec: results.Record, kernel: str, preset: str, dtype: str) -> bool:
    d = rec.data
    return (
        d.get("kernel") == kernel
        and d.get("config", {}).get("preset", "") == preset
        and not set(d.get("config", {})) - {"preset"}
        and d.get("dtype") == dtype
    )


def rungs(dtype: str = "bf16", gpu: str | None = "H100") -> list[Rung]:
    """The ladder's rungs with their newest clean record (default config) on `gpu`."""
    records = [r for r in results.load("gemm") if gpu is None or gpu.lower() in r.gpu.lower()]
    out = []
    for rung in ladder.RUNGS:
        found = [r for r in records if _matches(r, rung.gemm, rung.preset, dtype)]
        out.append(
            Rung(rung.label, rung.gemm, rung.preset, found[-1] if found else None, rung.notebook)
        )
    return out


SHORT_STANDINGS = {
    report.STANDINGS["above"]: "above",
    report.STANDINGS["below"]: "below",
    report.STANDINGS["level"]: "level",
}

VERDICT_NOTE = (
    "Each cell: the kernel's TFLOP/s over cuBLAS's (the two numbers in brackets, medians of "
    "all timed launches), then the verdict of `course.bench.report`: *level*, *below* or "
    "*above* cuBLAS when that ratio and the median round both lie inside (or both on one side "
    "of) the range a second cuBLAS, timed in the same rounds as a control, covered; "
    "*unsteady* when they disagree, with the median round beside it."
)


def verdict(row: dict) -> str:
    """The short verdict of a ladder cell: 'level', 'below', 'above', 'unsteady (median round
    94.4%)' or 'no control' (course.bench.report.row_standing, in one word)."""
    full = report.row_standing(row)
    if full == report.DISAGREE:
        return f"unsteady (median round {row['rounds_pct'][0]:.1f}%)"
    return SHORT_STANDINGS.get(full, full)


def table(
    sizes=(2048, 4096, 8192),
    dtype: str = "bf16",
    gpu: str | None = "H100",
    upto: int | None = None,
    only: int | None = None,
) -> str:
    """Markdown: one row per rung and, per size, '% of cuBLAS (TFLOP/s of cuBLAS's TFLOP/s),
    verdict': the percentage is the ratio of the two numbers in brackets, the verdict that
    ratio and the median round against the run's control (see `verdict`). With `upto`, only
    the rungs that notebooks up to that number introduce (the ladder so far); with `only`,
    only the rungs notebook `only` introduces (its new rows: the whole table is printed once,
    in notebook 11)."""
    name = {"bf16": "bfloat16", "fp16": "float16"}[dtype]
    head = "| rung | " + " | ".join(f"{s}^3" for s in sizes) + " | recorded |"
    lines = [head, "|---|" + "---|" * (len(sizes) + 1)]
    for r in rungs(dtype, gpu):
        if upto is not None and r.notebook > int(upto):
            continue
        if only is not None and r.notebook != int(only):
            continue
        cells = []
        for s in sizes:
            row = r.at(s, name)
            cells.append(
                f"{pct_of_cublas(row):.0f}% ({row['kernel_tflops']:.0f} of "
                f"{row['cublas_tflops']:.0f}), {verdict(row)}"
                if row
                else "-"
            )
        when = f"{r.record.gpu}, {r.record.date}" if r.record else "not recorded yet"
        lines.append(f"| {r.label} | " + " | ".join(cells) + f" | {when} |")
    return "\n".join(lines) + "\n\n" + VERDICT_NOTE


def figure(
    sizes=(2048, 4096, 8192),
    dtype: str = "bf16",
    gpu: str | None = "H100",
    highlight: int | None = None,
):
    """Bar chart of % of cuBLAS per rung and size (recorded results only); the rungs that
    notebook `highlight` introduces are marked (ValueError if it introduces none)."""
    import matplotlib.pyplot as plt
    import numpy as np

    name = {"bf16": "bfloat16", "fp16": "float16"}[dtype]
    rs = [r for r in rungs(dtype, gpu) if r.record is not None]
    if highlight is not None and not any(r.notebook == int(highlight) for r in rs):
        raise ValueError(
            f"no recorded rung is introduced by notebook {highlight}: the rungs "
            f"are {[r.label for r in rs]}"
        )
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(len(rs), 3) + 1.4))
    y = np.arange(len(rs))
    height = 0.8 / len(sizes)
    for i, s in enumerate(sizes):
        vals = [pct_of_cublas(r.at(s, name)) if r.at(s, name) else 0 for r in rs]
        ax.barh(y + i * height, vals, height, label=f"{s}^3")
    ax.axvline(100, color="black", lw=1, ls="--")
    ax.set_yticks(
        y + height * (len(sizes) - 1) / 2,
        [
            ("▶ " if highlight is not None and r.notebook == int(highlight) else "") + r.label
            for r in rs
        ],
    )
    ax.invert_yaxis()
    ax.set_xlabel(
        f"% of cuBLAS ({dtype}): the kernel's TFLOP/s over cuBLAS's, timed in the same rounds"
    )
    gpus = sorted({r.record.gpu for r in rs})
    ax.set_title(f"The GEMM ladder on {', '.join(gpus) or 'no recorded GPU'}")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
