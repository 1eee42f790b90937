"""The course's Blackwell kernels next to NVIDIA's CuTe DSL tutorial GEMMs, instruction by
instruction, compiled for sm_100a on this machine (nothing is run, no GPU is needed).

    python -m course.tools.upstream_mix /path/to/cutlass \
        --out results/compiled/blackwell_vs_upstream.json

`/path/to/cutlass` is a checkout of NVIDIA/cutlass; its tutorial GEMMs
(examples/python/CuTeDSL/cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_*.py) are imported
as they are and their `host_function` compiled with stand-in tensors (CuTe DSL fake tensors
with dynamic shapes and 16-byte-divisible strides, as `mark_layout_dynamic` gives them).
The course's kernels are compiled with matching tiles: tcgen05_gemm 128x256 (1 CTA),
cta_pair_gemm and cta_pair_clc_gemm 256x256 (a CTA pair; CLC), fp16 in and out.

Counts are STATIC: instructions in the code, not executions. A loop the compiler unrolled
or peeled counts several times, so compare presence, variants (cta_group, multicast,
shapes) and the synchronisation around them rather than raw totals. Nothing else in the
course depends on this module.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import re
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

from course.cute import ptx_protocol

ARCH = "sm_100a"
TUTORIAL_DIR = "examples/python/CuTeDSL/cute/blackwell/tutorial/tutorial_gemm"
TUTORIALS = (
    "fp16_gemm_0",
    "fp16_gemm_1",
    "fp16_gemm_2",
    "fp16_gemm_3",
    "fp16_gemm_3_1",
    "fp16_gemm_4",
    "fp16_gemm_5",
    "fp16_gemm_6",
)
COURSE_TILE_N = 256  # the tutorials' MMA tiles are 128x256 (1 CTA) and 256x256 (CTA pair)
COURSE = ("tcgen05_gemm", "cta_pair_gemm", "cta_pair_clc_gemm")
# (course kernel, closest tutorial): same MMA tile, same 1-CTA / 2-CTA, same scheduler
PAIRS = (
    ("tcgen05_gemm", "fp16_gemm_0"),
    ("cta_pair_gemm", "fp16_gemm_2"),
    ("cta_pair_clc_gemm", "fp16_gemm_3_1"),
)
B200_SMS = 148  # what the tutorials' max_active_clusters would be derived from on a B200

# PTX instruction classes: name -> regex on one instruction line (comments and labels gone)
PTX_CLASSES = {
    "tcgen05.mma cta_group::1": r"^tcgen05\.mma\.cta_group::1",
    "tcgen05.mma cta_group::2": r"^tcgen05\.mma\.cta_group::2",
    "tcgen05.ld": r"^tcgen05\.ld\.",
    "tcgen05.st": r"^tcgen05\.st\.",
    "tcgen05.wait::ld": r"^tcgen05\.wait::ld",
    "tcgen05.wait::st": r"^tcgen05\.wait::st",
    "tcgen05.commit": r"^tcgen05\.commit\.",
    "tcgen05.commit multicast": r"^tcgen05\.commit\.\S*multicast",
    "tcgen05.alloc": r"^tcgen05\.alloc\.",
    "tcgen05.dealloc": r"^tcgen05\.dealloc\.",
    "tcgen05.relinquish_alloc_permit": r"^tcgen05\.relinquish_alloc_permit",
    "tcgen05.cp": r"^tcgen05\.cp\.",
    "tcgen05.shift": r"^tcgen05\.shift\.",
    "tcgen05.fence (before/after_thread_sync)": r"^tcgen05\.fence",
    "mbarrier.init": r"^mbarrier\.init",
    "mbarrier.try_wait": r"^mbarrier\.try_wait",
    "mbarrier.arrive (local)": r"^mbarrier\.arrive\.(?!expect_tx)(?!\S*shared::cluster)",
    "mbarrier.arrive (cluster)": r"^mbarrier\.arrive\.(?!expect_tx)\S*shared::cluster",
    "mbarrier.arrive.expect_tx (local)": r"^mbarrier\.arrive\.expect_tx\.(?!\S*shared::cluster)",
    "mbarrier.arrive.expect_tx (cluster)": r"^mbarrier\.arrive\.expect_tx\.\S*shared::cluster",
    "TMA load": r"^cp\.async\.bulk\.tensor\.\S*shared::\w+\.global",
    "TMA load multicast::cluster": r"^cp\.async\.bulk\.tensor\.\S*\.global\S*multicast::cluster",
    "TMA store": r"^cp\.async\.bulk\.tensor\.\S*global\.shared",
    "cp.async.bulk.commit_group": r"^cp\.async\.bulk\.commit_group",
    "cp.async.bulk.wait_group": r"^cp\.async\.bulk\.wait_group",
    "fence.proxy.async": r"^fence\.proxy\.async",
    "fence.mbarrier_init": r"^fence\.mbarrier_init",
    "barrier.cluster.arrive": r"^barrier\.cluster\.arrive(?!\.relaxed)",
    "barrier.cluster.arrive.relaxed": r"^barrier\.cluster\.arrive\.relaxed",
    "barrier.cluster.wait": r"^barrier\.cluster\.wait",
    "bar.sync (CTA / named)": r"^(bar|barrier)\.sync",
    "clusterlaunchcontrol.try_cancel": r"^clusterlaunchcontrol\.try_cancel",
    "clusterlaunchcontrol.query_cancel": r"^clusterlaunchcontrol\.query_cancel",
    "griddepcontrol (PDL)": r"^griddepcontrol",
    "elect.sync": r"^elect\.sync",
    "setmaxnreg": r"^setmaxnreg",
    "stmatrix": r"^stmatrix",
    "st.shared": r"^st\.shared",
    "st.global": r"^st\.global",
}

# SASS opcode classes: name -> regex on the opcode (predicate stripped)
SASS_CLASSES = {
    "UTC*MMA (tcgen05.mma, 1 CTA)": r"^UTC\w*MMA(?!\S*2CTA)",
    "UTC*MMA.2CTA (tcgen05.mma, pair)": r"^UTC\w*MMA\S*2CTA",
    "LDTM (tcgen05.ld)": r"^LDTM",
    "STTM (tcgen05.st)": r"^STTM",
    "UTCBAR (tcgen05.commit)": r"^UTCBAR",
    "UTCATOMSWS (TMEM alloc/dealloc)": r"^UTCATOMSWS",
    "UTMALDG (TMA load)": r"^UTMALDG",
    "UTMALDG multicast": r"^UTMALDG\S*MULTICAST",
    "UTMASTG (TMA store)": r"^UTMASTG",
    "UTMACCTL.PF (descriptor prefetch)": r"^UTMACCTL",
    "SYNCS.EXCH (mbarrier.init)": r"^SYNCS\.EXCH",
    "SYNCS.PHASECHK (mbarrier wait)": r"^SYNCS\.PHASECHK",
    "SYNCS.ARRIVE (mbarrier arrive)": r"^SYNCS\.ARRIVE",
    "UCGABAR_ARV (cluster arrive)": r"^UCGABAR_ARV",
    "UCGABAR_WAIT (cluster wait)": r"^UCGABAR_WAIT",
    "MEMBAR.ALL.GPU": r"^MEMBAR\.ALL\.GPU",
    "BAR.SYNC": r"^BAR\.SYNC",
    "UGETNEXTWORKID (CLC try_cancel)": r"^UGETNEXTWORKID",
    "FENCE.VIEW.ASYNC": r"^FENCE\.VIEW\.ASYNC",
    "ELECT": r"^ELECT",
    "USETMAXREG": r"^USETMAXREG",
    "STSM (stmatrix)": r"^STSM",
    "STS": r"^STS",
    "STG": r"^STG",
    "DEPBAR": r"^DEPBAR",
}


# ---------------------------------------------------------------- counting


def ptx_kernels(ptx: str) -> dict[str, str]:
    """The PTX of each `.entry` in a module, by kernel name."""
    parts = re.split(r"(?m)^\.visible \.entry (\w+)\(", ptx)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def sass_kernels(sass: str) -> dict[str, str]:
    """The SASS of each kernel in nvdisasm's output, by kernel name."""
    parts = re.split(r"(?m)^\s*\.section\s+\.text\.(\w+),", sass)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def gemm_kernel(kernels: dict[str, str], mma: str) -> str:
    """The name of the kernel with the most MMA instructions (`mma` a regex): a module may
    hold a helper kernel too (fp16_gemm_6's dequantisation)."""
    return max(kernels, key=lambda name: len(re.findall(mma, kernels[name])))


