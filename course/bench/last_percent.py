"""Notebook 13's measurements: waves and the tail, launch overhead, tile order, a fused epilogue.

    python -m course.bench.last_percent waves  [--record]   time against N across wave steps
    python -m course.bench.last_percent tail   [--record]   SM-active cycles against elapsed (ncu)
    python -m course.bench.last_percent launch [--record]   host time per call; eager vs graph
    python -m course.bench.last_percent order  [--record]   tile order: L2 sectors, DRAM bytes (ncu)
    python -m course.bench.last_percent fusion [--record]   bias + GELU fused vs unfused
    python -m course.bench.last_percent split  [--record]   split-K presets where cuBLAS splits K
    python -m course.bench.last_percent hints  [--record]   L2 eviction priorities on the TMA loads
    python -m course.bench.last_percent sol [--example PATH] [--record]
                                          the SOL kernel, NVIDIA's example and cuBLAS
    python -m course.bench.last_percent fp8    [--record]   block-scaled FP8 against tensorwise
    python -m course.bench.last_percent pdl    [--record]   a chain of GEMMs in a graph, with PDL

Each part records one entry of results/last_percent.json ({"part": ..., ...}) with the GPU,
date and command. Every comparison is timed in alternating rounds in one process, with a
contender timed twice as its control.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import torch

from course.bench.timing import alternating, graphed, round_ratios

SOL = {}  # hopper_gemm's final kernel: Config() (a 2 x 1 cluster, 128 x 256 tiles, TMA store)
WAVE_M = WAVE_K = 4096
WAVE_NS = tuple(range(1024, 8192 + 1, 128))
# 3.88 waves, then 4.12 twice (17 tile columns, the last one ragged at 4224): work items of
# the SOL kernel on 132 SMs
TAIL_NS = (4096, 4224, 4352)
LAUNCH_SIZES = (256, 512, 1024, 2048, 4096)
ORDER_SIZE = 8192
ORDER_GROUPS = (1, 2, 4, 8, 16)
FUSION_SHAPES = ((4096, 4096, 4096), (8192, 8192, 1024), (16384, 8192, 512))
ORDER_METRICS = (
    "gpu__time_duration.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sector_op_read_hit_rate.pct",
    "dram__bytes_read.sum",
)
TAIL_METRICS = (
    "sm__cycles_active.avg",
    "sm__cycles_active.max",
    "sm__cycles_elapsed.max",
    "gpu__time_duration.sum",
)


def _problem(m, n, k, dtype=torch.bfloat16):
    from course.bench.gemm_bench import GemmProblem

    return GemmProblem(m, n, k, dtype)


# ------------------------------------------------------------------ waves


def waves(rounds: int = 5, reps: int = 10) -> dict:
    """The SOL kernel and cuBLAS at M = K = 4096 and N in WAVE_NS, one N at a time,
    alternating rounds: the kernel's time steps where its work items cross a wave."""
    from course.bench.gemm_bench import RotatingInputs, cublas, prepare

    rows = []
    gemm = None
    for n in WAVE_NS:
        problem = _problem(WAVE_M, n, WAVE_K)
        gemm = prepare("hopper", problem, **SOL) if gemm is None else gemm  # compiled once
        rot = RotatingInputs(problem)
        t = alternating(
            {"kernel": rot.calls(gemm), "cublas": rot.calls(cublas)}, rounds, reps, warmup=3
        )
        rows.append(
            {
                "n": n,
                "kernel_ms": round(t["kernel"].median_ms, 5),
                "cublas_ms": round(t["cublas"].median_ms, 5),
                "pct_of_cublas": round_ratios(t["cublas"], t["kernel"], reps),
            }
        )
        print(f"N={n:5d} kernel {rows[-1]['kernel_ms']:.4f} ms  cuBLAS {rows[-1]['cublas_ms']:.4f}")
    return {
        "part": "waves",
        "m": WAVE_M,
        "k": WAVE_K,
        "dtype": "bf16",
        "config": "hopper_gemm Config() (128x256 tiles, 2x1 cluster, persistent)",
        "sms": torch.cuda.get_device_properties(0).multi_processor_count,
        "rounds": rounds,
        "reps": reps,
        "rows": rows,
    }


# ------------------------------------------------------------------ the tail under ncu


