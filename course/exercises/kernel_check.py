"""Kernel exercises: the learner writes CuTe DSL code; one call checks it with all this
machine allows and says which checks ran.

    check("01.saxpy", saxpy_kernel)            # same entry point as every exercise
    check("08.cp_async_mainloop", mainloop, sanitize=True)

A kernel exercise (registered with `kernel_exercise(...)`) describes:

  * **on any machine** -- `build(fn, arch)`: the `@cute.jit` function and stand-in
    arguments that compile the learner's code for the exercise's target arch (no GPU
    needed), and `cpu_checks`: functions of a `Compiled` (the PTX/SASS, resources, the
    learner's function) that look for the instructions the idea needs, for spills, and
    compare what CuTe's own trace gives with the reference;
  * **on a GPU that can run it** -- `gpu_checks`: a module-level function of the
    learner's function that runs it on fresh random inputs over several shapes, ragged
    ones included, with the output poisoned first, against torch, and times it where
    speed is the point. It runs in a child process under `course.runtime.watchdog`: a
    kernel that hangs is reported and the notebook stays alive. With `sanitize=True`
    (or an exercise's default) the same run repeats under compute-sanitizer.

Every check returns a `Finding`; a failing one says what was observed (its detail) and
carries the hint that names the likely mistake. A finding with `ran=True` comes from running
the learner's code and comparing its every output with a reference (on the GPU, or a CPU
computation as complete); the verdict is *right* only with such a finding, *not proven here*
when everything this machine could check passed but nothing ran, *wrong* when a check
failed (course.exercises.verdicts), and *machine fault* when a check could not run here
through no fault of the learner's code (a finding "could not run": a package missing, a
driver that does not start, no GPU memory; course.exercises.machine_faults). The mistakes
are the known wrong variants of each exercise (kept beside its reference solution in
`course.exercises.solutions`); tests prove each reference passes and each wrong variant
fails with its hint. A function that still holds the skeleton's bare `...` is "not solved
yet": nothing is compiled and nothing raises. What an exercise is and what a check finds
(`KernelExercise`, `Finding`, `lookup`) live below this module, in
`course.exercises.kernel_exercises`, which the runners it calls share with it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from course.exercises.check import REGISTRY, Exercise, Wrong
from course.exercises.kernel_exercises import (
    CANNOT_RUN,
    EXECUTOR_CHECK,
    EXECUTOR_LABEL,
    FAIL,
    GPU_RUN,
    KERNEL_EXERCISES,
    NOT_RUN,
    PASS,
    Compiled,
    Finding,
    KernelExercise,
    could_not_run,
    expect,
    failed,
    not_checked,
    passed,
)
from course.exercises.learner_code import FIRST_LINE, LearnerCode, NotALearnerFunction
from course.exercises.machine_faults import HEADLINE, diagnose
from course.exercises.verdicts import (
    MACHINE_FAULT,
    NOT_SOLVED,
    RIGHT,
    UNANSWERED,
    UNPROVEN,
    WRONG,
)


def kernel_exercise(**fields) -> KernelExercise:
    """Register a kernel exercise; `check(id, fn)` then runs it."""
    ex = KernelExercise(**fields)
    KERNEL_EXERCISES[ex.id] = ex
    REGISTRY[ex.id] = Exercise(
        ex.id, ex.prompt, ex.hint, lambda fn, **opts: judge(ex, fn, **opts), ex.solution
    )
    return ex


@dataclass(frozen=True)
class Report:
    """All findings of one check, and the verdict they add up to."""

    findings: tuple[Finding, ...]
    unwritten: bool = False
    as_shipped: bool = False  # still the broken code a find-and-fix exercise shipped

    @property
    def status(self) -> str:
        """right only with a passed run; wrong on any failure; a machine fault where a check
        could not run here; else not proven here."""
        if self.unwritten or self.as_shipped:
            return UNANSWERED
        if any(f.status == FAIL for f in self.findings):
            return WRONG
        if self.machine_fault() is not None:
            return MACHINE_FAULT
        return RIGHT if any(f.ran and f.status == PASS for f in self.findings) else UNPROVEN

    def first_failure(self) -> Finding | None:
        """The failure the verdict leads with: a spill only where nothing else failed (a
        wrong index, which the run names, can be what made ptxas spill)."""
        failures = [f for f in self.findings if f.status == FAIL]
        return next((f for f in failures if f.check != SPILLS), failures[0] if failures else None)

    def machine_fault(self) -> Finding | None:
        """The first check that could not run here, through no fault of the learner's code."""
        return next((f for f in self.findings if f.status == CANNOT_RUN), None)

    def first_hint(self) -> str:
        """The hint the verdict leads with (first_failure's), else the first one given."""
        first = self.first_failure()
        if first is not None and first.hint:
            return first.hint
        return next((f.hint for f in self.findings if f.status == FAIL and f.hint), "")

    def not_run(self) -> list[Finding]:
        return [f for f in self.findings if f.status == NOT_RUN]

    def text(self) -> str:
        return "\n".join(f.line() for f in self.findings)


