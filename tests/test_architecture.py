"""The layout ARCHITECTURE.md describes, checked: which way imports may point.

Every import statement is read from the source (also those inside functions), so a lazy
import cannot hide a dependency that points the wrong way.
"""

from pathlib import Path

import pytest

from course.tools.ladder_table import imports
from kernels import ladder

from .import_graph import circles, module_graph

ROOT = Path(__file__).resolve().parent.parent
COURSE, KERNELS = ROOT / "course", ROOT / "kernels"

# The ladder, in order (kernels/ladder.py): a step may import the host modules and earlier
# entries only. A parts module (the device pieces several later steps share) sits just before
# its first user, so it builds on the steps before it and every step after it may use it.
PARTS = {p.module: p.first_user for p in ladder.PARTS}  # -> its first user
STEPS = [s.module for s in ladder.in_order()]
KERNEL_HOST = set(ladder.HOST_MODULES)

# course/<layer> -> the course layers it may import (besides itself and the package root,
# which holds ROOT); True: it may also import kernels.
LAYERS = {
    "models": (set(), False),
    "sim": ({"models"}, True),  # the ring protocol runs the kernel's own parity functions
    "emulate": ({"models"}, False),
    "cute": ({"models"}, True),
    "execute": ({"models", "cute"}, True),  # the ladder kernels run on it
    "runtime": (set(), True),  # kernels.host only (checked below)
    "bench": ({"runtime", "models"}, True),
    "viz": ({"models", "sim", "emulate"}, False),
    "widgets": ({"models", "sim", "emulate", "cute", "viz"}, False),
    "exercises": ({"models", "sim", "emulate", "cute", "execute", "runtime", "bench", "viz"}, True),
    "lessons": (
        {"models", "sim", "emulate", "cute", "execute", "runtime", "bench", "viz", "widgets"},
        True,
    ),
    "tools": (None, True),  # anything
}
MAX_TOP_LEVEL_MODULES = 8


def course_layer(module: str) -> str | None:
    """'models' for course.models.layout; None for the package root or a top-level module."""
    parts = module.split(".")
    if parts[0] != "course" or len(parts) < 2:
        return None
    return parts[1] if (COURSE / parts[1]).is_dir() else None


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.py")), ids=lambda p: p.name)
def test_kernels_import_nothing_from_the_course(path):
    bad = sorted(m for m in imports(path) if m == "course" or m.startswith("course."))
    assert not bad, f"{path.name} imports {bad}: kernels/ must work with torch and CuTe DSL only"


@pytest.mark.parametrize("step", STEPS)
def test_a_step_builds_only_on_earlier_steps(step):
    allowed = KERNEL_HOST | set(STEPS[: STEPS.index(step)])
    used = {
        m.split(".")[1]
        for m in imports(KERNELS / f"{step}.py")
        if m.startswith("kernels.") and (KERNELS / f"{m.split('.')[1]}.py").exists()
    }
    assert used <= allowed, f"{step} imports {sorted(used - allowed)}, a later step"


def test_every_kernel_module_is_a_step_or_the_host_side():
    assert {p.stem for p in KERNELS.glob("*.py")} - {"__init__"} == set(STEPS) | KERNEL_HOST


@pytest.mark.parametrize("parts", sorted(PARTS))
def test_parts_modules_are_shared_and_hold_no_kernel(parts):
    """A parts module comes right before the first step that uses it, is used by more than
    one step (else its pieces belong in that step), and holds pieces, not a kernel: no
    Config, no GEMM surface."""
    first_user = PARTS[parts]
    assert STEPS.index(first_user) == STEPS.index(parts) + 1
    users = [s for s in STEPS if f"kernels.{parts}" in imports(KERNELS / f"{s}.py")]
    assert first_user in users and len(users) > 1, f"{parts} is used by {users}"
    source = (KERNELS / f"{parts}.py").read_text()
    assert "class Config" not in source and "GemmHost(" not in source


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_course_imports_point_one_way(layer):
    allowed, kernels_ok = LAYERS[layer]
    problems = []
    for path in sorted((COURSE / layer).rglob("*.py")):
        for module in imports(path):
            target = course_layer(module)
            if allowed is not None and target not in (None, layer) and target not in allowed:
                problems.append(f"{path.relative_to(ROOT)} imports {module}")
            if module.startswith("kernels") and not kernels_ok:
                problems.append(f"{path.relative_to(ROOT)} imports {module}")
            if (
                layer == "runtime"
                and module.startswith("kernels")
                and module.split(".")[:2] != ["kernels", "host"]
            ):
                problems.append(
                    f"{path.relative_to(ROOT)} imports {module} (runtime: kernels.host only)"
                )
    assert not problems, "\n".join(problems)


def test_course_keeps_few_top_level_modules():
    top = sorted(p.name for p in COURSE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    assert {p.name for p in COURSE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(
        LAYERS
    ), "a course/ folder that ARCHITECTURE.md does not describe"


def test_module_names_say_what_they_are_without_their_folder():
    names = [p.stem for p in COURSE.rglob("*.py") if p.stem not in ("__init__", "__main__")]
    repeated = sorted({n for n in names if names.count(n) > 1})
    assert not repeated, f"module names used in more than one folder: {repeated}"


def test_no_import_circle_in_course_or_kernels():
    found = circles(module_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_graph_sees_a_circle_between_two_course_modules():
    """The check above can fail: the same graph with one arrow added back has a circle."""
    graph = module_graph()
    assert "course.bench.clocks" in graph["course.bench.gemm_bench"]
    graph["course.bench.clocks"].add("course.bench.gemm_bench")
    assert ["course.bench.clocks", "course.bench.gemm_bench"] in circles(graph)