def _child(argv: list[str]) -> None:
    """Under ncu: prepare one GEMM (the SOL kernel with overrides, or cuBLAS) for M x N x K
    and launch it five times."""
    from course.bench.gemm_bench import cublas, prepare

    which, m, n, k, *overrides = argv
    config = {key: int(v) if v.isdigit() else v for key, v in (o.split("=") for o in overrides)}
    problem = _problem(int(m), int(n), int(k))
    a, b = problem.operands()
    c = problem.output()
    fn = prepare("hopper", problem, **config) if which == "kernel" else cublas
    for _ in range(5):
        fn(a, b, c)
    torch.cuda.synchronize()


def _ncu(which: str, m: int, n: int, k: int, metrics, overrides: dict) -> dict:
    from course.bench import ncu

    regex = "kernel_cutlass" if which == "kernel" else "nvjet|gemm|xmma"
    argv = [sys.executable, "-m", "course.bench.last_percent", "_child", which, str(m), str(n)]
    argv += [str(k), *(f"{key}={v}" for key, v in overrides.items())]
    launches = ncu.profile(argv, regex, metrics)
    return dict(launches[-1].metrics)


def tail() -> dict:
    """SM-active cycles (mean and most over the SMs) against elapsed cycles for the SOL
    kernel at TAIL_NS: just below and just past a whole number of waves."""
    rows = []
    for n in TAIL_NS:
        got = _ncu("kernel", WAVE_M, n, WAVE_K, TAIL_METRICS, SOL)
        rows.append({"n": n, **got})
        print(n, got)
    return {"part": "tail", "m": WAVE_M, "k": WAVE_K, "dtype": "bf16", "rows": rows}


# ------------------------------------------------------------------ launch overhead


def _host_us(call, calls: int = 300) -> float:
    """Host microseconds per call, the GPU kept busy enough not to throttle the queue."""
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    us = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return round(us, 2)


def launch(rounds: int = 10) -> dict:
    """Host time of one call (the course's run() with its checks, its compiled kernel called
    directly, torch.mm), then device time per GEMM eager and replayed from a CUDA graph,
    against cuBLAS, at LAUNCH_SIZES."""
    from course.bench.gemm_bench import benchmark_gemm, prepare
    from kernels import hopper_gemm
    from kernels.host import current_stream

    problem = _problem(256, 256, 256)
    a, b = problem.operands()
    c = problem.output()
    gemm = prepare("hopper", problem, **SOL)
    _, kernel, args = hopper_gemm.GEMM.launch_arguments(a, b, c, hopper_gemm.Config())
    stream = current_stream()
    graph = graphed([lambda: gemm(a, b, c)], 1)
    host = {
        "course run()": _host_us(lambda: gemm(a, b, c)),
        "compiled kernel, arguments made once": _host_us(lambda: kernel(*args, stream)),
        "torch.mm (cuBLAS)": _host_us(lambda: torch.mm(a, b.t(), out=c)),
        "CUDA graph replay (one GEMM)": _host_us(graph),
    }
    print(host)
    sizes = []
    for size in LAUNCH_SIZES:
        p = _problem(size, size, size)
        g = prepare("hopper", p, **SOL)
        row = {"size": size}
        for mode, use_graph in (("eager", False), ("graph", True)):
            # eager: the host's launch time counted, as a Python loop of launches pays it
            r = benchmark_gemm(g, p, "sol", rounds=rounds, reps=10, graph=use_graph, hold=use_graph)
            row[mode] = {
                "kernel_us": round(r.kernel_ms * 1e3, 2),
                "cublas_us": round(r.cublas_ms * 1e3, 2),
                "pct_of_cublas": r.rounds_pct,
                "control_pct": r.control_pct,
            }
        sizes.append(row)
        print(row)
    return {"part": "launch", "dtype": "bf16", "host_us": host, "sizes": sizes, "rounds": rounds}


# ------------------------------------------------------------------ tile order


def order(rounds: int = 10) -> dict:
    """The SOL kernel at ORDER_SIZE^3 with each group_m of ORDER_GROUPS: L2 read sectors,
    their hit rate and DRAM bytes (ncu, base clock), and time against cuBLAS."""
    from course.bench.gemm_bench import benchmark_gemm, prepare

    size = ORDER_SIZE
    rows = []
    for group in ORDER_GROUPS:
        counters = _ncu("kernel", size, size, size, ORDER_METRICS, {**SOL, "group_m": group})
        p = _problem(size, size, size)
        r = benchmark_gemm(prepare("hopper", p, group_m=group), p, f"group_m={group}", rounds)
        rows.append(
            {
                "group_m": group,
                "counters": counters,
                "pct_of_cublas": r.rounds_pct,
                "control_pct": r.control_pct,
                "kernel_ms": round(r.kernel_ms, 4),
            }
        )
        print(rows[-1])
    cublas = _ncu("cublas", size, size, size, ORDER_METRICS, {})
    return {"part": "order", "size": size, "dtype": "bf16", "rows": rows, "cublas": cublas}