def judge(
    ex: KernelExercise,
    fn,
    *,
    sanitize: bool | None = None,
    gpu: bool | None = None,
    executor: bool | None = None,
) -> tuple[str, str]:
    """check()'s checker for kernel exercises: (verdict, the report as text). Options:
    `sanitize` (compute-sanitizer on a GPU), `gpu=False` (no GPU run), `executor=False` (no
    run on the CPU executor where there is no GPU run)."""
    report = run_checks(ex, fn, sanitize=sanitize, gpu=gpu, executor=executor)
    if report.unwritten:
        return UNANSWERED, (
            f"{NOT_SOLVED}replace the `...` in {function_name(fn)} with your "
            f"code, then run this check again. {ex.prompt} Hint: {ex.hint}"
        )
    if report.as_shipped:  # what is broken is the exercise: the report would give it away
        broken = sum(f.status == FAIL for f in report.findings)
        return UNANSWERED, (
            f"{NOT_SOLVED}{function_name(fn)} is still the code as shipped, and "
            f"the checker finds it broken ({broken} check(s) fail). {ex.prompt} "
            f"Change it, then check again: the report then says what each "
            f"check observed."
        )
    return report.status, f"{summary(ex, report)}\n{report.text()}"


def summary(ex: KernelExercise, report: Report) -> str:
    """The verdict's first lines: what was observed before any guess at a cause; for a kernel
    that did not run, what only a run shows."""
    if report.status == WRONG:
        first = report.first_failure()
        return f"observed: {first.check}: {first.detail}\nhint: {first.hint or ex.hint}"
    if report.status == MACHINE_FAULT:
        fault = report.machine_fault()
        return f"{HEADLINE}: {fault.detail}, {fault.hint} (while: {fault.check})"
    if report.status == RIGHT:
        where = next(f.check for f in report.findings if f.ran and f.status == PASS)
        return (
            "every check passed, including a run of your code against torch ("
            + (EXECUTOR_LABEL if where.startswith(EXECUTOR_CHECK) else where)
            + ")."
        )
    why = next(
        (f.detail.removeprefix("not run: ") for f in report.not_run()),
        "nothing on this machine runs this kernel",
    )
    return (
        f"every check this machine can make passed, but your kernel did not run here "
        f"({why}). Only a run shows {ex.run_shows}."
    )


# the check of a stack frame: a spill slows a kernel but cannot hang the GPU, so a failed one
# does not keep the run from saying what the kernel's values are (a wrong index can make
# ptxas spill: the run, not the spill, names that mistake)
SPILLS = "no spills"


def run_checks(
    ex: KernelExercise,
    fn,
    *,
    sanitize: bool | None = None,
    gpu: bool | None = None,
    executor: bool | None = None,
) -> Report:
    """Every check this machine allows, in order: compile, CPU checks, GPU run, sanitizer."""
    try:
        code = LearnerCode.from_function(fn)
    except NotALearnerFunction as exc:
        raise Wrong(str(exc)) from None
    if code.unwritten():
        return Report((), unwritten=True)
    findings: list[Finding] = []
    compiled = _compile(ex, code, findings)
    if compiled is not None:
        for cpu_check in ex.cpu_checks:
            findings.extend(_as_findings(_guarded(cpu_check.__name__, cpu_check, compiled)))
    as_shipped = ex.shipped is not None and code.same_statements(ex.shipped)
    if not as_shipped:  # the shipped code is not run: its mistakes may hang the GPU
        if compiled is None and findings and findings[-1].status == CANNOT_RUN:
            blocked = "the checker could not compile it here"
        elif compiled is None:
            blocked = "it did not compile"
        elif any(f.status == FAIL and f.check != SPILLS for f in findings):
            blocked = (
                "fix what the checks above found first: a kernel they find broken may hang the GPU"
            )
        else:
            blocked = None
        findings.extend(_live_findings(ex, code, blocked, sanitize, gpu, executor))
    return Report(tuple(findings), as_shipped=as_shipped)


