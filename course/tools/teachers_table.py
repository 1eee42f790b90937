"""The teachers' table in README.md: which notebook for which lecture, what runs
without a GPU, and how long each notebook takes to execute.

    python -m course run            execute the notebooks; writes build/run-report.json
    python -m course teachers       print the table (times from that report)
    python -m course teachers --write   and put it into README.md

"Without a GPU" comes from course.catalogue (what the live cells do on the CPU
tier); the time is the measured wall time of a headless top-to-bottom run
(`python -m course run`, nbclient, fresh kernel) taken from the run report. A
notebook missing from the report keeps the time already in README.md, so running
one notebook updates one row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from course import ROOT
from course.catalogue import LESSONS
from course.runtime import results
from course.runtime.hardware import Machine

README = ROOT / "README.md"
RUN_REPORT = ROOT / "build" / "run-report.json"
START, END = "<!-- teachers-table:start -->", "<!-- teachers-table:end -->"
CPU = Machine(tier="cpu", reason="no GPU")
H100 = Machine(tier="sm_90", reason="the course's reference GPU")  # what runs live there

# One lecture per notebook: the lecture slot a teacher shows it in.
LECTURES = {
    0: "1. Why GEMM, the roofline, how the course runs",
    1: "2. Writing a kernel in CuTe DSL: static and dynamic, compile once, PTX",
    2: "3. CuTe layouts as functions",
    3: "4. Tiling, partitioning, thread-value layouts",
    4: "5. Global memory: coalescing and copies",
    5: "6. Shared memory: banks and swizzles",
    6: "7. Tensor cores I: MMA atoms",
    7: "8. A complete tiled GEMM (Ampere style)",
    8: "9. Hopper data movement: TMA",
    9: "10. Asynchronous pipelines with mbarriers",
    10: "11. Tensor cores II: WGMMA",
    11: "12. The Hopper speed-of-light GEMM",
    12: "13. FP8 on Hopper",
    13: "14. The last five percent: waves, split-K, launches, tile order, a fused epilogue",
    14: "15. Blackwell: tensor memory and tcgen05",
    15: "16. Capstone: the CTA-pair CLC GEMM",
    16: "17. Low precision on Blackwell: block-scaled MMA",
}
NOT_MEASURED = "not measured"
GPU_COLUMN = "H100"  # the course's reference GPU: its recorded run times get a column


def times_from_report(path: Path = RUN_REPORT) -> dict[str, str]:
    """notebook file name -> "N s (date)" for every notebook that ran without error."""
    if not path.exists():
        return {}
    report = json.loads(path.read_text())
    date = report["date"][:10]
    return {
        r["name"]: f"{r['seconds']:.0f} s ({date})"
        for r in report["notebooks"]
        if r["error"] is None
    }


def times_in_readme(text: str) -> dict[str, str]:
    """The CPU times column of the table currently in README.md."""
    block = _block(text) or ""
    times = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (
            len(cells) >= 5
            and cells[1].startswith("`")
            and cells[1].endswith(".ipynb`")
            and cells[4] not in ("-", NOT_MEASURED)
        ):
            times[cells[1].strip("`")] = cells[4]
    return times


SAME_CHIP = ("H200",)  # GPUs of the H100's chip (GH100, sm_90a, 132 SMs): a stand-in


def gpu_times(gpu: str = GPU_COLUMN, stand_ins=SAME_CHIP) -> dict[str, str]:
    """notebook file name -> "N s (date)" from the newest recorded run on a `gpu`
    (`python -m course run --record` on that GPU), for the notebooks that ran cleanly; a
    notebook never run there takes the newest run on a GPU of the same chip, named in the
    cell ("N s (date, on an H200)")."""
    times, stand_in = {}, {}
    for rec in results.load("notebook_runs"):  # oldest first: a newer run wins
        other = next((s for s in stand_ins if s.lower() in rec.gpu.lower()), None)
        if gpu.lower() not in rec.gpu.lower() and other is None:
            continue
        into, note = (times, "") if other is None else (stand_in, f", on an {other}")
        into.update(
            {
                r["name"]: f"{r['seconds']:.0f} s ({rec.date}{note})"
                for r in rec.data["notebooks"]
                if r["error"] is None
            }
        )
    return {**stand_in, **times}


def without_gpu(lesson) -> str:
    """What the notebook's live cells do on a machine with no GPU (course.catalogue)."""
    if CPU.can(lesson.needs):
        return "live"
    return " + ".join(mode.value for mode in lesson.fallback)


def on_the_h100(lesson, took: str) -> str:
    """The H100 column's cell: the run time, and what the live cells did there when the
    H100 cannot run them (the Blackwell notebooks: compile-only and simulated, not live)."""
    if took == NOT_MEASURED or H100.can(lesson.needs):
        return took
    return f"{took}; not live there: {lesson.here(H100)} (needs {lesson.needs})"


def table(times: dict[str, str], on_gpu: dict[str, str] | None = None) -> str:
    on_gpu = gpu_times() if on_gpu is None else on_gpu
    rows = [
        "| # | notebook | lecture | without a GPU | headless run on a 2-core CPU | "
        f"headless run on an {GPU_COLUMN} |",
        "|---|---|---|---|---|---|",
    ]
    for lesson in LESSONS:
        name = lesson.path.name
        without = without_gpu(lesson)
        if lesson.written:
            took = times.get(name, NOT_MEASURED)
            took_gpu = on_the_h100(lesson, on_gpu.get(name, NOT_MEASURED))
        else:
            without, took, took_gpu = without + " (not written yet)", "-", "-"
        rows.append(
            f"| {lesson.number:02d} | `{name}` | {LECTURES[lesson.number]} | "
            f"{without} | {took} | {took_gpu} |"
        )
    return "\n".join(rows)


def section(times: dict[str, str]) -> str:
    return f"{START}\n{table(times)}\n{END}"


def _block(text: str) -> str | None:
    m = re.search(re.escape(START) + r".*?" + re.escape(END), text, re.S)
    return m.group(0) if m else None


def updated_readme(text: str, report: Path = RUN_REPORT) -> str:
    """README text with the table regenerated: new times from `report`, the rest kept."""
    times = {**times_in_readme(text), **times_from_report(report)}
    if _block(text) is None:
        raise ValueError(f"README.md has no {START} ... {END} block")
    return text.replace(_block(text), section(times))


def main(write: bool = False, report: Path = RUN_REPORT) -> int:
    text = README.read_text()
    new = updated_readme(text, report)
    if write:
        README.write_text(new)
        print(f"updated {README}")
    else:
        print(_block(new))
    return 0
