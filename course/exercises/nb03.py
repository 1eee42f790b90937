"""Notebook 03's exercises: who owns what, and which thread layouts coalesce.

Expected answers come from the naive GEMM's own partitioning and from CuTe DSL's
TiledCopy, computed on a CPU when the answer is checked.

`03.partition` is a kernel exercise: the learner writes the naive GEMM's partitioning (the
CTA's tiles with local_tile, then the thread's share with the TiledMMA's partition_A/B/C);
a course kernel built from kernels.naive_gemm's pieces calls it. On a CPU the partitions it
gives a few threads are traced with CuTe and compared with the kernel's own cta_tiles and
thread_partitions; on a GPU the GEMM runs on ragged shapes against torch.
"""
# no `from __future__ import annotations`: CuTe DSL evaluates the kernel's annotations

import functools

from course.models import layout as pl
from course.exercises.check import Wrong, exercise
from course.exercises.kernel_check import expect, kernel_exercise
from course.exercises.nb02 import read_layout


@functools.cache
def _c_ownership():
    from course.cute import kernel_traces

    return kernel_traces.c_ownership()


def _pair(answer) -> tuple[int, int]:
    try:
        t, v = answer
        return int(t), int(v)
    except (TypeError, ValueError):
        raise Wrong("answer with a pair: (thread, value index)")


@exercise(
    "03.owner",
    "In the naive GEMM (its default configuration), which thread of block (0,0) holds "
    "C[65, 3], and in which of its 64 accumulators (value index)? Answer "
    "(thread, value).",
    "split the row and the column into their place inside a run of 4, the atom row or "
    "column whose run holds them, and the repeat of the 64-wide TiledMMA (section 5); the "
    "thread follows from the atom layout, the value from tCrC's register order (section 6).",
    "(0, 29): row 65 = 1 + 4*0 + 64*1 (i=1, atom row 0, gm=1); column 3 = "
    "3 + 4*0 + 64*0 (j=3, atom column 0, gn=0); thread 16*0 + 0 = 0, value "
    "1 + 4*1 + 8*3 + 0 = 29. Likewise C[70, 100] is (25, 38).",
)
def _owner(answer):
    t, v = _pair(answer)
    own = _c_ownership()
    ((want_t, want_v),) = own.owners(65, 3)
    if (t, v) == (want_t, want_v):
        return True, f"T{t}, accumulator {v}. {own.describe_thread(t, limit=4)}"
    if t == want_t:
        held = f"C[{own.cells_of(t)[v][0]}, {own.cells_of(t)[v][1]}]" if 0 <= v < 64 else "nothing"
        return (
            False,
            f"right thread; its accumulators are numbered like tCrC "
            f"(1,(4,2),(4,2)):(0,(1,4),(8,32)): value {v} holds {held}",
        )
    if 0 <= t < 256:
        cells = own.cells_of(t)
        rows = sorted({r for r, _, _ in cells})
        cols = sorted({c for _, c, _ in cells})
        return False, f"T{t} holds rows {rows} and columns {cols} -- not C[65, 3]"
    raise Wrong("a CTA has 256 threads: 0..255")


@exercise(
    "03.tCgC",
    "Change the permutation to (16,2):(2,1) (naive_gemm.Config(group=2)). Predict "
    "tCgC for thread 0 of the traced problem (M=256, N=128, K=32) as CuTe prints it, "
    "then check it with kernel_traces.thread_trace(config=...).",
    "each thread now owns runs of 2 rows and 2 columns, repeated every 32: 4 groups "
    "of 2 per mode; C is row-major with 128 columns.",
    "(1,(2,4),(2,4)):(0,(128,4096),(1,32)): rows i + 32*g (stride 128 per row, 32*128 "
    "per group), columns j + 32*g.",
)
def _tcgc(answer):
    from course.cute import kernel_traces
    from kernels import naive_gemm

    lay = read_layout(answer)
    want = pl.parse_layout(kernel_traces.thread_trace(config=naive_gemm.Config(group=2))["tCgC"])
    if lay == want:
        return True, f"{want}: 64 values in 16 blocks of 2x2."
    if lay.shape != want.shape:
        raise Wrong(
            f"the shape is (V, M-part, N-part) = {pl._fmt(want.shape)}: runs of 2, "
            f"4 of them, per mode"
        )
    return False, "the shape is right; a row of C is 128 elements, a group is 32 rows/columns"


