"""Notebook 01: the CuTe DSL words a learner needs before writing a kernel, each shown by
compiling (any machine) or running (a GPU) a few lines of real device code.

  trace_time_prints   what `print` shows while CuTe DSL traces: static values, `?` for dynamic
  run_time_prints     what `cute.printf` prints when the kernel runs (GPU), or its PTX call
  loop_table          one sum written three ways: unrolled, kept, unrolled by 4 (PTX counts)
  const_expr_table    a branch on a Constexpr is compiled away; on a dynamic value it is kept
  scale_ptx / scale_check   TensorSSA and a register tensor: 4 values per thread, one v4 load
  scale_cell          notebook 01's live cell for it: scale_check on a GPU, its PTX elsewhere
  compile_once        what a call costs when it re-traces, against a compiled handle
  local_memory_report two ways into local memory: a register tensor indexed at run time, and
                      more live values than the 255 registers a thread can have (a spill)

The demo device code is below, kept small so the notebook can show all of it.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the launchers' annotations
import contextlib
import io
import re
import time

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass import Constexpr, Float32, Int32

from course.runtime.live import compile_only, live_or
from kernels.artifacts import compile_artifacts
from kernels.host import (
    arch_for,
    compile_cached,
    compile_for,
    current_stream,
    device_capability,
    fake_stream,
    gmem_pointer,
)

ARCH = "sm_90a"  # what the CPU compiles for


# ---------------------------------------------------------------- static and dynamic values


@cute.kernel
def values_kernel(n: Int32, k: Constexpr):
    doubled_n, doubled_k = n * 2, k * 2
    print("trace time: n =", n, "| n * 2 =", doubled_n, "| k =", k, "| k * 2 =", doubled_k)
    tid, _, _ = cute.arch.thread_idx()
    if tid == 0:
        cute.printf("run time:   n = %d | n * 2 = %d | k = %d\n", n, doubled_n, k)


@cute.jit
def values(n: Int32, stream: cuda.CUstream, k: Constexpr):
    values_kernel(n, k).launch(grid=[1, 1, 1], block=[32, 1, 1], stream=stream)


def trace_time_prints(n: int = 5, k: int = 8) -> str:
    """Compile `values` for sm_90a and return what its `print` wrote while tracing."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        compile_artifacts(("dsl_basics.values", k), ARCH, values, Int32(n), fake_stream(), k)
    return out.getvalue()


def run_time_prints(n: int = 5, k: int = 8):
    """Launch `values` (GPU): cute.printf prints from the GPU. Without one, show the PTX
    call that would print (vprintf) and its format string."""

    def live():
        compiled = _handle(("values", k), values, Int32(n), current_stream(), k)
        compiled(Int32(n), current_stream())
        torch.cuda.synchronize()

    def compiled_only(arch):
        art = compile_artifacts(("dsl_basics.values", k), arch, values, Int32(n), fake_stream(), k)
        print("\n".join(art.ptx_lines(r"vprintf|run time")[:4]))
        return art

    return live_or("gpu", live, compile_only(compiled_only))


# ---------------------------------------------------------------- control flow


@cute.kernel
def sum_kernel(g: cute.Tensor, out: cute.Tensor, n: Int32, how: Constexpr):
    acc = Float32(0.0)
    if cutlass.const_expr(how == "range_constexpr(8)"):
        for i in cutlass.range_constexpr(8):  # Python runs this loop while tracing
            acc += g[i]
    elif cutlass.const_expr(how == "range(n, unroll=1)"):
        for i in cutlass.range(n, unroll=1):  # one loop in the kernel, n known at run time
            acc += g[i]
    else:  # "range(n, unroll=4)"
        for i in cutlass.range(n, unroll=4):  # a loop whose body holds 4 iterations
            acc += g[i]
    out[0] = acc


@cute.jit
def sum_launch(
    g_ptr: cute.Pointer, out_ptr: cute.Pointer, n: Int32, stream: cuda.CUstream, how: Constexpr
):
    g = cute.make_tensor(g_ptr, cute.make_layout(n))
    out = cute.make_tensor(out_ptr, cute.make_layout(1))
    sum_kernel(g, out, n, how).launch(grid=[1, 1, 1], block=[1, 1, 1], stream=stream)


