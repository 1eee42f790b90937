"""Notebook 06's exercises: mma.sync fragments, and a one-tile GEMM kernel.

`06.mma_tile`: the learner writes the `@cute.kernel` of C = A . B^T for exactly one tile of a
TiledMMA (kernels.mma_atom's micro-GEMM): slice, partition, fragments, copies, one
cute.gemm, store. The course supplies the host side (the TiledMMA of kernels.mma_atom and
the tensors over the three pointers) and passes the kernel in as a Constexpr.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the launcher's annotations
import ast
import functools
import re

from course.exercises.check import exercise, number, pair
from course.exercises.kernel_check import expect, kernel_exercise, not_checked


@exercise(
    "06.owner",
    "Which lane (0-31) holds C[13][6] of the mma.sync m16n8k16 accumulator?",
    "row r belongs to lanes 4*(r % 8) .. 4*(r % 8) + 3; column c to lane % 4 == c // 2.",
    "row 13 -> 13 % 8 = 5 -> lanes 20-23; column 6 -> lane % 4 = 3: lane 23.",
)
def _owner(answer):
    from course.cute.kernel_traces import mma_atom_pairs

    truth = next(t for (t, v), rc in mma_atom_pairs("C") if rc == (13, 6))
    return number(answer, truth)


A_VALUES_SHAPE = (16, 8, 8)  # 06.a_values: mma.sync m16n8k8, not the notebook's m16n8k16


@exercise(
    "06.a_values",
    "mma.sync also comes as m16n8k8 for bf16: half the K of this notebook's "
    "instruction. How many A values does each thread hold for one m16n8k8 instruction?",
    "A is M x K; the warp's 32 threads share it evenly.",
    "4: A is 16 x 8 = 128 values over 32 threads (two 32-bit registers of bf16 pairs).",
)
def _a(answer):
    m, _, k = A_VALUES_SHAPE
    if answer == 16 * 16 // 32:
        return False, "that is m16n8k16's count; m16n8k8's A has half as many columns"
    return number(answer, m * k // 32)


@exercise(
    "06.tile",
    "A TiledMMA of 2 x 4 warps (M x N) of m16n8k16 atoms covers a C tile of "
    "what shape (rows, cols)?",
    "each warp covers 16 x 8.",
    "(32, 32).",
)
def _tile(answer):
    rows, cols = pair(answer, "answer with a pair (rows, cols)")
    return (rows, cols) == (32, 32), ""


# ---------------------------------------------------------------- kernel exercise: one MMA tile

CPU_WARPS = (2, 2)  # the warp grid the CPU compiles
WARP_GRIDS = ((1, 1), (2, 2), (2, 4))  # ... and the ones a GPU runs
DTYPES = ("bfloat16", "float16")
RUNS_PER_CASE = 3


def _launcher():
    """The host side: kernels.mma_atom's TiledMMA for the config, A (M,K) and B (N,K)
    K-major, C (M,N) fp32 row-major, one CTA of 32 threads per warp."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    from kernels import mma_atom

    @cute.jit
    def launch(
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        stream: cuda.CUstream,
        config: cutlass.Constexpr,
        kernel: cutlass.Constexpr,
    ):
        m, n, k = config.shape_mnk
        tiled_mma = mma_atom.tiled_mma(a_ptr.dtype, config.warps_m, config.warps_n)
        mA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
        mB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
        mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
        kernel(tiled_mma, mA, mB, mC).launch(
            grid=[1, 1, 1], block=[config.threads, 1, 1], stream=stream
        )

    return launch


launcher = functools.cache(_launcher)  # built once: every compile reuses one @cute.jit


def _arguments(dtype, warps, stream):
    import torch

    from kernels import mma_atom
    from kernels.host import gmem_pointer

    p = gmem_pointer(None, dtype, 16)
    return (p, p, gmem_pointer(None, torch.float32, 16), stream, mma_atom.Config(*warps))


def _build(fn, arch):
    import torch

    from kernels.host import fake_stream

    return (launcher(), *_arguments(torch.bfloat16, CPU_WARPS, fake_stream()), fn)


def _mma(c) -> tuple[str, list[list[str]]] | None:
    """The PTX before the first mma.sync and its four register groups (D, A, B, C)."""
    found = re.search(r"mma\.sync\.aligned\.m16n8k16[^;]*;", c.ptx)
    if not found:
        return None
    groups = [re.findall(r"%\w+", g) for g in re.findall(r"\{([^}]*)\}", found.group(0))]
    return c.ptx[: found.start()], groups


