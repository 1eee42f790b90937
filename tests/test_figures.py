"""figures/: drawn by code, deterministic, fresh, and used."""

import subprocess
import sys


from course.tools import figures
from course.catalogue import LESSONS

ROOT = figures.FIGURES_DIR.parent


def test_committed_figures_are_fresh():
    stale = [
        name
        for name in figures.FIGURES
        if not (figures.FIGURES_DIR / name).exists()
        or (figures.FIGURES_DIR / name).read_bytes() != figures.render(name)
    ]
    assert not stale, f"stale figures {stale}: run `./course.sh figures` and commit"


def test_every_file_in_figures_has_a_generator():
    orphans = sorted(
        p.name
        for p in figures.FIGURES_DIR.iterdir()
        if p.is_file() and p.name not in figures.FIGURES
    )
    assert not orphans, f"figures/ holds files no code draws: {orphans}"


def test_every_figure_is_used_by_the_readme_or_a_notebook():
    texts = [(ROOT / "README.md").read_text()]
    texts += [l.path.read_text() for l in LESSONS if l.written]
    unused = [n for n in figures.FIGURES if not any(f"figures/{n}" in t for t in texts)]
    assert not unused, f"figures nobody shows: {unused}"


def test_rendering_is_deterministic_across_processes(tmp_path):
    script = (
        "import hashlib, sys; from course.tools import figures; "
        "print({n: hashlib.sha256(figures.render(n)).hexdigest() for n in figures.FIGURES})"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0].strip() not in ("", "{}")


def test_check_mode_reports_a_stale_figure(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figures, "FIGURES_DIR", tmp_path)
    assert figures.main([]) == 0  # writes fresh copies into tmp_path
    assert figures.main(["--check"]) == 0
    victim = next(iter(figures.FIGURES))
    (tmp_path / victim).write_bytes(b"not the figure")
    assert figures.main(["--check"]) == 1
    assert victim in capsys.readouterr().err
