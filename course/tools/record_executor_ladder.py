"""Record, on a GPU, the outputs of the ladder kernels of notebooks 00-11 for the fixed
inputs the CPU executor runs them on (course.execute.ladder_runs.inputs), so that
tests/test_execute_ladder.py can compare the executor's outputs with the GPU's.

    python -m course.tools.record_executor_ladder

Appends a record to results/executor_ladder.json (GPU, driver, date, this command), with
each case's output (its bits minus those of the torch reference rounded to its dtype,
compressed: course.execute.ladder_runs.encode_output, read back by recorded_output) and its
relative error against the float64 reference.
Refuses to run without a GPU: a CPU output is not a GPU result.
"""

from __future__ import annotations

import sys

import torch

from course.execute import ladder_runs
from course.runtime import results
from kernels.selftest import relative_error


def gpu_output(case: str, x: dict) -> torch.Tensor:
    """The kernel's own GPU run (its module's run()) on the case's inputs."""
    from kernels import copies, hopper_gemm, mma_atom, naive_gemm, sm80_gemm, smem_transpose
    from kernels import tma_gemm, vector_add, wgmma_gemm

    p = ladder_runs.CASES[case]
    kernel = case.split(".")[0]
    if kernel == "vector_add":
        return vector_add.run(x["a"], x["b"])
    if kernel == "naive_gemm":
        return naive_gemm.run(x["a"], x["b"])
    if kernel == "copies":
        return copies.run(x["src"], config=copies.Config(variant=p["variant"]))
    if kernel == "smem_transpose":
        return smem_transpose.run(x["x"], config=smem_transpose.Config(p["layout"]))
    if kernel == "mma_atom":
        return mma_atom.micro_gemm(x["a"], x["b"], mma_atom.Config(*p["warps"]))
    if kernel == "sm80_gemm":
        return sm80_gemm.run(x["a"], x["b"])
    if kernel == "tma_gemm":
        return tma_gemm.run(x["a"], x["b"], config=tma_gemm.Config(ring=p["ring"]))
    if kernel == "wgmma_gemm":
        return wgmma_gemm.run(x["a"], x["b"])
    if kernel == "hopper_gemm":
        return hopper_gemm.run(x["a"], x["b"], config=hopper_gemm.PRESETS[p["preset"]])
    raise KeyError(case)


def main() -> int:
    if not torch.cuda.is_available():
        print("no GPU here: the ladder outputs are recorded on a GPU", file=sys.stderr)
        return 2
    cases = {}
    for case in ladder_runs.RECORDED:
        x = ladder_runs.inputs(case, device="cuda")
        out = gpu_output(case, x)
        torch.cuda.synchronize()
        ref = ladder_runs.reference(case, {k: v.cpu() for k, v in x.items()})
        cpu = out.detach().cpu().contiguous()
        err = relative_error(cpu, ref)
        cases[case] = {**ladder_runs.encode_output(case, cpu), "relative_error": err}
        print(f"{case:26s} {tuple(cpu.shape)} relative error {err:.1e}")
    rec = results.record("executor_ladder", {"cases": cases})
    print(f"recorded: {rec.citation()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
