"""python -m course doctor | run | slides | teachers | progress

doctor   this machine, its tier, and what every notebook will do here
run      execute the notebooks headless and report what each one did
         (build/run-report.md and .json: seconds and banners per notebook)
slides   write each notebook as offline slides: build/slides/NN_topic.slides.html
teachers the README's table for teachers (lecture, without a GPU, run time)
ladder   ARCHITECTURE.md's table of kernel steps, from kernels/ladder.py (--write)
progress a class's progress from the learners' progress files (table, wrong answers,
         picture): python -m course progress /home [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def doctor() -> int:
    from course.catalogue import course_map
    from course.runtime.hardware import NEEDS, machine

    m = machine()
    print("Machine")
    for key, value in m.as_dict().items():
        print(f"  {key:20s} {value if value is not None else '-'}")
    print(f"\nTier: {m.tier}  ({m.reason})")
    print("Live here: " + (", ".join(n for n in NEEDS if m.can(n)) or "nothing"))
    rows = course_map(m)
    print("\nNotebooks")
    widths = {
        k: max(len(k), *(len(r[k]) for r in rows)) for k in ("#", "notebook", "live on", "here")
    }
    head = "  ".join(k.ljust(widths[k]) for k in widths)
    print(head + "  idea")
    print("-" * (len(head) + 6))
    for r in rows:
        print("  ".join(r[k].ljust(widths[k]) for k in widths) + "  " + r["idea"])
    print(
        "\nlive = runs on this machine now; executed = runs the kernel's own code on the "
        "course's CPU executor\n(small sizes, values and hazards, no speed); compile-only = "
        "compiles for the target GPU and shows PTX/SASS;\nsimulated = runs the course's "
        "simulator/emulator; recorded = shows numbers measured on a named GPU."
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="what this machine is and what runs live here")
    p = sub.add_parser("run", help="execute every notebook headless and report")
    p.add_argument("numbers", nargs="*", type=int, help="only these notebooks")
    p.add_argument("--inplace", action="store_true", help="save the executed notebooks")
    p.add_argument(
        "--record",
        action="store_true",
        help="on a GPU: record the run's times in results/notebook_runs.json and "
        "what its live cells printed in results/live_outputs.json",
    )
    p = sub.add_parser("slides", help="export notebooks as offline slides (build/slides/)")
    p.add_argument("numbers", nargs="*", type=int, help="only these notebooks")
    p.add_argument("--out", type=Path, default=None, help="output folder (default build/slides)")
    p = sub.add_parser("teachers", help="the README table for teachers, from the last run report")
    p.add_argument("--write", action="store_true", help="update README.md")
    p = sub.add_parser("ladder", help="ARCHITECTURE.md's table of kernel steps (kernels/ladder.py)")
    p.add_argument("--write", action="store_true", help="update ARCHITECTURE.md")
    p = sub.add_parser(
        "progress",
        help="a class's progress: who solved what, common wrong "
        "answers, a picture (build/classroom/)",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a progress.jsonl, or a folder searched for them (e.g. /home)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="where progress.md and progress.png go (default build/classroom)",
    )
    p.add_argument(
        "--learner-from",
        choices=("owner", "folder"),
        default="owner",
        help="whose each file is: its owner's account (default; a hub's learners "
        "each have one) or the folder under PATH it sits in (a hub whose "
        "servers all run as one account)",
    )
    args = parser.parse_args(argv)
    if args.cmd == "doctor":
        return doctor()
    if args.cmd == "slides":
        from course.tools import slides

        written = slides.export_all(args.numbers or None, args.out or slides.OUT_DIR)
        for path in written:
            print(f"wrote {path}")
        if not written:
            print("no written notebook matched", file=sys.stderr)
        return 0 if written else 1
    if args.cmd == "teachers":
        from course.tools import teachers_table

        return teachers_table.main(write=args.write)
    if args.cmd == "ladder":
        from course.tools import ladder_table

        return ladder_table.main(write=args.write)
    if args.cmd == "progress":
        from course.tools import class_progress_report as report

        return report.progress(args.paths, args.out or report.DEFAULT_OUT, args.learner_from)
    from course.tools.notebook_runner import record_live_outputs, record_runs, run_all

    if args.record:
        record_live_outputs()
    runs = run_all(args.numbers or None, args.inplace)
    if args.record:
        record_runs(runs)
    return 1 if any(r.error for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
