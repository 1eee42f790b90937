"""The ladder kernels of notebooks 00-11 run on the CPU executor, one call each.

    from course.execute import ladder_runs
    r = ladder_runs.run_vector_add(1000)
    r.ok, r.relative_error, r.observed      # the kernel's own code, run on numpy

Each `run_*` builds the case's inputs from a fixed seed (`inputs(case)`, the same the H100
recording uses: `python -m course.tools.record_executor_ladder`), poisons the output with
NaN followed by a guard zone, runs the kernel's own host function (`@cute.jit`) on the executor, and
returns a `LadderRun`: the output, the float64 torch reference, the relative error against
the kernel's tolerance, and what the executor observed (grid, threads, hazards, bank
conflicts per line where shared memory is the point). A hazard is an answer too: the run
is returned with `hazard` set instead of raising.
"""

from __future__ import annotations

import base64
import time
import zlib
from dataclasses import dataclass, field

import numpy as np
import torch

from course.execute import hazards
from course.execute.runner import pointer, run

GUARD = 256
SEED = 2025
# the Hopper steps and hopper_gemm's presets (kernels.hopper_gemm.PRESETS, named here so that
# importing this module needs no CuTe DSL)
HOPPER_GEMMS = ("tma_gemm", "wgmma_gemm", "hopper_gemm")
HOPPER_PRESETS = ("specialized", "persistent", "cluster", "tma_store", "pingpong", "pingpong_2x2")

# case -> the problem; the inputs are inputs(case), the same on the CPU and on the H100
CASES = {
    "vector_add": {"n": 1000},
    "naive_gemm": {"m": 129, "n": 130, "k": 17},
    "copies.scalar": {"n": 4100, "variant": "scalar"},
    "copies.strided": {"n": 4100, "variant": "strided"},
    "copies.vector": {"n": 4100, "variant": "vector"},
    "copies.tiled": {"n": 4100, "variant": "tiled"},
    "copies.cp_async": {"n": 4100, "variant": "cp_async"},
    "smem_transpose.plain": {"m": 100, "n": 67, "layout": "plain"},
    "smem_transpose.padded": {"m": 100, "n": 67, "layout": "padded"},
    "smem_transpose.swizzled": {"m": 100, "n": 67, "layout": "swizzled"},
    "mma_atom.1x1": {"warps": (1, 1)},
    "mma_atom.2x4": {"warps": (2, 4)},
    "sm80_gemm": {"m": 256, "n": 256, "k": 128},
    "sm80_gemm.ragged": {"m": 129, "n": 264, "k": 72},
    # notebooks 09-11: the Hopper ladder (bf16 in and out), recorded on the H100 too
    "tma_gemm": {"m": 256, "n": 256, "k": 192, "ring": "mbarrier"},
    "tma_gemm.pipeline": {"m": 256, "n": 256, "k": 192, "ring": "pipeline"},
    "tma_gemm.ragged": {"m": 129, "n": 264, "k": 200, "ring": "mbarrier"},
    "wgmma_gemm": {"m": 256, "n": 256, "k": 192},
    "wgmma_gemm.ragged": {"m": 129, "n": 264, "k": 200},
    **{
        f"hopper_gemm.{preset}": {"m": 256, "n": 256, "k": 192, "preset": preset}
        for preset in HOPPER_PRESETS
    },
    "hopper_gemm.tma_store.ragged": {"m": 129, "n": 264, "k": 200, "preset": "tma_store"},
}
RECORDED = tuple(CASES)  # the cases the H100 record holds (custom problems come later)
GEMMS = ("naive_gemm", "mma_atom", "sm80_gemm", *HOPPER_GEMMS)


