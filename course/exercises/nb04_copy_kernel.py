"""Notebook 04's kernel exercise `04.vector_copy`: the TiledCopy of a copy at full speed.

The learner writes `make_vector_copy(threads)`, the TiledCopy of one pass over a 1-D
float32 tile (copy atom, thread layout, value layout). The course supplies the rest: the
host side of `kernels.copies.copy`'s tiled variant (tiles of THREADS * 4 * VALUES floats,
one per CTA) and a kernel that runs the learner's TiledCopy over each tile.

The kernel is not `kernels.copies.tiled_kernel`: that one predicates per 128-bit vector,
so a TiledCopy with any other access width (the commonest mistake here) would not even
trace, and the learner would get a compiler error instead of the hint "vector width".
Here whole tiles copy without a predicate, and only the ragged last tile goes element by
element, each checked against n.
"""
# no `from __future__ import annotations`: CuTe DSL evaluates the launcher's annotations

import functools
import statistics

from course.exercises.kernel_check import expect, kernel_exercise

THREADS = 256
VEC = 4  # floats per 128-bit access (kernels.copies.VEC)
VALUES = 4  # passes of the TiledCopy per CTA: 4 loads in flight per thread
TILE = THREADS * VEC * VALUES
SIZES = (1, 3, 1020, 4097, 100_003, (1 << 20) + 4)  # ragged against every tile
QUICK_SIZES = (1020, 4097)
TIMED_BYTES = 1 << 28  # per buffer; 3 rotating pairs: far more than L2
MIN_SHARE = 90.0  # percent of torch's copy
SPEED_CHECK = f"at least {MIN_SHARE:.0f}% of torch's copy bandwidth"


def _kernel():
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def copy_tiles(
        gS: cute.Tensor,
        gD: cute.Tensor,
        cI: cute.Tensor,
        n: cutlass.Int32,
        tiled: cute.TiledCopy,
        tile: cutlass.Constexpr,
    ):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        thr = tiled.get_slice(tid)
        src = thr.partition_S(gS[(None, bid)])
        dst = thr.partition_D(gD[(None, bid)])
        if (bid + 1) * tile <= n:  # a whole tile: the TiledCopy's own loads and stores
            regs = cute.make_fragment_like(src)
            cute.copy(tiled, src, regs)
            cute.copy(tiled, regs, dst)
        else:  # the ragged last tile: one element at a time, each inside [0, n)
            coords = thr.partition_S(cI[(None, bid)])
            for i in cutlass.range_constexpr(cute.size(src)):
                if cute.elem_less(coords[i], (n,)):
                    dst[i] = src[i]

    return copy_tiles


