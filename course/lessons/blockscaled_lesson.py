"""What notebook 16 does with the block-scaled formats and kernels/blockscaled_gemm.py, so that
a notebook cell is a call.

  e2m1_table          the 16 codes of FP4 and what each stands for
  mx_rules            one block scaled by the OCP rule and by a scale rounded up
  nvfp4_two_levels    NVFP4's per-tensor scale, and what e4m3 scale factors cannot reach
  errors_table        the formats' errors on gaussian and outlier data (course.models.block_formats)
  mma_bytes_table     what one block-scaled MMA reads
  cute_sf_layout      CuTe DSL's own layout of scale factors, traced on this CPU
  blocked_agreement   the course's blocked-layout formula against CuTe's layout, cell by cell
  kinds_table         the kernel's formats (kernels.blockscaled_gemm.KINDS) and their MMAs
  check_executed      the kernel's own code on the CPU executor against float64
  check_live          on compute capability 10.x: the kernel against float64 (no cuBLAS call)
  formats_check       section 7's cell: check_live, else check_executed (a live cell)
"""

from __future__ import annotations

import numpy as np
import torch

from course.notebook import Markdown, rows_table
from course.models import block_formats as bf
from course.runtime.live import Outcome, live_or_executed


# --- sections 1-3: the formats ---------------------------------------------------------------


def e2m1_table() -> list[float]:
    """Every e2m1 code: its bits (sign, exponent, mantissa) and its value."""
    print("code  bits (s e e m)   value")
    for code, value in enumerate(bf.E2M1_VALUES):
        bits = f"{code:04b}"
        print(f"{code:4d}  {bits[0]} {bits[1]} {bits[2]} {bits[3]}          {value:+g}")
    return list(bf.E2M1_VALUES)


def mx_rules(top: float = 7.5 * 2**10, fmt: bf.BlockFormat = bf.MXFP8) -> dict:
    """One block of `fmt.vec` values, its largest `top`, scaled by each MX rule: the scale
    factor, and what the largest element becomes."""
    x = torch.ones(1, fmt.vec, dtype=torch.float64)
    x[0, 0] = top
    out = {}
    for rule in bf.MX_RULES:
        q = bf.quantize_mx(x, fmt, rule=rule)
        sf = float(q.scales.float()[0, 0])
        back = float(q.dequantize()[0, 0])
        out[rule] = {"scale factor": sf, "largest element": back}
        print(
            f"{rule:6s} SF = 2^{int(np.log2(sf)):<3d} largest {top:g} -> {back / sf:g} x SF "
            f"= {back:g} ({(back - top) / top:+.1%})"
        )
    return out


def nvfp4_two_levels(low: float = 1e-3, high: float = 1e4, blocks: int = 2048, seed: int = 0):
    """NVFP4 on data whose blocks' largest values spread from `low` to `high`: the per-tensor
    scale, the range of the e4m3 scale factors, and how many blocks keep no value at all
    (their scale factor rounds to zero)."""
    g = torch.Generator().manual_seed(seed)
    tops = torch.logspace(np.log10(low), np.log10(high), blocks, dtype=torch.float64)
    x = (torch.rand(blocks, 16, generator=g, dtype=torch.float64) * 2 - 1) * tops[:, None]
    x[:, 0] = tops
    glob = bf.nvfp4_global_scale(x)
    q = bf.quantize_nvfp4(x)
    sf = q.scales.float().reshape(-1)
    zero = int((sf == 0).sum())
    err = (q.dequantize() - x).norm(dim=1) / x.norm(dim=1)
    kept = err[sf > 0]
    print(f"per-tensor scale: amax / (448 x 6) = {float(high):g} / 2688 = {glob:.4g}")
    print(
        f"e4m3 scale factors used: {float(sf[sf > 0].min()):.3g} .. {float(sf.max()):g} "
        "(e4m3 reaches 2^-9 = 0.00195 .. 448)"
    )
    print(
        f"blocks stored as zeros (scale factor rounds to 0): {zero} of {blocks}, "
        f"those with a largest value below about {float(tops[sf == 0].max()):.3g}"
    )
    print(f"the other blocks: median error {float(kept.median()):.1%}")
    return {"global": glob, "zero_blocks": zero, "blocks": blocks}