@dataclass
class LadderRun:
    """One ladder kernel run on the executor, and what it showed."""

    case: str
    output: torch.Tensor | None
    reference: torch.Tensor
    tolerance: float
    seconds: float
    observed: list[str] = field(default_factory=list)
    hazard: hazards.Hazard | None = None
    written_past: int = 0  # elements written into the guard zone past the end of the output

    @property
    def relative_error(self) -> float:
        from kernels.selftest import relative_error

        if self.output is None:
            return float("nan")
        return relative_error(self.output, self.reference)

    @property
    def ok(self) -> bool:
        return (
            self.hazard is None and self.written_past == 0 and self.relative_error <= self.tolerance
        )

    def summary(self) -> str:
        head = (
            f"{self.case}: executed on the CPU executor in {self.seconds:.1f} s "
            f"(values and hazards, no speed)"
        )
        if self.hazard is not None:
            return f"{head}; stopped: {self.hazard}"
        return (
            f"{head}; relative error {self.relative_error:.1e} against torch "
            f"(tolerance {self.tolerance:.0e})" + "".join(f"\n  {o}" for o in self.observed)
        )


def inputs(case: str, device: str = "cpu") -> dict:
    """The case's input tensors, from a fixed seed (identical on every machine)."""
    p = CASES[case]
    g = torch.Generator().manual_seed(SEED + sum(map(ord, case)))

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device)

    kernel = case.split("@")[0].split(".")[0]
    if kernel == "vector_add":
        return {"a": randn(p["n"]), "b": randn(p["n"])}
    if kernel == "naive_gemm":
        return {"a": randn(p["k"], p["m"]).t(), "b": randn(p["k"], p["n"]).t()}
    if kernel == "copies":
        return {"src": randn(p["n"])}
    if kernel == "smem_transpose":
        return {"x": randn(p["m"], p["n"])}
    if kernel == "mma_atom":
        from kernels import mma_atom

        m, n, k = mma_atom.Config(*p["warps"]).shape_mnk
        return {"a": randn(m, k).to(torch.bfloat16), "b": randn(n, k).to(torch.bfloat16)}
    if kernel in ("sm80_gemm", *HOPPER_GEMMS):
        return {
            "a": randn(p["m"], p["k"]).to(torch.bfloat16),
            "b": randn(p["n"], p["k"]).to(torch.bfloat16),
        }
    raise KeyError(case)


def reference(case: str, x: dict) -> torch.Tensor:
    kernel = case.split("@")[0].split(".")[0]
    if kernel == "vector_add":
        return x["a"].double() + x["b"].double()
    if kernel in GEMMS:
        return x["a"].double() @ x["b"].double().T
    if kernel == "copies":
        return x["src"].double()
    if kernel == "smem_transpose":
        return x["x"].double().t()
    raise KeyError(case)


# How results/executor_ladder.json stores a GPU output. Raw bf16/fp32 bytes do not compress,
# but the GPU's output is nearly the torch reference rounded to the output's dtype: stored as
# the difference of their bit patterns (output bits minus reference bits, as unsigned integers
# of the element's width, wrapping), which is mostly zeros and compresses to 1% or less.
# Decoding adds the difference to the bits of the reference computed here: on the machine that
# encoded it the output comes back bit for bit. Where another machine's float64 reference
# (another BLAS, another summation order) rounds to a neighbouring value in a few elements,
# those elements come back one unit in the last place off the GPU's -- within the tolerance the
# executor's output is compared with, though not bit for bit. (A difference, not an XOR: a
# reference one ulp off moves an XOR-decoded value by up to every bit its carry crossed.)
RAW_B64 = "raw_b64"  # the first form: "output_b64", the output's own bytes
MINUS_REFERENCE = "bits_minus_reference_zlib_b64"  # in "output_minus_reference_zlib_b64"
_UNSIGNED = {2: (torch.int16, "<u2"), 4: (torch.int32, "<u4")}


def _reference_bits(case: str, dtype: torch.dtype, shape) -> np.ndarray:
    ref = reference(case, inputs(case)).to(dtype).contiguous()
    if tuple(ref.shape) != tuple(shape):
        raise ValueError(f"{case}: output {tuple(shape)}, reference {tuple(ref.shape)}")
    signed, unsigned = _UNSIGNED[ref.element_size()]
    return ref.view(signed).numpy().view(np.dtype(unsigned)).reshape(-1)


