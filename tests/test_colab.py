"""The Colab setup cell (course.tools.colab_cell): in a simulated Colab runtime it makes the
course importable and the notebook's own cells run; anywhere else it does nothing; the tool
writes it into notebooks idempotently and `--check` finds a notebook without it."""

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import nbformat
import pytest

from course.tools import colab_cell
from course.tools.ladder_table import imports

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "00_orientation.ipynb"

# Stand-ins the simulated runtime finds first on its path: Colab's own module (its kernel
# imports google.colab before the first cell runs), and a pip that records what it was asked
# to install instead of reaching the network.
STUBS = {
    "google/colab/__init__.py": '"""A stand-in for Colab\'s module: its presence is Colab."""\n',
    "pip/__init__.py": "",
    "pip/__main__.py": (
        "import json, os, sys\n"
        "with open(os.environ['COLAB_TEST_PIP_LOG'], 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
    ),
}

# In the runtime: the setup cell twice (a learner reruns it), then the notebook's own first
# cell, read from the clone the setup cell made, run as a notebook runs it (IPython).
RUNTIME = """\
import json, os, sys
import google.colab
from IPython.core.interactiveshell import InteractiveShell

setup, out = open(sys.argv[1]).read(), sys.argv[2]
shell = InteractiveShell.instance()
for _ in range(2):
    shell.run_cell(setup).raise_error()
nb = json.load(open("{notebook}"))
first = next(c for c in nb["cells"] if c["cell_type"] == "code" and c.get("id") != "{cell_id}")
result = shell.run_cell("".join(first["source"]))
result.raise_error()
import course, kernels
json.dump({{"course": course.__file__, "kernels": kernels.__file__, "cwd": os.getcwd(),
           "path": sys.path, "shown": result.result._repr_markdown_()}}, open(out, "w"))
"""