def errors_table(**kw) -> Markdown:
    """course.models.block_formats.format_errors as a table, both MX scale rules."""
    rows = bf.format_errors(mx_rules=bf.MX_RULES, **kw)
    return rows_table(
        [
            {
                "data": r["data"],
                "format": r["format"],
                "bits per element": f"{r['bits per element']:g}",
                "error, all": f"{r['error (all)']:.1%}",
                "error, ordinary channels": f"{r['error (ordinary channels)']:.1%}",
            }
            for r in rows
        ]
    )


def mma_bytes_table(m: int = 128, n: int = 256) -> Markdown:
    """Bytes one m x n block-scaled MMA reads of A, B and their scale factors."""
    table = bf.mma_bytes(m, n)
    return rows_table(
        [{"format": name, **{k: str(v) for k, v in row.items()}} for name, row in table.items()]
    )


# --- section 4: where the scale factors live -------------------------------------------------


def cute_sf_layout(rows: int, k: int, vec: int):
    """CuTe DSL's own `tile_atom_to_shape_SF` for an operand (rows, k, 1), traced for sm_100a
    on this CPU: a static layout from (row, k element, batch) to the SF's byte."""
    from course.cute.trace import on_cpu

    def job():
        import cutlass.utils.blockscaled_layout as blockscaled

        return blockscaled.tile_atom_to_shape_SF((rows, k, 1), vec)

    return on_cpu(job, arch="sm_100a")