def _unset(before: str, registers: list[str]) -> list[str]:
    """Registers no instruction before the mma mentions: read before anything wrote them."""
    return [r for r in registers if not re.search(re.escape(r) + r"\b", before)]


# What CuTe DSL 4.8.1 compiles cute.gemm(tiled_mma, D, A, B, C) with D another fragment
# than C to (sm_80, mma.sync): the MMA's result goes into C's registers and D keeps what it
# held, although cute.gemm's docstring says D <- A * B + C. Storing D then stores nothing
# the MMA computed, and the compiler removes the MMA and the loads with it.
SEPARATE_D_FAULT = (
    "CuTe DSL's fault, not your code's: in CuTe DSL 4.8.1, cute.gemm(tiled_mma, D, A, B, C) "
    "with D a different fragment from C writes the result into C and leaves D as it was "
    "(its docstring says D <- A * B + C); the PTX has no mma.sync because the D you store "
    "is never written, so the compiler removed the MMA. Pass the one accumulator as both "
    "D and C: cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)"
)


def gemm_with_separate_d(source: str) -> bool:
    """Does the code call cute.gemm(mma, D, A, B, C) with D and C written differently?"""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "gemm"
            and len(node.args) == 5
            and ast.dump(node.args[1]) != ast.dump(node.args[4])
        ):
            return True
    return False


def _kernel_emptied(c) -> bool:
    """No mma.sync and no global store left: the compiler removed the kernel's work,
    so what else the PTX lacks (thread_idx, loads) says nothing of the code."""
    return c.count(r"mma\.sync") == 0 and c.count(r"st\.global") == 0


def _emptied_finding(check: str):
    return not_checked(check, "the compiler removed the kernel's work (no mma.sync, no "
                       "global store): see the first check")  # fmt: skip