LOOPS = ("range_constexpr(8)", "range(n, unroll=1)", "range(n, unroll=4)")


def loop_table(arch: str = ARCH) -> list[dict]:
    """For each way of writing the loop: the float adds and branches in its PTX."""
    p = gmem_pointer(None, torch.float32)
    rows = []
    for how in LOOPS:
        art = compile_artifacts(
            ("dsl_basics.sum", how), arch, sum_launch, p, p, Int32(8), fake_stream(), how
        )
        back = backward_branches(art.ptx)
        rows.append(
            {
                "loop": how,
                "add.f32": art.count_ptx(r"\badd(\.rn)?\.f32"),
                "branches": art.count_ptx(r"\bbra(\.uni)?\b"),
                "of them backward (a loop)": back,
            }
        )
    return rows


def backward_branches(ptx: str) -> int:
    """Branches in `ptx` whose target label comes before them: each closes a loop (the
    others jump forward, past code that has nothing to do)."""
    seen, back = set(), 0
    for line in ptx.splitlines():
        label = re.match(r"\s*(\$\w+):", line)
        if label:
            seen.add(label.group(1))
        target = re.search(r"\bbra(?:\.uni)?\s+(\$\w+)", line)
        if target and target.group(1) in seen:
            back += 1
    return back


@cute.kernel
def branch_kernel(g: cute.Tensor, flag: Int32, static_flag: Constexpr):
    if cutlass.const_expr(static_flag):  # decided while tracing: one side is never emitted
        g[0] = g[0] * 3.0
    if flag > 0:  # decided at run time: both sides are in the kernel
        g[1] = g[1] * 5.0


@cute.jit
def branch_launch(g_ptr: cute.Pointer, flag: Int32, stream: cuda.CUstream, static_flag: Constexpr):
    g = cute.make_tensor(g_ptr, cute.make_layout(2))
    branch_kernel(g, flag, static_flag).launch(grid=[1, 1, 1], block=[1, 1, 1], stream=stream)


def const_expr_table(arch: str = ARCH) -> list[dict]:
    """Multiplies by 3 (the Constexpr branch) and by 5 (the dynamic one) in the PTX."""
    p = gmem_pointer(None, torch.float32)
    rows = []
    for static_flag in (True, False):
        art = compile_artifacts(
            ("dsl_basics.branch", static_flag),
            arch,
            branch_launch,
            p,
            Int32(1),
            fake_stream(),
            static_flag,
        )
        rows.append(
            {
                "static_flag": static_flag,
                "x 3.0 (Constexpr branch)": art.count_ptx(r"mul.*0f40400000"),
                "x 5.0 (dynamic branch)": art.count_ptx(r"mul.*0f40A00000"),
                "setp (run-time tests)": art.count_ptx(r"setp\."),
            }
        )
    return rows


# ---------------------------------------------------------------- TensorSSA, register tensors

VALUES_PER_THREAD, THREADS = 4, 128


