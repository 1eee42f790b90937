"""The GPU half of a kernel exercise's check: the learner's kernel run where it cannot hurt.

`in_child` runs the exercise's `gpu_checks` on the learner's code in a child process under
`course.runtime.watchdog`: a kernel that hangs is stopped and reported, a crash (an illegal
address poisons a CUDA context for good) takes down the child only, and the notebook's own
GPU context stays clean. `under_sanitizer` runs the same checks, on their small problem,
under NVIDIA's compute-sanitizer (memcheck, racecheck, synccheck) in a subprocess with a
time limit, and turns its report into one sentence.

The helpers below are what the exercises' GPU checks share: fresh inputs, an output poisoned
with NaN and followed by a guard zone (a write past the end is caught, not just a wrong
value), and one comparison against a float64 torch reference.

    python -m course.exercises.gpu_run ID FILE NAME [--quick]   (what the sanitizer runs)
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Callable

from course.bench import sanitizer_log
from course.exercises.kernel_exercises import (
    CANNOT_RUN,
    FAIL,
    PASS,
    Finding,
    KernelExercise,
    could_not_run,
    expect,
    failed,
    lookup,
)
from course.exercises.learner_code import LearnerCode, source_in_file
from course.exercises.machine_faults import diagnose

GUARD = 256  # elements after the output that no kernel may write
HANG_HINT = (
    "a kernel that never finishes: a loop whose bound never changes, or a wait for "
    "something no thread does"
)
SANITIZER_TIMEOUT_S = 240
MACHINE_EXIT = 3  # main()'s exit code when the machine could not run the checks


# ---------------------------------------------------------------- run in a child process


def in_child(ex: KernelExercise, code: LearnerCode) -> list[Finding]:
    """The exercise's GPU checks on the learner's code, in a child process with a watchdog."""
    from course.runtime import watchdog

    try:
        rows = watchdog.isolated(
            _child_checks,
            ex.id,
            code.name,
            code.source,
            False,
            timeout_s=ex.timeout_s,
            what=f"your {code.name}",
        )
    except watchdog.PipelineHang as exc:
        return [
            failed("ran on the GPU", f"stopped after {ex.timeout_s:g} s: {_short(exc)}", HANG_HINT)
        ]
    except watchdog.ChildFailed as exc:
        return [
            failed(
                "ran on the GPU",
                _short(exc),
                "the kernel crashed: an out-of-bounds address is the usual cause",
            )
        ]
    return [Finding(*row, ran=row[1] != CANNOT_RUN) for row in rows]  # the learner's kernel ran


def _child_checks(id: str, name: str, source: str, quick: bool) -> list[tuple]:
    """Run in the child: rebuild the learner's function from source, run its checks. A fault
    of this machine (a package missing here, no driver, no GPU memory) comes back as a
    finding "could not run", judged here where the exception's traceback is."""
    from course.runtime import watchdog

    try:
        ex = lookup(id)
        fn = LearnerCode(name, source).load()
        findings = ex.gpu_checks(fn, quick=quick, launching=watchdog.launching)
    except Exception as exc:
        fault = diagnose(exc)
        if fault is None:
            raise
        findings = [could_not_run("ran on the GPU", fault)]
    return [(f.check, f.status, f.detail, f.hint) for f in findings]


# ---------------------------------------------------------------- compute-sanitizer


def under_sanitizer(ex: KernelExercise, code: LearnerCode, tools: tuple[str, ...]) -> list[Finding]:
    """Each tool's verdict on the exercise's small problem, run in a subprocess."""
    tool_path = sanitizer_log.sanitizer()
    if tool_path is None:
        return [
            Finding(
                f"compute-sanitizer {t}",
                "not run",
                "not run: compute-sanitizer is not installed on this machine",
            )
            for t in tools
        ]
    return [_one_tool(tool_path, tool, ex, code) for tool in tools]


