"""Each learner's copy of the notebooks: copied once, updated only where untouched, a newer
version offered beside an edited notebook exactly once, and never a learner's bytes lost."""

import builtins
import io
import json
import os
import subprocess
import sys

import pytest

from course import ROOT
from course.tools import learner_copy
from course.tools.learner_copy import (
    MANIFEST_NAME,
    SyncReport,
    course_version,
    offer_name,
    restore,
    sync_notebooks,
)

NAMES = ["00_intro.ipynb", "01_layouts.ipynb", "02_tiling.ipynb"]


def notebook(text: str) -> str:
    return json.dumps(
        {
            "cells": [{"cell_type": "markdown", "metadata": {}, "source": [text]}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def write_course(folder, texts):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(notebook(text))
    return folder


@pytest.fixture
def course(tmp_path):
    return write_course(tmp_path / "notebooks", {n: f"v1 of {n}" for n in NAMES})


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home" / "course"


def contents(folder):
    """Every file in `folder` (manifest included) and its bytes."""
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def update_course(course, names=NAMES):
    write_course(course, {n: f"v2 of {n}" for n in names})


def test_first_login_copies_every_notebook(course, home):
    report = sync_notebooks(course, home, "v1")
    assert report.new == NAMES
    for name in NAMES:
        assert (home / name).read_bytes() == (course / name).read_bytes()
    manifest = json.loads((home / MANIFEST_NAME).read_text())
    assert manifest["version"] == "v1"
    assert set(manifest["notebooks"]) == set(NAMES)
    assert "3 new notebooks" in str(report)


def test_a_second_login_with_no_change_does_nothing(course, home):
    sync_notebooks(course, home, "v1")
    before = {p.name: p.stat().st_mtime_ns for p in home.glob("*.ipynb")}
    report = sync_notebooks(course, home, "v1")
    assert report.unchanged == NAMES
    assert not (report.new or report.updated or report.offered or report.failed)
    assert {p.name: p.stat().st_mtime_ns for p in home.glob("*.ipynb")} == before
    assert str(report) == "Your course notebooks are up to date."


def test_an_update_replaces_untouched_and_offers_beside_edited_exactly_once(course, home):
    sync_notebooks(course, home, "v1")
    edited = home / "01_layouts.ipynb"
    edited.write_text(notebook("my own notes"))
    mine = edited.read_bytes()
    update_course(course)

    report = sync_notebooks(course, home, "v2")
    offered = home / offer_name("01_layouts.ipynb", "v2")
    assert report.updated == ["00_intro.ipynb", "02_tiling.ipynb"]
    assert report.offered == [offered.name]
    assert offered.name == "01_layouts (course update v2).ipynb"
    assert (home / "00_intro.ipynb").read_bytes() == (course / "00_intro.ipynb").read_bytes()
    assert offered.read_bytes() == (course / "01_layouts.ipynb").read_bytes()
    assert edited.read_bytes() == mine
    assert "2 updated" in str(report) and offered.name in str(report)

    offered.unlink()  # looked at it and threw it away: not written again for the same version
    third = sync_notebooks(course, home, "v2")
    assert not offered.exists() and not third.offered and third.yours == ["01_layouts.ipynb"]
    assert edited.read_bytes() == mine

    update_course(course, ["01_layouts.ipynb"])
    write_course(course, {"01_layouts.ipynb": "v3"})
    fourth = sync_notebooks(course, home, "v3")  # a newer version is offered again, once
    assert fourth.offered == ["01_layouts (course update v3).ipynb"]
    assert edited.read_bytes() == mine


def test_an_edited_notebook_is_yours_while_the_course_has_not_changed(course, home):
    sync_notebooks(course, home, "v1")
    (home / "02_tiling.ipynb").write_text(notebook("mine"))
    report = sync_notebooks(course, home, "v1")
    assert report.yours == ["02_tiling.ipynb"] and not report.offered
    assert json.loads((home / "02_tiling.ipynb").read_text())["cells"][0]["source"] == ["mine"]


def test_an_offered_file_the_learner_edited_is_never_overwritten(course, home):
    sync_notebooks(course, home, "v1")
    (home / "00_intro.ipynb").write_text(notebook("mine"))
    beside = home / offer_name("00_intro.ipynb", "v2")
    beside.write_text("their work in progress")
    update_course(course)
    (home / MANIFEST_NAME).write_text("{")  # the record of the offer lost as well
    sync_notebooks(course, home, "v2")
    assert beside.read_text() == "their work in progress"


def test_a_deleted_notebook_stays_deleted_until_restored(course, home):
    sync_notebooks(course, home, "v1")
    (home / "02_tiling.ipynb").unlink()
    update_course(course)
    report = sync_notebooks(course, home, "v2")
    assert report.deleted == ["02_tiling.ipynb"]
    assert not (home / "02_tiling.ipynb").exists()
    assert "deleted by you" in str(report) and "02_tiling.ipynb" in str(report)

    restored = restore(home, "02_tiling.ipynb")
    assert restored.read_bytes() == (course / "02_tiling.ipynb").read_bytes()
    assert sync_notebooks(course, home, "v2").unchanged == NAMES
    with pytest.raises(FileExistsError):
        restore(home, "02_tiling.ipynb")
    with pytest.raises(FileNotFoundError):
        restore(home, "../notebooks/00_intro.ipynb")


def test_the_learners_own_files_are_never_touched(course, home):
    home.mkdir(parents=True)
    (home / "scratch.ipynb").write_text("my experiments")
    (home / "notes.txt").write_text("notes")
    (home / "data").mkdir()
    (home / "data" / "00_intro.ipynb").write_text("a copy I keep")
    sync_notebooks(course, home, "v1")
    update_course(course)
    sync_notebooks(course, home, "v2")
    assert (home / "scratch.ipynb").read_text() == "my experiments"
    assert (home / "notes.txt").read_text() == "notes"
    assert (home / "data" / "00_intro.ipynb").read_text() == "a copy I keep"


@pytest.mark.parametrize("damage", ["{not json", '{"notebooks": []}', None])
def test_a_damaged_or_missing_manifest_never_overwrites_a_notebook(course, home, damage):
    sync_notebooks(course, home, "v1")
    (home / "00_intro.ipynb").unlink()
    # Never edited since the copy: without a record it is still counted as the learner's
    untouched = (home / "01_layouts.ipynb").read_bytes()
    (home / "02_tiling.ipynb").write_text(notebook("mine"))
    edited = (home / "02_tiling.ipynb").read_bytes()
    if damage is None:
        (home / MANIFEST_NAME).unlink()
    else:
        (home / MANIFEST_NAME).write_text(damage)
    update_course(course)

    report = sync_notebooks(course, home, "v2")
    assert report.manifest_rebuilt and "kept exactly as it is" in str(report)
    assert (home / "01_layouts.ipynb").read_bytes() == untouched
    assert (home / "02_tiling.ipynb").read_bytes() == edited
    assert report.new == ["00_intro.ipynb"]
    assert sorted(report.offered) == [
        "01_layouts (course update v2).ipynb",
        "02_tiling (course update v2).ipynb",
    ]
    manifest = json.loads((home / MANIFEST_NAME).read_text())
    assert set(manifest["notebooks"]) == set(NAMES)  # rebuilt from what is there
    again = sync_notebooks(course, home, "v2")
    assert not again.offered and not again.manifest_rebuilt


def test_a_notebook_found_identical_to_the_course_is_adopted(course, home):
    home.mkdir(parents=True)
    (home / "00_intro.ipynb").write_bytes((course / "00_intro.ipynb").read_bytes())
    sync_notebooks(course, home, "v1")
    update_course(course)
    assert "00_intro.ipynb" in sync_notebooks(course, home, "v2").updated


def test_a_failed_rename_leaves_no_partial_notebook(course, home, monkeypatch):
    def refuse(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(learner_copy.os, "replace", refuse)
    report = sync_notebooks(course, home, "v1")
    assert len(report.failed) == len(NAMES) + 1  # the notebooks and the manifest
    assert "No space left on device" in str(report)
    assert list(home.iterdir()) == []
    monkeypatch.undo()
    assert sync_notebooks(course, home, "v1").new == NAMES  # tried again next login


def test_a_crash_while_writing_leaves_no_partial_notebook(course, home, monkeypatch):
    sync_notebooks(course, home, "v1")
    update_course(course)
    old = (home / "00_intro.ipynb").read_bytes()

    def crash(_fd):
        raise KeyboardInterrupt  # the process killed mid-copy

    monkeypatch.setattr(learner_copy.os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        sync_notebooks(course, home, "v2")
    assert (home / "00_intro.ipynb").read_bytes() == old  # the old copy, whole
    assert sorted(p.name for p in home.iterdir()) == sorted(NAMES + [MANIFEST_NAME])


def test_leftovers_of_a_killed_run_are_cleared(course, home):
    home.mkdir(parents=True)
    leftover = home / f"{learner_copy.TEMP_PREFIX}0123.tmp"
    leftover.write_text('{"cells": [')
    sync_notebooks(course, home, "v1")
    assert not leftover.exists()


def test_a_notebook_is_only_ever_written_under_a_temporary_name(course, home, monkeypatch):
    sync_notebooks(course, home, "v1")
    (home / "01_layouts.ipynb").write_text(notebook("mine"))
    update_course(course)
    real_os_open, real_io_open = os.open, io.open

    def guarded_os_open(path, flags, *args, **kwargs):
        assert not (flags & (os.O_WRONLY | os.O_RDWR) and str(path).endswith(".ipynb")), path
        return real_os_open(path, flags, *args, **kwargs)

    def guarded_io_open(path, mode="r", *args, **kwargs):
        assert not (set(mode) & set("wax+") and str(path).endswith(".ipynb")), path
        return real_io_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(io, "open", guarded_io_open)
    monkeypatch.setattr(builtins, "open", guarded_io_open)
    report = sync_notebooks(course, home, "v2")
    assert report.updated and report.offered and not report.failed


@pytest.mark.parametrize(
    "umask, file_mode, folder_mode", [(0o077, 0o600, 0o700), (0o002, 0o664, 0o775)]
)
def test_copies_follow_the_umask(course, home, umask, file_mode, folder_mode):
    old = os.umask(umask)
    try:
        sync_notebooks(course, home, "v1")
    finally:
        os.umask(old)
    assert (home / "00_intro.ipynb").stat().st_mode & 0o777 == file_mode
    assert home.stat().st_mode & 0o777 == folder_mode


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give files to another user")
def test_as_root_the_copies_belong_to_the_learner(course, tmp_path):
    learner_home = tmp_path / "learner"
    learner_home.mkdir()
    os.chown(learner_home, 4321, 4321)
    sync_notebooks(course, learner_home / "course", "v1")
    made = [learner_home / "course", *(learner_home / "course").iterdir()]
    assert {(p.stat().st_uid, p.stat().st_gid) for p in made} == {(4321, 4321)}


def test_the_summary_speaks_to_the_learner():
    text = str(
        SyncReport(
            new=["a.ipynb", "b.ipynb", "c.ipynb"],
            updated=["d.ipynb"],
            offered=["e (course update v2).ipynb"],
        )
    )
    assert text == (
        "3 new notebooks, 1 updated, 1 update offered beside your edited copy: "
        "e (course update v2).ipynb"
    )


def test_course_version_is_git_describe_or_a_hash_of_the_notebooks(tmp_path):
    described = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--tags"], capture_output=True, text=True
    ).stdout.strip()
    if described:
        assert course_version(ROOT) == described
    write_course(tmp_path / "notebooks", {"00_a.ipynb": "one"})
    first = course_version(tmp_path)
    assert first.startswith("content-") and course_version(tmp_path) == first
    write_course(tmp_path / "notebooks", {"00_a.ipynb": "two"})
    assert course_version(tmp_path) != first


def test_the_real_notebooks_copy_whole(tmp_path):
    real = ROOT / "notebooks"
    names = sorted(p.name for p in real.glob("*.ipynb"))
    report = sync_notebooks(real, tmp_path / "course", course_version(ROOT))
    assert report.new == names and len(names) >= 14
    for name in names:
        assert (tmp_path / "course" / name).read_bytes() == (real / name).read_bytes()
    assert sync_notebooks(real, tmp_path / "course", course_version(ROOT)).unchanged == names


def test_the_command_line(course, home):
    run = [
        sys.executable,
        "-m",
        "course.tools.learner_copy",
        "--source",
        str(course),
        "--dest",
        str(home),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    assert "3 new notebooks" in first.stdout and (home / "00_intro.ipynb").exists()
    (home / "00_intro.ipynb").unlink()
    again = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT)
    assert again.returncode == 0 and "deleted by you" in again.stdout
    back = subprocess.run(
        run + ["--restore", "00_intro.ipynb"], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert back.returncode == 0 and (home / "00_intro.ipynb").exists()


def saved_by_jupyterlab(path):
    """What opening, running and saving a notebook in JupyterLab does to it without an edit:
    the kernel it ran with and that kernel's Python version in the metadata, outputs under
    the cells, and the file written out again by the server (another layout)."""
    nb = json.loads(path.read_text())
    nb["metadata"]["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2"}
    for cell in nb["cells"]:
        cell["metadata"]["execution"] = {"iopub.status.busy": "2026-11-25T08:00:00.000Z"}
    path.write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n")


def test_a_notebook_opened_and_saved_without_edits_still_gets_updates(course, home):
    """Bytes change on every save; what a learner writes (cells' kinds and sources) did not,
    so the course's next version replaces it."""
    sync_notebooks(course, home, "v1")
    saved_by_jupyterlab(home / "00_intro.ipynb")
    assert (home / "00_intro.ipynb").read_bytes() != (course / "00_intro.ipynb").read_bytes()
    assert sync_notebooks(course, home, "v1").unchanged == NAMES  # nothing to bring yet
    update_course(course)
    report = sync_notebooks(course, home, "v2")
    assert report.updated == NAMES and not report.offered
    assert (home / "00_intro.ipynb").read_bytes() == (course / "00_intro.ipynb").read_bytes()


def test_an_edit_of_a_cell_or_a_new_cell_is_the_learners(course, home):
    sync_notebooks(course, home, "v1")
    nb = json.loads((home / "00_intro.ipynb").read_text())
    nb["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "source": "x = 1",
            "outputs": [],
            "execution_count": None,
        }
    )
    (home / "00_intro.ipynb").write_text(json.dumps(nb))
    saved_by_jupyterlab(home / "01_layouts.ipynb")
    nb = json.loads((home / "01_layouts.ipynb").read_text())
    nb["cells"][0]["cell_type"] = "raw"  # same text, another kind
    (home / "01_layouts.ipynb").write_text(json.dumps(nb))
    mine = {n: (home / n).read_bytes() for n in NAMES[:2]}
    update_course(course)
    report = sync_notebooks(course, home, "v2")
    assert report.updated == ["02_tiling.ipynb"]
    assert sorted(report.offered) == [offer_name(n, "v2") for n in NAMES[:2]]
    assert {n: (home / n).read_bytes() for n in NAMES[:2]} == mine


def test_a_format_1_record_still_tells_untouched_copies_by_their_bytes(course, home):
    sync_notebooks(course, home, "v1")
    manifest = json.loads((home / MANIFEST_NAME).read_text())
    manifest["format"] = 1
    for entry in manifest["notebooks"].values():
        del entry["cells"]
    (home / MANIFEST_NAME).write_text(json.dumps(manifest))
    update_course(course)
    assert sync_notebooks(course, home, "v2").updated == NAMES
