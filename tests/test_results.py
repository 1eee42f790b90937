import subprocess
import sys

import pytest

from course.runtime import results
from course.bench import report

from .helpers import CPU, H100, use_machine


def test_record_refuses_without_a_gpu(monkeypatch, tmp_path):
    use_machine(monkeypatch, CPU)
    with pytest.raises(RuntimeError, match="without a GPU"):
        results.record("ceilings", {"x": 1}, root=tmp_path)


def test_record_load_latest_roundtrip(monkeypatch, tmp_path):
    use_machine(monkeypatch, H100)
    results.record("demo", {"v": 1}, command="cmd one", root=tmp_path)
    results.record("demo", {"v": 2}, command="cmd two", root=tmp_path)
    recs = results.load("demo", tmp_path)
    assert [r.data["v"] for r in recs] == [1, 2]
    newest = results.latest("demo", gpu="h100", root=tmp_path)
    assert newest.data == {"v": 2} and newest.command == "cmd two"
    assert results.latest("demo", gpu="B200", root=tmp_path) is None
    assert set(results.PROVENANCE_KEYS) <= set(newest.provenance)
    assert "H100" in newest.citation() and "cmd two" in newest.citation()


def test_bad_family_names_are_refused(tmp_path):
    with pytest.raises(ValueError):
        results.load("../etc/passwd", tmp_path)


@pytest.mark.parametrize("family", results.families())
def test_every_committed_record_names_gpu_date_and_command(family):
    recs = results.load(family)
    assert recs, f"results/{family}.json has no records"
    for rec in recs:
        for key in ("gpu", "date", "command", "driver", "cuda_runtime"):
            assert rec.provenance.get(key), f"{family}: record lacks {key}"
        assert rec.gpu != "none (cpu)"
        assert rec.command.startswith("python -m course")


def test_committed_ceilings_exist_for_the_cpu_fallback():
    rec = results.latest("ceilings", gpu="H100")
    assert rec is not None, "notebook 00's CPU fallback needs recorded H100 ceilings"
    assert 100 < rec.data["matmul"]["tflops"] < 2000
    assert 500 < rec.data["copy"]["gbps"] < 10000


def test_results_table_is_up_to_date():
    committed = (results.RESULTS_DIR / "README.md").read_text()
    assert committed == report.markdown(), "run `python -m course.bench table` and commit"


def test_current_command_names_the_module():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, course.bench.__main__ as m; sys.argv=[m.__file__,'ceilings'];"
            "from course.runtime.results import current_command; print(current_command())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "python -m course.bench ceilings"


def test_current_command_names_a_module_run_with_dash_m():
    """`python -m course.bench.profile` (also under ncu) puts profile.py in argv[0]."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, course.bench.profile as m; sys.argv=[m.__file__,'--record'];"
            "from course.runtime.results import current_command; print(current_command())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "python -m course.bench.profile --record"


def test_notebooks_stay_small_and_carry_no_widget_state():
    import json

    from course.catalogue import NOTEBOOK_DIR

    total = 0
    for path in NOTEBOOK_DIR.glob("*.ipynb"):
        nb = json.loads(path.read_text())
        assert "widgets" not in nb.get("metadata", {}), f"{path.name} saved widget state"
        total += path.stat().st_size
    assert total < 6 * 2**20, f"notebooks weigh {total / 2**20:.1f} MB"