def _one_tool(tool_path: str, tool: str, ex: KernelExercise, code: LearnerCode) -> Finding:
    what = f"compute-sanitizer {tool}"
    cmd = [
        tool_path,
        f"--tool={tool}",
        "--error-exitcode=99",
        "--report-api-errors=no",
        sys.executable,
        "-m",
        "course.exercises.gpu_run",
        ex.id,
        str(code.path()),
        code.name,
        "--quick",
    ]
    # memcheck knows only the driver's allocations: in torch's caching allocator a read past a
    # tensor's end usually lands in the same cached block, unseen. One allocation per tensor
    # makes every tensor's end an allocation's end.
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"} if tool == "memcheck" else None
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=SANITIZER_TIMEOUT_S, env=env
        )
    except subprocess.TimeoutExpired:
        return failed(what, f"did not finish within {SANITIZER_TIMEOUT_S} s", HANG_HINT)
    return sanitizer_finding(
        what, tool, out.returncode, out.stdout + out.stderr, sass=lambda: _gpu_sass(ex, code)
    )


def sanitizer_finding(
    what: str, tool: str, returncode: int, log: str, sass: Callable[[], str] | None = None
) -> Finding:
    """One sentence from a compute-sanitizer log: clean, the first problem it reports (a
    race named by the two instructions, where the kernel's SASS is at hand), or a run
    that failed its own checks under the tool with no problem reported."""
    read = sanitizer_log.read(log)
    if read.clean and returncode == 0:
        return Finding(what, PASS, "0 errors")
    if read.errors == 0 and returncode == MACHINE_EXIT:  # main() said: not the kernel's fault
        fault = next((ln.strip() for ln in log.splitlines() if ln.strip().startswith("⚠")), "")
        return Finding(
            what,
            CANNOT_RUN,
            f"the run under {tool} could not start on this machine ({fault.lstrip('⚠ ')})",
            "see the fix printed by `python -m course.exercises.gpu_run` for this exercise",
        )
    hint = {
        "racecheck": "two threads touch the same shared-memory bytes with no barrier between "
        "them: a missing sync (or a stage reused too early)",
        "synccheck": "a barrier not every thread of the block reaches",
        "memcheck": "an address outside the buffer: a missing predicate at the edge",
    }[tool]
    if read.clean:
        return failed(
            what,
            f"no {tool} error, but the run under it failed its checks: "
            f"{read.failed_check() or f'exit code {returncode}'}",
            "the result is wrong though no hazard was reported: look at the checks above",
        )
    first = read.first_problem(sass)
    detail = (
        f"{read.errors} error(s); first: {first}"
        if first
        else f"exit code {returncode}: {read.last_line()}"
    )
    return failed(what, detail, hint)


def _gpu_sass(ex: KernelExercise, code: LearnerCode) -> str:
    """The learner's kernel compiled for this GPU, disassembled (cached per source)."""
    import torch

    from kernels.artifacts import compile_artifacts
    from kernels.host import arch_for

    arch = arch_for(torch.cuda.get_device_capability())
    fn = code.load()
    return compile_artifacts(("exercise", ex.id, code.digest), arch, *ex.build(fn, arch)).sass()


# ---------------------------------------------------------------- helpers for gpu_checks


def guarded_output(shape: tuple[int, ...], dtype, device="cuda"):
    """(out, buffer): `out` poisoned with NaN, followed in `buffer` by GUARD poisoned
    elements that no correct kernel writes."""
    import torch

    numel = 1
    for s in shape:
        numel *= s
    buffer = torch.full((numel + GUARD,), float("nan"), dtype=dtype, device=device)
    return buffer[:numel].view(shape), buffer


# an output whose tile (i, j) holds the reference's tile (j, i) (mismatch.observe's
# "tiles swapped"): the same words whatever the exercise, since they say what was seen
TILES_SWAPPED_HINT = (
    "tiles swapped: the tile of output rows i and columns j was stored at tile (j, i); index "
    "the output's tiles row coordinate first, (tile_row, tile_col), the order the tile's "
    "MMAs used for A's rows and B's columns"
)


