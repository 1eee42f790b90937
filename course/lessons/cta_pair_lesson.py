"""Notebook 15's two kernels, the CTA pair and the CTA pair under CLC: which rows each CTA of
a pair holds, what CLC changes, which epilogue warp reads each accumulator element, the
functional emulator's run (and the broken schedules it catches), and both kernels checked
and timed on Blackwell, or compiled.

  print_operand_rows   A, B and C rows of the leader and the follower
  clc_changes          what kernels.cta_pair_clc_gemm overrides in kernels.cta_pair_gemm
  compare_instructions the two kernels' instructions, side by side (compiled here)
  epilogue_warp_map    the pair tile painted by the epilogue warp that reads each element
  run_executed         both kernels' own code on the CPU executor (CLC cancels in a seeded order)
  planted_mistakes     each synchronisation mistake planted, as the executor names it
  emulate_pair         the emulator on a ragged problem: verdict, tiles per pair, overlaps
  broken_schedules     the emulator under a CLC that hands a tile out twice, or never
  check_and_time       shape sweep and benchmark against cuBLAS (live, Blackwell)
  compiled_elsewhere   the kernel compiled here, and how to measure it on a B200 (fallback)
  checked_and_timed    section 10's cell: check_and_time, else compiled_elsewhere (a live cell)
"""

from __future__ import annotations

import re

from dataclasses import replace

from course.emulate import emulate_cta_pair_clc_gemm, emulate_cta_pair_gemm
from course.emulate.blackwell_gemm import cta_pair_clc_gemm_shape, emulate_gemm
from course.emulate.clc import DuplicateTile, SkipTile
from course.models.ownership import Ownership
from course.models.tmem_ownership import LANES, pair_tile_pairs, warp_of_lane
from course.runtime.live import Outcome, compile_only, live_or

CHECK_SHAPES = [(256, 128, 64), (1000, 1016, 520), (4096, 4096, 4096)]


def print_operand_rows(tile_n: int = 128) -> dict:
    """The rows of A, B and C each CTA of a pair holds, from CuTe's partitioning."""
    from course.cute import kernel_traces

    rows = kernel_traces.pair_operand_rows(tile_n)
    for rank, halves in rows.items():
        role = "leader" if rank == 0 else "follower"
        print(
            f"CTA {rank} ({role}): A rows {halves['A']}, B rows {halves['B']}, C rows {halves['C']}"
        )
    return rows


def clc_changes() -> list[str]:
    """The members the CLC kernel defines over the CTA-pair kernel, with the first line of
    each one's docstring: the whole difference between the two steps."""
    from kernels.cta_pair_clc_gemm import CtaPairClcGemm
    from kernels.cta_pair_gemm import CtaPairGemm

    changed = []
    for name, member in vars(CtaPairClcGemm).items():
        if name.startswith("__") and name != "__init__":
            continue
        changed.append(name)
        what = "overrides" if hasattr(CtaPairGemm, name) else "adds"
        doc = (getattr(member, "__doc__", None) or "").strip() if callable(member) else ""
        detail = f": {doc.splitlines()[0]}" if doc else "" if callable(member) else f" = {member!r}"
        print(f"{what:9s} {name}{detail}")
    return changed


PAIR_INSTRUCTIONS = {
    "paired MMA (tcgen05.mma.cta_group::2)": r"tcgen05\.mma\.cta_group::2",
    "TMEM alloc": r"tcgen05\.alloc",
    "TMEM load (epilogue)": r"tcgen05\.ld\.",
    "commit (multicast)": r"tcgen05\.commit",
    "cluster barriers": r"barrier\.cluster\.arrive",
    "multicast bulk tensor copies": r"cp\.async\.bulk\.tensor.*multicast::cluster",
    "CLC try_cancel": r"clusterlaunchcontrol\.try_cancel",
    "CLC query": r"clusterlaunchcontrol\.query_cancel",
}