def _compile(ex: KernelExercise, code: LearnerCode, findings: list[Finding]) -> Compiled | None:
    from kernels.artifacts import compile_artifacts

    what = f"traced and compiled for {ex.arch}"
    try:
        fn = code.load()
        start = time.perf_counter()
        art = compile_artifacts(("exercise", ex.id, code.digest), ex.arch, *ex.build(fn, ex.arch))
    except Exception as exc:  # the learner's code did not trace or compile: explain it
        fault = diagnose(exc)
        if fault is not None:  # or the machine could not: say so, not "your code"
            findings.append(could_not_run(what, fault))
            return None
        text = error_text(exc, code)
        hint = next(
            (
                h
                for pattern, h in ex.compile_hints + COMMON_COMPILE_HINTS
                if re.search(pattern, text)
            ),
            "read the error: CuTe DSL names the call and the argument it could not use",
        )
        findings.append(failed(what, text, hint))
        return None
    compiled = Compiled(fn, code, ex.arch, art)
    res = compiled.resources()
    findings.append(
        passed(
            what,
            f"{time.perf_counter() - start:.1f} s, "
            f"{res.get('registers', '?')} registers per thread",
        )
    )
    spills = res.get("stack_frame_bytes", 0)
    findings.append(
        expect(
            SPILLS,
            not spills,
            f"{spills} bytes of stack frame per thread" if spills else "no local memory",
            "registers spill to local memory: hold fewer values per thread",
        )
    )
    return compiled


def executor_exercises() -> tuple[str, ...]:
    """The exercises whose kernels the course's CPU executor runs."""
    from course.exercises.executor_checks import EXERCISES

    return EXERCISES


def _executor_findings(ex: KernelExercise, code: LearnerCode) -> list[Finding]:
    """The exercise's own GPU checks run on the CPU executor (course.execute): a passed run
    against torch counts as a run, as on a GPU."""
    from course.exercises.executor_checks import EXECUTOR_CHECKS

    return EXECUTOR_CHECKS[ex.id](code.load(), True)


def runner_for(ex: KernelExercise, gpu: bool | None = None, executor: bool | None = None):
    """Where this machine runs the exercise's kernel: "gpu" (one that can), "executor" (the
    course's CPU executor, where it runs the kernel), or None (compiled, not run)."""
    from course.runtime.hardware import machine

    if ex.gpu_checks is None:
        return None
    if gpu is not False and machine().can(ex.needs):
        return "gpu"
    if executor is not False and ex.id in executor_exercises():
        return "executor"
    return None


def _live_findings(
    ex: KernelExercise,
    code: LearnerCode,
    blocked: str | None,
    sanitize: bool | None,
    gpu: bool | None,
    executor: bool | None = None,
) -> list[Finding]:
    """The run of the kernel, where this machine has one; `blocked` says why not to run it."""
    if ex.gpu_checks is None:
        return [
            not_checked(
                GPU_RUN,
                f"not run: this exercise's kernel needs {ex.needs}, and the "
                f"checker compiles it and reads its PTX but has no run of it",
            )
        ]
    if blocked:
        return [not_checked(GPU_RUN, f"not run: {blocked}")]
    return _machine_guarded("running your kernel", _run, ex, code, sanitize, gpu, executor)


def _run(
    ex: KernelExercise,
    code: LearnerCode,
    sanitize: bool | None,
    gpu: bool | None,
    executor: bool | None,
) -> list[Finding]:
    """The run itself: on this machine's GPU (and under compute-sanitizer), else on the CPU
    executor, else a finding saying it was compiled, not run."""
    from course.runtime.hardware import machine

    what = GPU_RUN
    runner = runner_for(ex, gpu, executor)
    if runner != "gpu":
        m = machine()
        why = (
            "asked not to"
            if gpu is False
            else f"it needs {ex.needs}; this machine is {m.describe()}"
        )
        if runner == "executor":
            return _executor_findings(ex, code) + [
                not_checked(
                    what,
                    f"not run: {why}; the CPU executor ran it instead (small shapes; speed "
                    f"and compute-sanitizer need a GPU)",
                )
            ]
        return [not_checked(what, f"not run: {why}; the kernel was compiled, not executed")]
    from course.exercises import gpu_run

    from course.exercises import hazard_pass

    # the executor's hazards first: the same verdict as on a CPU, and a hang named, not run
    found = hazard_pass.executor_hazards(ex, code) if executor is not False else None
    if found is not None and hazard_pass.hangs(found):
        return hazard_pass.as_findings(found, None) + [
            not_checked(what, "not run: the executor found a hazard that hangs a GPU")
        ]
    findings = gpu_run.in_child(ex, code)
    right = all(f.status not in (FAIL, CANNOT_RUN) for f in findings)
    tools = ex.sanitize if sanitize is None else (("memcheck", "racecheck") if sanitize else ())
    if tools and right:
        findings += gpu_run.under_sanitizer(ex, code, tools)
    if found is not None:  # what the GPU hid today is still wrong
        findings += hazard_pass.as_findings(found, right)
    return findings