def judge_output(
    check: str,
    out,
    ref,
    buffer=None,
    *,
    wrong_hint="",
    edge_hint: str = "",
    tile: tuple | None = None,
    period: int | None = None,
    candidates=(),
) -> Finding:
    """Compare a kernel's output with a torch reference. A wrong output is described as
    observed first (course.exercises.mismatch: unwritten, past the end, the ragged edge,
    scaled, transposed, a block repeated, a known wrong formula); the hint is then the one
    for that observation: `candidates` are (name, tensor, hint) of known wrong formulas,
    `wrong_hint` a string or a dict {pattern: hint} ("values" for anything else), and
    `edge_hint` is for writes past the end and wrong values only at the edge. `wrong_hint`
    and `candidates` may be given as functions of no arguments: they cost a reference
    computation each and are only needed for an output that is wrong."""
    import torch

    from course.exercises.mismatch import observe
    from kernels.selftest import TOLERANCE, relative_error

    if buffer is not None and not torch.isnan(buffer[out.numel() :].float()).all():
        past = ~torch.isnan(buffer[out.numel() :].float())
        first = int(past.nonzero()[0])
        return failed(
            check,
            f"wrote {int(past.sum())} element(s) past the end of the output "
            f"(the first {first} element(s) after it)",
            edge_hint or "a missing predicate at the edge",
        )
    err = relative_error(out, ref)
    tol = TOLERANCE[out.dtype]
    if err <= tol:
        return Finding(check, PASS, f"relative error {err:.1e}")
    wrong_hint = wrong_hint() if callable(wrong_hint) else wrong_hint
    candidates = candidates() if callable(candidates) else candidates
    seen = observe(
        out,
        ref,
        tol,
        tile=tile,
        period=period,
        candidates=tuple((name, t) for name, t, _ in candidates),
    )
    hints = dict(wrong_hint) if isinstance(wrong_hint, dict) else {"values": wrong_hint}
    hints.update({name: hint for name, _, hint in candidates})
    if edge_hint:
        hints.setdefault("edge", edge_hint)
    hints.setdefault("tiles swapped", TILES_SWAPPED_HINT)
    hint = hints.get(seen.pattern) or hints.get("values", "") or edge_hint
    detail = seen.sentence + (
        "" if seen.pattern == "unwritten" else f" (relative error {err:.1e} > {tol:.0e})"
    )
    return failed(check, detail, hint)


def gemm_findings(
    gemm, shapes, launching, dtype=None, config=None, wrong_hint="", edge_hint="", tile=None
) -> list[Finding]:
    """A GEMM step (a kernels.gemm_host.GemmHost) against torch on each (m, n, k): compiled
    first, then launching() (the watchdog's clock starts), then K-major operands, C poisoned
    and guarded. `wrong_hint` may be a function of (a, b, out) that names the mistake; `tile`
    is C's tile per CTA where `config` has no tile_m and tile_n to say it."""
    import torch

    dtype = dtype or torch.bfloat16
    gemm.compile(dtype, config)
    launching()
    findings = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda").to(dtype)
        b = torch.randn(n, k, device="cuda").to(dtype)
        out, buffer = guarded_output((m, n), dtype)
        gemm.run(a, b, out, config)
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"{m}x{n}x{k} {str(dtype)[6:]} against torch",
                out,
                a.double() @ b.double().T,
                buffer,
                wrong_hint=(lambda a=a, b=b, out=out: wrong_hint(a, b, out))
                if callable(wrong_hint)
                else wrong_hint,
                edge_hint=edge_hint,
                tile=tile or _tile(config),
                candidates=lambda a=a, b=b: _k_tiles_missed(a, b, config),
            )
        )
    return findings