def count(lines: list[str], classes: dict[str, str]) -> dict[str, int]:
    """How many of `lines` fall in each class."""
    return {name: sum(1 for line in lines if re.search(rx, line)) for name, rx in classes.items()}


def ptx_mix(ptx: str) -> dict[str, int]:
    """The PTX instruction classes of one kernel's PTX."""
    return count(ptx_protocol.instructions(ptx), PTX_CLASSES)


def sass_opcodes(sass: str) -> list[str]:
    """The opcodes (with modifiers) of the instructions in nvdisasm output, in order."""
    rx = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][\w.]*)")
    return [m.group(1) for m in map(rx.match, sass.splitlines()) if m]


def sass_mix(sass: str) -> dict[str, int]:
    return count(sass_opcodes(sass), SASS_CLASSES)


def tmem_load_shapes(ptx: str) -> dict[str, int]:
    """tcgen05.ld shapes and repetitions, e.g. {'32x32b.x32': 1}."""
    shapes = (
        re.search(r"\.(\d+x\d+b\.x\d+)", line)
        for line in ptx_protocol.instructions(ptx)
        if line.startswith("tcgen05.ld.")
    )
    return dict(Counter(m.group(1) for m in shapes if m))


def describe(art, source: str, config: dict) -> dict:
    """Everything this comparison records about one compiled kernel (an Artifacts)."""
    ptx_by_kernel = ptx_kernels(art.ptx)
    name = gemm_kernel(ptx_by_kernel, r"tcgen05\.mma")
    sass_by_kernel = sass_kernels(art.sass())
    sass = sass_by_kernel[gemm_kernel(sass_by_kernel, r"UTC\w*MMA")]
    resources = art.resource_usage().get(name, {})
    return {
        "source": source,
        "config": config,
        "kernel": name,
        "kernels_in_module": len(ptx_by_kernel),
        "ptx": ptx_mix(ptx_by_kernel[name]),
        "tcgen05_ld_shapes": tmem_load_shapes(art.ptx),
        "sass": sass_mix(sass),
        "sass_instructions": len(sass_opcodes(sass)),
        "registers": resources.get("registers"),
        "stack_frame_bytes": resources.get("stack_frame_bytes"),
        "protocol": [str(v) for v in ptx_protocol.check(art.ptx)],
        "compile_seconds": round(art.compile_seconds, 2),
    }


