"""Notebook 08's live checks of the TMA kernels over shapes, the sibling of
gemm_lesson.check_sweep for copies: bit-exact loads and stores for several shapes (ragged
ones included), dtypes and swizzle modes, and what the compiler made of each kernel.

  check_loads         TMA loads: exact copies, zeros out of bounds, the swizzle's bytes (live)
  check_stores        TMA stores: exact copies, nothing written outside the tensor (live)
  loads_executed      the load kernel's own code on the CPU executor, small shapes (fallback)
  stores_executed     the store kernel's own code on the CPU executor, small shapes (fallback)
  load_instructions   the PTX and SASS of the load kernel (fallback)
  store_instructions  the PTX and SASS of the store kernel (fallback)
  loads_checked       section 6's cell: the loads live, else executed, then compiled (a live cell)
  stores_checked      section 7's cell: the stores live, else executed, then compiled (a live cell)

The checks take the kernel module as an argument (default: kernels.tma), so the same
checks can judge a stand-in on a CPU.
"""

from __future__ import annotations

import torch

from course.models import tensormap
from course.runtime.live import Outcome, live_or_executed


def _tma():
    from kernels import tma

    return tma


def cases(tma=None) -> list[tuple[str, torch.dtype, object]]:
    """(name, dtype, Config) of every box configuration the checks use."""
    tma = tma or _tma()
    return [
        ("bf16, 128B swizzle", torch.bfloat16, tma.Config()),
        ("fp32, 128B swizzle", torch.float32, tma.Config(box_cols=32)),
        ("bf16, 64B swizzle", torch.bfloat16, tma.Config(box_cols=32, swizzle=64)),
        ("bf16, no swizzle", torch.bfloat16, tma.Config(box_cols=24, swizzle=0, box_rows=16)),
    ]


SHAPES = [(8192, 8192), (200, 136), (1, 8), (300, 520)]
EXECUTOR_SHAPES = [(100, 72), (1, 8)]  # numpy plays every thread: small ones, both ragged


def check_loads(tma=None, shapes=SHAPES, device: str = "cuda") -> dict[str, bool]:
    """Print and return the verdicts: every case and shape copied exactly; the boxes of a
    100 x 72 view inside a buffer of 7s exact inside and zero outside; the raw
    shared-memory bytes of each box equal to the 128B swizzle model's permutation."""
    tma = tma or _tma()
    verdicts = {}
    for name, dtype, cfg in cases(tma):
        for shape in shapes:
            x = torch.randn(shape, device=device).to(dtype)
            ok = torch.equal(tma.load(x, config=cfg), x)
            verdicts[f"{name} {shape}"] = ok
            print(f"{name:20s} {str(shape):14s} {'exact' if ok else 'WRONG'}")
    buf = torch.full((103, 96), 7.0, device=device).to(torch.bfloat16)
    x = buf[:100, :72]
    x.copy_(torch.randn(100, 72, device=device))
    logical = tma.boxes(x)
    down, across, rows, cols = logical.shape
    mosaic = logical.permute(0, 2, 1, 3).reshape(down * rows, across * cols)
    verdicts["view exact"] = torch.equal(mosaic[:100, :72], x)
    verdicts["zeros outside"] = bool((mosaic[100:] == 0).all() and (mosaic[:, 72:] == 0).all())
    print(
        f"100x72 view with 7s around it: boxes exact inside {verdicts['view exact']}, "
        f"zeros outside {verdicts['zeros outside']}"
    )
    physical = tma.boxes(x, physical=True)
    verdicts["swizzled bytes"] = all(
        torch.equal(
            physical[i, j].view(torch.int16).cpu(),
            torch.as_tensor(tensormap.swizzled_box(logical[i, j].view(torch.int16).cpu(), 128)),
        )
        for i in range(down)
        for j in range(across)
    )
    print(
        f"raw shared-memory bytes of every box = the 128B swizzle model's permutation: "
        f"{verdicts['swizzled bytes']}"
    )
    return verdicts


def check_stores(tma=None, shapes=SHAPES, device: str = "cuda") -> dict[str, bool]:
    """Print and return, per case and shape: the store into a view (rows 16 elements apart)
    is exact, and nothing around the view was written."""
    tma = tma or _tma()
    verdicts = {}
    for name, dtype, cfg in cases(tma):
        for shape in shapes:
            x = torch.randn(shape, device=device).to(dtype)
            buf = torch.full((shape[0] + 3, shape[1] + 16), 7.0, device=device).to(dtype)
            out = buf[: shape[0], : shape[1]]  # a view: its rows are 16 elements apart
            tma.store(x, out, cfg)
            outside = buf.clone()
            outside[: shape[0], : shape[1]] = 7.0
            exact, untouched = torch.equal(out, x), bool((outside == 7.0).all())
            verdicts[f"{name} {shape}"] = exact and untouched
            print(
                f"{name:20s} {str(shape):14s} {'exact' if exact else 'WRONG'}, "
                f"nothing written outside: {untouched}"
            )
    return verdicts