def compare_instructions(arch: str = "sm_100a") -> dict[str, tuple[int, int]]:
    """Both pair kernels compiled for `arch` (no GPU needed): each instruction's count in the
    CTA-pair kernel and in the CLC kernel, and the TMEM columns each allocates."""
    import torch

    from kernels import cta_pair_clc_gemm, cta_pair_gemm

    arts = [m.artifacts(arch, torch.bfloat16) for m in (cta_pair_gemm, cta_pair_clc_gemm)]
    counts = {name: tuple(a.count_ptx(p) for a in arts) for name, p in PAIR_INSTRUCTIONS.items()}
    print(f"{'PTX instruction':40s} {'CTA pair':>9s} {'+ CLC':>6s}")
    for name, (pair, clc) in counts.items():
        print(f"{name:40s} {pair:9d} {clc:6d}")
    slots = [m.footprint()["tmem_columns"] for m in (cta_pair_gemm, cta_pair_clc_gemm)]
    print(f"{'TMEM columns allocated':40s} {slots[0]:9d} {slots[1]:6d}")
    return counts


# clears bit 24 (the bit that tells the pair's two CTAs apart in the shared-memory window, so
# the address names the leader's barrier) and the low 3 bits (a barrier is 8-byte aligned)
PEER_BIT_MASK = 0xFEFFFFF8


def print_peer_bit_mask(arch: str = "sm_100a") -> list[str]:
    """The PTX line that masks the barrier address with 0xFEFFFFF8 (PTX prints the 32-bit
    constant as a signed decimal), compiled here for `arch`: the completion bytes of the
    peer CTA's TMA copies are counted on the leader's barrier."""
    import torch

    from kernels import cta_pair_gemm

    signed = PEER_BIT_MASK - (1 << 32)
    lines = cta_pair_gemm.artifacts(arch, torch.bfloat16, cta_pair_gemm.Config()).ptx_lines(
        rf"and\.b32\s+%r\d+, %r\d+, {signed};"
    )
    print(f"0x{PEER_BIT_MASK:08X} as a signed 32-bit value is {signed}; in the {arch} PTX:")
    for line in lines:
        print("   ", line)
    return lines


