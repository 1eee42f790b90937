"""Colab: one setup cell at the top of every notebook, and each notebook's Open-in-Colab link.

A notebook opened in Colab has no repository around it, so its `import course` fails. The
cell written here (each notebook's first code cell, right after its title) clones the course
at the notebook's own release, installs what Colab lacks and runs the rest of the notebook
from the clone. Anywhere else it does nothing and prints nothing, so nbval's stored outputs
stay empty for it. It is self-contained: it runs before the course can be imported.

    python -m course.tools.colab_cell --check      exit 1 if a notebook lacks the current cell
    python -m course.tools.colab_cell --write      put the current cell into every notebook
    python -m course.tools.colab_cell --links      the README's Open-in-Colab links
    (--dir DIR: the notebooks of another folder, e.g. a copy)

The version a cell clones is the release tag `v<version>` of pyproject.toml: a notebook
opened from its Colab link (which points at the same tag) runs the course it was released
with. A commit would go stale with every commit; `main` would not be the notebook's version.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import tomllib
from pathlib import Path

from course import ROOT

# The course's GitHub repository, owner/name: the one place the cells and links take it
# from. The repository names no public URL yet (README: "git clone <this repository>"), so
# this is a placeholder until the course is published; `--write` again after changing it.
GITHUB_REPOSITORY = "OWNER/live-kernel-course"
REF = "v" + tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
COLAB_ROOT = "/content"  # Colab's working directory, kept across a runtime restart
CELL_ID = "colab-setup"
NOTEBOOKS = ROOT / "notebooks"

# requirements.txt lines the cell does not install: Colab's torch is built for its own CUDA
# and driver, Colab runs its own Jupyter kernel and front end (replacing them breaks the
# runtime), and the rest are the course's test, lint and classroom tools.
COLAB_SKIPS = (
    "torch",
    "jupyterlab",
    "ipykernel",
    "nbclient",
    "nbformat",
    "nbconvert",
    "nbval",
    "pytest",
    "pytest-timeout",
    "pytest-xdist",
    "execnet",
    "ruff",
    "playwright",
    "jupyterhub",
    "jupyterhub-nativeauthenticator",
    "jupyterhub-kubespawner",
)


def repository_url() -> str:
    return f"https://github.com/{GITHUB_REPOSITORY}"


def _quoted(text: str) -> str:
    """A Python string literal in double quotes, as the rest of the cell writes them."""
    return json.dumps(text)


def cell_source(repository: str | None = None, ref: str = REF, root: str = COLAB_ROOT) -> str:
    """The setup cell's code. The tests run it with a local repository and a temporary
    root; the notebooks hold it with the defaults."""
    home = f"{root.rstrip('/')}/live-kernel-course"
    skips = textwrap.wrap(" ".join(COLAB_SKIPS), 80, break_on_hyphens=False)
    skip_lines = "\n".join(f"        {_quoted(line + ' ')}" for line in skips)
    return f"""\
# In Colab (and nowhere else): fetch the course at this notebook's version, install what
# Colab lacks (keeping Colab's own torch and Jupyter) and run from the course's notebooks/.
import sys

if "google.colab" in sys.modules:
    import os, re, subprocess

    _home = {_quoted(home)}
    if not os.path.isdir(_home):
        _ref, _url = {_quoted(ref)}, {_quoted(repository or repository_url())}
        subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", _ref, _url, _home],
                       check=True)
    _skip = (
{skip_lines}
    ).split()
    _reqs = [line.split("#")[0].strip() for line in open(f"{{_home}}/requirements.txt")]
    _reqs = [r for r in _reqs if r and re.split(r"[\\s=<>!~;\\[]", r)[0] not in _skip]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *_reqs], check=True)
    if _home not in sys.path:
        sys.path.insert(0, _home)
    os.chdir(f"{{_home}}/notebooks")"""


def colab_url(notebook: str, ref: str = REF) -> str:
    return (
        f"https://colab.research.google.com/github/{GITHUB_REPOSITORY}/blob/{ref}/"
        f"notebooks/{notebook}"
    )


def _new_cell():
    import nbformat

    return nbformat.v4.new_code_cell(
        cell_source(), id=CELL_ID, metadata={"slideshow": {"slide_type": "skip"}}
    )


def _position(nb) -> int:
    """Right after the title: the title stays the first slide (the cell is skipped in
    slides), and the cell runs before the notebook's `import course`."""
    return 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0


def is_current(nb) -> bool:
    """The notebook holds the current cell once, in its place, with no outputs. Execution
    counts and timing metadata (what a run adds) are not compared."""
    at = _position(nb)
    if [c.get("id") for c in nb.cells].count(CELL_ID) != 1 or len(nb.cells) <= at:
        return False
    cell = nb.cells[at]
    return (
        cell.get("id") == CELL_ID
        and cell.cell_type == "code"
        and cell.source == cell_source()
        and cell.metadata.get("slideshow", {}).get("slide_type") == "skip"
        and not cell.get("outputs")
    )


def notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def write(folder: Path = NOTEBOOKS) -> list[str]:
    """Put the current cell into every notebook of `folder`; the names of those changed."""
    import nbformat

    changed = []
    for path in notebooks(folder):
        nb = nbformat.read(path, as_version=4)
        if is_current(nb):
            continue
        nb.cells = [c for c in nb.cells if c.get("id") != CELL_ID]
        nb.cells.insert(_position(nb), _new_cell())
        nbformat.write(nb, path)
        changed.append(path.name)
    return changed


def stale(folder: Path = NOTEBOOKS) -> list[str]:
    """The notebooks of `folder` that lack the current cell."""
    import nbformat

    return [p.name for p in notebooks(folder) if not is_current(nbformat.read(p, as_version=4))]


def links(folder: Path = NOTEBOOKS) -> str:
    """Markdown rows, one per notebook: its file and its Open-in-Colab link."""
    return "\n".join(
        f"| `{p.name}` | [Open in Colab]({colab_url(p.name)}) |" for p in notebooks(folder)
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.tools.colab_cell", description=__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="exit 1 if a notebook lacks the cell")
    what.add_argument("--write", action="store_true", help="put the current cell into each")
    what.add_argument("--links", action="store_true", help="print the Open-in-Colab links")
    parser.add_argument("--dir", type=Path, default=NOTEBOOKS, help="the notebooks' folder")
    args = parser.parse_args(argv)
    if args.links:
        print(links(args.dir))
        return 0
    if args.write:
        changed = write(args.dir)
        print(f"Colab cell written into {len(changed)} notebooks: {', '.join(changed) or '-'}")
        return 0
    missing = stale(args.dir)
    if missing:
        print(
            f"{len(missing)} notebooks lack the current Colab cell: {', '.join(missing)}\n"
            "run: python -m course.tools.colab_cell --write",
            file=sys.stderr,
        )
        return 1
    print(f"all {len(notebooks(args.dir))} notebooks hold the current Colab cell")
    return 0


if __name__ == "__main__":
    sys.exit(main())
