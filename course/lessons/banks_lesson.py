"""Notebook 05's bank model: the swizzle checked against CuTe DSL, and the model's
predictions for the transposes and the TMA modes (measured in course.lessons.bank_measurement).

  compare_with_cute  a swizzled layout's offsets from CuTe DSL against the course's model
  print_cases        the model's prediction for named cases (tile, wavefronts, conflicts)
  print_tma_cases    the model's prediction for every TMA-mode case
  print_tma_modes    each TMA swizzle mode: its Swizzle, row bytes, CuTe DSL's smem atoms
  phase_zero_maps    bank maps of two tiles with the first phase of a row read outlined
"""

from __future__ import annotations

import numpy as np

from course.models import smem_access as sa
from course.models.swizzle import TMA_SWIZZLES, Layout, Swizzle, SwizzledLayout, tma_row_bytes


def compare_with_cute(sw: Swizzle, rows: int = 8, cols: int = 8) -> bool:
    """CuTe DSL's composition of `sw` with the column-major (rows, cols) layout: its printout,
    its offsets, and whether course.models.swizzle gives the same offsets."""
    import cutlass.cute as cute

    from course.cute.trace import on_cpu

    def cute_offsets():
        composed = cute.make_composed_layout(
            cute.make_swizzle(sw.bits, sw.base, sw.shift),
            0,
            cute.make_layout((rows, cols), stride=(1, rows)),
        )
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
        print(
            f"{str(c.tile):36s} {t.requests} requests: {t.wavefronts:5d} wavefronts, "
            f"{t.conflicts:4d} conflicts, worst {t.degree}-way, {c.tile.bytes} bytes"
        )
    return totals


def print_tma_cases() -> dict:
    """The model's wavefronts (against the ideal) and conflicts for every TMA-mode case."""
    totals = {}
    for c in sa.cases():
        if c.group == "tma":
            t = totals[c.name] = c.predict()
            print(
                f"{c.title:52s} {t.wavefronts:3d} wavefronts (ideal {t.ideal}), "
                f"{t.conflicts:2d} conflicts"
            )
    return totals


def print_tma_modes() -> dict[str, list[str]]:
    """Each TMA swizzle mode: the course's Swizzle on bytes, its row bytes, and CuTe DSL's
    WGMMA shared-memory layout atom of that mode for bf16 and fp32."""
    import cutlass
    from cutlass.cute.nvgpu import warpgroup

    from course.cute.trace import on_cpu

    kinds = {"none": "K_INTER", "32B": "K_SW32", "64B": "K_SW64", "128B": "K_SW128"}

    def atoms():
        return {
            mode: [
                str(warpgroup.make_smem_layout_atom(getattr(warpgroup.SmemLayoutAtomKind, kind), t))
                for t in (cutlass.BFloat16, cutlass.Float32)
            ]
            for mode, kind in kinds.items()
        }

    found = on_cpu(atoms)
    for mode, (bf16, fp32) in found.items():
        print(
            f"{mode:5s} {str(TMA_SWIZZLES[mode]):16s} rows of {tma_row_bytes(mode):3d} B | "
            f"CuTe DSL bf16 atom {bf16:24s} fp32 atom {fp32}"
        )
    return found


def phase_zero_maps(names=("tma_128B_plain", "tma_128B"), rows: int = 8, elems: int = 8):
    """Side by side, the bank maps of the named cases with the first phase of a row-wise
    read outlined: lane l (0 to rows-1) reads the first `elems` elements of row l (16 bytes
    of bf16)."""
    from course.viz.bank_pictures import bank_maps

    cases = [sa.case(name) for name in names]
    lanes = {(lane, k): lane for lane in range(rows) for k in range(elems)}
    return bank_maps(
        [c.tile for c in cases],
        [f"{c.title}\noutlined: the {rows} rows of phase 0" for c in cases],
        lanes=lanes,
        source="course.models.bank_model model; colour = bank (32 colours)",
    )


def tma_mode_maps(rows: int = 8):
    """One picture of each TMA swizzle mode on bf16 rows of the length it is made for (16,
    32, 64, 128 bytes: the 32B, 64B and 128B modes are also the longest inner box rows TMA
    accepts with them, notebook 08), first `rows` rows, phase 0 of an ldmatrix-style read
    (the first 16 bytes of each row) outlined: 8 rows, 8 different bank groups."""
    from course.viz.bank_pictures import bank_maps

    tiles, titles = [], []
    for mode, swizzle in TMA_SWIZZLES.items():
        row_bytes = tma_row_bytes(mode)
        tiles.append(sa.SmemTile("bf16", Layout.row_major(rows, row_bytes // 2), swizzle, "bytes"))
        limit = (
            "any row length is legal;\nonly 16-byte rows avoid conflicts"
            if mode == "none"
            else f"TMA accepts rows of at most {row_bytes} bytes"
        )
        titles.append(f"{mode}: {swizzle} on bytes, {row_bytes}-byte rows\n{limit}")
    lanes = {(r, k): r for r in range(rows) for k in range(8)}
    fig = bank_maps(
        tiles,
        titles,
        lanes=lanes,
        source="course.models.bank_model model; colour = bank (32 colours); outlined: "
        "the first 16 bytes of each of 8 rows (one ldmatrix phase)",
    )
    fig.suptitle(
        "The four TMA swizzle modes, each on rows of its own length: phase 0 hits 8 "
        "different groups of 4 banks in every one",
        fontsize=10,
        y=1.02,
    )
    return fig