# ------------------------------------------------------------------ L2 cache hints

# (a_l2, b_l2): none; A kept longest (a group's rows of A are read again at every column of
# the group); that and B evicted first (a column of B is done with after the group's rows);
# B kept longest
HINTS = (("normal", "normal"), ("last", "normal"), ("last", "first"), ("normal", "last"))
HINT_SIZES = (4096, 8192)


def hints(rounds: int = 15, reps: int = 10) -> dict:
    """The SOL kernel with each pair of L2 eviction priorities (HINTS) on its TMA loads: DRAM
    bytes, L2 sectors and hit rate at ORDER_SIZE^3 (ncu), and time against cuBLAS at
    HINT_SIZES^3 bf16 in alternating rounds."""
    from course.bench.gemm_bench import prepare

    size = ORDER_SIZE
    counters = {
        f"A {a}, B {b}": _ncu(
            "kernel", size, size, size, ORDER_METRICS, {**SOL, "a_l2": a, "b_l2": b}
        )
        for a, b in HINTS
    }
    print(counters)
    rows = []
    for n in HINT_SIZES:
        problem = _problem(n, n, n)
        contenders = {
            f"A {a}, B {b}": prepare("hopper", problem, **SOL, a_l2=a, b_l2=b) for a, b in HINTS
        }
        rows.append(against_cublas(problem, contenders, rounds, reps))
    return {"part": "hints", "dtype": "bf16", "size": size, "counters": counters, "rows": rows,
            "rounds": rounds, "reps": reps}  # fmt: skip


# ------------------------------------------------------------------ fusion


def fusion(rounds: int = 15, reps: int = 10) -> dict:
    """y = GELU(A . B^T + bias): the course's fused kernel, the course's GEMM then torch's
    bias add and GELU, cuBLAS then the same, and cuBLASLt's own fused GELU epilogue
    (torch._addmm_activation, timed twice: the control), in alternating rounds."""
    import torch.nn.functional as F

    from course.bench.gemm_bench import RotatingInputs, cublas, prepare
    from kernels import fused_gemm

    rows = []
    for m, n, k in FUSION_SHAPES:
        problem = _problem(m, n, k)
        rot = RotatingInputs(problem)
        bias = torch.randn(n, device="cuda")
        bias16 = bias.to(problem.dtype)
        plain = prepare("hopper", problem, **SOL)
        fused_gemm.GEMM.prepare(problem, fused_gemm.PRESETS["bias_gelu"])

        def epilogue(c):  # two more kernels: C + bias, then GELU, each a trip through HBM
            return F.gelu(torch.add(c, bias16), approximate="tanh")

        def course_then_torch(a, b, c):
            return epilogue(plain(a, b, c))

        def cublas_then_torch(a, b, c):
            cublas(a, b, c)
            return epilogue(c)

        def cublaslt_fused(a, b, c):
            return torch._addmm_activation(bias16, a, b.t(), use_gelu=True)

        def calls(fn):
            return [(lambda a=a, b=b, c=c: fn(a, b, c)) for (a, b), c in zip(rot.inputs, rot.outs)]

        pingpong = fused_gemm.PRESETS["bias_gelu_pingpong"]
        fused_gemm.GEMM.prepare(problem, pingpong)
        contenders = {
            "fused (course)": calls(lambda a, b, c: fused_gemm.run(a, b, bias, c)),
            "fused, ping-pong (course)": calls(
                lambda a, b, c: fused_gemm.run(a, b, bias, c, pingpong)
            ),
            "GEMM (course) + torch": calls(course_then_torch),
            "GEMM (course) alone": calls(plain),
            "cuBLAS + torch": calls(cublas_then_torch),
            "cuBLASLt fused": calls(cublaslt_fused),
            "cuBLASLt fused (control)": calls(cublaslt_fused),
        }
        a, b = rot.inputs[0]
        want = fused_gemm.reference(a, b, bias, "bias_gelu")
        got = fused_gemm.run(a, b, bias, rot.outs[0]).float()
        err = ((got - want).abs() / (want.abs() + 1)).max().item()
        t = alternating(contenders, rounds, reps, warmup=3)
        ref = t["cuBLASLt fused"]
        rows.append(
            {
                "shape": [m, n, k],
                "max_rel_error": err,
                "ms": {name: round(x.median_ms, 5) for name, x in t.items()},
                "pct_of_cublaslt_fused": {
                    name: round_ratios(ref, x, reps) for name, x in t.items() if x is not ref
                },
            }
        )
        print(rows[-1])
    return {"part": "fusion", "dtype": "bf16", "epilogue": "bias_gelu", "rows": rows,
            "rounds": rounds, "reps": reps}  # fmt: skip


