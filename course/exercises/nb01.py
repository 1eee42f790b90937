"""Notebook 01's exercises: a first kernel, written by the learner.

`01.saxpy`: the learner writes the `@cute.kernel` of out = alpha * x + y, one element per
thread; the course supplies the host side (tensors from pointers, grid of 256-thread
blocks, launch), the way `kernels.vector_add` does for its own kernel.
"""
# no `from __future__ import annotations`: CuTe DSL evaluates the launcher's annotations

import functools

from course.exercises.kernel_check import expect, kernel_exercise

THREADS = 256
SIZES = (1, 255, 257, 4099, 100_003, 1 << 20)
QUICK_SIZES = (257, 1000)


def _launcher():
    """The host side: 1-D tensors over the three pointers, ceil(n / 256) blocks."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def launch(
        x: cute.Pointer,
        y: cute.Pointer,
        out: cute.Pointer,
        alpha: cutlass.Float32,
        n: cutlass.Int32,
        stream: cuda.CUstream,
        kernel: cutlass.Constexpr,
    ):
        layout = cute.make_layout(n)
        gX, gY, gOut = (cute.make_tensor(p, layout) for p in (x, y, out))
        kernel(gX, gY, gOut, alpha, n).launch(
            grid=[(n + THREADS - 1) // THREADS, 1, 1], block=[THREADS, 1, 1], stream=stream
        )

    return launch


launcher = functools.cache(_launcher)  # built once: every compile reuses one @cute.jit


def _build(fn, arch):
    import cutlass
    import torch

    from kernels.host import fake_stream, gmem_pointer

    p = gmem_pointer(None, torch.float32)
    return (launcher(), p, p, p, cutlass.Float32(1.0), cutlass.Int32(1), fake_stream(), fn)


def computes_alpha_x_plus_y(c):
    fused = c.count(r"fma\.rn\.f32")
    separate = c.count(r"mul(\.rn)?\.f32") and c.count(r"add(\.rn)?\.f32")
    return expect(
        "PTX computes alpha * x + y",
        bool(fused or separate),
        f"{fused} fma.rn.f32"
        if fused
        else "mul.f32 + add.f32"
        if separate
        else "no float multiply-add in the PTX",
        "out[i] must be alpha * gX[i] + gY[i]",
    )


def reads_block_index(c):
    uses = c.count(r"%ctaid\.x")
    return expect(
        "each block takes its own elements",
        uses > 0,
        "reads %ctaid.x (block_idx)" if uses else "never reads block_idx",
        "every block computes the same first 256 elements: the global index is "
        "block_idx * block_dim + thread_idx",
    )


def guards_the_tail(c):
    compares = c.count(r"setp\.")
    return expect(
        "the last block stays inside n",
        compares > 0,
        f"{compares} comparison(s) before the store"
        if compares
        else "no comparison: every thread stores",
        "missing predicate at the edge: n is rarely a multiple of 256, so the last "
        "block's extra threads must not store (guard with `if i < n:`)",
    )


def _wrong_formulas(x, y, alpha):
    """(name, output, hint) of the formulas a slip of the pen computes instead."""
    return (
        (
            "alpha * y + x",
            alpha * y + x,
            "alpha multiplies y instead of x: out[i] = alpha * gX[i] + gY[i]",
        ),
        ("x + y", x + y, "alpha is never applied: out[i] = alpha * gX[i] + gY[i]"),
        ("alpha * x", alpha * x, "y is never added: out[i] = alpha * gX[i] + gY[i]"),
        ("y", y, "out is y: the product alpha * gX[i] is missing"),
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import cutlass
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output
    from kernels.host import arch_for, compile_for, current_stream, gmem_pointer

    arch = arch_for(torch.cuda.get_device_capability())
    p = gmem_pointer(None, torch.float32)
    compiled = compile_for(
        arch, launcher(), p, p, p, cutlass.Float32(1.0), cutlass.Int32(1), current_stream(), fn
    )
    launching()
    findings = []
    for n in QUICK_SIZES if quick else SIZES:
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        alpha = float(torch.randn(()))
        out, buffer = guarded_output((n,), torch.float32)
        compiled(
            *(gmem_pointer(t, torch.float32) for t in (x, y, out)),
            cutlass.Float32(alpha),
            cutlass.Int32(n),
            current_stream(),
        )
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"n = {n:,} against torch",
                out,
                alpha * x.double() + y.double(),
                buffer,
                period=THREADS,
                candidates=_wrong_formulas(x.double(), y.double(), alpha),
                wrong_hint={
                    "repeats": "every block computes the same first 256 elements: the "
                    "global index is block_idx * block_dim + thread_idx",
                    "unwritten": "some elements are never written: does every block take "
                    "its own 256 elements (block_idx * block_dim + "
                    "thread_idx), and every i < n?",
                    "values": "out[i] must be alpha * gX[i] + gY[i], with i the element's "
                    "global index",
                },
                edge_hint="missing predicate at the edge: guard the store with `if i < n:`",
            )
        )
    return findings


kernel_exercise(
    id="01.saxpy",
    prompt="Write saxpy_kernel: out = alpha x + y over vectors of n floats, one element per "
    "thread, with 256-thread blocks and as many blocks as n needs.",
    hint="section 1's add_kernel finds each thread's element and keeps the spare threads of "
    "the last block away from memory: saxpy needs the same two steps, and one more operand.",
    arch="sm_90a",
    needs="gpu",
    build=_build,
    cpu_checks=(computes_alpha_x_plus_y, reads_block_index, guards_the_tail),
    gpu_checks=gpu_checks,
    solution="course/exercises/solutions/nb01_solutions.py: saxpy_kernel",
)
