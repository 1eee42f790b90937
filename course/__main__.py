"""python -m course doctor | run

    doctor   this machine, its tier, and what every notebook will do here
    run      execute the notebooks headless and report what each one did
"""
from __future__ import annotations

import argparse
import sys


def doctor() -> int:
    from .catalogue import course_map
    from .hardware import NEEDS, machine

    m = machine()
    print("Machine")
    for key, value in m.as_dict().items():
        print(f"  {key:20s} {value if value is not None else '-'}")
    print(f"\nTier: {m.tier}  ({m.reason})")
    print("Live here: " + (", ".join(n for n in NEEDS if m.can(n)) or "nothing"))
    rows = course_map(m)
    print("\nNotebooks")
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in ("#", "notebook", "live on", "here")}
    head = "  ".join(k.ljust(widths[k]) for k in widths)
    print(head + "  idea")
    print("-" * (len(head) + 6))
    for r in rows:
        print("  ".join(r[k].ljust(widths[k]) for k in widths) + "  " + r["idea"])
    print("\nlive = runs on this machine now; compile-only = compiles for the target GPU and "
          "shows PTX/SASS;\nsimulated = runs the course's simulator/emulator; recorded = shows "
          "numbers measured on a named GPU.")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="what this machine is and what runs live here")
    p = sub.add_parser("run", help="execute every notebook headless and report")
    p.add_argument("numbers", nargs="*", type=int, help="only these notebooks")
    p.add_argument("--inplace", action="store_true", help="save the executed notebooks")
    args = parser.parse_args(argv)
    if args.cmd == "doctor":
        return doctor()
    from .runner import run_all

    runs = run_all(args.numbers or None, args.inplace)
    return 1 if any(r.error for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