def one_mma_per_warp(c):
    count = c.count(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32")
    stores = c.count(r"st\.global")
    hint = (
        "call cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC) once, on the fragments "
        "made by tiled_mma.make_fragment_A/B/C"
    )
    if count == 0 and stores == 0 and gemm_with_separate_d(c.code.source):
        hint = SEPARATE_D_FAULT
    elif count == 0 and stores == 0:  # the compiler drops an MMA whose result goes nowhere
        hint = (
            "the kernel stores nothing, so the compiler removed the MMA too: copy the "
            "accumulator tCrC back to its partition of C after cute.gemm"
        )
    return expect(
        "one mma.sync m16n8k16 (bf16 in, fp32 accumulate) per thread",
        count == 1,
        f"{count} in the PTX and {stores} global store(s) (each warp computes one 16x8x16 "
        "atom of the tile)",
        hint,
    )


def slices_by_thread(c):
    if _kernel_emptied(c):
        return _emptied_finding("each thread takes its own slice of the TiledMMA")
    reads = c.count(r"%tid\.x")
    return expect(
        "each thread takes its own slice of the TiledMMA",
        reads > 0,
        "reads %tid.x" if reads else "never reads thread_idx: every thread holds the same fragment",
        "every thread took the same slice: tiled_mma.get_slice(tid) with tid from "
        "cute.arch.thread_idx()",
    )


def loads_a_and_b(c):
    if _kernel_emptied(c):
        return _emptied_finding("A and B fragments loaded before the mma")
    found = _mma(c)
    if found is None:
        return expect(
            "A and B fragments loaded before the mma",
            False,
            "no mma.sync",
            "load the fragments, then cute.gemm",
        )
    before, (_, a, b, _) = found
    unset = _unset(before, a + b)
    return expect(
        "A and B fragments loaded before the mma",
        not unset,
        f"{len(unset)} of {len(a) + len(b)} A/B registers never loaded"
        if unset
        else f"{len(a)} A and {len(b)} B registers loaded from global memory",
        "a fragment is never loaded: cute.autovec_copy(tCgA, tCrA) and "
        "cute.autovec_copy(tCgB, tCrB) before cute.gemm",
    )


def accumulator_cleared(c):
    if _kernel_emptied(c):
        return _emptied_finding("the accumulator starts at zero")
    found = _mma(c)
    if found is None:
        return expect(
            "the accumulator starts at zero", False, "no mma.sync", "tCrC.fill(0.0), then cute.gemm"
        )
    before, (_, _, _, acc) = found
    unset = _unset(before, acc)
    return expect(
        "the accumulator starts at zero",
        not unset,
        f"the mma adds to {len(unset)} register(s) nothing wrote"
        if unset
        else "the mma's C input is written first (zeros)",
        "accumulator not cleared: mma.sync computes D = A.B + C, and a fresh "
        "register fragment holds garbage: tCrC.fill(0.0) before cute.gemm",
    )


def _stored(after: str, register: str, space: str) -> bool:
    return bool(re.search(rf"st\.{space}[^;]*" + re.escape(register) + r"\b", after))


def stores_the_accumulator(c):
    """Every mma result register reaches C: stored to global memory, or staged through
    shared memory the way NVIDIA's tensorop_gemm epilogue does it (st.shared, then the
    tile read back with ld.shared and stored with st.global). Whether the values land in
    the right places is the run's to show."""
    if _kernel_emptied(c) and gemm_with_separate_d(c.code.source):
        return _emptied_finding("the accumulator is stored to C")  # D is stored: CuTe's fault
    found = _mma(c)
    after = c.ptx[c.ptx.find(found[0]) + len(found[0]) :] if found else ""
    staged_out = bool(re.search(r"ld\.shared", after) and re.search(r"st\.global", after))
    direct = bool(found) and all(_stored(after, r, "global") for r in found[1][0])
    staged = bool(found) and all(
        _stored(after, r, "global") or (staged_out and _stored(after, r, "shared"))
        for r in found[1][0]
    )
    return expect(
        "the accumulator is stored to C",
        staged,
        "every mma result register reaches a st.global"
        if direct
        else "every mma result register reaches C through shared memory (st.shared, then "
        "ld.shared and st.global)"
        if staged
        else "some mma results are never stored",
        "store the accumulator: cute.autovec_copy(tCrC, tCgC) after cute.gemm",
    )


def _swapped_b(b):
    """B's memory read with swapped strides: what a kernel that takes B as (K,N) sees."""
    n, k = b.shape
    return b.reshape(-1).view(k, n).T


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output
    from kernels import mma_atom
    from kernels.host import arch_for, compile_for, current_stream, gmem_pointer

    arch = arch_for(torch.cuda.get_device_capability())
    cases = [(getattr(torch, d), w) for d in DTYPES for w in WARP_GRIDS]
    if quick:
        cases = cases[:2]
    compiled = {
        case: compile_for(arch, launcher(), *_arguments(*case, current_stream()), fn)
        for case in cases
    }
    launching()
    findings = []
    for (dtype, warps), kernel in compiled.items():
        m, n, k = mma_atom.Config(*warps).shape_mnk
        for _ in range(1 if quick else RUNS_PER_CASE):
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(n, k, device="cuda").to(dtype)
            out, buffer = guarded_output((m, n), torch.float32)
            kernel(
                gmem_pointer(a, dtype, 16),
                gmem_pointer(b, dtype, 16),
                gmem_pointer(out, torch.float32, 16),
                current_stream(),
            )
            torch.cuda.synchronize()
            hint = "wrong values: check the partition of each operand and the store of tCrC"
            if torch.allclose(
                out, (a.double() @ _swapped_b(b).double().T).float(), rtol=1e-3, atol=1e-3
            ):
                hint = (
                    "B read with swapped strides: B is (N,K) K-major, like A; partition "
                    "mB as it comes, with thr_mma.partition_B"
                )
            finding = judge_output(
                f"{str(dtype)[6:]} {m}x{n}x{k} on {warps[0]}x{warps[1]} warps against torch",
                out,
                a.double() @ b.double().T,
                buffer,
                wrong_hint=hint,
            )
            findings.append(finding)
            if finding.status != "pass":
                break
    return findings


kernel_exercise(
    id="06.mma_tile",
    prompt="Write mma_tile_kernel(tiled_mma, mA, mB, mC): C = A . B^T for exactly one tile of "
    "the TiledMMA (A M x 16, B N x 16 K-major, C fp32): take this thread's slice, "
    "partition A, B and C, make register fragments, load them, clear the "
    "accumulator, one cute.gemm, store C.",
    hint="section 2 partitioned C by a thread's slice of the TiledMMA; do the same for A and "
    "B, give each operand a register fragment shaped for the instruction, start the "
    "accumulator at zero, one cute.gemm, then store the accumulator to C.",
    arch="sm_80",
    needs="sm_80+",
    build=_build,
    cpu_checks=(
        one_mma_per_warp,
        slices_by_thread,
        loads_a_and_b,
        accumulator_cleared,
        stores_the_accumulator,
    ),
    gpu_checks=gpu_checks,
    timeout_s=60,
    compile_hints=(
        (
            r"expects A's M == D'M|B's N == D'N|mode|shape",
            "wrong partition mode: A's fragment comes from partition_A, B's from "
            "partition_B and C's from partition_C (each is a different slice of the "
            "TiledMMA's thread-value layout)",
        ),
    ),
    solution="course/exercises/solutions/nb06_solutions.py: mma_tile_kernel",
)