@cute.kernel
def scale_kernel(gX: cute.Tensor, gOut: cute.Tensor, alpha: Float32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    column = bid * THREADS + tid
    x = gX[(None, column)].load()  # TensorSSA: this thread's 4 values, as one value
    y = cute.make_rmem_tensor(x.shape, Float32)  # a register tensor of the same shape
    y.store(x * alpha + 1.0)  # elementwise math on the whole vector
    gOut[(None, column)].store(y.load())


@cute.jit
def scale(
    x_ptr: cute.Pointer, out_ptr: cute.Pointer, n: Int32, alpha: Float32, stream: cuda.CUstream
):
    layout = cute.make_layout((VALUES_PER_THREAD, n // VALUES_PER_THREAD))  # column c: 4 values
    gX, gOut = cute.make_tensor(x_ptr, layout), cute.make_tensor(out_ptr, layout)
    blocks = n // (VALUES_PER_THREAD * THREADS)
    scale_kernel(gX, gOut, alpha).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1], stream=stream)


def _scale_args(x=None, out=None, alpha: float = 1.0, stream=None):
    n = x.numel() if x is not None else VALUES_PER_THREAD * THREADS
    return (
        gmem_pointer(x, torch.float32),
        gmem_pointer(out, torch.float32),
        Int32(n),
        Float32(alpha),
        stream or fake_stream(),
    )


def scale_ptx(arch: str = ARCH) -> list[str]:
    """The loads, the math and the stores of `scale` in PTX."""
    art = compile_artifacts(("dsl_basics.scale",), arch, scale, *_scale_args())
    return art.ptx_lines(r"ld\.global|st\.global|fma")


def scale_cell():
    """Notebook 01's live cell for `scale`, the harness behind one call: on a GPU print
    `scale_check`; elsewhere compile for the target GPU and print its v4 load and store (then
    what the cell printed when it last ran live, label 01.scale_check). Returns the Outcome."""
    from course.runtime.live import compile_only, live_or

    def compiled(arch):
        print(f"compiled for {arch}: " + ", ".join(scale_ptx(arch)[::5]))

    return live_or(
        "gpu", lambda: print(scale_check()), compile_only(compiled), label="01.scale_check"
    )


def scale_check(n: int = 1 << 20, alpha: float = 0.5) -> str:
    """Run `scale` on the GPU against torch, the output poisoned first (n: a multiple of 512)."""
    if n % (VALUES_PER_THREAD * THREADS):
        raise ValueError(f"n must be a multiple of {VALUES_PER_THREAD * THREADS}")
    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    handle = _handle(("scale",), scale, *_scale_args())
    handle(*_scale_args(x, out, alpha, current_stream()))
    torch.cuda.synchronize()
    err = (out.double() - (alpha * x.double() + 1)).abs().max().item()
    return f"n = {n:,}: max |out - torch| = {err:.1e}" + ("  ✔" if err < 1e-6 else "  ✘")


# ---------------------------------------------------------------- compile once


def compile_once(calls: int = 20):
    """Host time per call: calling the @cute.jit function (it traces again each time)
    against calling the handle cute.compile returned (GPU). Without a GPU: the time one trace
    of `scale` takes on this CPU, which an implicit call pays again on every call."""

    def live():
        x = torch.randn(VALUES_PER_THREAD * THREADS * 64, device="cuda")
        out = torch.empty_like(x)
        args = _scale_args(x, out, 2.0, current_stream())
        start = time.perf_counter()
        handle = compile_for(_arch(), scale, *args)
        compile_s = time.perf_counter() - start
        per_call = {}
        for name, fn in (
            ("scale(...)  (traces every call)", lambda: scale(*args)),
            ("handle(...) (compiled once)", lambda: handle(*args)),
        ):
            fn()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            per_call[name] = (time.perf_counter() - start) / calls * 1e3
        print(f"cute.compile once: {compile_s * 1e3:8.1f} ms")
        for name, ms in per_call.items():
            print(f"{name:34s}: {ms:8.3f} ms per call")
        return per_call

    def compiled_only(arch):
        from course.cute.trace import dry_run

        args = _scale_args()
        with dry_run(arch):
            scale(*args)
            start = time.perf_counter()
            for _ in range(calls):
                scale(*args)
        trace_ms = (time.perf_counter() - start) / calls * 1e3
        art = compile_artifacts(("dsl_basics.scale",), arch, scale, *args)
        print(f"tracing `scale` again (what every implicit call does): {trace_ms:6.2f} ms per call")
        print(
            f"compiling it for {arch} (once, cached after that):    "
            f"{art.compile_seconds * 1e3:6.2f} ms"
        )
        return {"trace ms per call": trace_ms}

    return live_or("gpu", live, compile_only(compiled_only), label="01.compile_once")


# ---------------------------------------------------------------- PTX, SASS, local memory


@cute.kernel
def local_memory_kernel(gX: cute.Tensor, gOut: cute.Tensor, k: Int32):
    tid, _, _ = cute.arch.thread_idx()
    r = cute.make_rmem_tensor(256, Float32)
    for i in cutlass.range_constexpr(256):
        r[i] = gX[i] * 2.0
    gOut[tid] = r[(tid * k) % 256]  # an index known only at run time


@cute.jit
def local_memory(x_ptr: cute.Pointer, out_ptr: cute.Pointer, k: Int32, stream: cuda.CUstream):
    layout = cute.make_layout(256)
    local_memory_kernel(
        cute.make_tensor(x_ptr, layout), cute.make_tensor(out_ptr, layout), k
    ).launch(grid=[1, 1, 1], block=[256, 1, 1], stream=stream)


@cute.kernel
def live_values_kernel(g: cute.Tensor, out: cute.Tensor, n: Int32, values: Constexpr):
    acc = cute.make_rmem_tensor(values, Float32)  # `values` accumulators per thread...
    acc.fill(0.0)
    for k in cutlass.range(n, unroll=1):  # ...all alive across a run-time loop
        x = g[k]
        for i in cutlass.range_constexpr(values):
            acc[i] = acc[i] * x + Float32(i)
    for i in cutlass.range_constexpr(values):
        out[i] = acc[i]


@cute.jit
def live_values(
    g_ptr: cute.Pointer, out_ptr: cute.Pointer, n: Int32, stream: cuda.CUstream, values: Constexpr
):
    g = cute.make_tensor(g_ptr, cute.make_layout(n))
    out = cute.make_tensor(out_ptr, cute.make_layout(values))
    live_values_kernel(g, out, n, values).launch(grid=[1, 1, 1], block=[32, 1, 1], stream=stream)


SPILL_DEMOS = (200, 320)  # live fp32 values per thread: fits in registers / does not


def spill_demos(arch: str = ARCH) -> dict:
    """The kernels of section 6 compiled for `arch`: name -> Artifacts."""
    p = gmem_pointer(None, torch.float32)
    demos = {
        "scale": compile_artifacts(("dsl_basics.scale",), arch, scale, *_scale_args()),
        "local_memory (run-time index)": compile_artifacts(
            ("dsl_basics.local",), arch, local_memory, p, p, Int32(3), fake_stream()
        ),
    }
    for values in SPILL_DEMOS:
        demos[f"live_values, {values} values"] = compile_artifacts(
            ("dsl_basics.live", values), arch, live_values, p, p, Int32(4), fake_stream(), values
        )
    return demos


def local_memory_report(arch: str = ARCH) -> list[dict]:
    """Registers, stack frame and the SASS local-memory instructions of the demos."""
    report = []
    for name, art in spill_demos(arch).items():
        res = next(iter(art.resource_usage().values()))
        local = art.sass_lines(r"\b(STL|LDL)\b")
        report.append(
            {
                "kernel": name,
                "registers": res["registers"],
                "stack frame (bytes)": res["stack_frame_bytes"],
                "STL/LDL in SASS": len(local),
                "first of them": " ".join(local[0].split()[1:]) if local else "",
            }
        )
    return report


# ---------------------------------------------------------------- helpers


def _arch() -> str:
    return arch_for(device_capability())


def _handle(key, jit_fn, *args):
    """One compiled handle per demo for this process's GPU (the kernels' compile cache)."""
    arch = _arch()
    return compile_cached(("dsl_basics", *key), arch, lambda: compile_for(arch, jit_fn, *args))


# ---------------------------------------------------------------- occupancy


def occupancy_table(report: list[dict], threads: int = 256) -> list[dict]:
    """For each kernel of `report` (local_memory_report), the CTAs of `threads` threads one
    H100 SM would hold with its register count (course.models.occupancy), and what limits
    them."""
    from course.models.occupancy import SM_90, occupancy

    rows = []
    for r in report:
        occ = occupancy(threads, r["registers"], 0, SM_90)
        rows.append(
            {
                "kernel": r["kernel"],
                "registers": r["registers"],
                f"CTAs of {threads} threads per SM": occ.ctas,
                "warps per SM": f"{occ.warps} of {SM_90.warps}",
                "occupancy": f"{100 * occ.fraction:.3g}%",
                "limited by": occ.limited_by,
            }
        )
    return rows