def _launcher():
    """kernels.copies.copy's host side for the tiled variant, with the learner's TiledCopy."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    kernel = _kernel()

    @cute.jit
    def launch(
        src_ptr: cute.Pointer,
        dst_ptr: cute.Pointer,
        n: cutlass.Int32,
        stream: cuda.CUstream,
        make_copy: cutlass.Constexpr,
    ):
        S = cute.make_tensor(src_ptr, cute.make_layout(n))
        D = cute.make_tensor(dst_ptr, cute.make_layout(n))
        gS, gD = cute.zipped_divide(S, (TILE,)), cute.zipped_divide(D, (TILE,))
        cI = cute.zipped_divide(cute.make_identity_tensor((n,)), (TILE,))
        kernel(gS, gD, cI, n, make_copy(THREADS), TILE).launch(
            grid=[cute.size(gS, mode=[1]), 1, 1], block=[THREADS, 1, 1], stream=stream
        )

    return launch


launcher = functools.cache(_launcher)  # built once: every compile reuses one @cute.jit


def _build(fn, arch):
    import cutlass
    import torch

    from kernels.host import fake_stream, gmem_pointer

    p = gmem_pointer(None, torch.float32)
    return (launcher(), p, p, cutlass.Int32(VEC), fake_stream(), fn)


# ---------------------------------------------------------------- CPU checks

_LOAD_128 = r"ld\.global\S*\.(?:v4\.\w32|b128)\b"
_STORE_128 = r"st\.global\S*\.(?:v4\.\w32|b128)\b"


def moves_16_bytes_per_access(c):
    loads, stores = c.count(_LOAD_128), c.count(_STORE_128)
    return expect(
        "128-bit global loads and stores",
        loads > 0 and stores > 0,
        f"{loads} ld.global.v4 / {stores} st.global.v4 in the PTX",
        "vector width: each thread must move 16 bytes per instruction, so the copy "
        "atom needs num_bits_per_copy=128 (4 floats) and each thread 4 contiguous "
        "floats (value layout 4)",
    )


_LOAD_64 = r"ld\.global\S*\.(?:v2\.\w32|b64)\b"


def ptx_access_bytes(c) -> int:
    """The widest global load the PTX issues, in bytes (4 if none is a vector).

    The width of a lane's access is the instruction's, not the copy atom's: with
    NVIDIA's elementwise_add spelling, a copy atom of one element
    (`make_copy_atom(CopyUniversalOp(), Float32)`) over 4 contiguous floats per thread,
    the compiler merges the 4 into one ld.global.v4, so each lane moves 16 bytes."""
    if c.count(_LOAD_128):
        return 16
    return 8 if c.count(_LOAD_64) else 4


def warp_request(fn, ptx_bytes: int = 4):
    """Warp 0's first access as CuTe DSL partitions it: (byte address per lane, bytes).

    A lane moves the copy atom's bytes, or more where the compiler merged its contiguous
    values into the PTX's wider loads (`ptx_bytes`); never more than its run of
    contiguous values starting at its first one, which is all a vector load can merge."""
    import cutlass.cute as cute

    from course.cute.trace import on_cpu
    from course.models.coalescing import WARP, analyze

    tv, atom_values = on_cpu(
        lambda: (fn(THREADS).layout_tv_tiled, cute.size(fn(THREADS).layout_src_tv, mode=[1]))
    )
    first = [tv(lane, 0) for lane in range(WARP)]
    run = 1
    while run < tv[1].size and tv(0, run) == first[0] + run:
        run += 1
    width = max(4 * atom_values, min(ptx_bytes, 4 * run))
    return analyze([4 * a for a in first], width)


def coalesced_warps(c):
    from course.models.coalescing import LINE_BYTES, WARP

    acc = warp_request(c.fn, ptx_access_bytes(c))
    fewest = -(-WARP * acc.width // LINE_BYTES)
    ok = acc.efficiency == 1.0 and len(acc.lines) == fewest
    return expect(
        "one warp's request is coalesced",
        ok,
        acc.summary(),
        "uncoalesced: neighbouring threads must take neighbouring 16-byte vectors "
        "(thread layout `threads`, stride 1), so a warp's 32 accesses fill whole "
        "128-byte lines; here each lane's vector lies apart from the next lane's",
    )


# ---------------------------------------------------------------- GPU checks


def gpu_checks(fn, quick: bool = False, launching=lambda: None):
    import cutlass
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output
    from kernels.host import arch_for, compile_for, current_stream, gmem_pointer

    arch = arch_for(torch.cuda.get_device_capability())
    p = gmem_pointer(None, torch.float32)
    compiled = compile_for(arch, launcher(), p, p, cutlass.Int32(VEC), current_stream(), fn)
    launching()
    findings = []
    for n in QUICK_SIZES if quick else SIZES:
        src = torch.randn(n, device="cuda")
        out, buffer = guarded_output((n,), torch.float32)
        compiled(
            gmem_pointer(src, torch.float32),
            gmem_pointer(out, torch.float32),
            cutlass.Int32(n),
            current_stream(),
        )
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"n = {n:,} against torch",
                out,
                src.double(),
                buffer,
                wrong_hint="elements copied to the wrong place: the TiledCopy must cover its "
                "tile once, each element by one (thread, value)",
                edge_hint="a write past n: the TiledCopy's tile must be 1024 floats",
            )
        )
    if not quick and all(f.status == "pass" for f in findings):
        findings.append(speed_against_torch(compiled))
    return findings


def speed_against_torch(compiled):
    """Alternating rounds of torch's copy_ and the learner's copy on the same bytes."""
    import cutlass
    import torch

    from kernels.host import current_stream, gmem_pointer
    from kernels.selftest import paired_rounds, ratio_summary

    n = TIMED_BYTES // 4
    sets = [(torch.randn(n, device="cuda"), torch.empty(n, device="cuda")) for _ in range(3)]
    ptrs = [(gmem_pointer(s, torch.float32), gmem_pointer(d, torch.float32)) for s, d in sets]
    stream, count = current_stream(), cutlass.Int32(n)
    t = paired_rounds(
        {
            "torch": lambda i: sets[i % 3][1].copy_(sets[i % 3][0]),
            "yours": lambda i: compiled(*ptrs[i % 3], count, stream),
        },
        rounds=10,
        reps=20,
    )
    share = statistics.median(100 * a / b for a, b in zip(t["torch"], t["yours"]))
    gbps = 2 * TIMED_BYTES / statistics.median(t["yours"]) / 1e6
    return expect(
        SPEED_CHECK,
        share >= MIN_SHARE,
        f"{ratio_summary(t['torch'], t['yours'])} of torch's copy_ "
        f"({gbps:,.0f} GB/s read + write, {TIMED_BYTES >> 20} MiB)",
        "too slow for a copy: check the vector width (16 bytes per access) and that "
        "a warp's accesses are coalesced; both show in the CPU checks above",
    )


kernel_exercise(
    id="04.vector_copy",
    prompt="Write make_vector_copy(threads): the TiledCopy with which `threads` threads copy "
    "a 1-D float32 tile, each thread 4 contiguous floats with one 128-bit access, "
    "neighbouring threads on neighbouring vectors.",
    hint="one pass covers `threads` vectors of 4 floats: the copy atom moves 4 floats (128 "
    "bits) in one instruction, the thread layout says where the threads stand (1-D here), "
    "the value layout how many floats each takes; section 5 built the 2-D version.",
    arch="sm_90a",
    needs="gpu",
    build=_build,
    cpu_checks=(moves_16_bytes_per_access, coalesced_warps),
    gpu_checks=gpu_checks,
    timeout_s=120,
    speed_check=SPEED_CHECK,
    run_shows="whether it copies every element to its place on ragged sizes, and its "
    "bandwidth against torch's copy",
    compile_hints=(
        (
            r"cannot vectorize copy to (\d+) elements",
            "the 128-bit copy atom moves 4 contiguous floats per thread at once, but your "
            "value layout does not give each thread 4 contiguous floats: the value "
            "layout is cute.make_layout(4) (a value layout of 1 is the C++ habit of "
            "(1,1) with a scalar atom)",
        ),
    ),
    solution="course/exercises/solutions/nb04_solutions.py: make_vector_copy",
)
