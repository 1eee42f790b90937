"""The compiled PTX of every configuration of every ladder step, as fingerprints.

ARCHITECTURE.md promises that a change of the kernels' device code is checked against the
compiled PTX of every configuration. This module is that check's data: `CONFIGURATIONS`
names each configuration the notebooks, exercises, benchmarks and tests compile (step, arch,
dtype, config), and `fingerprint` reduces its PTX to a short hash that survives moving code
around (comments, debug and line information, and the kernels' mangled names, which carry
module and class names, are left out) but not a change of one instruction. The table of
fingerprints is committed beside this file; tests/test_ptx_fingerprints.py compares.

    python -m tests.ptx_fingerprints            # what differs from the table
    python -m tests.ptx_fingerprints --record   # write the table again, on purpose

Only CuTe DSL and torch are needed, no GPU: everything compiles for its target arch here.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Callable

import torch

TABLE = Path(__file__).with_name("ptx_fingerprints.json")
SHORT = {
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
    torch.float8_e4m3fn: "e4m3",
    torch.float8_e5m2: "e5m2",
}

_SYMBOL = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*")
_PARAM = re.compile(r"(.*?)(_param_\d+)$")
_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug\w*\s*\{.*?^\s*\}", re.S | re.M)


def fingerprint(ptx: str) -> str:
    """A hash of the PTX's instructions and declarations, insensitive to where the code that
    produced it lives: comments (the compiler's banner, `.globl` notes), `.loc`/`.file` line
    information and debug sections are dropped, and each kernel or function symbol (CuTe
    DSL mangles module, class and argument names into it) is replaced by its ordinal."""
    ptx = _DEBUG_SECTION.sub("", ptx)
    names: dict[str, str] = {}
    for name in _SYMBOL.findall(ptx):
        names.setdefault(name, f"SYMBOL{len(names)}")

    def rename(match: re.Match) -> str:
        token = match.group(0)
        if token in names:
            return names[token]
        param = _PARAM.match(token)
        if param and param.group(1) in names:
            return names[param.group(1)] + param.group(2)
        return token

    kept = []
    for line in ptx.splitlines():
        code = line.split("//", 1)[0].rstrip()
        if not code.strip() or code.lstrip().startswith((".loc", ".file")):
            continue
        kept.append(_TOKEN.sub(rename, code))
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Configuration:
    """One compile: `label` names it in the table, `artifacts()` compiles it."""

    step: str
    label: str
    artifacts: Callable[[], object]


def _kernel(step: str):
    return importlib.import_module(f"kernels.{step}")


def _gemm(
    step: str, arch: str, dtype: torch.dtype, what: str = "default", config=None, **keys
) -> Configuration:
    """A GEMM step's configuration: `config(module)` builds its Config (None: the default)."""
    label = f"{step} {arch} {SHORT[dtype]} {what}"
    extra = "".join(f" {k}={SHORT.get(v, v)}" for k, v in keys.items())

    def build():
        module = _kernel(step)
        return module.artifacts(arch, dtype, None if config is None else config(module), **keys)

    return Configuration(step, label + extra, build)


def _cfg(**fields) -> Callable:
    """Config(**fields) of the step's module."""
    return lambda module: module.Config(**fields)


def _named(**fields) -> str:
    return ", ".join(f"{k}={v}" for k, v in fields.items())


def _gemm_configs(
    step: str, arch: str, dtype: torch.dtype, *field_sets: dict, **keys
) -> list[Configuration]:
    return [
        _gemm(step, arch, dtype, _named(**f) or "default", _cfg(**f) if f else None, **keys)
        for f in field_sets
    ]


def _ladder() -> list[Configuration]:
    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
    out: list[Configuration] = []

    # 00 vector_add
    for arch, dtype, threads in (
        ("sm_80", fp32, 256),
        ("sm_90a", fp32, 256),
        ("sm_100a", fp32, 256),
        ("sm_90a", bf16, 256),
        ("sm_90a", fp16, 128),
    ):
        out.append(
            Configuration(
                "vector_add",
                f"vector_add {arch} {SHORT[dtype]} threads_per_block={threads}",
                lambda arch=arch, dtype=dtype, threads=threads: _kernel("vector_add").artifacts(
                    arch, dtype, _kernel("vector_add").Config(threads)
                ),
            )
        )

    # 03 naive_gemm: A M-major and B N-major as notebook 03 traces it, and group=2
    for arch, dtype in (
        ("sm_80", fp32),
        ("sm_90a", fp32),
        ("sm_100a", fp32),
        ("sm_90a", bf16),
        ("sm_90a", fp16),
    ):
        out.append(_gemm("naive_gemm", arch, dtype))
    out.append(_gemm("naive_gemm", "sm_90a", fp32, "group=2", _cfg(group=2)))
    out.append(_gemm("naive_gemm", "sm_90a", bf16, "default", a_major="k", b_major="k"))

    # 04 copies: every variant, and the tiled copy with 8 values per thread
    for variant in ("scalar", "strided", "vector", "tiled", "cp_async"):
        for arch in ("sm_80", "sm_90a"):
            out.append(
                Configuration(
                    "copies",
                    f"copies {arch} {variant}",
                    lambda arch=arch, variant=variant: _kernel("copies").artifacts(
                        arch, _kernel("copies").Config(variant)
                    ),
                )
            )
    out.append(
        Configuration(
            "copies",
            "copies sm_90a tiled values=8",
            lambda: _kernel("copies").artifacts(
                "sm_90a", _kernel("copies").Config("tiled", values=8)
            ),
        )
    )

    # 05 smem_banks (requests per pass x vector width; 32 threads as the bank benchmark)
    for n_req, vec, threads in (
        (1, 4, 256),
        (2, 1, 256),
        (2, 2, 256),
        (2, 4, 256),
        (1, 1, 32),
        (2, 1, 32),
        (1, 2, 32),
        (1, 4, 32),
    ):
        out.append(
            Configuration(
                "smem_banks",
                f"smem_banks sm_90a n_req={n_req} vec={vec} threads={threads}",
                lambda n_req=n_req, vec=vec, threads=threads: _kernel("smem_banks").artifacts(
                    "sm_90a", n_req, vec, _kernel("smem_banks").Config(threads)
                ),
            )
        )

    # 05 smem_transpose: every shared-memory layout
    for layout in ("plain", "padded", "swizzled"):
        out.append(
            Configuration(
                "smem_transpose",
                f"smem_transpose sm_90a {layout}",
                lambda layout=layout: _kernel("smem_transpose").artifacts(
                    "sm_90a", _kernel("smem_transpose").Config(layout)
                ),
            )
        )

    # 06 mma_atom: the micro-GEMM and the stamping kernel on 1x1, 2x2 and 4x1 warps
    for warps in ((1, 1), (2, 2), (4, 1)):
        for dtype in (bf16, fp16):
            for arch in ("sm_80", "sm_90a"):
                for kernel in ("MICRO_GEMM", "STAMP"):
                    out.append(
                        Configuration(
                            "mma_atom",
                            f"mma_atom {arch} {SHORT[dtype]} {kernel.lower()} "
                            f"warps={warps[0]}x{warps[1]}",
                            lambda arch=arch, dtype=dtype, warps=warps, kernel=kernel: getattr(
                                _kernel("mma_atom"), kernel
                            ).artifacts(arch, dtype, _kernel("mma_atom").Config(*warps)),
                        )
                    )

    # 07 sm80_gemm: the default on both targets, the configurations measured and tested
    for arch in ("sm_80", "sm_90a"):
        out += _gemm_configs("sm80_gemm", arch, bf16, {})
    out += _gemm_configs("sm80_gemm", "sm_90a", fp16, {})
    out += _gemm_configs(
        "sm80_gemm",
        "sm_90a",
        bf16,
        dict(stages=2),
        dict(stages=4),
        dict(tile_n=128, warps_n=2, stages=4),
        dict(tile_k=32, stages=3),
        dict(tile_k=32, stages=5),
    )

    # 08 tma: every kernel on the box configurations of the lessons and tests
    boxes = {
        "default": {},
        "box_rows=32": dict(box_rows=32),
        "box_cols=32": dict(box_cols=32),
        "box_cols=32 swizzle=64": dict(box_cols=32, swizzle=64),
        "box_cols=16 swizzle=32 box_rows=128": dict(box_cols=16, swizzle=32, box_rows=128),
        "box_cols=24 swizzle=0 box_rows=16": dict(box_cols=24, swizzle=0, box_rows=16),
        "box_cols=24 swizzle=0 box_rows=16 threads=128": dict(
            box_cols=24, swizzle=0, box_rows=16, threads=128
        ),
    }
    cases = [
        (bf16, "default"),
        (fp16, "box_rows=32"),
        (fp32, "box_cols=32"),
        (bf16, "box_cols=32 swizzle=64"),
        (bf16, "box_cols=16 swizzle=32 box_rows=128"),
        (bf16, "box_cols=24 swizzle=0 box_rows=16"),
    ]
    for dtype, box in cases:
        for kernel in ("load", "boxes", "physical", "store"):
            out.append(
                Configuration(
                    "tma",
                    f"tma sm_90a {SHORT[dtype]} {kernel} {box}",
                    lambda dtype=dtype, box=box, kernel=kernel: _kernel("tma").artifacts(
                        "sm_90a", kernel, dtype, _kernel("tma").Config(**boxes[box])
                    ),
                )
            )
    out.append(
        Configuration(
            "tma",
            "tma sm_100a bf16 load default",
            lambda: _kernel("tma").artifacts("sm_100a", "load"),
        )
    )
    out.append(
        Configuration(
            "tma",
            "tma sm_90a bf16 descriptor default",
            lambda: _kernel("tma").artifacts("sm_90a", "descriptor"),
        )
    )
    for cluster, tiles, multicast in (
        (2, 4, True),
        (2, 2, True),
        (4, 2, True),
        (2, 2, False),
        (4, 2, False),
        (2, 3, True),
        (4, 3, True),
        (2, 3, False),
        (4, 3, False),
        (2, 8, True),
        (4, 8, True),
        (2, 8, False),
        (4, 8, False),
    ):
        for kernel in ("multicast", "multicast_bench"):
            out.append(
                Configuration(
                    "tma",
                    f"tma sm_90a bf16 {kernel} cluster={cluster} tiles={tiles} "
                    f"multicast={multicast}",
                    lambda cluster=cluster, tiles=tiles, multicast=multicast, kernel=kernel: (
                        _kernel("tma").artifacts(
                            "sm_90a",
                            kernel,
                            torch.bfloat16,
                            _kernel("tma").MulticastConfig(
                                cluster=cluster, tiles=tiles, multicast=multicast
                            ),
                        )
                    ),
                )
            )

    # 09 tma_gemm: the stage sweep with both rings, the injected bugs, bounded waits
    for dtype in (bf16, fp16):
        out += _gemm_configs("tma_gemm", "sm_90a", dtype, {}, dict(ring="pipeline"))
    for stages in (1, 2, 3):
        for ring in ("mbarrier", "pipeline"):
            out += _gemm_configs("tma_gemm", "sm_90a", bf16, dict(stages=stages, ring=ring))
    for bug in ("producer_parity", "missing_arrive", "arrival_count", "thread_arrival_count"):
        out += _gemm_configs(
            "tma_gemm",
            "sm_90a",
            bf16,
            dict(bug=bug),
            dict(stages=2, bug=bug),
            dict(stages=2, bug=bug, debug_timeout_ms=200),
        )
    out += _gemm_configs(
        "tma_gemm",
        "sm_90a",
        bf16,
        dict(debug_timeout_ms=100),
        dict(debug_timeout_ms=1000),
        dict(tile_n=128, warps_n=2, stages=6),
    )

    # 10 wgmma_gemm: the default and the stage sweeps of notebook 10
    for dtype in (bf16, fp16):
        out += _gemm_configs("wgmma_gemm", "sm_90a", dtype, {})
    out += _gemm_configs(
        "wgmma_gemm",
        "sm_90a",
        bf16,
        dict(stages=2),
        dict(stages=3),
        dict(tile_n=128),
        *(dict(tile_n=128, stages=s) for s in (2, 3, 5, 6)),
    )

    # 11 hopper_gemm: every preset of the ladder
    for preset in ("specialized", "persistent", "cluster", "tma_store", "pingpong", "pingpong_2x2"):
        for dtype in (bf16, fp16):
            out.append(
                _gemm(
                    "hopper_gemm",
                    "sm_90a",
                    dtype,
                    f"preset={preset}",
                    lambda module, preset=preset: module.PRESETS[preset],
                )
            )
    out += _gemm_configs("hopper_gemm", "sm_90a", bf16, dict(pdl=True))  # notebook 13's PDL

    # 12 fp8_gemm: every preset in e4m3, row scales in e5m2, C in fp32, 256-wide block tiles
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2
    presets = ("tensor", "row", "block", "block_prefetch", "block_staged", "block_overlapped")
    for preset in (*presets, "tensor_promoted"):
        out.append(
            _gemm(
                "fp8_gemm",
                "sm_90a",
                e4m3,
                f"preset={preset}",
                lambda module, preset=preset: module.PRESETS[preset],
            )
        )
    out += _gemm_configs("fp8_gemm", "sm_90a", e5m2, dict(scales="row"))
    out += _gemm_configs("fp8_gemm", "sm_90a", e4m3, {}, out_dtype=fp32)
    out += _gemm_configs("fp8_gemm", "sm_90a", e4m3, dict(scales="block"))

    # 13 fused_gemm and split_k_gemm: every preset in bf16, the default Config in fp16
    for step, presets in (
        ("fused_gemm", ("bias", "bias_gelu", "bias_gelu_pingpong")),
        ("split_k_gemm", ("split_k2", "split_k4", "split_tail")),
    ):
        for preset in presets:
            out.append(
                _gemm(
                    step,
                    "sm_90a",
                    bf16,
                    f"preset={preset}",
                    lambda module, preset=preset: module.PRESETS[preset],
                )
            )
        out += _gemm_configs(step, "sm_90a", fp16, {})

    # 14-15 the Blackwell GEMMs: both tile widths, both input types, C in another type
    for step in ("tcgen05_gemm", "cta_pair_gemm", "cta_pair_clc_gemm"):
        for dtype in (bf16, fp16):
            out += _gemm_configs(step, "sm_100a", dtype, {}, dict(tile_n=256))
        out += _gemm_configs(step, "sm_100a", bf16, dict(tile_n=256), out_dtype=fp16)

    # 16 the block-scaled GEMM: every kind, both tile widths, C in another type
    out += [
        _blockscaled("mxfp8"),
        _blockscaled("mxfp8", tile_n=256),
        _blockscaled("mxfp8", fp32),
        _blockscaled("nvfp4"),
        _blockscaled("nvfp4", fp16, tile_n=256, stages=3),
        _blockscaled("mxfp4"),
    ]
    return out


def _blockscaled(kind: str, out_dtype=None, **fields) -> Configuration:
    """kernels.blockscaled_gemm for one kind (its A/B and SF types are the kind's)."""
    import torch

    out_dtype = out_dtype or torch.bfloat16
    what = ", ".join(f"{k}={v}" for k, v in fields.items()) or "default"
    label = f"blockscaled_gemm sm_100a {kind} {what} out={str(out_dtype)[6:]}"

    def build():
        module = _kernel("blockscaled_gemm")
        return module.artifacts("sm_100a", module.Config(kind, **fields), out_dtype=out_dtype)

    return Configuration("blockscaled_gemm", label, build)


CONFIGURATIONS: list[Configuration] = _ladder()
STEPS = sorted({c.step for c in CONFIGURATIONS})


def measure(step: str | None = None) -> dict[str, str]:
    """label -> fingerprint of every configuration (of one step)."""
    return {
        c.label: fingerprint(c.artifacts().ptx)
        for c in CONFIGURATIONS
        if step is None or c.step == step
    }


def compiler_version() -> str:
    return version("nvidia-cutlass-dsl")


def load() -> dict:
    return json.loads(TABLE.read_text())


def record() -> None:
    TABLE.write_text(
        json.dumps(
            {"nvidia-cutlass-dsl": compiler_version(), "fingerprints": measure()},
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )


def main(argv: list[str]) -> int:
    if "--record" in argv:
        record()
        print(f"recorded {len(CONFIGURATIONS)} fingerprints in {TABLE}")
        return 0
    table = load()["fingerprints"]
    changed = {label: fp for label, fp in measure().items() if table.get(label) != fp}
    for label in sorted(changed):
        print(f"changed: {label}")
    print(f"{len(changed)} of {len(CONFIGURATIONS)} configurations compile to other PTX")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
