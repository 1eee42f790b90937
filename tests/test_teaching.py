"""The teachers' table in README.md agrees with the catalogue and with run reports."""

import json

from course.tools import teachers_table
from course.catalogue import LESSONS


def test_readme_table_matches_the_catalogue():
    text = teachers_table.README.read_text()
    times = teachers_table.times_in_readme(text)
    block = teachers_table._block(text)
    assert block is not None, "README.md lost its teachers-table block"
    assert block == teachers_table.section(times), (
        "stale: run `python -m course teachers --write` (after `./course.sh run`)"
    )
    for lesson in LESSONS:
        if lesson.written:
            assert (
                times.get(lesson.path.name, teachers_table.NOT_MEASURED)
                != teachers_table.NOT_MEASURED
            ), f"{lesson.path.name} has no measured run time: ./course.sh run {lesson.number}"


def test_without_gpu_column_follows_the_catalogue():
    for lesson in LESSONS:
        expected = "live" if lesson.needs == "cpu" else lesson.fallback[0].value
        assert teachers_table.without_gpu(lesson).startswith(expected)


def test_a_run_report_updates_only_its_rows(tmp_path):
    text = teachers_table.section({"00_orientation.ipynb": "99 s (2000-01-01)"})
    report = tmp_path / "run-report.json"
    report.write_text(
        json.dumps(
            {
                "machine": "m",
                "date": "2026-01-02T03:04:05+00:00",
                "notebooks": [
                    {"name": "00_orientation.ipynb", "seconds": 12.4, "error": None, "modes": {}},
                    {"name": "02_layouts.ipynb", "seconds": 5, "error": "boom", "modes": {}},
                ],
            }
        )
    )
    new = teachers_table.updated_readme("intro\n" + text + "\noutro", report)
    assert "| 12 s (2026-01-02) |" in new and "99 s" not in new
    assert new.startswith("intro\n") and new.endswith("\noutro")
    assert teachers_table.times_in_readme(new) == {"00_orientation.ipynb": "12 s (2026-01-02)"}


def test_the_h100_column_never_calls_a_blackwell_notebook_live():
    """Notebooks 14 and 15 need sm_100a: on the H100 their cells compile and simulate."""
    rows = {
        line.split("|")[2].strip(" `"): line
        for line in teachers_table.table(
            {}, {l.path.name: "9 s (2026-01-01)" for l in LESSONS}
        ).splitlines()[2:]
    }
    header = teachers_table.table({}, {}).splitlines()[0]
    assert "(live)" not in header
    for lesson in LESSONS:
        cell = rows[lesson.path.name].rstrip(" |").rsplit("|", 1)[-1].strip()
        if not lesson.written:  # listed, not written yet: nothing ran anywhere
            assert cell == "-", cell
        elif teachers_table.H100.can(lesson.needs):
            assert cell == "9 s (2026-01-01)"
        else:
            assert cell.startswith(
                "9 s (2026-01-01); not live there: "
            ) and "live" not in cell.split("; ", 1)[1].replace("not live", ""), cell
    assert not any(teachers_table.H100.can(LESSONS[n].needs) for n in (14, 15, 16))


def test_every_notebook_has_its_recorded_h100_time():
    """The H100 column comes from the newest `python -m course run --record` on an H100 (or,
    for a notebook no H100 has run, on an H200: the same chip, named in the cell)."""
    times = teachers_table.gpu_times()
    for lesson in LESSONS:
        if lesson.written:
            assert times.get(lesson.path.name, "").endswith(")"), (
                f"{lesson.path.name}: no H100 run recorded (`python -m course run --record` there)"
            )


def test_the_h100_column_shows_the_newest_clean_run(monkeypatch):
    from course.runtime import results

    class Rec:
        def __init__(self, gpu, date, rows):
            self.gpu, self.date, self.data = gpu, date, {"notebooks": rows}

    def row(name, s, err=None):
        return {"name": name, "seconds": s, "error": err, "modes": {}}

    records = [
        Rec("NVIDIA H100 80GB HBM3", "2026-01-01", [row("00_orientation.ipynb", 20)]),
        Rec("NVIDIA A100", "2026-01-02", [row("00_orientation.ipynb", 5)]),
        Rec(
            "NVIDIA H100 80GB HBM3",
            "2026-01-03",
            [row("00_orientation.ipynb", 16), row("02_layouts.ipynb", 9, "boom")],
        ),
    ]
    monkeypatch.setattr(results, "load", lambda name, root=None: records)
    assert teachers_table.gpu_times() == {"00_orientation.ipynb": "16 s (2026-01-03)"}
    records.append(
        Rec("NVIDIA H200", "2026-01-04", [row("00_orientation.ipynb", 15), row("13_x.ipynb", 7)])
    )
    assert teachers_table.gpu_times() == {
        "00_orientation.ipynb": "16 s (2026-01-03)",  # an H100's run wins over the stand-in's
        "13_x.ipynb": "7 s (2026-01-04, on an H200)",
    }
    line = next(l for l in teachers_table.table({}).splitlines() if "00_orientation" in l)
    assert line.endswith("| not measured | 16 s (2026-01-03) |")
