"""Notebook 09's mbarrier ring: the parities of each k-tile, the classic mistakes run to a
standstill by the simulator, the kernel's own protocol checked on a CPU, the watchdog that
keeps a hung kernel from freezing the notebook, and what the compiler made of the ring.

  print_parities        k-tile -> stage, trip and the parities both sides wait for
  print_deadlocks       each injected mistake: what happens and the most likely cause
  print_protocol_checks the kernel's barrier sequence checked, correct and with each bug
  watchdog_demo         a wait that never completes, stopped by the watchdog
  bugs_on_gpu           each kernel bug through the watchdog and the debug mode (live)
  bugs_executed         the same bugs in the kernel's own code on the CPU executor (fallback)
  bugs_modelled         the same bugs in the protocol model
  ring_instructions     the TMA GEMM's barriers, loads and MMAs in PTX and SASS (fallback)
  compare_rings         the ring by hand and as PipelineTmaAsync: the same instructions
  check_pipeline_ring   the PipelineTmaAsync version against torch (live)
  check_executed        either ring's own code on the CPU executor, small shapes (fallback)
  tma_gemm_sweep        section 6's cell: the ring by hand, checked (a live cell)
  pipeline_ring_check   section 6's cell: the ring as PipelineTmaAsync, checked (a live cell)
  ring_bugs             section 7's cell: each bug caught, on the GPU or the executor (a live cell)
"""

from __future__ import annotations

import textwrap
import time

from course.lessons.gemm_lesson import compile_report, executor_line, sweep_or_executed
from course.lessons.pipeline_checks import check_tma_gemm
from course.runtime import watchdog
from course.runtime.live import Outcome, live_or_executed
from course.sim import pipeline_sim, ring_protocol

# (m, n, k, A/B type) on the CPU executor: numpy plays every thread, so small ones; k = 328 is
# six k-tiles, so the default four-stage ring wraps round and the parities flip
EXECUTOR_CASES = [(129, 264, 328, "bf16"), (1, 8, 8, "fp16")]


def _tma_gemm():
    from kernels import tma_gemm

    return tma_gemm


def print_parities(stages: int = 3, k_tiles: int = 9) -> list[tuple[int, int]]:
    """For each k-tile: its stage and trip round the ring, the parity consumers wait for on
    full[s] and the parity the producer's load of it waits for on empty[s]."""
    tma_gemm = _tma_gemm()
    print(
        "k-tile  stage  trip | consumers wait full[s] for parity | producer's load of it "
        "waits empty[s] for parity"
    )
    parities = []
    for t in range(k_tiles):
        full, empty = tma_gemm.consumer_parity(t, stages), tma_gemm.producer_parity(t, stages)
        parities.append((full, empty))
        print(f"{t:6d}  {t % stages:5d}  {t // stages:4d} | {full:32d} | {empty:d}")
    return parities


def print_deadlocks(
    bugs=("producer_parity", "missing_arrive", "arrival_count", "tx_bytes", "early_release"),
    stages: int = 4,
    k_tiles: int = 12,
) -> dict:
    """Simulate each mistake: its description, the run's summary, and the diagnosis (the
    most likely cause of a deadlock, or the last line of the explanation otherwise)."""
    sims = {}
    for bug in bugs:
        sim = pipeline_sim.simulate(stages=stages, k_tiles=k_tiles, bug=bug)
        sims[bug] = sim
        print(f"--- {bug}: {pipeline_sim.BUGS[bug]}")
        print(sim.summary())
        lines = sim.explain().splitlines()
        print(
            lines[-1]
            if sim.deadlock is None
            else next(line for line in lines if line.startswith("Most likely"))
        )
    return sims


def print_protocol_checks(width: int = 150) -> dict[str, str]:
    """The kernel's exact barrier sequence, checked by course.sim.ring_protocol: correct, and
    with each of the kernel's bugs."""
    verdicts = {}
    for bug in _tma_gemm().BUGS:
        verdicts[bug] = ring_protocol.check(bug=bug)
        print(f"{bug or 'correct':22s} {verdicts[bug][:width]}")
    return verdicts


