"""Notebook 04's shared-memory banks: the swizzle checked against CuTe DSL, the model's
predictions for the transposes and the TMA modes, the load widths the measuring kernel
compiles to, and the prediction set beside Nsight Compute's counters.

  compare_with_cute  a swizzled layout's offsets from CuTe DSL against the course's model
  print_cases        the model's prediction for named cases (tile, wavefronts, conflicts)
  print_tma_modes    each TMA swizzle mode: its Swizzle, row bytes, CuTe DSL's smem atoms
  load_widths        the measuring kernel compiled for each load width (4, 8, 16 bytes)
  print_load_widths  the shared-memory loads each width compiles to, in PTX and SASS
  print_prediction   the prediction table of every measured case
  measure_banks      the live cell: counted by Nsight Compute, recorded, or predicted only
  bank_figures       predicted against measured wavefronts, and time against wavefronts
  phase_zero_maps    bank maps of two tiles with the first phase of a row read outlined
"""
from __future__ import annotations

import re

import numpy as np

from course.bench import bank_conflicts as bench_banks
from course.bench import ncu
from course.models import smem_access as sa
from course.models.swizzle import TMA_SWIZZLES, Layout, Swizzle, SwizzledLayout, tma_row_bytes
from course.runtime.live import Outcome, live_or, recorded_or, simulated
from course.viz.bank_pictures import predicted_vs_measured, time_vs_wavefronts

RECORD_COMMAND = "python -m course.bench banks --record"


def compare_with_cute(sw: Swizzle, rows: int = 8, cols: int = 8) -> bool:
    """CuTe DSL's composition of `sw` with the column-major (rows, cols) layout: its printout,
    its offsets, and whether course.models.swizzle gives the same offsets."""
    import cutlass.cute as cute

    from course.cute.algebra import on_cpu

    def cute_offsets():
        composed = cute.make_composed_layout(cute.make_swizzle(sw.bits, sw.base, sw.shift), 0,
                                             cute.make_layout((rows, cols), stride=(1, rows)))
        return str(composed), [[int(composed((r, c))) for c in range(cols)] for r in range(rows)]

    printed, offsets = on_cpu(cute_offsets)
    ours = SwizzledLayout(Layout.col_major(rows, cols), sw)
    same = np.array_equal(np.array(offsets), ours.offsets())
    print("CuTe DSL:", printed)
    print(np.array(offsets))
    print("course.models.swizzle agrees:", same)
    return same


def print_cases(names) -> dict:
    """One line per named case: its tile, requests, wavefronts, conflicts, worst degree and
    the bytes the tile spans."""
    totals = {}
    for name in names:
        c = sa.case(name)
        t = totals[name] = c.predict()
        print(f"{str(c.tile):36s} {t.requests} requests: {t.wavefronts:5d} wavefronts, "
              f"{t.conflicts:4d} conflicts, worst {t.degree}-way, {c.tile.bytes} bytes")
    return totals


def print_tma_cases() -> dict:
    """The model's wavefronts (against the ideal) and conflicts for every TMA-mode case."""
    totals = {}
    for c in sa.cases():
        if c.group == "tma":
            t = totals[c.name] = c.predict()
            print(f"{c.title:52s} {t.wavefronts:3d} wavefronts (ideal {t.ideal}), "
                  f"{t.conflicts:2d} conflicts")
    return totals


def print_tma_modes() -> dict[str, list[str]]:
    """Each TMA swizzle mode: the course's Swizzle on bytes, its row bytes, and CuTe DSL's
    WGMMA shared-memory layout atom of that mode for bf16 and fp32."""
    import cutlass
    from cutlass.cute.nvgpu import warpgroup

    from course.cute.algebra import on_cpu

    kinds = {"none": "K_INTER", "32B": "K_SW32", "64B": "K_SW64", "128B": "K_SW128"}

    def atoms():
        return {mode: [str(warpgroup.make_smem_layout_atom(
                    getattr(warpgroup.SmemLayoutAtomKind, kind), t))
                    for t in (cutlass.BFloat16, cutlass.Float32)] for mode, kind in kinds.items()}

    found = on_cpu(atoms)
    for mode, (bf16, fp32) in found.items():
        print(f"{mode:5s} {str(TMA_SWIZZLES[mode]):16s} rows of {tma_row_bytes(mode):3d} B | "
              f"CuTe DSL bf16 atom {bf16:24s} fp32 atom {fp32}")
    return found


