"""python -m course.execute [--arch sm_100a] [--seed N] script.py [its arguments]

Runs a CuTe DSL script, unmodified, with its kernels on the CPU executor: what
`TRITON_INTERPRET=1` is to Triton. The script's `cute.compile(...)` and `@cute.jit` calls
run on the executor (course.execute.host), its torch "cuda" is the CPU
(course.execute.cuda_on_cpu), and each launch is reported: its grid and block, and the
first hazard, named with thread, tensor and line, which stops the script (exit status 1).
A CuTe DSL name the executor does not model stops it too (exit status 3), saying so.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys


def _report(fn, result) -> None:
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", "the host function"))
    for launched in result.launches:
        print(
            f"[course.execute] {name}: grid {launched.grid}, block {launched.block}: "
            "ran on the CPU executor, no hazard",
            file=sys.stderr,
        )
        for note in launched.notes:  # what the ISA leaves defined but the course avoids
            print(f"[course.execute] note: {note}", file=sys.stderr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.execute",
        description="Run a CuTe DSL script's kernels on the course's CPU executor.",
    )
    parser.add_argument(
        "--arch",
        default=os.environ.get("CUTE_DSL_ARCH", "sm_100a"),
        help="the GPU the script is told it has (sm_80, sm_90a, sm_100a)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the executor's warp-order seed")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)

    os.environ["CUTE_DSL_ARCH"] = options.arch
    digits = "".join(c for c in options.arch.split("_", 1)[-1] if c.isdigit())
    capability = (int(digits[:-1]), int(digits[-1]))

    from course.execute import host
    from course.execute.cuda_on_cpu import cuda_on_cpu
    from course.execute.hazards import Hazard, Unmodelled

    script = os.path.abspath(options.script)
    sys.argv = [script, *options.args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        with cuda_on_cpu(capability), host.interpreting(options.seed, on_run=_report):
            runpy.run_path(script, run_name="__main__")
    except Hazard as hazard:
        print(f"[course.execute] hazard: {hazard}", file=sys.stderr)
        return 1
    except Unmodelled as missing:
        print(f"[course.execute] {missing}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