def compare(course: dict, upstream: dict) -> dict:
    """Where two descriptions differ: classes only one side has, and differing counts."""

    def diff(key):
        a, b = course[key], upstream[key]
        return {k: [a[k], b[k]] for k in a if a[k] != b[k]}

    ptx = diff("ptx")
    return {
        "only_course": sorted(k for k, (a, b) in ptx.items() if a and not b),
        "only_upstream": sorted(k for k, (a, b) in ptx.items() if b and not a),
        "ptx_counts_differ": ptx,
        "sass_counts_differ": diff("sass"),
        "tcgen05_ld_shapes": [course["tcgen05_ld_shapes"], upstream["tcgen05_ld_shapes"]],
        "registers": [course["registers"], upstream["registers"]],
        "stack_frame_bytes": [course["stack_frame_bytes"], upstream["stack_frame_bytes"]],
        "protocol": [course["protocol"], upstream["protocol"]],
    }


# ---------------------------------------------------------------- compiling


def course_kernel(name: str) -> dict:
    """One of the course's Blackwell kernels, fp16, tile_n=256, compiled for sm_100a."""
    import importlib

    import torch

    mod = importlib.import_module(f"kernels.{name}")
    config = mod.Config(tile_n=COURSE_TILE_N)
    art = mod.artifacts(ARCH, torch.float16, config)
    return describe(
        art,
        f"kernels/{name}.py",
        {"dtype": "float16", "tile_n": config.tile_n, "stages": config.stages},
    )


def load_tutorial(checkout: Path, name: str):
    """Import an upstream tutorial script as a module (its __main__ block does not run)."""
    path = Path(checkout) / TUTORIAL_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"upstream_tutorial_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stand_in(module, parameter: str):
    """A compile-only argument for one `host_function` parameter of a tutorial.

    Tensors: K-major (rows, K) fp16 (int8 for fp16_gemm_6's quantised B) with dynamic
    shapes. max_active_clusters: what a B200 would allow for that cluster shape (it only
    sizes the persistent grid). A scale factor and a stream: placeholders.
    """
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_tensor

    from kernels.host import fake_stream

    if parameter.endswith("max_active_clusters"):
        cluster = getattr(module, parameter.replace("max_active_clusters", "cluster_shape_mnk"))
        return B200_SMS // math.prod(cluster)
    if parameter == "stream":
        return fake_stream()
    if parameter == "scale_factor":
        return cutlass.Float32(1.0)
    dtype = cutlass.Int8 if parameter == "b_quantized" else cutlass.Float16
    return make_fake_tensor(
        dtype, (cute.sym_int(), cute.sym_int()), (cute.sym_int(divisibility=8), 1), assumed_align=16
    )