def load_widths(arch: str) -> dict:
    """vector width (4-byte words) -> the measuring kernel compiled for `arch`."""
    from kernels import smem_banks

    return {vec: smem_banks.artifacts(arch, n_req=2, vec=vec) for vec in smem_banks.VECTORS}


def print_load_widths(arts: dict) -> dict[int, tuple[list, list]]:
    """Per width, the distinct shared-memory load instructions in PTX and in SASS."""
    found = {}
    for vec, art in arts.items():
        ptx = sorted({line.split()[0] for line in art.ptx_lines(r"ld\.shared")})
        sass = sorted({re.search(r"LDS(\.\d+)?", line).group(0) for line in art.sass_lines(r"LDS")})
        found[vec] = (ptx, sass)
        print(f"{4 * vec:2d} bytes per lane: PTX {ptx}, SASS {sass}")
    return found


def print_prediction(predicted: dict) -> None:
    """The prediction table: bytes per lane, requests, wavefronts, ideal and conflicts."""
    print(f"{'case':26s} {'bytes/lane':>10s} {'requests':>8s} {'wavefronts':>10s} {'ideal':>6s} "
          f"{'conflicts':>9s}")
    for name, p in predicted.items():
        print(f"{name:26s} {p['width_bytes']:10d} {p['requests']:8d} {p['wavefronts']:10d} "
              f"{p['ideal']:6d} {p['conflicts']:9d}")


def measure_now() -> dict:
    """Replay every case on the GPU, timed, and counted by Nsight Compute when installed."""
    data = bench_banks.run(with_ncu=ncu.find_ncu() is not None)
    if data["ncu"] is None:
        data["ncu_error"] = "Nsight Compute (ncu) is not installed on this machine"
    return data


def prediction_only(predicted: dict) -> dict:
    """The record's shape with the model's prediction and nothing measured."""
    return {"cases": [{"case": n, "predicted": {k: p[k] for k in ("requests", "wavefronts",
                                                                 "ideal", "conflicts")},
                       "measured": None, "timing": None, "agree": None,
                       "width_bytes": p["width_bytes"]} for n, p in predicted.items()],
            "ncu_error": None}


def measure_banks(predicted: dict) -> Outcome:
    """Measured now, recorded, or the prediction alone (labelled); prints the table and, when
    there are counters, on how many cases Nsight Compute agrees with the model."""
    out = live_or("gpu", measure_now, recorded_or(
        "bank_conflicts", simulated(lambda: prediction_only(predicted), "the model's prediction"),
        RECORD_COMMAND))
    print(bench_banks.table(out.value))
    verdicts = [r["agree"] for r in out.value["cases"]]
    if any(v is not None for v in verdicts):
        print(f"\nNsight Compute agrees with the model on {verdicts.count(True)} of "
              f"{len(verdicts)} cases"
              + (f"; disagrees on {verdicts.count(False)}" if False in verdicts else ""))
    return out


def bank_figures(meas: Outcome) -> list:
    """Wavefronts predicted against measured, and (when timed) time per request against the
    predicted wavefronts; captioned with where the numbers came from."""
    src = meas.caption("bank_conflicts", otherwise="course.models.bank_model model only: no GPU "
                                                   "measurement recorded yet")
    figs = [predicted_vs_measured(meas.value["cases"],
                                  "Wavefronts per pass: the model and Nsight Compute", source=src)]
    if any(r.get("timing") for r in meas.value["cases"]):
        figs.append(time_vs_wavefronts(meas.value["cases"],
                                       "Measured time per request follows the predicted wavefronts",
                                       source=src))
    return figs


def phase_zero_maps(names=("tma_128B_plain", "tma_128B"), rows: int = 8, elems: int = 8):
    """Side by side, the bank maps of the named cases with the first phase of a row-wise
    read outlined: lane l (0 to rows-1) reads the first `elems` elements of row l (16 bytes
    of bf16)."""
    from course.viz.bank_pictures import bank_maps

    cases = [sa.case(name) for name in names]
    lanes = {(lane, k): lane for lane in range(rows) for k in range(elems)}
    return bank_maps([c.tile for c in cases],
                     [f"{c.title}\noutlined: the {rows} rows of phase 0" for c in cases],
                     lanes=lanes, source="course.models.bank_model model; colour = bank "
                                         "(32 colours)")