def blocked_agreement(rows: int = 200, k: int = 512, vec: int = 16) -> bool:
    """The course's formula for the blocked layout (`block_formats.blocked_offset`) against
    CuTe's layout, at every (row, k element) of a ragged operand."""
    layout = cute_sf_layout(rows, k, vec)
    kblocks = -(-k // vec)
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    theirs = np.vectorize(lambda a, b: layout((a, b, 0)))(r, kk)
    ours = bf.blocked_offset(r, kk // vec, rows, kblocks)
    agree = bool(np.array_equal(ours, theirs))
    print(f"CuTe's layout of SFs for a {rows} x {k} operand (one SF per {vec}): {layout}")
    print(
        f"the formula and CuTe agree on {int((ours == theirs).sum())} of {ours.size} "
        f"(row, k) cells: {agree}"
    )
    return agree


def tmem_placement(rows=(0, 1, 31, 32, 33, 64, 127), column: int = 256) -> dict:
    """Where one 128 x 4 atom of SFA lands in TMEM after one tcgen05.cp .32x128b.warpx4
    (course.execute.block_scale, the course's reading of the PTX ISA): for each row, the lane
    and column of each of its four copies and the byte that holds each of its 4 K-blocks."""
    from course.execute import block_scale

    found = {}
    for what in ("row", "kblock"):
        r, kb = np.meshgrid(np.arange(128), np.arange(4), indexing="ij")
        atom = np.zeros(512, dtype=np.uint8)
        atom[bf.blocked_offset(r, kb, 128, 4)] = r if what == "row" else kb
        tmem = np.full((128, column + 4, 4), 255, dtype=np.uint8)
        block_scale.tcgen05_cp_32x128b_warpx4(tmem, column, atom.reshape(32, 16))
        found[what] = tmem
    print("SFA row -> its SFs in TMEM (one copy in each 32-lane partition):")
    places = {}
    for row in rows:
        hits = np.argwhere(found["row"][:, column:, :] == row)
        lanes = sorted({int(h[0]) for h in hits})
        cols = sorted({int(h[1]) + column for h in hits})
        kblocks = [int(found["kblock"][lanes[0], cols[0], b]) for b in range(4)]
        places[row] = (lanes, cols)
        print(
            f"  row {row:3d}: lanes {', '.join(map(str, lanes))}, column {cols[0]}, "
            f"bytes 0-3 = K-blocks {kblocks}"
        )
    return places


# --- sections 6-7: the kernel ---------------------------------------------------------------

KERNEL_PTX = (
    r"tcgen05\.alloc",
    r"tcgen05\.cp",
    r"tcgen05\.mma",
    r"tcgen05\.commit",
    r"tcgen05\.ld",
    r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global",
)


def kinds_table() -> Markdown:
    """The kernel's formats (kernels.blockscaled_gemm.KINDS) and what one CTA holds for each,
    from its footprint (pure Python)."""
    from kernels import blockscaled_gemm

    rows = []
    for name, kind in blockscaled_gemm.KINDS.items():
        fp = blockscaled_gemm.footprint(blockscaled_gemm.Config(name))
        rows.append(
            {
                "kind": name,
                "A and B": "e2m1 (fp4)" if kind.ab_bits == 4 else str(kind.ab)[6:],
                "SF": str(kind.sf).replace("torch.", ""),
                "values per SF": kind.vec,
                "MMA": fp["mma"],
                "bytes per stage (A, B, SFs)": fp["stage_bytes"],
                "of which SFs": fp["sf_bytes_per_stage"],
                "TMEM columns": fp["tmem_columns"],
            }
        )
    return rows_table(rows)


def print_ptx_lines(art, patterns=KERNEL_PTX, most: int = 6) -> dict[str, int]:
    """How often each tcgen05 / TMA instruction appears in the PTX, and its first lines."""
    import re

    print(f"compiled for {art.arch} in {art.compile_seconds:.2f} s (on this machine; no GPU used)")
    counts = {}
    for pattern in patterns:
        lines = art.ptx_lines(pattern)
        counts[pattern] = len(lines)
        print(f"\n{pattern.replace(chr(92), '')}: {len(lines)} in the PTX")
        for line in lines[:most]:
            print("   ", re.sub(r"\s+", " ", line)[:140])
    return counts


EXECUTOR_RUNS = (
    ("mxfp8", 256, 256, 384, 128),
    ("mxfp8", 200, 136, 256, 128),
    ("nvfp4", 200, 136, 512, 128),
    ("mxfp4", 200, 136, 512, 128),
)


def check_executed(runs=EXECUTOR_RUNS) -> list:
    """kernels/blockscaled_gemm.py's own code on the course's CPU executor, each run against
    the float64 product of the dequantized operands: one line each. A kind the executor cannot
    run yet says so (and counts as not checked)."""
    from course.execute import blackwell_runs
    from course.execute.hazards import Unmodelled
    from course.lessons.gemm_lesson import executor_line

    verdicts = []
    for kind, m, n, k, tile_n in runs:
        try:
            run = blackwell_runs.run_blockscaled(kind, m, n, k, tile_n=tile_n)
        except Unmodelled as why:
            print(f"blockscaled_gemm ({kind}, m={m}, n={n}, k={k}): NOT RUN on the executor: {why}")
            verdicts.append(None)
            continue
        verdicts.append(executor_line(run))
    return verdicts


LIVE_SHAPES = ((200, 136, 256), (1024, 1024, 2048), (4096, 4096, 4096))


def check_live(shapes=LIVE_SHAPES, kinds=("mxfp8", "nvfp4", "mxfp4")) -> list[bool]:
    """On compute capability 10.x: the kernel on random operands (exact small values and
    power-of-two SFs, course.execute.blackwell_runs), C (bf16, poisoned with NaN first)
    against the float64 product of the dequantized operands."""
    from course.execute import blackwell_runs
    from kernels import blockscaled_gemm
    from kernels.selftest import TOLERANCE, relative_error

    tol = TOLERANCE[torch.bfloat16]
    verdicts = []
    for kind in kinds:
        for m, n, k in shapes:
            x = blackwell_runs.blockscaled_operands(kind, m, n, k)
            exact = blackwell_runs.dequantized_product(x, kind)
            dev = {name: t.cuda() for name, t in x.items()}
            out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
            cfg = blockscaled_gemm.Config(kind)
            blockscaled_gemm.run(dev["a"], dev["b"], dev["a_sf"], dev["b_sf"], out, cfg)
            err = relative_error(out.cpu(), exact)
            ok = err <= tol
            print(
                f"{'PASS' if ok else 'FAIL'} {kind} {m}x{n}x{k}: rel. error {err:.2e} against "
                f"the float64 product of the dequantized operands (tolerance {tol:.0e})"
            )
            verdicts.append(ok)
    print(f"{sum(verdicts)}/{len(verdicts)} passed")
    return verdicts


def formats_check() -> Outcome:
    """Section 7's cell. On an sm_100a GPU: every format against the float64 product of the
    dequantized operands (`check_live`). Elsewhere: the kernel's own code on the CPU
    executor for mxfp8, nvfp4 and mxfp4 (`check_executed`), then the recorded GPU output
    (label 16.blockscaled_check)."""
    return live_or_executed(
        "sm_100a",
        check_live,
        check_executed,
        "kernels/blockscaled_gemm.py (mxfp8, nvfp4, mxfp4)",
        label="16.blockscaled_check",
    )
