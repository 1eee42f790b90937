"""The two checks of the Blackwell kernels agree on every planted mistake: the same kernel
change (course.execute.planted) is named by course.cute.ptx_protocol in the PTX the compiler
produced for sm_100a, and by the CPU executor running the kernel's own code."""

import pytest
import torch

from course.cute import ptx_protocol
from course.execute import blackwell_runs, planted
from kernels.artifacts import compile_artifacts

RAGGED = (129, 136, 72)


def _planted_ptx(plant: planted.Plant, name: str) -> str:
    import importlib

    module = importlib.import_module(f"kernels.{plant.kernel}")
    build = module.GEMM.build("sm_100a", torch.bfloat16, torch.bfloat16, module.Config(), "k", "k")
    return compile_artifacts(("planted", name), "sm_100a", *build).ptx


@pytest.mark.compile
@pytest.mark.parametrize("name", sorted(planted.PLANTS))
def test_the_ptx_check_and_the_executor_name_the_same_planted_mistake(name):
    with planted.planted(name) as plant:
        rules = {v.rule for v in ptx_protocol.check(_planted_ptx(plant, name))}
        run = blackwell_runs.run_gemm(plant.kernel, *RAGGED)
    assert plant.rule in rules, f"{plant.mistake}: the PTX check found {rules}"
    assert run.hazard is not None, f"{plant.mistake}: the executor's run passed"
    assert run.hazard.kind == planted.hazard_kind(plant), run.hazard
    assert plant.says in str(run.hazard), run.hazard


@pytest.mark.parametrize("name", sorted(planted.PLANTS))
def test_a_plant_is_undone_after_its_block(name):
    with planted.planted(name):
        pass
    assert blackwell_runs.run_gemm(planted.PLANTS[name].kernel, *RAGGED).ok
