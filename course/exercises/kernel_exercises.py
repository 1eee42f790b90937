"""A kernel exercise as data: what it checks, found by its id, and what each check finds.

`KernelExercise` describes one exercise (how to compile the learner's function, the checks
any machine runs on what it compiled to, the module-level GPU checks); `lookup(id)` finds it,
importing its notebook's module. Every check returns a `Finding`. The checkers build on this
module and nothing of theirs: `kernel_check` registers exercises and judges them, and
`gpu_run`, `executor_checks` and `hazard_pass`, which run them, need only these words, so
none of them imports another to speak of a finding.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from course.exercises.check import find_exercise
from course.exercises.learner_code import LearnerCode
from course.exercises.machine_faults import MachineFault

PASS, FAIL, NOT_RUN, CANNOT_RUN = "pass", "fail", "not run", "could not run"
_MARK = {PASS: "✔", FAIL: "✘", NOT_RUN: "–", CANNOT_RUN: "⚠"}
# how course.exercises.executor_checks names the findings of its runs (kept here: a verdict
# on a GPU run must not need the executor, nor its packages)
EXECUTOR_CHECK = "ran on the course's CPU executor"
GPU_RUN = "run on the GPU against torch"
EXECUTOR_LABEL = f"{EXECUTOR_CHECK}, not on a GPU: values and hazards checked, speed not measured"


@dataclass(frozen=True)
class Finding:
    """One check's outcome: what was checked, how it went, and (if it failed) why."""

    check: str
    status: str
    detail: str = ""
    hint: str = ""
    ran: bool = False  # the learner's code ran and its outputs were compared with a reference
    hazard: bool = False  # a hazard the CPU executor found (course.execute.hazards)

    def line(self) -> str:
        text = f"  {_MARK[self.status]} {self.check}"
        if self.detail:
            text += f": {self.detail}"
        if self.status == FAIL and self.hint:
            text += f"\n      hint: {self.hint}"
        if self.status == CANNOT_RUN and self.hint:
            text += f"\n      fix: {self.hint}"
        return text


def passed(check: str, detail: str = "") -> Finding:
    return Finding(check, PASS, detail)


def not_checked(check: str, detail: str) -> Finding:
    """A check this machine could not make: shown as such, never as a pass."""
    return Finding(check, NOT_RUN, detail)


def failed(check: str, detail: str, hint: str = "") -> Finding:
    return Finding(check, FAIL, detail, hint)


def could_not_run(check: str, fault: MachineFault) -> Finding:
    """A check the machine could not make, through no fault of the learner's code: what
    happened (detail) and how to mend it (hint)."""
    return Finding(check, CANNOT_RUN, fault.what, fault.fix)


def expect(check: str, ok: bool, detail: str, hint: str = "") -> Finding:
    return Finding(check, PASS if ok else FAIL, detail, "" if ok else hint)


@dataclass
class Compiled:
    """What the CPU checks look at: the learner's function and what it compiled to."""

    fn: Any
    code: LearnerCode
    arch: str
    artifacts: Any  # kernels.artifacts.Artifacts

    @property
    def ptx(self) -> str:
        return self.artifacts.ptx

    def count(self, pattern: str) -> int:
        return self.artifacts.count_ptx(pattern)

    @functools.cached_property
    def instructions(self) -> list[str]:
        """The PTX's instruction lines, in order (course.cute.ptx_protocol's reading)."""
        from course.cute.ptx_protocol import instructions

        return instructions(self.ptx)

    def resources(self) -> dict:
        """Registers, spills (stack frame) and static shared memory of the one kernel."""
        usage = self.artifacts.resource_usage()
        return next(iter(usage.values())) if usage else {}


CpuCheck = Callable[[Compiled], "Finding | Sequence[Finding]"]


@dataclass(frozen=True)
class KernelExercise:
    id: str
    prompt: str
    hint: str
    arch: str  # what the CPU compiles for
    needs: str  # what a live run needs (course.runtime.hardware.NEEDS)
    build: Callable[[Any, str], tuple]  # (fn, arch) -> (jit_fn, *stand-in args)
    cpu_checks: tuple[CpuCheck, ...] = ()
    gpu_checks: Callable[[Any], list] | None = None  # module-level: runs in a child
    sanitize: tuple[str, ...] = ()  # compute-sanitizer tools run by default on a GPU
    solution: str = ""
    # what only a run shows, said when the kernel could not run here ("not proven here")
    run_shows: str = (
        "whether it computes the right numbers (checked against torch on ragged shapes)"
    )
    timeout_s: float = 30.0
    # the name of the GPU check that times the kernel, where one does: a run without a GPU
    # (the CPU executor) says that check was not measured
    speed_check: str = ""
    # (regular expression on CuTe DSL's error, the mistake it means) for code that does
    # not even compile, e.g. a fragment from the wrong partition fails cute.gemm's checks
    compile_hints: tuple[tuple[str, str], ...] = ()
    # a find-and-fix exercise ships broken code: while the learner's function is still that
    # code (same statements, any name or comments) the check says "not solved yet" and
    # shows what the checker finds wrong with it
    shipped: Callable | None = None


KERNEL_EXERCISES: dict[str, KernelExercise] = {}


def lookup(id: str) -> KernelExercise:
    """The kernel exercise `id`, its notebook's module imported if need be."""
    find_exercise(id)
    return KERNEL_EXERCISES[id]
