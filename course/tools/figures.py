"""Regenerate every static figure in figures/ from recorded results.

    python -m course.tools.figures           write them
    python -m course.tools.figures --check   fail if a committed figure differs from a fresh one

Figures are drawn by code, never by hand, and deterministically (fixed size and dpi,
no timestamps in the PNG), so a stale figure shows up as a byte difference.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

import matplotlib

matplotlib.use("Agg")

from course import ROOT  # noqa: E402
from course.runtime import results  # noqa: E402
from course.models.datasheet import datasheet  # noqa: E402
from course.models.gemm_model import Gemm  # noqa: E402
from course.viz.roofline import Point, roofline  # noqa: E402
from course.widgets.static_widget import figure_png  # noqa: E402

FIGURES_DIR = ROOT / "figures"


def roofline_h100():
    """The H100 roofline (measured, and the datasheet's) with the GEMM of notebook 00 on it."""
    rec = results.latest("ceilings", gpu="H100")
    d = rec.data
    g, big = Gemm(4096, 4096, 4096), Gemm(8192, 8192, 8192)
    points = [
        Point("naive GEMM 4096^3 (1x1 tiles)", g.intensity(1, 1)),
        Point("128x128 tiles, no L2 reuse", g.intensity(128, 128)),
        Point("4096^3, each operand read once", g.intensity()),
        Point("cuBLAS 8192^3 (measured)", big.intensity(), d["matmul"]["tflops"]),
    ]
    # the ladder's kernels at 4096^3, as recorded (placed at the problem's ideal intensity)
    from course.lessons.ladder import rungs

    for rung in rungs():
        row = rung.at(4096)
        if (
            row is not None
            and rung.kernel in ("naive", "sm80", "wgmma")
            or (row is not None and rung.preset == "tma_store")
        ):
            points.append(
                Point(
                    f"{rung.label.split(' ', 1)[1]} 4096^3 (measured)",
                    g.intensity(),
                    row["kernel_tflops"],
                )
            )
    return roofline(
        d["matmul"]["tflops"],
        d["copy"]["gbps"],
        points,
        title=f"Roofline of the {rec.gpu}",
        source="ceilings " + rec.citation(),
        datasheet=datasheet(rec.gpu),
    )


FIGURES: dict[str, Callable] = {"roofline_h100.png": roofline_h100}


def render(name: str) -> bytes:
    return figure_png(FIGURES[name](), dpi=100)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.tools.figures", description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = []
    for name in FIGURES:
        path = FIGURES_DIR / name
        fresh = render(name)
        if args.check:
            if not path.exists() or path.read_bytes() != fresh:
                stale.append(name)
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(fresh)
            print(f"wrote {path}")
    if stale:
        print(
            "stale figures (run `python -m course.tools.figures`): " + ", ".join(stale),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
