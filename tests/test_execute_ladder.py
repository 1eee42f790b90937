"""The ladder kernels of notebooks 00-07, run on the CPU executor: their own code gives the
torch reference's values, and the H100's outputs for the same inputs.

The H100 side is recorded once by `python -m course.tools.record_executor_ladder`
(results/executor_ladder.json); until that record exists the comparison with it is skipped,
and says so.
"""

import pytest
import torch

from course.execute import ladder_runs
from course.runtime import results

CASES = sorted(ladder_runs.RUNNERS)


@pytest.fixture(scope="module")
def runs():
    return {}


def _run(case: str, runs: dict):
    if case not in runs:
        runs[case] = ladder_runs.RUNNERS[case]()
    return runs[case]


@pytest.mark.parametrize("case", CASES)
def test_the_ladder_kernel_agrees_with_torch_on_the_executor(case, runs):
    r = _run(case, runs)
    assert r.hazard is None, r.summary()
    assert r.ok, r.summary()
    assert any("no hazard" in line for line in r.observed)


def test_the_transpose_shows_the_bank_conflicts_the_h100_measured(runs):
    """Notebook 05's tile read by columns: 32-way conflicts plain (the H100's Nsight Compute
    count for this access: results/bank_conflicts.json, transpose_rows), none padded or
    swizzled."""
    for layout, way in (("plain", 32.0), ("padded", 1.0), ("swizzled", 1.0)):
        r = _run(f"smem_transpose.{layout}", runs)
        reads = next(line for line in r.observed if "tile[h * LANES + tx, c]" in line)
        assert (
            (f"({way:.1f}x: bank conflicts)" in reads) if way > 1 else "(conflict-free)" in reads
        ), reads


def test_the_mma_stamp_kernel_shows_the_ptx_isa_fragment_of_c():
    """Notebook 06's stamp kernel run on the executor: thread t holds rows t//4 and t//4 + 8,
    columns 2(t%4) and 2(t%4)+1 of one m16n8k16 accumulator (the PTX ISA's figure)."""
    owner, value = ladder_runs.run_mma_stamp((1, 1))
    rows, cols = torch.meshgrid(torch.arange(16), torch.arange(8), indexing="ij")
    assert torch.equal(owner, (4 * (rows % 8) + cols // 2).int())
    assert sorted(value.unique().tolist()) == [0, 1, 2, 3]


def _h100():
    record = results.latest("executor_ladder")
    if record is None:
        pytest.skip(
            "the H100's outputs of the ladder kernels are not recorded yet: run "
            "`python -m course.tools.record_executor_ladder` on the H100"
        )
    return record


@pytest.mark.parametrize("case", CASES)
def test_the_executor_gives_the_h100s_output(case, runs):
    from kernels.selftest import TOLERANCE, relative_error

    record = _h100()
    saved = record.data["cases"].get(case)
    if saved is None:
        pytest.skip(f"{case} is not in the H100 record of {record.date}")
    dtype = getattr(torch, saved["dtype"])
    h100 = ladder_runs.recorded_output(case, saved)
    mine = _run(case, runs).output
    assert mine is not None and tuple(mine.shape) == tuple(h100.shape)
    assert relative_error(mine, h100) <= TOLERANCE[dtype], case


def test_the_recorded_hopper_presets_are_the_kernels_presets():
    """ladder_runs names hopper_gemm's presets without importing CuTe DSL: they must agree."""
    from kernels import hopper_gemm

    assert ladder_runs.HOPPER_PRESETS == tuple(hopper_gemm.PRESETS)


def test_a_write_past_the_end_of_the_output_fails_the_run():
    """vector_add told n = 1000 into an output of 990: the 10 values past its end land in the
    guard zone; the run is not ok even though every element of the output is right."""
    from kernels import vector_add

    from course.execute.runner import pointer, run

    x = ladder_runs.inputs("vector_add")

    def launch(x, out, seed):
        args = (pointer(x["a"], "a"), pointer(x["b"], "b"), pointer(out, "c"))
        return run(vector_add.add, *args, 1000, None, 256, seed=seed)

    ref = (x["a"].double() + x["b"].double())[:990]
    r = ladder_runs.execute("vector_add", x, ref, launch, (990,), torch.float32, torch.float32)
    assert r.hazard is None and r.relative_error <= r.tolerance
    assert r.written_past == 10 and not r.ok
    assert any("wrote 10 element(s) past the end" in line for line in r.observed)


def test_run_tma_goes_through_execute_and_its_guard_zone():
    r = ladder_runs.run_tma("store", (45, 40))
    assert r.ok and r.written_past == 0, r.summary()
    assert any("no hazard" in line for line in r.observed)


def test_a_recorded_output_reads_back_in_either_form():
    """encode_output keeps an output as its bits minus the rounded reference's; it reads back
    bit for bit, as the first form (its raw bytes, "output_b64") does."""
    import base64

    x = ladder_runs.inputs("naive_gemm")
    out = (x["a"] @ x["b"].T).contiguous()  # float32: differs from the reference in low bits
    out[0, 0] = -out[0, 0]  # and one sign flipped: the difference wraps
    saved = ladder_runs.encode_output("naive_gemm", out)
    raw = {
        "dtype": "float32",
        "shape": list(out.shape),
        "output_b64": base64.b64encode(out.view(torch.uint8).numpy().tobytes()).decode(),
    }
    for form in (saved, raw):
        back = ladder_runs.recorded_output("naive_gemm", form)
        assert torch.equal(back.view(torch.int32), out.view(torch.int32))