# ------------------------------------------------------------------ the SOL kernel and NVIDIA's

SOL_SHAPES = (4096, 8192)
# in NVIDIA/cutlass, examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/
EXAMPLE = "dense_gemm_persistent.py"


def nvidia_example(path: str, problem, tile=(128, 256), cluster=(2, 1)):
    """gemm(a, b, c) running NVIDIA's CuTe DSL persistent Hopper GEMM example (the file at
    `path`, not part of the course) with the course's tile and cluster, compiled once; its
    cute tensors are made once per torch tensor."""
    import importlib.util

    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernels.host import max_active_clusters

    spec = importlib.util.spec_from_file_location("nvidia_dense_gemm_persistent", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.HopperWgmmaGemmPersistentKernel(cutlass.Float32, tile, cluster, 1, True)
    # the course's query, in the device's context (HardwareInfo alone found none current
    # once: CUDA_ERROR_INVALID_CONTEXT, H200, 2026-12-04)
    clusters = max_active_clusters(torch.cuda.current_device(), cluster[0] * cluster[1])
    views = {}

    def view(t):  # (rows, cols) -> (rows, cols, 1), dynamic layout, 16-byte aligned
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if key not in views:
            v = from_dlpack(t.unsqueeze(-1), assumed_align=16)
            views[key] = v.mark_layout_dynamic(leading_dim=1)
        return views[key]

    a, b = problem.operands()
    c = problem.output()
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    compiled = cute.compile(kernel, view(a), view(b), view(c), clusters, stream)

    def gemm(a, b, c):
        compiled(view(a), view(b), view(c), cuda.CUstream(torch.cuda.current_stream().cuda_stream))

    return gemm


def against_cublas(
    problem, contenders: dict, rounds: int, reps: int, relative_to: str | None = None
) -> dict:
    """Each contender (gemm(a, b, c)) checked against torch, then timed with cuBLAS, and
    cuBLAS again as the control, in alternating rounds: a row of a record. `relative_to`
    names a contender every other one is also put against, round by round."""
    from course.bench.gemm_bench import RotatingInputs, check_gemm, cublas

    rot = RotatingInputs(problem)
    checks = {name: check_gemm(fn, problem).ok for name, fn in contenders.items()}
    contenders = {**contenders, "cuBLAS": cublas, "cuBLAS (control)": cublas}
    t = alternating({k: rot.calls(v) for k, v in contenders.items()}, rounds, reps)
    ref = t["cuBLAS"]
    row = {
        "problem": str(problem),
        "checked": checks,
        "ms": {k: round(v.median_ms, 5) for k, v in t.items()},
        "pct_of_cublas": {k: round_ratios(ref, v, reps) for k, v in t.items() if v is not ref},
    }
    if relative_to is not None:
        base = t[relative_to]
        row[f"pct_of_{relative_to}"] = {
            k: round_ratios(base, v, reps) for k, v in t.items() if v is not base
        }
    print(row)
    return row


def sol(example: str | None = None, rounds: int = 15, reps: int = 10) -> dict:
    """The course's SOL kernel, NVIDIA's persistent example (same tile and cluster) and
    cuBLAS (twice: the control) at SOL_SHAPES^3 in bf16 and fp16, alternating rounds; each
    kernel's output checked against torch first."""
    from course.bench.gemm_bench import prepare

    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for size in SOL_SHAPES:
            problem = _problem(size, size, size, dtype)
            contenders = {"course SOL": prepare("hopper", problem, **SOL)}
            if example:
                contenders["NVIDIA example"] = nvidia_example(example, problem)
            rows.append(against_cublas(problem, contenders, rounds, reps))
    return {"part": "sol", "example": EXAMPLE if example else None, "rounds": rounds,
            "reps": reps, "rows": rows}  # fmt: skip


# ------------------------------------------------------------------ split-K

# few tiles and a long K (cuBLAS splits K there); a ragged problem of 3.6 waves; a square one
# of 3.9 waves; one just past a wave's edge (4.1 waves: a short last wave)
SPLIT_SHAPES = ((1024, 1024, 16384), (3000, 5000, 4096), (4096, 4096, 4096), (4096, 4224, 4096))


def split(rounds: int = 15, reps: int = 10) -> dict:
    """Each split-K preset, the SOL kernel and cuBLAS (twice: the control) at SPLIT_SHAPES in
    bf16 and fp16, alternating rounds; each kernel's output checked against torch first."""
    from course.bench.gemm_bench import prepare
    from kernels import split_k_gemm

    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for m, n, k in SPLIT_SHAPES:
            problem = _problem(m, n, k, dtype)
            contenders = {
                "course SOL": prepare("hopper", problem, **SOL),
                **{
                    name: split_k_gemm.GEMM.prepare(problem, config)
                    for name, config in split_k_gemm.PRESETS.items()
                },
            }
            rows.append({"shape": [m, n, k], **against_cublas(problem, contenders, rounds, reps)})
    return {"part": "split", "rounds": rounds, "reps": reps, "rows": rows}


# ------------------------------------------------------------------ FP8 block scales

FP8_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 16384))
# the steps `fp8` times, in order (fp8_contenders gives their configurations)
FP8_STEPS = (
    "tensor",
    "tensor, 128x128 tiles",
    "promoted every k-tile",
    "block",
    "block_prefetch",
    "block_staged",
    "block_overlapped",
)