def loads_executed(shapes=EXECUTOR_SHAPES) -> dict[str, bool]:
    """Without a Hopper GPU, check_loads's copies run on the course's CPU executor instead:
    kernels/tma.py's own load kernel for every case and small ragged shape, then every box of
    a 100 x 72 tensor (exact inside, zeros outside). Each verdict is bit-exact or a hazard."""
    from course.execute import ladder_runs

    verdicts = _executed("load", shapes)
    run = ladder_runs.run_tma("boxes", (100, 72))
    verdicts["boxes"] = run.ok
    print(f"every box of a 100x72 tensor, zeros outside it: {_verdict(run)}")
    return verdicts


def stores_executed(shapes=EXECUTOR_SHAPES) -> dict[str, bool]:
    """check_stores's copies on the course's CPU executor: kernels/tma.py's own store kernel
    for every case and small ragged shape, bit-exact or a hazard."""
    return _executed("store", shapes)


def _executed(kernel: str, shapes) -> dict[str, bool]:
    """One executor run of `kernel` per case and shape, printed like the live checks."""
    from course.execute import ladder_runs

    verdicts = {}
    for name, dtype, cfg in cases():
        for shape in shapes:
            run = ladder_runs.run_tma(kernel, shape, dtype, cfg)
            verdicts[f"{name} {shape}"] = run.ok
            print(f"{name:20s} {str(shape):14s} {_verdict(run)}")
    return verdicts


def _verdict(run) -> str:
    if run.hazard is not None:
        return f"stopped by a hazard: {run.hazard}"
    return f"{'exact' if run.ok else 'WRONG'} ({run.seconds:.1f} s on the CPU executor)"


def load_instructions(arch: str):
    """The load kernel's barrier init, arm, TMA load and wait in PTX, and its SASS counts."""
    art = _tma().artifacts(arch, "load")
    for what, pattern in [
        ("barrier init", r"mbarrier\.init"),
        ("arm with bytes", r"expect_tx"),
        ("the TMA load", r"cp\.async\.bulk\.tensor"),
        ("the wait", r"mbarrier\.try_wait"),
    ]:
        print(f"{what}:\n    " + "\n    ".join(art.ptx_lines(pattern)[:1]))
    sass = art.sass()
    print("\nSASS:", {op: sass.count(op) for op in ("UTMALDG", "SYNCS", "STG")})
    return art


def store_instructions(arch: str):
    """The store kernel's proxy fence, TMA store, commit and wait in PTX, and its SASS counts."""
    art = _tma().artifacts(arch, "store")
    for pattern in (r"fence\.proxy", r"cp\.async\.bulk\.tensor", r"commit_group", r"wait_group"):
        print("    " + "\n    ".join(art.ptx_lines(pattern)))
    sass = art.sass()  # nvdisasm once, not once per opcode
    print("SASS:", {op: sass.count(op) for op in ("UTMASTG", "FENCE", "STS")})
    return art


def loads_checked() -> Outcome:
    """Notebook 08's section 6 cell. On an sm_90+ GPU: `check_loads` (exact copies, zeros
    out of bounds, the swizzle's bytes). Elsewhere: TmaLoad's own code on the CPU executor at
    small ragged shapes, then the load kernel compiled for sm_90a (compile-only), then the
    recorded GPU output (label 08.tma_loads)."""
    return live_or_executed(
        "sm_90+",
        check_loads,
        loads_executed,
        "kernels/tma.py's TmaLoad (small ragged shapes)",
        compiled=load_instructions,
        label="08.tma_loads",
    )


def stores_checked() -> Outcome:
    """Notebook 08's section 7 cell. On an sm_90+ GPU: `check_stores` (exact copies, nothing written
    outside the tensor). Elsewhere: TmaStore's own code on the CPU executor at small ragged
    shapes, then the store kernel compiled for sm_90a (compile-only), then the recorded GPU
    output (label 08.tma_stores)."""
    return live_or_executed(
        "sm_90+",
        check_stores,
        stores_executed,
        "kernels/tma.py's TmaStore (small ragged shapes)",
        compiled=store_instructions,
        label="08.tma_stores",
    )