def watchdog_demo(timeout_s: float = 2) -> watchdog.PipelineHang | None:
    """Run a wait for a phase that never completes in a child process; the watchdog stops it
    after `timeout_s` and says what hung."""
    start = time.perf_counter()
    try:
        watchdog.isolated(watchdog.spin_wait, 1, timeout_s=timeout_s)
    except watchdog.PipelineHang as err:
        print(f"after {time.perf_counter() - start:.1f} s: PipelineHang: {str(err)[:220]}...")
        return err
    print("the wait finished: no hang to catch")
    return None


def bugs_on_gpu(stages: int = 2) -> dict:
    """Each of the kernel's bugs, run through the watchdog and then with the bounded-wait
    debug mode (needs a Hopper GPU)."""
    tma_gemm = _tma_gemm()
    caught = {}
    for bug in tma_gemm.BUGS[1:]:
        for debug in (0, 200):
            cfg = tma_gemm.Config(stages=stages, bug=bug, debug_timeout_ms=debug)
            try:
                watchdog.isolated(check_tma_gemm, 256, 256, 1024, "bf16", cfg, timeout_s=10)
                print(f"{bug}: finished?!")
                caught[bug, debug] = None
            except watchdog.PipelineHang as err:
                what = "debug mode" if debug else "watchdog  "
                print(f"{bug:22s} {what}: {str(err)[:160]}")
                caught[bug, debug] = str(err)
    return caught


def bugs_executed(stages: int = 2, shape=(129, 136, 200)) -> dict:
    """Without a Hopper GPU: each of the kernel's bugs injected into kernels/tma_gemm.py's own
    code (a two-stage ring, four k-tiles) and run on the course's CPU executor, which stops a
    deadlock as soon as no warp can go on and says who waits on which barrier for which parity."""
    from course.execute import ladder_runs

    tma_gemm = _tma_gemm()
    caught = {}
    for bug in tma_gemm.BUGS[1:]:
        run = ladder_runs.run_tma_gemm(*shape, config=tma_gemm.Config(stages=stages, bug=bug))
        caught[bug] = run.hazard
        said = "finished?!" if run.hazard is None else str(run.hazard)
        print(f"{bug}:\n" + textwrap.fill(said, 100, initial_indent="  ", subsequent_indent="  "))
    return caught


def bugs_modelled(stages: int = 2, k_tiles: int = 16) -> dict[str, str]:
    """Each of the kernel's bugs in the protocol model: who waits for what, forever."""
    verdicts = {}
    for bug in _tma_gemm().BUGS[1:]:
        verdicts[bug] = ring_protocol.run(stages, k_tiles, bug=bug)
        print(f"{bug:22s} {verdicts[bug][:170]}")
    return verdicts


def ring_instructions(arch: str):
    """The TMA GEMM's TMA loads, barrier operations, ldmatrix and mma.sync in PTX, and the
    SASS opcodes they become."""
    import torch

    art = _tma_gemm().artifacts(arch, torch.bfloat16)
    compile_report(
        art,
        {
            "TMA loads": r"cp\.async\.bulk\.tensor",
            "barrier init": r"mbarrier\.init",
            "arm with bytes": r"mbarrier\.arrive\.expect_tx",
            "release (arrive on empty)": r"mbarrier\.arrive\.shared",
            "parity waits": r"mbarrier\.try_wait\.parity",
            "ldmatrix": r"ldmatrix",
            "mma.sync": r"mma\.sync",
            "cp.async (notebook 07)": r"cp\.async\.cg",
        },
        show=1,
        sass=("UTMALDG", "SYNCS", "LDSM", "HMMA.16816.F32"),
    )
    return art


RING_INSTRUCTIONS = {
    "TMA loads": r"cp\.async\.bulk\.tensor",
    "barrier init": r"mbarrier\.init",
    "arm with bytes": r"mbarrier\.arrive\.expect_tx",
    "arrivals": r"mbarrier\.arrive",
    "parity waits": r"mbarrier\.try_wait",
    "ldmatrix": r"ldmatrix",
    "mma.sync": r"mma\.sync",
}