def tutorial_artifacts(checkout: Path, name: str):
    """One upstream tutorial GEMM compiled for sm_100a: (its module, what the compiler
    produced), so that the course's static rules can be held against NVIDIA's own code."""
    from kernels.artifacts import compile_artifacts

    module = load_tutorial(checkout, name)
    fn = module.host_function
    args = [stand_in(module, p) for p in inspect.signature(fn).parameters]
    return module, compile_artifacts(("upstream", str(checkout), name), ARCH, fn, *args)


def tutorial_kernel(checkout: Path, name: str) -> dict:
    """One upstream tutorial GEMM compiled for sm_100a, described."""
    module, art = tutorial_artifacts(checkout, name)
    config = {
        k: getattr(module, k)
        for k in (
            "mma_tiler_mnk",
            "cluster_shape_mnk",
            "preferred_cluster_shape_mnk",
            "ab_stages",
            "acc_stage",
            "acc_stages",
            "epi_stages",
        )
        if hasattr(module, k)
    }
    return describe(art, f"{TUTORIAL_DIR}/{name}.py", config)


def upstream_commit(checkout: Path) -> str | None:
    out = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def build(checkout: Path, commit: str | None = None) -> dict:
    """Compile everything and compare; a tutorial that fails to compile is listed as
    skipped with its error, never dropped silently."""
    kernels, skipped = {}, {}
    for name in COURSE:
        kernels[name] = {"side": "course", **course_kernel(name)}
    for name in TUTORIALS:
        try:
            kernels[name] = {"side": "upstream", **tutorial_kernel(checkout, name)}
        except Exception as e:  # recorded, reported, not hidden
            skipped[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    pairs = [
        {"course": c, "upstream": u, **compare(kernels[c], kernels[u])}
        for c, u in PAIRS
        if c in kernels and u in kernels
    ]
    return {
        "arch": ARCH,
        "upstream_commit": commit or upstream_commit(checkout),
        "counts": "static (instructions in the code, not executions)",
        "kernels": kernels,
        "skipped": skipped,
        "pairs": pairs,
    }


# ---------------------------------------------------------------- reporting

TABLE_ROWS = (
    "tcgen05.mma cta_group::1",
    "tcgen05.mma cta_group::2",
    "tcgen05.ld",
    "tcgen05.wait::ld",
    "tcgen05.commit multicast",
    "TMA load multicast::cluster",
    "TMA store",
    "st.global",
    "mbarrier.init",
    "barrier.cluster.arrive",
    "barrier.cluster.arrive.relaxed",
    "clusterlaunchcontrol.try_cancel",
    "tcgen05.fence (before/after_thread_sync)",
)


def table(report: dict, names: tuple = ()) -> str:
    """A markdown table, one column per kernel: a few PTX classes, registers, spills,
    and the course's PTX protocol verdict."""
    names = names or tuple(report["kernels"])
    ks = [report["kernels"][n] for n in names]
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [
        f"| {row} | " + " | ".join(str(k["ptx"][row]) for k in ks) + " |" for row in TABLE_ROWS
    ]
    lines.append(
        "| registers / stack bytes | "
        + " | ".join(f"{k['registers']} / {k['stack_frame_bytes']}" for k in ks)
        + " |"
    )
    lines.append(
        "| PTX protocol violations | "
        + " | ".join(
            ", ".join(sorted({v.split(":")[0] for v in k["protocol"]})) or "none" for k in ks
        )
        + " |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from course.runtime import results

    parser = argparse.ArgumentParser(
        prog="python -m course.tools.upstream_mix", description=__doc__.splitlines()[0]
    )
    parser.add_argument("checkout", type=Path, help="a checkout of NVIDIA/cutlass")
    parser.add_argument(
        "--out", type=Path, default=Path("results/compiled/blackwell_vs_upstream.json")
    )
    parser.add_argument("--commit", help="the checkout's commit, if it is not a git work tree")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    report = build(args.checkout, args.commit)
    provenance = results.provenance(f"{parser.prog} {shlex.join(argv)}")
    provenance["note"] = f"compiled for {ARCH} on a CPU, not run"
    args.out.write_text(
        json.dumps(
            {"records": [{"provenance": provenance, "data": report}]}, indent=1, sort_keys=True
        )
        + "\n"
    )
    print(table(report))
    for name, why in report["skipped"].items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
