"""The teachers' table in README.md agrees with the catalogue and with run reports."""
import json

from course.tools import teachers_table
from course.catalogue import LESSONS


def test_readme_table_matches_the_catalogue():
    text = teachers_table.README.read_text()
    times = teachers_table.times_in_readme(text)
    block = teachers_table._block(text)
    assert block is not None, "README.md lost its teachers-table block"
    assert block == teachers_table.section(times), \
        "stale: run `python -m course teachers --write` (after `./course.sh run`)"
    for lesson in LESSONS:
        if lesson.written:
            assert times.get(lesson.path.name, teachers_table.NOT_MEASURED) != teachers_table.NOT_MEASURED, \
                f"{lesson.path.name} has no measured run time: ./course.sh run {lesson.number}"


def test_without_gpu_column_follows_the_catalogue():
    for lesson in LESSONS:
        expected = "live" if lesson.needs == "cpu" else lesson.fallback[0].value
        assert teachers_table.without_gpu(lesson).startswith(expected)


def test_a_run_report_updates_only_its_rows(tmp_path):
    text = teachers_table.section({"00_orientation.ipynb": "99 s (2000-01-01)"})
    report = tmp_path / "run-report.json"
    report.write_text(json.dumps({"machine": "m", "date": "2026-01-02T03:04:05+00:00", "notebooks": [
        {"name": "00_orientation.ipynb", "seconds": 12.4, "error": None, "modes": {}},
        {"name": "02_layouts.ipynb", "seconds": 5, "error": "boom", "modes": {}}]}))
    new = teachers_table.updated_readme("intro\n" + text + "\noutro", report)
    assert "| 12 s (2026-01-02) |" in new and "99 s" not in new
    assert new.startswith("intro\n") and new.endswith("\noutro")
    assert teachers_table.times_in_readme(new) == {"00_orientation.ipynb": "12 s (2026-01-02)"}