def copy_sectors(thread_layout, tile=(32, 32), row_major: bool = True) -> tuple[int, list]:
    """32-byte sectors a warp touches when each of 32 threads loads its first float of
    a fp32 tile through CuTe's make_tiled_copy_tv(thread_layout, (1,1)); and where
    threads 0..31 read. Computed by CuTe DSL (course.cute.tiled_copy)."""
    from course.cute.tiled_copy import tiled_copy_map

    thr = read_layout(thread_layout) if not isinstance(thread_layout, pl.Layout) else thread_layout
    copy = tiled_copy_map(thr.shape, thr.stride, (1, 1), (1, 1), bits_per_copy=32)
    cells = [rc for (t, v), rc in copy.pairs if v == 0 and t < 32]
    addr = [(r * tile[1] + c) if row_major else (r + c * tile[0]) for r, c in cells]
    return len({a * 4 // 32 for a in addr}), cells


@exercise(
    "03.coalesced",
    "A 32x32 fp32 tile is stored ROW-major, (32,32):(32,1). A TiledCopy with one float per "
    "thread per step (val layout (1,1)) and 32 threads: pick the thread layout "
    "(shape:stride, 32 threads, (rows, cols) of threads) so that one warp-wide load "
    "touches as few 32-byte sectors as possible (coalesced: 4 sectors = 128 bytes). A sector "
    "is the unit the memory system moves: 32 aligned bytes, moved whole even if only 4 of "
    "them are wanted (notebook 04, section 2, counts them). Every thread layout that reaches "
    "the fewest sectors passes, and there is more than one; the stride of a mode of size 1 "
    "is never used, so any value there passes.",
    "which mode of a row-major tile is contiguous in memory? Threads with consecutive "
    "numbers should step along it.",
    "(1,32) -- or (4,8):(8,1): thread t reads row t // 8, column t % 8, whole 32-byte "
    "sectors. The column-major default (32,1) touches 32 sectors, 8x the traffic.",
)
def _coalesced(answer):
    thr = read_layout(answer)
    if thr.size != 32:
        raise Wrong(f"{thr} has {thr.size} threads; a warp is 32")
    if sorted(thr.offsets().tolist()) != list(range(32)):
        raise Wrong(f"{thr} does not number the threads 0..31 once each")
    sectors, cells = copy_sectors(thr)
    if sectors == 4:
        return True, f"{thr}: threads 0..31 read {cells[:4]}... = 4 sectors, 128 bytes."
    return (
        False,
        f"{thr}: the warp touches {sectors} sectors (4 is ideal); threads 0-3 read "
        f"{cells[:4]} -- make consecutive threads read consecutive columns",
    )


# ---------------------------------------------------------------- kernel exercise 03.partition

GEMM_SHAPES = ((128, 128, 8), (129, 130, 17), (256, 64, 40), (64, 300, 24), (300, 200, 33))
QUICK_GEMM_SHAPES = ((129, 130, 17),)
PROBE_MNK = (256, 256, 24)  # a 2x2 grid of CTAs, 3 K-tiles: enough to tell bm from bn
PROBE_BLOCKS = ((1, 0), (0, 1))
PROBE_THREADS = (0, 17, 200)


def _config():
    from kernels import naive_gemm

    return naive_gemm.Config()


def _gemm_launcher():
    """The naive GEMM with its partitioning replaced by the learner's `partition`: the
    kernel's tiled MMA and global tensors, a predicated K loop of cute.gemm, a predicated
    store (every tile takes the edge path: correctness is the point here, not speed)."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    from kernels import naive_gemm

    config = _config()

    @cute.kernel
    def gemm_kernel(
        mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, partition: cutlass.Constexpr
    ):
        tid, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        tiled_mma = naive_gemm.make_tiled_mma(config)
        tCgA, tCgB, tCgC = partition(tiled_mma, tid, mA, mB, mC, config.cta_tiler, bm, bn)
        tCcA, tCcB, tCcC = partition(
            tiled_mma,
            tid,
            cute.make_identity_tensor(mA.shape),
            cute.make_identity_tensor(mB.shape),
            cute.make_identity_tensor(mC.shape),
            config.cta_tiler,
            bm,
            bn,
        )
        tCrA = cute.make_rmem_tensor(tCgA[None, None, None, 0].shape, cutlass.Float32)
        tCrB = cute.make_rmem_tensor(tCgB[None, None, None, 0].shape, cutlass.Float32)
        tCrC = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
        tCrC.fill(0.0)
        for kt in cutlass.range((mA.shape[1] + config.tile_k - 1) // config.tile_k):
            tCgA_k, tCcA_k = tCgA[None, None, None, kt], tCcA[None, None, None, kt]
            tCgB_k, tCcB_k = tCgB[None, None, None, kt], tCcB[None, None, None, kt]
            for i in cutlass.range(cute.size(tCrA), unroll_full=True):  # zero past M or K
                tCrA[i] = tCgA_k[i] if cute.elem_less(tCcA_k[i], mA.shape) else cutlass.Float32(0)
            for i in cutlass.range(cute.size(tCrB), unroll_full=True):  # zero past N or K
                tCrB[i] = tCgB_k[i] if cute.elem_less(tCcB_k[i], mB.shape) else cutlass.Float32(0)
            for kb in cutlass.range_constexpr(config.tile_k):
                cute.gemm(tiled_mma, tCrC, tCrA[None, None, kb], tCrB[None, None, kb], tCrC)
        for i in cutlass.range(cute.size(tCrC), unroll_full=True):
            if cute.elem_less(tCcC[i], mC.shape):
                tCgC[i] = tCrC[i]

    @cute.jit
    def launch(
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
        partition: cutlass.Constexpr,
    ):
        mA, mB, mC = naive_gemm.global_tensors(a_ptr, b_ptr, c_ptr, m, n, k, "m", "n")
        grid = [
            (m + config.tile_m - 1) // config.tile_m,
            (n + config.tile_n - 1) // config.tile_n,
            1,
        ]
        gemm_kernel(mA, mB, mC, partition).launch(
            grid=grid, block=[config.threads, 1, 1], stream=stream
        )

    return launch


gemm_launcher = functools.cache(_gemm_launcher)  # built once, reused by every compile


def _gemm_args(tensors, stream):
    """(a_ptr, b_ptr, c_ptr, m, n, k, stream) for compiling (tensors None) or running."""
    import cutlass
    import torch

    from kernels.host import gmem_pointer

    a, b, c = tensors if tensors else (None, None, None)
    m, n, k = (c.shape[0], c.shape[1], a.shape[1]) if tensors else (8, 8, 8)
    return (
        *(gmem_pointer(t, torch.float32) for t in (a, b, c)),
        cutlass.Int32(m),
        cutlass.Int32(n),
        cutlass.Int32(k),
        stream,
    )


def _build_gemm(fn, arch):
    from kernels.host import fake_stream

    return (gemm_launcher(), *_gemm_args(None, fake_stream()), fn)


def kernel_partition(tiled_mma, tid, mA, mB, mC, tiler, bm, bn):
    """The kernel's own partitioning (kernels.naive_gemm), in the exercise's signature."""
    from kernels import naive_gemm

    return naive_gemm.thread_partitions(
        tiled_mma, tid, *naive_gemm.cta_tiles(mA, mB, mC, _config(), bm, bn)
    )


def _cells_job(fn):
    """Inside a trace: the cells of A, B and C that `fn` and the known mistakes give each
    probe thread, read from coordinate tensors (course.cute.partition_ownership.elements)."""
    import cutlass.cute as cute

    from course.cute.partition_ownership import elements
    from kernels import naive_gemm

    m, n, k = PROBE_MNK
    coords = [cute.make_identity_tensor(s) for s in ((m, k), (n, k), (m, n))]
    tiled_mma = naive_gemm.make_tiled_mma(_config())
    config = _config()
    found = {}
    for bm, bn in PROBE_BLOCKS:
        for t in PROBE_THREADS:
            learner = fn(tiled_mma, t, *coords, config.cta_tiler, bm, bn)
            gA, gB, _ = naive_gemm.cta_tiles(*coords, config, bm, bn)
            thr = tiled_mma.get_slice(t)
            found[(bm, bn, t)] = {
                "learner": [elements(x) for x in learner],
                "reference": [
                    elements(x)
                    for x in kernel_partition(tiled_mma, t, *coords, config.cta_tiler, bm, bn)
                ],
                "blocks swapped": [
                    elements(x)
                    for x in kernel_partition(tiled_mma, t, *coords, config.cta_tiler, bn, bm)
                ],
                "modes swapped": [elements(thr.partition_B(gA)), elements(thr.partition_A(gB))],
            }
    return found


@functools.cache
def _probe_cells(fn):
    from course.cute.trace import on_cpu

    return on_cpu(lambda: _cells_job(fn))


def _first_difference(mine: list, ref: list) -> str:
    """Where a thread's cells part from the kernel's: their first differing place (the
    first cells alone may agree), or their count."""
    for i, (a, b) in enumerate(zip(mine, ref)):
        if a != b:
            return f"its value {i} is cell {a}, the kernel's is {b} ({len(mine)} cells)"
    return (
        f"{len(mine)} cells, the kernel's {len(ref)} (the first {min(len(mine), len(ref))} agree)"
    )


def _operand_check(index: int, name: str, tensor: str, tile_hint: str, mode_hint: str):
    """A CPU check: every probe thread's cells of one operand equal the kernel's."""

    def check(c):
        probes = _probe_cells(c.fn)
        wrong = [
            key for key, got in probes.items() if got["learner"][index] != got["reference"][index]
        ]
        what = f"{tensor}: the cells of {name} each thread gets"
        if not wrong:
            return expect(
                what,
                True,
                f"threads {', '.join(map(str, PROBE_THREADS))} of CTAs "
                f"{', '.join(map(str, PROBE_BLOCKS))}: the kernel's own",
            )
        bm, bn, t = wrong[0]
        got = probes[wrong[0]]
        mine, ref = got["learner"][index], got["reference"][index]
        detail = f"CTA ({bm},{bn}) thread {t}: " + _first_difference(mine, ref)
        if mine == got["blocks swapped"][index]:
            hint = tile_hint
        elif index < 2 and mine == got["modes swapped"][index]:
            hint = mode_hint
        else:
            hint = (
                f"the CTA's tile of {name} is local_tile(m{name}, tiler, (bm, bn, None), "
                f"proj=...) keeping {name}'s two modes; the thread's share is "
                f"partition_{name} of it"
            )
        return expect(what, False, detail, hint)

    check.__name__ = f"{tensor}_matches"
    return check


c_cells_match = _operand_check(
    2,
    "C",
    "tCgC",
    "swapped block coordinates: bm = block_idx x picks the tile along M, bn = block_idx y "
    "the tile along N: coord (bm, bn, None)",
    "",
)
a_cells_match = _operand_check(
    0,
    "A",
    "tCgA",
    "wrong projection: A is (M, K), so its tile is picked by bm and every k: its "
    "projection must keep the tiler's M and K modes and drop N",
    "wrong partition mode: A's share comes from partition_A (the thread's rows of M); "
    "partition_B cuts by the thread's columns of N",
)
b_cells_match = _operand_check(
    1,
    "B",
    "tCgB",
    "wrong projection: B is (N, K), so its tile is picked by bn and every k: its "
    "projection must keep the tiler's N and K modes and drop M",
    "wrong partition mode: B's share comes from partition_B (the thread's columns of N); "
    "partition_A cuts by the thread's rows of M",
)


def ptx_has_fma(c):
    fmas = c.count(r"fma\.rn\.f32")
    return expect(
        "PTX: the scalar FMAs of the K loop",
        fmas >= 64,
        f"{fmas} fma.rn.f32",
        "each K step is 64 FMAs per thread: tCgC should hold "
        "64 values (1,(4,2),(4,2)), from partition_C of the CTA's C tile",
    )


def gpu_gemm(fn, quick: bool = False, launching=lambda: None):
    """The GEMM with the learner's partitioning on ragged shapes, fp32, against torch."""
    import torch

    from course.exercises.gpu_run import guarded_output, judge_output
    from kernels.host import arch_for, compile_for, current_stream

    arch = arch_for(torch.cuda.get_device_capability())
    compiled = compile_for(arch, gemm_launcher(), *_gemm_args(None, current_stream()), fn)
    launching()
    findings = []
    for m, n, k in QUICK_GEMM_SHAPES if quick else GEMM_SHAPES:
        a = torch.randn(k, m, device="cuda").t()  # (M, K), M-major as the kernel takes it
        b = torch.randn(k, n, device="cuda").t()  # (N, K), N-major
        c, buffer = guarded_output((m, n), torch.float32)
        compiled(*_gemm_args((a, b, c), current_stream()))
        torch.cuda.synchronize()
        findings.append(
            judge_output(
                f"C = A . B^T, M,N,K = {m},{n},{k}, against torch",
                c,
                a.double() @ b.double().t(),
                buffer,
                wrong_hint="wrong values or tiles never written: check the coordinates "
                "(bm, bn, None) and each operand's projection and partition_A/B/C",
                edge_hint="writes past C: the store must follow C's coordinate tensor",
            )
        )
    return findings


kernel_exercise(
    id="03.partition",
    prompt="Write gemm_partitions(tiled_mma, tid, mA, mB, mC, tiler, bm, bn): the CTA's tiles "
    "of A, B and C, then thread tid's share of each by the TiledMMA's scheme; return "
    "(tCgA, tCgB, tCgC).",
    hint="which two of the tiler's (BM, BN, BK) modes does each tensor have? Its projection "
    "keeps those and drops the third; and the thread's slice of the TiledMMA has one "
    "partition for each operand (section 5).",
    arch="sm_90a",
    needs="gpu",
    build=_build_gemm,
    cpu_checks=(c_cells_match, a_cells_match, b_cells_match, ptx_has_fma),
    gpu_checks=gpu_gemm,
    timeout_s=120.0,
    solution="course/exercises/solutions/nb03_solutions.py: gemm_partitions",
)