def epilogue_warp_map(tile_n: int = 128) -> Ownership:
    """The 256 x tile_n pair tile, each element labelled with the epilogue warp that reads it:
    W0-3 are the leader's warps, W4-7 the follower's (thread 128r + t is thread t of CTA r)."""
    warps = [
        ((4 * (t // LANES) + warp_of_lane(t % LANES), v), rc)
        for (t, v), rc in pair_tile_pairs(tile_n)
    ]
    return Ownership.from_pairs(
        (2 * LANES, tile_n),
        warps,
        title=f"{2 * LANES}x{tile_n} pair tile: which epilogue warp (W0-3 "
        "leader, W4-7 follower) reads each accumulator element",
        thread_label="W",
    )


def run_executed(m: int = 600, n: int = 392, k: int = 200, seeds=(1, 2)) -> list:
    """Both kernels' own code on the CPU executor against A.B^T in float64: the pair kernel
    once, the CLC kernel under each seed (which clusters CLC cancels, and in what order,
    follows the seed)."""
    from course.execute import blackwell_runs
    from course.lessons.gemm_lesson import executor_line

    runs = [executor_line(blackwell_runs.run_gemm("cta_pair_gemm", m, n, k))]
    for seed in seeds:
        runs.append(executor_line(blackwell_runs.run_gemm("cta_pair_clc_gemm", m, n, k, seed=seed)))
    return runs


def planted_mistakes(names=None, shape=(129, 136, 72)) -> dict:
    """Each synchronisation mistake of course.execute.planted (or those of `names`) made in
    the kernel, run on the executor: the hazard it names (kind and message), or that it
    passed."""
    from course.execute import blackwell_runs, planted

    named = {}
    for name in names or planted.PLANTS:
        plant = planted.PLANTS[name]
        with planted.planted(name):
            run = blackwell_runs.run_gemm(plant.kernel, *shape)
        named[name] = run.hazard
        what = "PASSED (not caught)" if run.hazard is None else _without_code(str(run.hazard))
        print(f"{plant.mistake} ({plant.kernel}):\n  -> {what}")
    return named


def _without_code(message: str) -> str:
    """A hazard's message with the quoted kernel lines left out (the line numbers stay): one
    of them is the answer of this notebook's exercise."""
    return re.sub(r" \(`[^`]*`\)", "", message)


def emulate_pair(a, b, resident_clusters: int = 2, seed: int = 1):
    """Run the emulator on A, B: its verdict, the tiles each pair computed, the CLC answers,
    how often the next tile's MMA began before the previous tile's last store, and the same
    count with one TMEM slot (which forbids the overlap)."""
    single_tiles = emulate_cta_pair_gemm(a, b, seed=seed)
    print(f"CTA pair, one tile per cluster: {single_tiles.check(a, b)}")
    emu = emulate_cta_pair_clc_gemm(a, b, resident_clusters=resident_clusters, seed=seed)
    print(f"CTA pair under CLC: {emu.check(a, b)}")
    for cluster, tiles in emu.tiles_by_cluster().items():
        print(f"pair {cluster}: tiles {tiles}")
    print(
        f"CLC answers: {len(emu.clc_log)}; tile transitions where the next tile's MMA began "
        f"before the last store of the previous one: {len(emu.overlaps())}"
    )
    one_slot = emulate_gemm(
        a,
        b,
        replace(cta_pair_clc_gemm_shape(), acc_slots=1),
        resident_clusters=resident_clusters,
        seed=seed,
    )
    print(f"with one TMEM slot: {len(one_slot.overlaps())} such overlaps, {one_slot.check(a, b)}")
    return emu, one_slot


def broken_schedules(a, b, resident_clusters: int = 2, seed: int = 1) -> dict:
    """The emulator's verdict when CLC hands a tile out twice (DuplicateTile) or never
    (SkipTile)."""
    verdicts = {}
    for broken in (DuplicateTile, SkipTile):
        verdicts[broken.__name__] = emulate_cta_pair_clc_gemm(
            a, b, resident_clusters=resident_clusters, seed=seed, clc=broken
        ).check(a, b)
        print(f"{broken.__name__:13s}", verdicts[broken.__name__])
    return verdicts


def check_and_time(shapes=CHECK_SHAPES, sizes=(4096, 8192)) -> list:
    """Both kernels: the shape sweep against torch, then the benchmark against cuBLAS
    (needs sm_100a)."""
    from course.lessons.gemm_lesson import bench_live, check_sweep
    from kernels import cta_pair_clc_gemm, cta_pair_gemm

    rows = []
    for name, module in (
        ("cta_pair_gemm", cta_pair_gemm),
        ("cta_pair_clc_gemm", cta_pair_clc_gemm),
    ):
        print(f"--- {name}")
        check_sweep(module.run, shapes=shapes)
        rows += bench_live(name, sizes=sizes)
    return rows


def compiled_elsewhere(arch: str) -> dict:
    """Compile for `arch` and print registers and stack; then the commands that check and
    measure the kernel on a B200."""
    import torch

    from kernels import cta_pair_clc_gemm, cta_pair_gemm

    for name, module in (
        ("cta_pair_gemm", cta_pair_gemm),
        ("cta_pair_clc_gemm", cta_pair_clc_gemm),
    ):
        (res,) = module.artifacts(arch, torch.bfloat16).resource_usage().values()
        print(
            f"{name} compiled for {arch}: {res['registers']} registers per thread, "
            f"{res['stack_frame_bytes']} B stack; no launch here."
        )
    print("To check and measure them on a B200:")
    print("   python -m kernels.cta_pair_gemm; python -m kernels.cta_pair_clc_gemm")
    print("   pytest -m gpu tests/test_cta_pair_gemms.py")
    print("   python -m course.bench gemm --kernel cta_pair_clc_gemm --record")
    return res


def checked_and_timed() -> Outcome:
    """Section 10's cell. On an sm_100a GPU: both kernels over a shape sweep against torch and
    timed against cuBLAS (`check_and_time`). Elsewhere compile-only: both compiled for
    sm_100a and the commands that measure them (`compiled_elsewhere`), then the recorded GPU
    output (label 15.cta_pair)."""
    return live_or("sm_100a", check_and_time, compile_only(compiled_elsewhere), label="15.cta_pair")