def encode_output(case: str, output: torch.Tensor) -> dict:
    """The fields a record keeps of one case's GPU output: dtype, shape, and the output as
    its bits minus the rounded reference's (`MINUS_REFERENCE`); `recorded_output` reads it."""
    out = output.detach().cpu().contiguous()
    ref = _reference_bits(case, out.dtype, out.shape)
    bits = out.view(_UNSIGNED[out.element_size()][0]).numpy().view(ref.dtype).reshape(-1)
    diff = (bits - ref).astype(ref.dtype)  # unsigned: wraps modulo 2**width
    return {
        "dtype": str(out.dtype).replace("torch.", ""),
        "shape": list(out.shape),
        "encoding": MINUS_REFERENCE,
        "output_minus_reference_zlib_b64": base64.b64encode(
            zlib.compress(np.ascontiguousarray(diff).tobytes(), 9)
        ).decode(),
    }


def recorded_output(case: str, saved: dict) -> torch.Tensor:
    """One case's GPU output from its record (`encode_output`'s fields, or the first form's
    raw bytes, "output_b64"). The first is the recorded bits plus this machine's rounded
    reference: bit for bit where the reference rounds as it did where the record was encoded,
    else one ulp off in the few elements where it does not (see MINUS_REFERENCE)."""
    dtype = getattr(torch, saved["dtype"])
    encoding = saved.get("encoding", RAW_B64)
    if encoding == RAW_B64:
        raw = np.frombuffer(base64.b64decode(saved["output_b64"]), dtype=np.uint8).copy()
    elif encoding == MINUS_REFERENCE:
        ref = _reference_bits(case, dtype, saved["shape"])
        packed = zlib.decompress(base64.b64decode(saved["output_minus_reference_zlib_b64"]))
        raw = (ref + np.frombuffer(packed, dtype=ref.dtype)).astype(ref.dtype).view(np.uint8)
    else:
        raise ValueError(f"{case}: unknown encoding {encoding!r}")
    return torch.from_numpy(raw).view(dtype).view(saved["shape"])


