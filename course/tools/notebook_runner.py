"""Execute every notebook headless and report what each cell did on this machine.

    python -m course run [--inplace] [NN ...]

Each notebook is executed top to bottom with nbclient (as nbval does); the report
counts the banners the live cells printed (live / compile-only / simulated /
recorded), so "what ran here" is read from what actually happened, not predicted.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course import ROOT
from course.catalogue import LESSONS
from course.runtime import live_outputs
from course.runtime.live import _STYLE, REPLAY_INTRO, Mode
from course.viz import compact_png

REPORT = ROOT / "build" / "run-report.md"
REPORT_JSON = REPORT.with_suffix(".json")  # read by `python -m course teachers`


@dataclass
class NotebookRun:
    name: str
    seconds: float = 0.0
    error: str | None = None
    modes: dict[str, int] = field(default_factory=dict)


def _count_modes(nb) -> dict[str, int]:
    counts = {m.value: 0 for m in Mode}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            for mode in Mode:
                counts[mode.value] += text.count(f"[{_STYLE[mode][1]}]")
            # a GPU's recorded output shown after a fallback is not what the cell did here
            replayed = f"[{_STYLE[Mode.RECORDED][1]}] {REPLAY_INTRO}"
            counts[Mode.RECORDED.value] -= text.count(replayed)
    return counts


def execute(path: Path, inplace: bool = False, timeout: int = 1800) -> NotebookRun:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    run = NotebookRun(path.name)
    start = time.perf_counter()
    try:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute(env={**os.environ, live_outputs.NOTEBOOK_ENV: path.name})  # for its records
    except CellExecutionError as exc:
        run.error = str(exc).strip().splitlines()[-1][:300]
    run.seconds = time.perf_counter() - start
    run.modes = _count_modes(nb)
    if inplace and run.error is None:
        # Saved widget state would duplicate, as JSON, the static picture every widget
        # already leaves in its output -- megabytes per notebook. Widgets come alive when
        # the notebook runs; the PNGs are what a static viewer shows.
        nb.metadata.pop("widgets", None)
        compact_png.compact_notebook(nb)
        nbformat.write(nb, path)
    return run


def run_all(numbers: list[int] | None = None, inplace: bool = False) -> list[NotebookRun]:
    from course.runtime.hardware import machine

    os.environ.setdefault("COURSE_PROGRESS", "off")  # a headless run is not a learner's
    runs = []
    for lesson in LESSONS:
        if numbers and lesson.number not in numbers:
            continue
        if not lesson.written:  # listed in the catalogue, notebook not written yet
            print(f"skipping {lesson.path.name}: not written yet", flush=True)
            continue
        print(f"executing {lesson.path.name} ...", flush=True)
        runs.append(execute(lesson.path, inplace))
        r = runs[-1]
        print(f"  {'ERROR ' + r.error if r.error else 'ok'} in {r.seconds:.0f} s; {r.modes}")
    lines = [
        f"# Headless run on {machine().describe()}\n",
        "| notebook | result | seconds | " + " | ".join(m.value for m in Mode) + " |",
        "|---|---|---|" + "---|" * len(Mode),
    ]
    for r in runs:
        lines.append(
            f"| {r.name} | {'error: ' + r.error if r.error else 'ok'} | "
            f"{r.seconds:.0f} | " + " | ".join(str(r.modes[m.value]) for m in Mode) + " |"
        )
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    REPORT_JSON.write_text(
        json.dumps(
            {
                "machine": machine().describe(),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "notebooks": [asdict(r) for r in runs],
            },
            indent=1,
        )
        + "\n"
    )
    print(f"\nreport: {REPORT} (and {REPORT_JSON.name})")
    return runs


def record_live_outputs() -> None:
    """Have the notebooks' kernels (started from this process) record what their labelled
    live cells print, citing this command (see course.runtime.live_outputs)."""
    from course.runtime.results import current_command

    os.environ[live_outputs.RECORD_ENV] = "1"
    os.environ[live_outputs.COMMAND_ENV] = current_command()


def record_runs(runs: list[NotebookRun]) -> None:
    """Record a run's per-notebook times, with provenance, in results/notebook_runs.json
    (the teachers' table shows the GPU's times from there). Only on a GPU: a CPU's times
    are the table's other column, from build/run-report.json."""
    from course.runtime import results
    from course.runtime.hardware import machine

    m = machine()
    if not m.has_gpu:
        raise SystemExit(
            "course run --record: recording needs a GPU; this machine is " + m.describe()
        )
    results.record(
        "notebook_runs", {"machine": m.describe(), "notebooks": [asdict(r) for r in runs]}
    )