def operand_findings(
    gemm, config, dtype, shapes, inputs, operands, reference, candidates, what, wrong_hint,
    launching,
) -> list[Finding]:  # fmt: skip
    """A GEMM step with operands beyond A and B (scales, a bias, a residual) against a
    float64 reference on each (m, n, k): compiled for `dtype` first, then launching() (the
    watchdog's clock starts); `inputs(m, n, k, seed)` gives a dict with "a", "b" and the
    `operands` named, passed in that order; C (bf16) poisoned and guarded; `reference(x)` and
    `candidates(x)` (the known wrong formulas) judge it, `what` names the run."""
    import torch

    gemm.compile(dtype, config)
    launching()
    findings = []
    for seed, (m, n, k) in enumerate(shapes):
        x = inputs(m, n, k, seed)
        out, buffer = guarded_output((m, n), torch.bfloat16)
        gemm.run(x["a"], x["b"], out, config, tensors=tuple(x[name] for name in operands))
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"{m}x{n}x{k} {what}, against torch",
                out.cpu(),
                reference(x),
                buffer.cpu(),
                wrong_hint=wrong_hint,
                tile=(config.tile_m, config.tile_n),
                candidates=lambda x=x: candidates(x),
            )
        )
    return findings


def _tile(config) -> tuple | None:
    m, n = getattr(config, "tile_m", None), getattr(config, "tile_n", None)
    return (m, n) if isinstance(m, int) and isinstance(n, int) else None


def _k_tiles_missed(a, b, config) -> tuple:
    """(name, C, hint) for a GEMM that drops its first or its last k-tile: what a loop that
    runs once too few computes."""
    tile_k = getattr(config, "tile_k", 64)
    k = a.shape[1]
    if not isinstance(tile_k, int) or k <= tile_k:
        return ()
    last = (k - 1) // tile_k * tile_k  # where the last (maybe partial) k-tile starts
    a64, b64 = a.double(), b.double()
    hint = "a k-tile is never multiplied: the loop must run over all k_tiles k-tiles"
    return (
        ("A.B^T without its last k-tile", a64[:, :last] @ b64[:, :last].T, hint),
        ("A.B^T without its first k-tile", a64[:, tile_k:] @ b64[:, tile_k:].T, hint),
    )


def speed_check(size: int, what: str) -> str:
    """The name of speed_against's check (also shown where no GPU measures it)."""
    return f"speed at {size}^3 against {what}"


def speed_against(
    gemm,
    reference,
    config,
    size: int,
    required: float,
    hint: str,
    what: str = "the course's kernel (same Config)",
) -> Finding:
    """The learner's GEMM step timed against the course's (both GemmHosts, same `config`) at
    size^3 bf16 in alternating rounds in this process: the median of the per-round ratios
    must reach `required`; the finding shows it with its range."""
    import statistics

    import torch

    from kernels.selftest import gemm_inputs, paired_rounds, ratio_summary

    inputs = gemm_inputs(size, size, size, torch.bfloat16, sets=2)
    outs = [torch.empty(size, size, dtype=torch.bfloat16, device="cuda") for _ in inputs]

    def runner(host):
        return lambda i: host.run(*inputs[i % 2], outs[i % 2], config)

    t = paired_rounds({"course": runner(reference), "yours": runner(gemm)}, rounds=8, reps=10)
    ratio = statistics.median(r / c for r, c in zip(t["course"], t["yours"]))
    return expect(
        speed_check(size, what),
        ratio >= required,
        f"{ratio_summary(t['course'], t['yours'])} of the course's kernel",
        f"below {required:.0%}: {hint}",
    )


def _short(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[0][:300] if lines else type(exc).__name__


def main(argv: list[str]) -> int:
    """The sanitizer's subprocess: run the checks once, in this process."""
    id, path, name = argv[:3]
    source = source_in_file(path)
    rows = _child_checks(id, name, source, "--quick" in argv)
    for row in rows:
        print(Finding(*row).line())
    if any(row[1] == FAIL for row in rows):
        return 1
    return MACHINE_EXIT if any(row[1] == CANNOT_RUN for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
