"""Is any ladder GEMM slower than in another checkout? One process, alternating rounds.

    python scripts/compare_checkouts.py /path/to/old/checkout [--size 4096] [--steps ...]

Loads the other checkout's kernels/ as the package `kernels_old` beside this checkout's
`kernels` (every import inside kernels/ is relative, so the two never mix), checks both
against torch on one problem, and times each configuration old against new in alternating
rounds (kernels.selftest.paired_rounds), with old timed against itself as the control: the
launches alone (`GEMM.launch_arguments` once, then `kernel(*args, stream)`), so that checks
on the host, which may differ between the checkouts, are not timed. It prints the median of
the per-round ratios new/old with their range (a ratio inside the control's range is noise)
and whether the two outputs are bitwise equal. Needs a GPU that runs the steps (Hopper for
07-13, Blackwell for 14-16; a step this GPU cannot run is skipped, saying so).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernels import host, selftest  # noqa: E402

# step -> configurations (None: the default; a name: a preset of the step's PRESETS)
CONFIGS = {
    "sm80_gemm": [None],
    "tma_gemm": [None, {"ring": "pipeline"}],
    "wgmma_gemm": [None],
    "hopper_gemm": ["specialized", "persistent", "cluster", "tma_store", "pingpong"],
    "fp8_gemm": ["tensor", "row", "block", "tensor_promoted"],
    "fused_gemm": ["bias", "bias_gelu", "bias_gelu_pingpong"],
    "split_k_gemm": ["split_k2", "split_tail"],
    "tcgen05_gemm": [None],
    "cta_pair_gemm": [None],
    "cta_pair_clc_gemm": [None],
}


def load_old(checkout: Path):
    """The other checkout's kernels/ as the package `kernels_old`."""
    spec = importlib.util.spec_from_file_location(
        "kernels_old",
        checkout / "kernels" / "__init__.py",
        submodule_search_locations=[str(checkout / "kernels")],
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["kernels_old"] = package
    spec.loader.exec_module(package)
    return package


def config_of(module, config):
    if config is None:
        return module.Config()
    if isinstance(config, str):
        return module.PRESETS[config]
    return module.Config(**config)


def operands(step: str, cfg, size: int, dtype: torch.dtype):
    """(A, B, the step's further operands, float64 reference, C's dtype) for one size^3
    problem: FP8 operands quantized with the config's scales, a bias for the fused step."""
    from kernels import fp8_scales, fused_gemm

    if step == "fp8_gemm":
        a, sa = fp8_scales.quantize(torch.randn(size, size, device="cuda"), cfg.scales)
        b, sb = fp8_scales.quantize(torch.randn(size, size, device="cuda"), cfg.scales, rows_of="b")
        ref = (
            fp8_scales.dequantize(a, sa, cfg.scales)
            @ fp8_scales.dequantize(b, sb, cfg.scales, "b").T
        )
        return a, b, (sa, sb), ref, torch.bfloat16
    a = torch.randn(size, size, device="cuda").to(dtype)
    b = torch.randn(size, size, device="cuda").to(dtype)
    if step == "fused_gemm":
        bias = torch.randn(size, device="cuda")
        return a, b, (bias,), fused_gemm.reference(a, b, bias, cfg.epilogue), dtype
    return a, b, (), a.double() @ b.double().T, dtype


def compare(step: str, config, size: int, dtype: torch.dtype, rounds: int) -> str:
    new = importlib.import_module(f"kernels.{step}")
    old = importlib.import_module(f"kernels_old.{step}")
    cfg_new, cfg_old = config_of(new, config), config_of(old, config)
    a, b, more, ref, c_dtype = operands(step, cfg_new, size, dtype)
    outs, launches = {}, {}
    for name, module, cfg in (("old", old, cfg_old), ("new", new, cfg_new)):
        out = torch.full((size, size), float("nan"), dtype=c_dtype, device="cuda")
        _, kernel, args = module.GEMM.launch_arguments(a, b, out, cfg, tensors=more)
        launches[name] = (kernel, args)
        kernel(*args, host.current_stream())
        torch.cuda.synchronize()
        err = selftest.relative_error(out, ref)
        if not err <= selftest.TOLERANCE[c_dtype]:
            return f"{step} {config}: {name} is WRONG (relative error {err:.2e})"
        outs[name] = out
    same = torch.equal(outs["old"], outs["new"])

    def launch(name):
        kernel, args = launches[name]
        return lambda i: kernel(*args, host.current_stream())

    t = selftest.paired_rounds(
        {"old": launch("old"), "new": launch("new"), "old again": launch("old")}, rounds=rounds
    )
    ratio = selftest.ratio_summary(t["old"], t["new"])
    control = selftest.ratio_summary(t["old"], t["old again"])
    ms = statistics.median(t["new"])
    return (
        f"{step:18s} {str(config):22s} new {ms:.3f} ms; new speed / old {ratio}; "
        f"control old/old again {control}; outputs bitwise equal: {same}"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", type=Path, help="the other checkout (its kernels/ is compared)")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--steps", nargs="*", default=list(CONFIGS))
    args = p.parse_args()
    load_old(args.old.resolve())
    cc = host.device_capability()
    for step in args.steps:
        needs = importlib.import_module(f"kernels.{step}").NEEDS
        if not host.satisfies(cc, needs):
            print(f"{step:18s} skipped: needs {needs}, this GPU is {cc}")
            continue
        for config in CONFIGS[step]:
            print(compare(step, config, args.size, torch.bfloat16, args.rounds), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
