"""How to read a timing row (notebook 03, where the first one appears): one recorded row
taken apart number by number, and a recorded example of every verdict a row can end with.

Every row comes from results/gemm.json through the same printer the live cells use
(course.lessons.gemm_lesson.print_rows), so the guide cannot drift from what the rows say.
"""

from __future__ import annotations

from course.bench.report import DISAGREE, STANDINGS, pct_of_cublas, row_standing, side
from course.lessons import gemm_lesson, ladder
from course.models.gemm_model import Gemm
from course.runtime import results


def _flop(problem: str) -> int:
    m, n, k = (int(x) for x in problem.split()[0].split("x"))
    return Gemm(m, n, k).flops


def explain(row: dict, rec: results.Record | None = None) -> None:
    """Print `row` as every live cell does, then what each of its numbers is."""
    if rec is not None:
        print(f"A row recorded for this kernel ({rec.citation()}):\n")
    gemm_lesson.print_rows([row])
    pct, rounds, control = pct_of_cublas(row), row.get("rounds_pct"), row.get("control_pct")
    k, c = row["kernel_tflops"], row["cublas_tflops"]
    parts = [
        (
            f"{k:.1f} TFLOP/s",
            f"the kernel: {_flop(row['problem']) / 1e9:.1f} GFLOP (2*M*N*K) "
            f"over its median time, {row['kernel_ms']:.3f} ms",
        ),
        (
            f"cuBLAS {c:.1f}",
            f"torch's matmul (cuBLAS) on the same inputs, timed in the same "
            f"rounds: {row['cublas_ms']:.3f} ms",
        ),
        (f"{pct:.1f}% of cuBLAS", f"{k:.1f} / {c:.1f}: the ratio of the two numbers before it"),
    ]
    if rounds and control:
        parts += [
            (
                "per round",
                f"kernel and cuBLAS ran back to back in each round; the ratio of "
                f"each round: median {rounds[0]:.1f}%, lowest {rounds[1]:.1f}%, "
                f"highest {rounds[2]:.1f}%",
            ),
            (
                "control",
                f"a second cuBLAS against the first, in the same rounds: "
                f"{control[0]:.1f}% ({control[1]:.1f}-{control[2]:.1f}%) is what "
                f"'equal' reads as in this run",
            ),
            (row_standing(row), _why(pct, rounds, control)),
        ]
    clock = row.get("sm_clock") or {}
    if clock:
        parts += [
            (
                "SM clock",
                f"what NVML read while the rounds ran: median {clock['median_mhz']:.0f} "
                f"MHz, lowest-highest {clock['min_mhz']:.0f}-{clock['max_mhz']:.0f}",
            ),
            (
                "power-capped",
                f"the share of those readings in which the driver reported a "
                f"power limit holding the clock below its top: "
                f"{100 * clock['power_capped']:.0f}%",
            ),
        ]
    width = max(len(name) for name, _ in parts)
    print()
    for name, what in parts:
        print(f"  {name:{width}s}  {what}")


def _why(pct: float, rounds, control) -> str:
    lo, hi = control[1], control[2]
    both = f"{pct:.1f}% and the median round {rounds[0]:.1f}%"
    sides = {side(pct, control), side(rounds[0], control)}
    if sides == {"below"}:
        return f"{both} both lie below {lo:.1f}%, the control's lowest round"
    if sides == {"above"}:
        return f"{both} both lie above {hi:.1f}%, the control's highest round"
    if sides == {"level"}:
        return f"{both} both lie inside the control's {lo:.1f}-{hi:.1f}%"
    return (
        f"{both} fall on different sides of the control's {lo:.1f}-{hi:.1f}%: some "
        f"rounds ran differently from the rest, so this run cannot say"
    )


def verdict_examples(dtype: str = "bfloat16") -> dict[str, tuple]:
    """For each verdict a row can end with, the first row (rung by rung, size by size) of
    the ladder's newest records that ends with it: verdict -> (rung label, row)."""
    found = {}
    for rung in ladder.rungs():
        for row in rung.record.data["results"] if rung.record else []:
            if row["problem"].endswith(f" {dtype}"):
                found.setdefault(row_standing(row), (rung.label, row))
    order = [*STANDINGS.values(), DISAGREE]
    return {v: found[v] for v in order if v in found}


def print_verdict_examples() -> dict[str, tuple]:
    """One recorded row per verdict (from the ladder's kernels, notebooks 03-11)."""
    examples = verdict_examples()
    for verdict, (label, row) in examples.items():
        print(f"{verdict} -- notebook {label}:")
        gemm_lesson.print_rows([row])
        print(f"    ({_why(pct_of_cublas(row), row['rounds_pct'], row['control_pct'])})\n")
    return examples


def explain_recorded(kernel: str = "naive", problem: str = "2048x2048x2048 bfloat16") -> dict:
    """`explain` the newest recorded row of `kernel` (default config) for `problem`."""
    rows, rec = gemm_lesson.recorded_rows(kernel)
    row = next(r for r in rows if r["problem"] == problem)
    explain(row, rec)
    return row