def fp8_contenders() -> dict:
    """The FP8 kernels timed by `fp8`, each a step from the tensorwise kernel to block scales:
    the tile the promoting presets need, a promotion every k-tile without scales, the block
    scales (the exercise's kernel), their scales loaded a k-tile ahead, staged in shared
    memory by the producer, and with each promotion under the next k-tile's wgmmas."""
    from kernels import fp8_gemm

    presets = fp8_gemm.PRESETS
    configs = (
        presets["tensor"],
        fp8_gemm.Config(tile_n=128),
        fp8_gemm.Config(promote_every=1, tile_n=128),
        presets["block"],
        presets["block_prefetch"],
        presets["block_staged"],
        presets["block_overlapped"],
    )
    return dict(zip(FP8_STEPS, configs, strict=True))


def fp8_variant(spec: str) -> tuple[str, object]:
    """A configuration to time beside the steps, written on the command line as
    'PRESET:FIELD=VALUE,...' (or 'FIELD=VALUE,...', on block_overlapped), e.g.
    'block_staged:tile_n=192' or 'overlap_group=8,cluster_m=1': (its name, its Config),
    refused (course.bench.variants) before any GPU time is spent."""
    from course.bench import variants
    from kernels import fp8_gemm

    return variants.parse(spec, fp8_gemm.PRESETS, default="block_overlapped")


def fp8(rounds: int = 15, reps: int = 10, variants: tuple[str, ...] = ()) -> dict:
    """Block-scaled FP8 (DeepSeek's 1 x 128 and 128 x 128 scales) and the steps towards it
    (fp8_contenders) against the course's tensorwise kernel and cuBLAS FP8 (tensorwise, twice:
    the control) at FP8_SHAPES in e4m3, alternating rounds; each output checked against torch
    first. `variants` (fp8_variant's specs) are timed in the same rounds: a try."""
    from kernels import fp8_gemm

    configs = {**fp8_contenders(), **dict(fp8_variant(v) for v in variants)}
    rows = []
    for m, n, k in FP8_SHAPES:
        problem = _problem(m, n, k, torch.float8_e4m3fn)
        contenders = {name: fp8_gemm.prepare(problem, cfg) for name, cfg in configs.items()}
        rows.append(against_cublas(problem, contenders, rounds, reps, relative_to="tensor"))
    return {
        "part": "fp8",
        "contenders": {name: repr(cfg) for name, cfg in configs.items()},
        "rounds": rounds,
        "reps": reps,
        "rows": rows,
    }


# ------------------------------------------------------------------ programmatic launch