def _git(*args, cwd=None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def colab_run(tmp_path_factory):
    """The setup cell run in a simulated Colab: the course's committed HEAD published at the
    cell's release tag in a local repository, a temporary folder as Colab's /content."""
    if shutil.which("git") is None:
        pytest.fail("git is needed: the setup cell clones the course with it")
    tmp = tmp_path_factory.mktemp("colab")
    origin = tmp / "origin"
    _git("init", "-q", str(origin))
    _git("fetch", "-q", "--depth", "1", f"file://{ROOT}", "HEAD", cwd=origin)
    _git("tag", colab_cell.REF, "FETCH_HEAD", cwd=origin)
    for name, text in STUBS.items():
        (tmp / "stubs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "stubs" / name).write_text(text)
    content = tmp / "content"
    content.mkdir()
    setup = tmp / "setup.py"
    setup.write_text(colab_cell.cell_source(f"file://{origin}", root=str(content)))
    (tmp / "runtime.py").write_text(RUNTIME.format(notebook=NOTEBOOK, cell_id=colab_cell.CELL_ID))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no course from here
    env.update(
        PYTHONPATH=str(tmp / "stubs"),
        COLAB_TEST_PIP_LOG=str(tmp / "pip.log"),
        COURSE_PROGRESS="off",
        IPYTHONDIR=str(tmp / "ipython"),
        MPLBACKEND="Agg",
    )
    done = subprocess.run(
        [sys.executable, str(tmp / "runtime.py"), str(setup), str(tmp / "out.json")],
        cwd=content,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    home = content / "live-kernel-course"
    pip_calls = [json.loads(line) for line in (tmp / "pip.log").read_text().splitlines()]
    return home, json.loads((tmp / "out.json").read_text()), pip_calls, origin


def test_in_colab_the_cell_clones_the_notebooks_release_and_imports_the_course_from_it(colab_run):
    home, seen, _, origin = colab_run
    assert _git("rev-parse", "HEAD", cwd=home) == _git("rev-parse", colab_cell.REF, cwd=origin)
    assert Path(seen["course"]).is_relative_to(home), seen["course"]
    assert Path(seen["kernels"]).is_relative_to(home), seen["kernels"]
    assert seen["cwd"] == str(home / "notebooks")
    assert seen["path"].count(str(home)) == 1, "a rerun of the cell adds the clone once"


def test_in_colab_the_notebooks_own_first_cell_runs_after_it(colab_run):
    _, seen, _, _ = colab_run
    assert seen["shown"].startswith("**Notebook 00 -- "), seen["shown"][:200]


def test_in_colab_the_cell_installs_the_requirements_but_not_torch_or_jupyter(colab_run):
    home, _, pip_calls, _ = colab_run
    assert len(pip_calls) == 2  # once per run of the cell; pip skips what is there
    wanted = [line.split("#")[0].strip() for line in (home / "requirements.txt").open()]
    wanted = [r for r in wanted if r]
    names = {r: re.split(r"[=<>\[ ]", r)[0] for r in wanted}
    for call in pip_calls:
        assert call[:2] == ["install", "-q"]
        assert set(call[2:]) == {r for r in wanted if names[r] not in colab_cell.COLAB_SKIPS}
    installed = set(pip_calls[0])
    assert any(r.startswith("nvidia-cutlass-dsl") for r in installed)
    assert not any(re.match(r"(torch|jupyterlab|ipykernel)\W", r) for r in installed)


def test_outside_colab_the_cell_does_nothing_and_prints_nothing(monkeypatch, capfd):
    def refuse(*args, **kwargs):
        raise AssertionError(f"the cell ran {args[:1]} outside Colab")

    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    for module, name in (
        (subprocess, "run"),
        (subprocess, "Popen"),
        (os, "system"),
        (os, "chdir"),
    ):
        monkeypatch.setattr(module, name, refuse)
    path, cwd = list(sys.path), os.getcwd()
    exec(compile(colab_cell.cell_source(), "colab-cell", "exec"), {})
    assert capfd.readouterr() == ("", "")
    assert sys.path == path and os.getcwd() == cwd


def test_every_skipped_requirement_is_one_and_the_course_runs_without_it():
    """A name in COLAB_SKIPS that requirements.txt lacks would hide a rename; a skipped
    package that code outside course/tools imports would fail on Colab (torch excepted:
    Colab brings its own)."""
    required = {
        re.split(r"[=<>\[ ]", line.split("#")[0].strip())[0]
        for line in (ROOT / "requirements.txt").open()
        if line.split("#")[0].strip()
    }
    assert set(colab_cell.COLAB_SKIPS) <= required, set(colab_cell.COLAB_SKIPS) - required
    dists = packages_distributions()
    skipped = {s.lower() for s in colab_cell.COLAB_SKIPS} - {"torch"}
    runtime = [
        p
        for p in [*(ROOT / "course").rglob("*.py"), *(ROOT / "kernels").rglob("*.py")]
        if "tools" not in p.relative_to(ROOT).parts
    ]
    used = [
        (p.relative_to(ROOT), m)
        for p in runtime
        for m in imports(p)
        if {d.lower() for d in dists.get(m.split(".")[0], [])} & skipped
    ]
    assert not used, used


def test_write_puts_one_cell_after_each_title_idempotently_and_check_sees_it(tmp_path, capsys):
    copy = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", copy, ignore=shutil.ignore_patterns(".*"))
    names = [p.name for p in colab_cell.notebooks(copy)]
    before = {n: nbformat.read(copy / n, as_version=4) for n in names}
    stale = [n for n in names if not colab_cell.is_current(before[n])]
    assert colab_cell.main(["--check", "--dir", str(copy)]) == (1 if stale else 0)

    assert sorted(colab_cell.write(copy)) == stale
    written = {n: (copy / n).read_bytes() for n in names}
    assert colab_cell.write(copy) == [] and {n: (copy / n).read_bytes() for n in names} == written
    assert colab_cell.main(["--check", "--dir", str(copy)]) == 0
    for n in names:
        nb = nbformat.read(copy / n, as_version=4)
        cell = nb.cells[1]
        assert cell.id == colab_cell.CELL_ID and cell.source == colab_cell.cell_source()
        assert cell.outputs == [] and cell.metadata.slideshow.slide_type == "skip"
        others = [c for c in before[n].cells if c.get("id") != colab_cell.CELL_ID]
        assert [c for c in nb.cells if c.get("id") != colab_cell.CELL_ID] == others, n
        assert nb.cells[0] == before[n].cells[0], "the title stays the first cell (slide)"

    # an older cell is replaced in its place, not added to
    nb = nbformat.read(copy / NOTEBOOK, as_version=4)
    nb.cells[1].source = "# an older Colab cell"
    nbformat.write(nb, copy / NOTEBOOK)
    capsys.readouterr()
    assert colab_cell.main(["--check", "--dir", str(copy)]) == 1
    assert NOTEBOOK in capsys.readouterr().err
    assert colab_cell.write(copy) == [NOTEBOOK]
    nb = nbformat.read(copy / NOTEBOOK, as_version=4)
    assert colab_cell.is_current(nb) and len(nb.cells) == len(before[NOTEBOOK].cells) + (
        NOTEBOOK in stale
    )


def test_every_notebook_holds_the_current_colab_cell():
    assert colab_cell.stale() == [], "run: python -m course.tools.colab_cell --write"


def test_the_colab_links_open_each_notebook_at_the_cells_release():
    rows = colab_cell.links().splitlines()
    assert len(rows) == len(colab_cell.notebooks()) > 0
    for row, path in zip(rows, colab_cell.notebooks()):
        url = (
            f"https://colab.research.google.com/github/{colab_cell.GITHUB_REPOSITORY}/blob/"
            f"{colab_cell.REF}/notebooks/{path.name}"
        )
        assert f"({url})" in row
    assert f'_ref, _url = "{colab_cell.REF}", "{colab_cell.repository_url()}"' in (
        colab_cell.cell_source()
    )
    assert colab_cell.repository_url().endswith(colab_cell.GITHUB_REPOSITORY)