def _guarded(shape, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    numel = 1
    for s in shape:
        numel *= s
    buffer = torch.full((numel + GUARD,), float("nan"), dtype=dtype)
    return buffer[:numel].view(shape), buffer


def _run_case(
    case: str,
    launch,
    out_shape,
    out_dtype,
    tolerance_dtype,
    seed: int = 0,
) -> LadderRun:
    x = inputs(case)
    return execute(case, x, reference(case, x), launch, out_shape, out_dtype, tolerance_dtype, seed)


def execute(
    case: str,
    x: dict,
    ref: torch.Tensor,
    launch,
    out_shape,
    out_dtype,
    tolerance_dtype,
    seed: int = 0,
    notes=lambda: [],
    tolerance: float | None = None,
) -> LadderRun:
    """Run `launch(x, out, seed)` (a host function on the executor) into a NaN-poisoned,
    guarded output; its LadderRun against `ref` (within `tolerance`, by default the kernel's
    for `tolerance_dtype`), with what it observed (and `notes()`, what the caller saw of the
    run) or the hazard that stopped it. A write past the end of the output fails the run."""
    from kernels.selftest import TOLERANCE

    out, buffer = _guarded(out_shape, out_dtype)
    start = time.perf_counter()
    observed, hazard, written_past = [], None, 0
    try:
        result = launch(x, out, seed)
        for launched in result.launches:
            g, b = launched.grid, launched.block
            ctas, threads = g[0] * g[1] * g[2], b[0] * b[1] * b[2]
            observed.append(
                f"grid {g[0]}x{g[1]}x{g[2]} = {ctas} CTA(s) of {threads} threads, "
                f"seed {seed}: no hazard"
            )
        observed += [line.line() for line in result.bank_lines()]
        observed += notes()
        written_past = int((~torch.isnan(buffer[out.numel() :].float())).sum())
        if written_past:
            observed.append(f"wrote {written_past} element(s) past the end of the output")
    except hazards.Hazard as exc:
        hazard = exc
    return LadderRun(
        case,
        None if hazard else out,
        ref,
        TOLERANCE[tolerance_dtype] if tolerance is None else tolerance,
        time.perf_counter() - start,
        observed,
        hazard,
        written_past,
    )


# ---------------------------------------------------------------- one function per kernel


def run_vector_add(n: int = 1000, seed: int = 0) -> LadderRun:
    """Notebook 00/01: c = a + b, one element per thread (kernels.vector_add.add)."""
    from kernels import vector_add

    case = _case("vector_add", n=n)

    def launch(x, out, seed):
        return run(
            vector_add.add,
            pointer(x["a"], "a"),
            pointer(x["b"], "b"),
            pointer(out, "c"),
            x["a"].numel(),
            None,
            256,
            seed=seed,
        )

    return _run_case(case, launch, (CASES[case]["n"],), torch.float32, torch.float32, seed)


def run_gemm_object(gemm, x: dict, out: torch.Tensor, problem: dict, seed: int, extra=()):
    """A GEMM object's host call (A, B, C, m, n, k, *extra, stream) on the executor."""
    return run(
        gemm.__call__,
        pointer(x["a"], "A"),
        pointer(x["b"], "B"),
        pointer(out, "C"),
        problem["m"],
        problem["n"],
        problem["k"],
        *extra,
        None,
        seed=seed,
    )


def run_naive_gemm(m: int = 129, n: int = 130, k: int = 17, seed: int = 0) -> LadderRun:
    """Notebook 03: the naive GEMM (kernels.naive_gemm), fp32, A M-major, B N-major."""
    from kernels import naive_gemm

    case = _case("naive_gemm", m=m, n=n, k=k)
    p = CASES[case]

    def launch(x, out, seed):
        gemm = naive_gemm.NaiveGemm(naive_gemm.Config(), "m", "n")
        return run_gemm_object(gemm, x, out, p, seed)

    return _run_case(case, launch, (p["m"], p["n"]), torch.float32, torch.float32, seed)


def run_copy(variant: str = "tiled", n: int = 4100, seed: int = 0) -> LadderRun:
    """Notebook 04: one of kernels.copies' five copies."""
    from kernels import copies

    case = _case(f"copies.{variant}", n=n)
    cfg = copies.Config(variant=variant)

    def launch(x, out, seed):
        return run(
            copies.copy,
            pointer(x["src"], "src"),
            pointer(out, "dst"),
            x["src"].numel(),
            None,
            cfg.variant,
            cfg.threads_per_block,
            cfg.values,
            seed=seed,
        )

    return _run_case(case, launch, (CASES[case]["n"],), torch.float32, torch.float32, seed)


def run_transpose(layout: str = "swizzled", m: int = 100, n: int = 67, seed: int = 0) -> LadderRun:
    """Notebook 05: the transpose through a 32x32 shared-memory tile (kernels.smem_transpose),
    with the bank model's count of every shared-memory access line."""
    from kernels import smem_transpose

    case = _case(f"smem_transpose.{layout}", m=m, n=n)
    p = CASES[case]

    def launch(x, out, seed):
        return run(
            smem_transpose.transpose,
            pointer(x["x"], "in", 4),
            pointer(out, "out", 4),
            p["m"],
            p["n"],
            None,
            smem_transpose.LAYOUTS[layout],
            seed=seed,
            count_banks=True,
        )

    return _run_case(case, launch, (p["n"], p["m"]), torch.float32, torch.float32, seed)


def run_mma_atom(warps: tuple[int, int] = (1, 1), seed: int = 0) -> LadderRun:
    """Notebook 06: one tile of mma.sync m16n8k16 atoms (kernels.mma_atom's micro-GEMM)."""
    import cutlass

    from kernels import mma_atom

    case = _case(f"mma_atom.{warps[0]}x{warps[1]}", warps=tuple(warps))
    cfg = mma_atom.Config(*warps)
    m, n, _ = cfg.shape_mnk

    def launch(x, out, seed):
        kernels = mma_atom._Kernels(cutlass.BFloat16, cfg)
        return run(
            kernels.gemm,
            pointer(x["a"], "A"),
            pointer(x["b"], "B"),
            pointer(out, "C"),
            None,
            seed=seed,
        )

    return _run_case(case, launch, (m, n), torch.float32, torch.float32, seed)


def run_mma_stamp(warps: tuple[int, int] = (1, 1)) -> tuple[torch.Tensor, torch.Tensor]:
    """Notebook 06's stamp kernel (kernels.mma_atom): each thread writes its index (and value
    index) into the C cells its accumulators map to. (owner, value) int32 maps of C."""
    import cutlass

    from kernels import mma_atom

    cfg = mma_atom.Config(*warps)
    m, n, _ = cfg.shape_mnk
    owner = torch.full((m, n), -1, dtype=torch.int32)
    value = torch.full((m, n), -1, dtype=torch.int32)
    kernels = mma_atom._Kernels(cutlass.BFloat16, cfg)
    run(kernels.stamp, pointer(owner, "owner", 4), pointer(value, "value", 4), None)
    return owner, value


def run_sm80_gemm(
    m: int = 256, n: int = 256, k: int = 128, seed: int = 0, config=None
) -> LadderRun:
    """Notebook 07: the SM80 GEMM (kernels.sm80_gemm): cp.async ring, swizzled shared memory,
    ldmatrix, mma.sync, epilogue through shared memory; bf16 in and out."""
    import cutlass

    from kernels import sm80_gemm
    from kernels.gemm_host import GemmTypes

    case = _case("sm80_gemm", m=m, n=n, k=k)
    p = CASES[case]

    def launch(x, out, seed):
        gemm = sm80_gemm.Sm80Gemm(
            GemmTypes(cutlass.BFloat16, cutlass.Float32, cutlass.BFloat16),
            config or sm80_gemm.Config(),
        )
        return run_gemm_object(gemm, x, out, p, seed)

    return _run_case(case, launch, (p["m"], p["n"]), torch.bfloat16, torch.bfloat16, seed)


def _hopper_types():
    import cutlass

    from kernels.gemm_host import GemmTypes

    return GemmTypes(cutlass.BFloat16, cutlass.Float32, cutlass.BFloat16)


def run_tma(
    kernel: str = "load", shape=(100, 72), dtype=torch.bfloat16, config=None, seed: int = 0
) -> LadderRun:
    """Notebook 08's TMA kernels (kernels.tma): "load" (TMA in, plain stores out), "boxes"
    (every box as it landed, zero fill included), "store" (plain loads in, TMA out) on a
    (rows, cols) tensor; "multicast" (kernels.tma.MulticastConfig: every CTA of a cluster
    receives every tile, each loading 1/n of it) on one cluster's tiles. Exact, or a hazard."""
    import cutlass

    from kernels import tma

    cdt = {torch.bfloat16: cutlass.BFloat16, torch.float16: cutlass.Float16}.get(
        dtype, cutlass.Float32
    )
    g = torch.Generator().manual_seed(SEED + sum(map(ord, kernel)))
    if kernel == "multicast":
        cfg = config or tma.MulticastConfig(cluster=2, tiles=2)
        rows, cols = cfg.tiles * cfg.box.box_rows, cfg.box.box_cols
    else:
        cfg = config or tma.Config()
        rows, cols = shape
    x = torch.randn(rows, cols, generator=g).to(dtype)
    if kernel == "multicast":
        want = x.repeat(cfg.cluster, 1)
        host = tma.TmaMulticast(cdt, cfg, write_out=True)
        args = (1, 2)
    elif kernel == "boxes":
        down, across = tma.tiles((rows, cols), cfg)
        want = torch.zeros(down * cfg.box_rows, across * cfg.box_cols, dtype=dtype)
        want[:rows, :cols] = x
        host = tma.TmaLoad(cdt, cfg, "boxes")
        args = (rows, cols, cols, want.shape[1])
    else:
        want = x
        host = tma.TmaStore(cdt, cfg) if kernel == "store" else tma.TmaLoad(cdt, cfg, "copy")
        args = (rows, cols, cols, cols)

    def launch(x, out, seed):
        return run(
            host.__call__, pointer(x["x"], "src"), pointer(out, "dst"), *args, None, seed=seed
        )

    # exact: tolerance 0
    return execute(
        f"tma.{kernel}",
        {"x": x},
        want.double(),
        launch,
        tuple(want.shape),
        dtype,
        None,
        seed,
        tolerance=0.0,
    )


def run_tma_gemm(
    m: int = 256,
    n: int = 256,
    k: int = 192,
    ring: str = "mbarrier",
    seed: int = 0,
    config=None,
    dtype=None,
) -> LadderRun:
    """Notebook 09: TMA loads into an mbarrier ring and mma.sync (kernels.tma_gemm), the ring
    written by hand (`ring="mbarrier"`) or as NVIDIA's PipelineTmaAsync (`"pipeline"`, run
    translated on the executor's mbarriers); bf16 in and out (or `dtype`, a cutlass type)."""
    import cutlass

    from kernels import tma_gemm
    from kernels.gemm_host import GemmTypes

    case = _case("tma_gemm", m=m, n=n, k=k, ring=ring)
    p = CASES[case]
    ab = dtype or cutlass.BFloat16
    torch_dtype = torch.float16 if ab is cutlass.Float16 else torch.bfloat16

    def launch(x, out, seed):
        cfg = config or tma_gemm.Config(ring=ring)
        gemm = tma_gemm._kernel(GemmTypes(ab, cutlass.Float32, ab), cfg, None, None, None)
        a, b = (x[name].to(torch_dtype) for name in ("a", "b"))
        report = torch.zeros(tma_gemm.REPORT_WORDS, dtype=torch.int32)
        return run(
            gemm.__call__,
            pointer(a, "A"),
            pointer(b, "B"),
            pointer(out, "C"),
            p["m"],
            p["n"],
            p["k"],
            pointer(report, "report"),
            None,
            seed=seed,
        )

    return _run_case(case, launch, (p["m"], p["n"]), torch_dtype, torch_dtype, seed)


def run_wgmma_gemm(
    m: int = 256, n: int = 256, k: int = 192, seed: int = 0, config=None
) -> LadderRun:
    """Notebook 10: WGMMA from shared-memory descriptors on step 09's PipelineTmaAsync ring
    (kernels.wgmma_gemm), two consumer warpgroups; bf16 in and out."""
    from kernels import wgmma_gemm

    case = _case("wgmma_gemm", m=m, n=n, k=k)
    p = CASES[case]

    def launch(x, out, seed):
        gemm = wgmma_gemm.WgmmaGemm(_hopper_types(), config or wgmma_gemm.Config())
        return run_gemm_object(gemm, x, out, p, seed)

    return _run_case(case, launch, (p["m"], p["n"]), torch.bfloat16, torch.bfloat16, seed)


def run_hopper_gemm(
    preset: str = "tma_store", m: int = 256, n: int = 256, k: int = 192, seed: int = 0
) -> LadderRun:
    """Notebook 11: one preset of kernels.hopper_gemm (warp specialization, persistence,
    clusters, TMA store, ping-pong), persistent over one cluster (max_clusters = 1: it walks
    every tile of the problem); bf16 in and out."""
    from kernels import hopper_gemm

    case = _case(f"hopper_gemm.{preset}", m=m, n=n, k=k)
    p = CASES[case]

    def launch(x, out, seed):
        gemm = hopper_gemm.HopperGemm(_hopper_types(), hopper_gemm.PRESETS[preset])
        return run_gemm_object(gemm, x, out, p, seed, extra=(1,))  # max_clusters = 1

    return _run_case(case, launch, (p["m"], p["n"]), torch.bfloat16, torch.bfloat16, seed)


def fp8_inputs(
    m: int,
    n: int,
    k: int,
    scales: str,
    dtype=torch.float8_e4m3fn,
    exact: bool = True,
    seed: int = 0,
) -> dict:
    """Inputs of kernels.fp8_gemm: A, B in `dtype` and their float32 scales for `scales`.
    exact: integer-valued A and B in [-8, 8] and power-of-two scales, so that every sum is
    exact in fp32 and the result equals the float64 reference once rounded to C's type;
    otherwise normal values (quantized to fp8) and scales in [0.5, 2)."""
    from kernels.fp8_scales import scale_shapes

    g = torch.Generator().manual_seed(SEED + seed)
    sa, sb = scale_shapes(m, n, k, scales)
    if exact:
        a = torch.randint(-8, 9, (m, k), generator=g).float()
        b = torch.randint(-8, 9, (n, k), generator=g).float()
        a_scale = 2.0 ** torch.randint(-3, 4, sa, generator=g).float()
        b_scale = 2.0 ** torch.randint(-3, 4, sb, generator=g).float()
    else:
        a, b = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
        a_scale = 0.5 + 1.5 * torch.rand(sa, generator=g)
        b_scale = 0.5 + 1.5 * torch.rand(sb, generator=g)
    return {"a": a.to(dtype), "b": b.to(dtype), "a_scale": a_scale, "b_scale": b_scale}


def fp8_reference(x: dict, scales: str) -> torch.Tensor:
    """C of kernels.fp8_gemm in float64: the dequantized operands' product."""
    a, b = x["a"].double(), x["b"].double()
    sa, sb = x["a_scale"].double(), x["b_scale"].double()
    k, n = a.shape[1], b.shape[0]
    if scales == "tensor":
        return (a @ b.T) * sa[0] * sb[0]
    if scales == "row":
        return (a @ b.T) * sa[:, None] * sb[None, :]
    block = 128  # kernels.fp8_scales.SCALE_BLOCK: 1 x 128 blocks of A, 128 x 128 of B
    a = a * sa.repeat_interleave(block, dim=1)[:, :k]
    b = b * sb.repeat_interleave(block, dim=0)[:n].repeat_interleave(block, dim=1)[:, :k]
    return a @ b.T


def run_fp8_gemm(
    config,
    m: int = 129,
    n: int = 264,
    k: int = 384,
    dtype=torch.float8_e4m3fn,
    out_dtype=torch.bfloat16,
    exact: bool = True,
    seed: int = 0,
    x: dict | None = None,
) -> LadderRun:
    """Notebook 12: kernels.fp8_gemm with one Config, persistent over one cluster, on fresh
    inputs (`fp8_inputs`), against the float64 reference of the dequantized operands.
    exact: integer-valued operands and power-of-two scales; the run is ok only if C equals
    the reference rounded to C's type (its tolerance 0)."""
    from kernels import fp8_gemm
    from kernels.gemm_host import GemmTypes
    from kernels.host import cutlass_dtype

    x = fp8_inputs(m, n, k, config.scales, dtype, exact, seed) if x is None else x
    ref = fp8_reference(x, config.scales)
    if exact:
        ref = ref.to(out_dtype).double()
    types = GemmTypes(cutlass_dtype(dtype), cutlass_dtype(torch.float32), cutlass_dtype(out_dtype))
    problem = {"m": m, "n": n, "k": k}

    def launch(x, out, seed):
        gemm = fp8_gemm.Fp8Gemm(types, config)
        scales = (pointer(x["a_scale"], "a_scale", 4), pointer(x["b_scale"], "b_scale", 4))
        return run_gemm_object(gemm, x, out, problem, seed, extra=(1, *scales))

    return execute(
        f"fp8_gemm@{config.scales},m={m},n={n},k={k}",
        x,
        ref,
        launch,
        (m, n),
        out_dtype,
        out_dtype,
        seed,
        tolerance=0.0 if exact else None,
    )


def run_fused_gemm(config, m: int = 129, n: int = 264, k: int = 96, seed: int = 0) -> LadderRun:
    """Notebook 13: kernels.fused_gemm with one Config (bias, + GELU), persistent over one
    cluster, on fresh bf16 inputs and a bias large enough (std 4) that a wrong column shows,
    against torch's float32 result of the same operator."""
    from kernels import fused_gemm

    g = torch.Generator().manual_seed(SEED + seed)
    x = {
        "a": torch.randn(m, k, generator=g).bfloat16(),
        "b": torch.randn(n, k, generator=g).bfloat16(),
        "bias": 4 * torch.randn(n, generator=g),
    }
    ref = fused_gemm.reference(x["a"], x["b"], x["bias"], config.epilogue).double()
    problem = {"m": m, "n": n, "k": k}

    def launch(x, out, seed):
        gemm = fused_gemm.FusedGemm(_hopper_types(), config)
        bias = pointer(x["bias"], "bias", 4)
        return run_gemm_object(gemm, x, out, problem, seed, extra=(1, bias))

    label = f"fused_gemm@{config.epilogue}{',pingpong' if config.pingpong else ''}"
    return execute(
        f"{label},m={m},n={n},k={k}", x, ref, launch, (m, n), torch.bfloat16, torch.bfloat16, seed
    )


def run_split_k_gemm(
    config,
    m: int = 200,
    n: int = 136,
    k: int = 320,
    clusters: int = 2,
    seed: int = 0,
    kernel=None,
) -> LadderRun:
    """Notebook 13: kernels.split_k_gemm with one Config, persistent over `clusters` clusters
    of CTAs (each split tile's partial sums meet in distributed shared memory), on fresh
    bf16 inputs against torch's float64 product. `kernel`: a subclass of SplitKGemm to run
    instead (a test's mistake)."""
    from kernels import split_k_gemm

    g = torch.Generator().manual_seed(SEED + seed)
    x = {
        "a": torch.randn(m, k, generator=g).bfloat16(),
        "b": torch.randn(n, k, generator=g).bfloat16(),
    }
    ref = x["a"].double() @ x["b"].double().t()
    problem = {"m": m, "n": n, "k": k}

    def launch(x, out, seed):
        gemm = (kernel or split_k_gemm.SplitKGemm)(_hopper_types(), config)
        return run_gemm_object(gemm, x, out, problem, seed, extra=(clusters,))

    label = f"split_k_gemm@split_k={config.split_k}{',tail' if config.split_tail else ''}"
    return execute(
        f"{label},m={m},n={n},k={k},clusters={clusters}",
        x,
        ref,
        launch,
        (m, n),
        torch.bfloat16,
        torch.bfloat16,
        seed,
    )


def _case(name: str, **problem) -> str:
    """The case for this problem: a recorded one if it matches, else a new one (not
    recorded on the H100)."""
    named = (name, *sorted(c for c in CASES if c.startswith(f"{name}.")))
    for recorded in (c for c in named if c in CASES):  # a new preset has no case yet
        if all(CASES[recorded].get(k) == v for k, v in problem.items()):
            return recorded
    custom = f"{name}@" + ",".join(f"{k}={v}" for k, v in problem.items())
    CASES[custom] = {**CASES.get(name, {}), **problem}
    return custom


RUNNERS = {
    "vector_add": lambda: run_vector_add(),
    "naive_gemm": lambda: run_naive_gemm(),
    **{
        f"copies.{v}": (lambda v=v: run_copy(v))
        for v in ("scalar", "strided", "vector", "tiled", "cp_async")
    },
    **{
        f"smem_transpose.{v}": (lambda v=v: run_transpose(v))
        for v in ("plain", "padded", "swizzled")
    },
    "mma_atom.1x1": lambda: run_mma_atom((1, 1)),
    "mma_atom.2x4": lambda: run_mma_atom((2, 4)),
    "sm80_gemm": lambda: run_sm80_gemm(),
    "sm80_gemm.ragged": lambda: run_sm80_gemm(129, 264, 72),
    "tma_gemm": lambda: run_tma_gemm(),
    "tma_gemm.pipeline": lambda: run_tma_gemm(ring="pipeline"),
    "tma_gemm.ragged": lambda: run_tma_gemm(129, 264, 200),
    "wgmma_gemm": lambda: run_wgmma_gemm(),
    "wgmma_gemm.ragged": lambda: run_wgmma_gemm(129, 264, 200),
    **{f"hopper_gemm.{p}": (lambda p=p: run_hopper_gemm(p)) for p in HOPPER_PRESETS},
    "hopper_gemm.tma_store.ragged": lambda: run_hopper_gemm("tma_store", 129, 264, 200),
}