def compare_rings(arch: str = "sm_90a") -> dict[str, tuple[int, int]]:
    """The same GEMM with the ring written by hand and as PipelineTmaAsync, compiled for
    `arch`: each instruction's count in both PTX listings, side by side."""
    import torch

    tma_gemm = _tma_gemm()
    arts = {
        ring: tma_gemm.artifacts(arch, torch.bfloat16, tma_gemm.Config(ring=ring))
        for ring in tma_gemm.RINGS
    }
    counts = {
        name: tuple(arts[ring].count_ptx(pattern) for ring in tma_gemm.RINGS)
        for name, pattern in RING_INSTRUCTIONS.items()
    }
    print(f"{'PTX instruction':18s} {'by hand':>8s} {'PipelineTmaAsync':>17s}")
    for name, (hand, lib) in counts.items():
        print(f"{name:18s} {hand:8d} {lib:17d}")
    return counts


def check_pipeline_ring() -> list:
    """The PipelineTmaAsync version of the kernel against torch on ragged shapes (live)."""
    from course.lessons.gemm_lesson import check_sweep

    tma_gemm = _tma_gemm()
    config = tma_gemm.Config(ring="pipeline")
    return check_sweep(lambda a, b, c: tma_gemm.run(a, b, c, config))


def check_executed(ring: str = "mbarrier", cases=EXECUTOR_CASES) -> list:
    """Without a Hopper GPU, the sweep's fallback: kernels/tma_gemm.py's own code with the
    ring written `ring`'s way ("mbarrier" by hand, "pipeline" as PipelineTmaAsync) on the
    course's CPU executor, each case against torch in float64: one line each."""
    import cutlass

    from course.execute import ladder_runs

    types = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}
    return [
        executor_line(ladder_runs.run_tma_gemm(m, n, k, ring=ring, dtype=types[ab]))
        for m, n, k, ab in cases
    ]


def tma_gemm_sweep() -> Outcome:
    """Section 6's first cell. On an sm_90+ GPU: kernels/tma_gemm.py (the ring by hand) over
    the ragged shapes against torch. Elsewhere: its own code on the CPU executor
    (EXECUTOR_CASES), then its barriers, loads and MMAs compiled for sm_90a (compile-only),
    then the recorded GPU output (label 09.tma_gemm_sweep)."""
    return sweep_or_executed(
        "sm_90+",
        "tma_gemm",
        check_executed,
        "kernels/tma_gemm.py (the ring by hand)",
        label="09.tma_gemm_sweep",
        compiled=ring_instructions,
    )


def pipeline_ring_check() -> Outcome:
    """Section 6's second cell. On an sm_90+ GPU: the PipelineTmaAsync ring against torch
    (`check_pipeline_ring`). Elsewhere: that ring's own code (and CuTe DSL's
    `cutlass.pipeline`) on the CPU executor, then both rings compiled for sm_90a and their
    instructions counted side by side (compile-only), then the recorded GPU output
    (label 09.ring_check)."""
    return live_or_executed(
        "sm_90+",
        check_pipeline_ring,
        lambda: check_executed(ring="pipeline"),
        'kernels/tma_gemm.py with Config(ring="pipeline")',
        compiled=compare_rings,
        label="09.ring_check",
    )


def ring_bugs() -> Outcome:
    """Section 7's cell. On an sm_90+ GPU: each bug launched under the watchdog and in the
    debug mode (`bugs_on_gpu`). Elsewhere: each bug injected into the kernel's own code on the
    CPU executor (`bugs_executed`), then the recorded GPU output (label 09.ring_bugs)."""
    return live_or_executed(
        "sm_90+",
        bugs_on_gpu,
        bugs_executed,
        "each bug injected into kernels/tma_gemm.py",
        label="09.ring_bugs",
    )