def _guarded(name: str, fn: Callable, *args) -> Finding | Sequence[Finding]:
    check = name.strip("_").replace("_", " ")
    try:
        return fn(*args)
    except Exception as exc:
        fault = diagnose(exc)
        if fault is not None:
            return could_not_run(check, fault)
        return failed(check, f"could not check: {_first_lines(exc)}")


def _machine_guarded(check: str, fn: Callable, *args) -> list[Finding]:
    """fn(*args)'s findings; a fault of the machine while making them (the executor's
    packages missing, no GPU memory) is a finding "could not run", any other error the
    learner's."""
    try:
        return fn(*args)
    except Exception as exc:
        fault = diagnose(exc)
        if fault is None:
            raise
        return [could_not_run(check, fault)]


def _as_findings(result) -> list[Finding]:
    return [result] if isinstance(result, Finding) else list(result)


# CuTe DSL's errors for the commonest slips, and the mistake each one means
COMMON_COMPILE_HINTS = (
    (
        r"UNSUP_EARLY_EXIT|Early exit \(return\)",
        "a kernel cannot return early: CuTe DSL compiles an `if` on a runtime value as a whole, so "
        "put the work under the condition (`if i < n: ...`) instead of returning",
    ),
    (
        r"range_constexpr\(\)` requires all arguments to be Python integers",
        "cutlass.range_constexpr unrolls at compile time and needs Python ints; for a bound known "
        "only when the kernel runs (n, k_tiles) use range(...) or cutlass.range(...)",
    ),
    (
        r"not supported between instances of 'tuple'|unsupported operand type\(s\) for .*'tuple'",
        "cute.arch.thread_idx() / block_idx() / block_dim() return (x, y, z): unpack them, "
        "tid, _, _ = cute.arch.thread_idx()",
    ),
    (
        r"Expected Coord, whose leaves are integers",
        "an index must be an integer: in Python `/` gives a float, `//` an integer",
    ),
    (
        r"expected a Layout for \w+, but got <class 'int'>",
        "this argument is a layout: wrap a count in cute.make_layout(...)",
    ),
    (
        r"const_expr|Constexpr.*dynamic|dynamic.*Constexpr",
        "a value known only when the kernel runs was used where CuTe DSL needs one known at "
        "compile time (a Python `if`, a shape, range_constexpr)",
    ),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def error_text(exc: BaseException, code: LearnerCode | None = None, lines: int = 5) -> str:
    """CuTe DSL's error as a few plain lines: colours and advice boilerplate dropped, the
    learner's module file replaced by "your code, line N" (counted from the def)."""
    text = _ANSI.sub("", f"{type(exc).__name__}: {exc}")
    if code is not None:
        text = re.sub(
            rf"\S*{re.escape(code.path().name)}:(\d+)(:\d+)?",
            lambda m: f"your code, line {int(m.group(1)) - FIRST_LINE + 1}",
            text,
        )
    kept = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip()
        and not ln.strip().startswith(("suggestion:", "Re-run", "-->"))
        and "CUTE_DSL_SHOW_STACKTRACE" not in ln
        and not re.match(r"\s*\d*\s*\|", ln)
        and "your code, line" not in ln
    ]
    where = [ln for ln in text.splitlines() if "your code, line" in ln]
    return " / ".join(kept[:lines] + [w.strip().lstrip("-> ").strip() for w in where[:1]])


def _first_lines(exc: BaseException, lines: int = 3) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return " / ".join(line.strip() for line in text[:lines] if line.strip())


def function_name(fn) -> str:
    return getattr(getattr(fn, "__wrapped__", fn), "__name__", "your function")


# ---------------------------------------------------------------- a step with one method replaced


def subclass_with(kernel_class, method: str, fn, **helpers):
    """`kernel_class` with the learner's `fn` as `method` (jitted if the learner did not
    decorate it), and `helpers` as static methods the learner's code reaches via self."""
    import cutlass.cute as cute

    jitted = fn if hasattr(fn, "__wrapped__") else cute.jit(fn)
    body = {method: jitted, **{k: staticmethod(v) for k, v in helpers.items()}}
    return type(f"Your{kernel_class.__name__}", (kernel_class,), body)


def variant_name(id: str, fn) -> str:
    """A compile-cache name per exercise and per learner function: two versions of the
    learner's code never share a compiled kernel."""
    return f"{id}/{fn.__module__}.{fn.__qualname__}"