PDL_SIZES = (512, 1024, 2048)
PDL_LAYERS = 8


def _chain(gemm, x0, weights, outs):
    """x <- gemm(x, W_i) through `weights`, alternating between the two `outs`."""

    def run():
        x = x0
        for i, w in enumerate(weights):
            gemm(x, w, outs[i % 2])
            x = outs[i % 2]
        return x

    return run


def pdl(rounds: int = 15, reps: int = 10) -> dict:
    """A chain of PDL_LAYERS square GEMMs (x <- x . W_i^T, bf16) replayed from one CUDA graph:
    the SOL kernel without and with programmatic dependent launch, and cuBLAS (twice: the
    control), alternating rounds; first each chain's relative error against torch's chain,
    its buffers poisoned with NaN, is recorded."""
    from course.bench.gemm_bench import prepare
    from course.bench.timing import graphed

    def torch_mm(a, b, c):
        torch.mm(a, b.t(), out=c)

    rows = []
    for size in PDL_SIZES:
        problem = _problem(size, size, size)
        g = torch.Generator(device="cuda").manual_seed(size)
        x0 = torch.randn(size, size, device="cuda", generator=g).bfloat16()
        weights = [
            (torch.randn(size, size, device="cuda", generator=g) / size**0.5).bfloat16()
            for _ in range(PDL_LAYERS)
        ]
        gemms = {
            "SOL": prepare("hopper", problem, **SOL),
            "SOL + PDL": prepare("hopper", problem, **SOL, pdl=True),
            "cuBLAS": torch_mm,
            "cuBLAS (control)": torch_mm,
        }
        chains = {}
        errors = {}
        want = _chain(torch_mm, x0, weights, [torch.empty_like(x0) for _ in "ab"])().float()
        for name, gemm in gemms.items():
            outs = [torch.empty_like(x0) for _ in "ab"]
            chains[name] = graphed([_chain(gemm, x0, weights, outs)], 1)
            for out in outs:
                out.fill_(float("nan"))
            chains[name]()
            torch.cuda.synchronize()
            got = outs[(PDL_LAYERS - 1) % 2].float()
            errors[name] = float((got - want).norm() / want.norm())
        t = alternating({k: [v] for k, v in chains.items()}, rounds, reps)
        row = {
            "size": size,
            "layers": PDL_LAYERS,
            "relative_error_vs_torch": {k: round(v, 5) for k, v in errors.items()},
            "chain_us": {k: round(v.median_ms * 1e3, 2) for k, v in t.items()},
            "pct_of_cublas": {
                k: round_ratios(t["cuBLAS"], v, reps) for k, v in t.items() if k != "cuBLAS"
            },
            "pdl_pct_of_sol": round_ratios(t["SOL"], t["SOL + PDL"], reps),
        }
        print(row)
        rows.append(row)
    return {
        "part": "pdl",
        "method": "one CUDA graph per chain",
        "rounds": rounds,
        "reps": reps,
        "rows": rows,
    }


PARTS = {
    "fp8": fp8,
    "pdl": pdl,
    "hints": hints,
    "split": split,
    "waves": waves,
    "tail": tail,
    "launch": launch,
    "order": order,
    "fusion": fusion,
    "sol": sol,
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        _child(argv[1:])
        return 0
    p = argparse.ArgumentParser(prog="python -m course.bench.last_percent")
    p.add_argument("parts", nargs="+", choices=sorted(PARTS))
    p.add_argument("--record", action="store_true")
    p.add_argument("--example", help=f"sol: the path of NVIDIA's {EXAMPLE}, timed beside")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="fp8: a configuration timed beside the steps, PRESET:FIELD=VALUE,... (fp8_variant)",
    )
    args = p.parse_args(argv)
    for spec in args.variant:  # refused before the GPU is asked for anything
        fp8_variant(spec)
    if not torch.cuda.is_available():
        print("these measurements need a CUDA GPU (an sm_90a one for the course's kernels)")
        return 2
    failed = 0
    for part in args.parts:
        try:
            if part == "sol":
                data = PARTS[part](args.example)
            elif part == "fp8":
                data = PARTS[part](variants=tuple(args.variant))
            else:
                data = PARTS[part]()
        except Exception:  # one part's failure must not cost the others' GPU time
            traceback.print_exc()
            failed += 1
            continue
        if args.record:
            from course.runtime import results

            results.record("last_percent", data)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
