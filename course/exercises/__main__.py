"""python -m course.exercises verify [--record] [--sanitize] [--only NAME,...] [ID ...]

Run every kernel exercise's reference solution, its alternative correct solutions and its
known wrong variants through the checker on this machine, and print one line each with the
verdict (right / wrong / not proven / not answered). Where the machine runs the exercise's
kernel -- live on a GPU that can, or on the course's CPU executor (every kernel exercise) -- each
correct solution must be right and each wrong variant wrong with its hint; where nothing runs
it, a correct solution must not be called wrong, a wrong variant caught by the CPU checks
must be wrong with its hint, and a mistake only a run shows must be "not proven" (never
right). On a GPU that includes the live checks (correctness against torch under the
watchdog, speed where asked, compute-sanitizer where the exercise asks or with --sanitize).
`--record` appends the verdicts to results/kernel_exercises.json with the GPU, date and this
command (refused without a GPU: a CPU verdict is not a GPU result). A run cut short (Ctrl-C,
or the SIGTERM of a time limit) still records the cases it finished, marked as interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from course.exercises import kernel_check, kernel_exercises, solutions
from course.exercises.verdicts import RIGHT, UNPROVEN, WRONG


def expectation(case: solutions.Case, live: bool) -> tuple[str, ...]:
    """The verdicts `case` may get on a machine that does (`live`) or does not run it."""
    if case.correct:
        return (RIGHT,) if live else (RIGHT, UNPROVEN)
    return (WRONG,) if live or case.where == "cpu" else (WRONG, UNPROVEN)


def as_expected(case: solutions.Case, report: kernel_check.Report, live: bool) -> bool:
    if report.status not in expectation(case, live):
        return False
    if report.status == WRONG:  # and it must name the mistake
        return case.word in report.first_hint() or case.word in report.text()
    return True


def runs_live(ex: kernel_check.KernelExercise) -> bool:
    """Does this machine run the exercise's kernel: on a GPU that can, or else on the
    course's CPU executor?"""
    return kernel_check.runner_for(ex) is not None


def verify(
    ids: list[str], sanitize: bool | None, rows: list[dict] | None = None, only: set[str] = ()
) -> list[dict]:
    """One row per case: kind, expected and actual verdict, hint, checks (appended to `rows`
    as each case finishes, so an interrupted run keeps what it did). `only`: just the
    variants of these names (new ones, on a GPU whose time is short)."""
    rows = [] if rows is None else rows
    for case in solutions.cases(ids):
        if only and case.name not in only:
            continue
        ex = kernel_exercises.lookup(case.exercise)
        live = runs_live(ex)
        start = time.perf_counter()
        report = kernel_check.run_checks(ex, case.fn, sanitize=sanitize)
        ok = as_expected(case, report, live)
        rows.append(
            {
                "exercise": case.exercise,
                "variant": case.name,
                "kind": case.kind,
                "expected": " or ".join(expectation(case, live))
                + (f" ({case.word}, {case.where})" if case.word else ""),
                "verdict": report.status,
                "as_expected": ok,
                "hint": report.first_hint(),
                "checks": [[f.check, f.status, f.detail] for f in report.findings],
                "seconds": round(time.perf_counter() - start, 1),
            }
        )
        print(
            f"{'ok ' if ok else 'BAD'} {case.exercise:22s} {case.name:48s} "
            f"{report.status:12s} {rows[-1]['seconds']:6.1f} s  {report.first_hint()[:60]}"
        )
        if not ok:
            print(report.text())
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.exercises",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("verify", help="run every reference and known wrong variant")
    p.add_argument("ids", nargs="*")
    p.add_argument(
        "--sanitize",
        action="store_true",
        default=None,
        help="run compute-sanitizer memcheck + racecheck on every case (GPU)",
    )
    p.add_argument("--record", action="store_true")
    p.add_argument("--only", default="", help="only these variants (comma-separated names)")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    interrupted = False
    previous = signal.signal(signal.SIGTERM, _stop)  # a time limit's kill, as Ctrl-C
    try:
        verify(args.ids, args.sanitize, rows, {n for n in args.only.split(",") if n})
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted after {len(rows)} case(s)")
    finally:
        signal.signal(signal.SIGTERM, previous)
    bad = [r for r in rows if not r["as_expected"]]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in (RIGHT, WRONG, UNPROVEN)}
    print(
        f"\n{len(rows) - len(bad)} of {len(rows)} as expected ("
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + ")"
    )
    if args.record:
        from course.runtime import results

        rec = results.record(
            "kernel_exercises",
            {
                "cases": rows,
                "as_expected": len(rows) - len(bad),
                "total": len(rows),
                "interrupted": interrupted,
            },
        )
        print(f"recorded: {rec.citation()}")
    return 1 if bad or interrupted else 0


def _stop(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
