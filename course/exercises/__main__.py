"""python -m course.exercises verify [--record] [--sanitize] [ID ...]

Run every kernel exercise's reference solution and known wrong variants through the checker
on this machine, and print one line each: the reference must pass, each wrong variant must
fail with its hint. On a GPU that includes the live checks (correctness against torch under
the watchdog, speed where asked, compute-sanitizer where the exercise asks or with
--sanitize). `--record` appends the verdicts to results/kernel_exercises.json with the GPU,
date and this command (refused without a GPU: a CPU verdict is not a GPU result). A run
cut short (Ctrl-C, or the SIGTERM of a time limit) still records the cases it finished,
marked as interrupted.
"""
from __future__ import annotations

import argparse
import signal
import sys
import time

from course.exercises import kernel_check, solutions


def verify(ids: list[str], sanitize: bool | None, rows: list[dict] | None = None) -> list[dict]:
    """One row per reference and wrong variant: expected and actual verdict, hint, checks
    (appended to `rows` as each case finishes, so an interrupted run keeps what it did)."""
    rows = [] if rows is None else rows
    for mod in solutions.modules():
        for id, ref in mod.REFERENCE.items():
            if ids and id not in ids:
                continue
            ex = kernel_check.lookup(id)
            cases = [(ref, None, None)] + [(fn, word, where)
                                           for fn, (word, where) in mod.WRONG.get(id, {}).items()]
            for fn, word, where in cases:
                name = kernel_check.function_name(fn)
                start = time.perf_counter()
                report = kernel_check.run_checks(ex, fn, sanitize=sanitize)
                hint = report.first_hint()
                expected_ok = word is None
                ran_live = not any(f.status == kernel_check.NOT_RUN for f in report.findings)
                as_expected = (report.ok is True) if expected_ok else (
                    report.ok is False and (word in hint or word in report.text()))
                if where == "gpu" and not ran_live:
                    as_expected = None  # a mistake only a run shows, and nothing ran here
                rows.append({"exercise": id, "variant": name,
                             "expected": "pass" if expected_ok else f"fail ({word}, {where})",
                             "verdict": {True: "pass", False: "fail", None: "unwritten"}[report.ok],
                             "as_expected": as_expected, "hint": hint,
                             "checks": [[f.check, f.status, f.detail] for f in report.findings],
                             "seconds": round(time.perf_counter() - start, 1)})
                mark = {True: "ok ", False: "BAD", None: "-- "}[as_expected]
                print(f"{mark} {id:22s} {name:48s} "
                      f"{rows[-1]['verdict']:5s} {rows[-1]['seconds']:6.1f} s  {hint[:70]}")
                if as_expected is False:
                    print(report.text())
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.exercises", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("verify", help="run every reference and known wrong variant")
    p.add_argument("ids", nargs="*")
    p.add_argument("--sanitize", action="store_true", default=None,
                   help="run compute-sanitizer memcheck + racecheck on every case (GPU)")
    p.add_argument("--record", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    interrupted = False
    previous = signal.signal(signal.SIGTERM, _stop)  # a time limit's kill, as Ctrl-C
    try:
        verify(args.ids, args.sanitize, rows)
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted after {len(rows)} case(s)")
    finally:
        signal.signal(signal.SIGTERM, previous)
    bad = [r for r in rows if r["as_expected"] is False]
    unchecked = sum(r["as_expected"] is None for r in rows)
    print(f"\n{len(rows) - len(bad) - unchecked} of {len(rows)} as expected"
          + (f"; {unchecked} caught only by a run, not checkable here" if unchecked else ""))
    if args.record:
        from course.runtime import results

        rec = results.record("kernel_exercises", {"cases": rows,
                                                  "as_expected": len(rows) - len(bad) - unchecked,
                                                  "total": len(rows), "interrupted": interrupted})
        print(f"recorded: {rec.citation()}")
    return 1 if bad or interrupted else 0


def _stop(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
