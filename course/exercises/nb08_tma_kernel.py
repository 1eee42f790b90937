"""Notebook 08's kernel exercise `08.arm_and_load`: hand a box to TMA and count its bytes.

The learner writes `arm_and_load(tma, src, dst, bar, tx_bytes)`, the step of
`kernels.tma.TmaLoad` that one whole warp runs: arm the mbarrier with one arrival and the
bytes TMA will deliver (expect_tx, from one lane), then issue the TMA copy with its
completion counted on that barrier. The course's kernel does the rest: it initialises the
barrier for one arrival, waits on phase 0, and copies the box back out with plain stores.
"""

# no `from __future__ import annotations`: CuTe DSL evaluates the kernel's annotations
import re

from course.exercises.kernel_check import expect, kernel_exercise

SHAPES = ((64, 64), (100, 72), (257, 40), (1024, 512))  # ragged against 64 x 64 boxes
QUICK_SHAPES = ((100, 72),)


def _load_class(fn):
    """kernels.tma.TmaLoad with the learner's step in place of the course's."""
    from kernels import tma

    return type("LearnerTmaLoad", (tma.TmaLoad,), {"arm_and_load": staticmethod(fn)})


def _kernel_args(fn, tensors=None, stream=None):
    """(the kernel object, src, dst, rows, cols, ld_src, ld_dst, stream) for the bf16
    default box: stand-ins for compiling (tensors None), or a real call."""
    import cutlass
    import torch

    from kernels import tma
    from kernels.host import cutlass_dtype, fake_stream, gmem_pointer

    obj = _load_class(fn)(cutlass_dtype(torch.bfloat16), tma.Config(), "copy")
    if tensors is None:
        p, i = gmem_pointer(None, torch.bfloat16), cutlass.Int32(64)
        return (obj, p, p, i, i, i, i, fake_stream())
    src, dst = tensors
    rows, cols = src.shape
    return (
        obj,
        gmem_pointer(src, src.dtype),
        gmem_pointer(dst, dst.dtype),
        cutlass.Int32(rows),
        cutlass.Int32(cols),
        cutlass.Int32(src.stride(0)),
        cutlass.Int32(dst.stride(0)),
        stream,
    )


def _build(fn, arch):
    return _kernel_args(fn)


def _box_bytes() -> int:
    from kernels import tma

    return tma.Config().box_bytes(2)


ARMS = re.compile(r"mbarrier\.(arrive\.)?expect_tx")  # arrive.expect_tx, or expect_tx alone


def _arms(code: list[str]) -> list[int]:
    return [i for i, line in enumerate(code) if ARMS.match(line)]


def _value(code: list[str], i: int) -> str:
    """The byte count an expect_tx at `i` announces: an immediate, or the mov before it."""
    operand = code[i].rstrip(";").split(",")[-1].strip()
    return (
        operand
        if operand.isdigit()
        else next(
            (
                m.group(1)
                for line in reversed(code[:i])
                if (m := re.match(rf"mov\.b32\s+{re.escape(operand)},\s*(\d+);", line))
            ),
            "?",
        )
    )


def announces_the_bytes(c):
    code = c.instructions
    arms = _arms(code)
    if not arms:
        return expect(
            "the barrier expects TMA's bytes",
            False,
            "no mbarrier expect_tx",
            "missing expect_tx: a plain arrive completes the phase at once, before "
            "any byte has landed; arm it with the bytes TMA will deliver",
        )
    values = [_value(code, i) for i in arms]
    want = _box_bytes()
    total = sum(int(v) for v in values) if all(v.isdigit() for v in values) else None
    return expect(
        "the barrier expects TMA's bytes",
        total == want,
        f"expect_tx of {' + '.join(values)} bytes; one 64x64 bf16 box is {want}",
        "expect_tx must announce exactly the bytes of the box (tx_bytes): fewer and "
        "the phase completes before the data is all there, more and it never does",
    )


def one_lane_arms(c):
    """Every expect_tx and every arrival on the barrier is made by one lane: elect.sync,
    lane 0, or any other guard that lets a single lane through (course.cute.ptx_lanes)."""
    from course.cute.ptx_lanes import labelled_lines, single_lane

    lines = labelled_lines(c.ptx)
    touches = [i for i, line in enumerate(lines) if re.match(r"mbarrier\.(arrive|expect_tx)", line)]
    guards = [single_lane(lines, i) for i in touches]
    ok = bool(touches) and all(guards)
    many = [lines[i].split()[0] for i, g in zip(touches, guards) if not g]
    return expect(
        "one lane arms the barrier",
        ok,
        f"{', '.join(sorted(set(guards)))} runs the arrival and expect_tx"
        if ok
        else f"every lane runs {many[0]}"
        if many
        else "no arrival on the barrier",
        "one lane arms the barrier: it was initialised for one arrival, and 32 lanes "
        "each arriving (and adding the box's bytes) break its count; guard it with "
        "`with cute.arch.elect_one():` (or one lane's index)",
    )


def copies_with_tma(c):
    n = c.count(r"cp\.async\.bulk\.tensor\.\S*global\S*mbarrier::complete_tx::bytes")
    return expect(
        "TMA copies the box, counted on the barrier",
        n > 0,
        f"{n} cp.async.bulk.tensor ... complete_tx::bytes",
        "hand the box to TMA: a copy of the TMA atom from src to dst, told which barrier "
        "counts its bytes as they land (without it the copy is no TMA load on a barrier)",
    )


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import torch

    from course.exercises.gpu_run import judge_output
    from kernels.host import arch_for, compile_for, current_stream

    arch = arch_for(torch.cuda.get_device_capability())
    obj, *stand_ins = _kernel_args(fn)
    compiled = compile_for(arch, obj, *stand_ins)
    launching()
    findings = []
    for rows, cols in QUICK_SHAPES if quick else SHAPES:
        src = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
        dst = torch.full_like(src, float("nan"))
        compiled(*_kernel_args(fn, (src, dst), current_stream())[1:])
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"{rows}x{cols} bf16 copied through TMA",
                dst,
                src,
                wrong_hint="the wait returned before the box had landed: "
                "does expect_tx announce the box's bytes?",
            )
        )
    return findings


kernel_exercise(
    id="08.arm_and_load",
    prompt="Write arm_and_load(tma, src, dst, bar, tx_bytes), run by one whole warp: arm the "
    "mbarrier `bar` with one arrival and the tx_bytes TMA will deliver (from one lane), "
    "then issue the TMA copy of the box src -> dst, its completion counted on `bar`.",
    hint="the barrier completes its phase when its arrivals are all in and its expected "
    "bytes have all landed: which call does both, and how many lanes may make it? The copy is "
    "CuTe DSL's ordinary copy of the TMA atom, which picks its own lane: who must reach it?",
    arch="sm_90a",
    needs="sm_90+",
    build=_build,
    cpu_checks=(announces_the_bytes, one_lane_arms, copies_with_tma),
    gpu_checks=gpu_checks,
    timeout_s=60,
    solution="course/exercises/solutions/nb08_solutions.py: arm_and_load",
)
