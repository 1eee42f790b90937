"""Run a WGMMA main loop on the CPU: the code itself, one Python thread per warp.

The `mainloop(self, tiled_mma, acc, tCrA, tCrB, ring, read, release, produce, k_tiles,
warp, loads)` method of kernels.wgmma_gemm.WgmmaGemm (the kernel's own, or a learner's) is
run as plain Python by each of the CTA's consumer warps (course.sim.warp_threads), over a
model of what it touches:

  * the PipelineTmaAsync ring: full[s] (one expect_tx arrival + the k-tile's bytes) and
    empty[s] (one arrival per warp) as course.models.mbarrier, PipelineState as the model's,
    `self.load_k_tile` as the producer's acquire (a wait on empty), arm and two TMA copies
    that land later, at random;
  * WGMMA's asynchrony, per warp as the PTX ISA describes it: `cute.gemm` issues a wgmma
    into the warp's open group, which reads its stage of A and B and writes the
    accumulator until a `wait_group(n)` retires it; `commit_group` closes the open group;
    `wait_group(n)` retires all but the n most recent committed groups (never the open
    one); `fence` orders the warp's own accumulator accesses before the wgmmas after it.
    After the method returns, the kernel's `wait_group(0)` retires every committed group.

Warps and TMA landings are interleaved at random, several seeds. What the code allows shows
up as a finding that names the warp, the k-tile, the stage and the rule: a stage read
before its bytes landed, handed back (or overwritten) while a wgmma group still reads it,
wgmmas never committed, the accumulator used without a fence, a deadlock (who waits on what,
for which parity), k-blocks multiplied twice or never, or the tensor cores serialised (no
group left in flight when the next k-tile is issued).

    run(mainloop, Config(), k_tiles=5, seed=0)   ->  Verdict("ok", ...)

Beside the CPU executor. course.execute runs the same method inside the whole WgmmaGemm
(course.exercises.executor_checks, exercise 10.wgmma_mainloop) and computes the same
correctness: the PipelineTmaAsync ring (execute.pipeline over execute.mbarriers), WGMMA's
groups, fences and in-flight registers (execute.wgmma: hazards.ACC_IN_FLIGHT, NO_FENCE,
STAGE_OVERWRITE), deadlocks (execute.machine), and k-blocks multiplied twice or never as a
wrong output against torch. What this model shows that the executor does not: the
"serialised" verdict, a loop that leaves no wgmma group in flight while it issues the next
k-tile (correct, but the tensor cores wait: a question of time, which the executor does not
model and never judges); a sweep of ring depths 2-4, lengths 1-9 and three interleavings in
seconds, the method alone, where the executor runs one configuration of the whole kernel;
and verdicts named by the exercise's mistakes (keys of nb10_mainloop_kernel.HINTS). It needs
CuTe DSL installed, as the executor does (kernels.wgmma_gemm's Config).
"""

from __future__ import annotations

import functools
import inspect
import random
import threading
from dataclasses import dataclass, field

from course.models.mbarrier import MBarrier, MBarrierError, PipelineState
from course.sim.warp_threads import (
    OK,
    PLAIN_NAMES,
    Found,
    Unmodelled,
    Verdict,
    Warp,
    error_verdict,
    python_version,
    stop_all,
)

MAX_STEPS = 400_000
ISA_FENCE = (
    "the PTX ISA: wgmma.fence must come before the first wgmma.mma_async of a "
    "warpgroup, and between any other access to the accumulator registers and a "
    "wgmma.mma_async that uses them (wgmmas of the same shape accumulating into the "
    "same registers need none between them)"
)


# ------------------------------------------------------------------ the CTA's state


@dataclass
class Group:
    """One warp's wgmma group: the (k-tile, stage, k-block) each of its wgmmas reads."""

    reads: list = field(default_factory=list)

    @property
    def stages(self) -> set:
        return {stage for _, stage, _ in self.reads}

    def k_tiles(self) -> list:
        return sorted({t for t, _, _ in self.reads})


@dataclass
class WarpState:
    fenced: bool = False  # the kernel wrote acc (fill) before the loop: a fence is due
    open: Group = field(default_factory=Group)
    committed: list = field(default_factory=list)  # groups not retired yet, oldest first
    waited: dict = field(default_factory=dict)  # stage -> k-tile its full wait saw land
    products: list = field(default_factory=list)  # (k-tile, k-block) multiplied, in order
    waits_called: int = 0
    issues: int = 0  # groups whose first wgmma was issued
    first_idle: int | None = None  # the first k-tile issued with no earlier group in flight

    def pending(self) -> list:
        return self.committed + ([self.open] if self.open.reads else [])


class Cta:
    def __init__(
        self,
        stages: int,
        k_tiles: int,
        warps: int,
        k_blocks: int,
        tx_bytes: int,
        code_waits: bool = True,
    ):
        self.stages, self.k_tiles, self.k_blocks, self.tx_bytes = (
            stages,
            k_tiles,
            k_blocks,
            tx_bytes,
        )
        self.code_waits = code_waits  # the method calls wait_group somewhere
        self.full = [MBarrier(1, f"full[{s}]") for s in range(stages)]
        self.empty = [MBarrier(warps, f"empty[{s}]") for s in range(stages)]
        self.content: list = [None] * stages  # the k-tile each stage holds, once landed
        self.in_flight: list = []  # (stage, k-tile, half) TMA copies not landed yet
        self.loaded: list = []
        self.warps = [WarpState() for _ in range(warps)]

    def readers(self, stage: int) -> list:
        """(warp, k-tile, committed?) of every wgmma group that still reads `stage`."""
        return [
            (w, t, g is not st.open)
            for w, st in enumerate(self.warps)
            for g in st.pending()
            for t, s, _ in g.reads
            if s == stage
        ]

    # producer -------------------------------------------------------------------------
    def issue(self, k_tile: int, stage: int):
        if not 0 <= k_tile < self.k_tiles:
            raise Found(
                "misuse",
                f"a load of k-tile {k_tile}: there are only {self.k_tiles}",
                "past the last k-tile",
            )
        self.full[stage].arrive(tx=self.tx_bytes)
        self.loaded.append(k_tile)
        self.in_flight += [(stage, k_tile, "A"), (stage, k_tile, "B")]

    def land(self, i: int):
        stage, k_tile, half = self.in_flight.pop(i)
        readers = self.readers(stage)
        if readers:
            w, t, _ = readers[0]
            raise Found(
                "race",
                f"TMA wrote k-tile {k_tile}'s {half} into stage {stage} while "
                f"warp {w}'s wgmmas of k-tile {t} were still reading that stage",
                "released too early",
            )
        if not any(c[:2] == (stage, k_tile) for c in self.in_flight):
            self.content[stage] = k_tile
        try:
            self.full[stage].complete_tx(self.tx_bytes // 2)
        except MBarrierError as exc:
            raise Found("misuse", str(exc), "expect_tx") from None

    # one warp -------------------------------------------------------------------------
    def mma(self, w: int, a, b):
        if not (isinstance(a, OperandSlice) and isinstance(b, OperandSlice)):
            raise Found(
                "misuse",
                f"warp {w}: cute.gemm was given {a!r} and {b!r}, not one "
                f"k-block (or the whole k-tile) of tCrA and of tCrB",
                "operands",
            )
        if (a.k_block, a.stage) != (b.k_block, b.stage):
            raise Found(
                "misuse",
                f"warp {w} multiplied A's {a.blocks_text()} of stage "
                f"{a.stage} with B's {b.blocks_text()} of stage {b.stage}",
                "operands",
            )
        for k_block in a.k_blocks(self.k_blocks):  # a whole k-tile: one wgmma per k-block
            self._one_wgmma(w, a.stage, k_block)

    def _one_wgmma(self, w: int, stage: int, k_block: int):
        """One wgmma of warp `w` reading k-block `k_block` of `stage` into its open group."""
        st = self.warps[w]
        if not st.fenced:
            raise Found(
                "race",
                f"warp {w} issued a wgmma with no wgmma.fence since the "
                f"accumulator registers were last written by its own instructions",
                "fence",
            )
        held = self.content[stage]
        if held is None or st.waited.get(stage) != held:
            saw = st.waited.get(stage)
            what = "nothing yet" if held is None else f"k-tile {held}"
            raise Found(
                "race",
                f"warp {w}'s wgmma read stage {stage} while it held {what}"
                + ("" if saw is None else f" (its last wait on full[{stage}] saw k-tile {saw})")
                + ": a stage is read only after consumer_wait on its full barrier "
                "returns for that k-tile",
                "missing wait",
            )
        if not st.open.reads and st.issues and not st.committed and st.first_idle is None:
            st.first_idle = held  # issued with no earlier group left in flight
        if not st.open.reads:  # the first wgmma of a new group
            st.issues += 1
        st.open.reads.append((held, stage, k_block))
        st.products.append((held, k_block))

    def commit(self, w: int):
        st = self.warps[w]
        st.committed.append(st.open)
        st.open = Group()

    def wait_group(self, w: int, n: int):
        st = self.warps[w]
        st.waits_called += 1
        if n < 0:
            raise Found("misuse", f"warp {w}: wait_group({n})", "wait_group")
        st.committed = st.committed[len(st.committed) - n :] if n else []

    def release(self, w: int, stage: int):
        st = self.warps[w]
        held = self.content[stage]
        for g in st.pending():
            if stage in g.stages:
                t = [t for t, s, _ in g.reads if s == stage][0]
                uncommitted = g is st.open
                latest = g is (
                    st.open if st.open.reads else (st.committed[-1] if st.committed else None)
                )
                if uncommitted:
                    why, key = "they were never committed (commit_group)", "commit"
                elif latest:
                    why, key = "the stage released is the one just issued", "stage in use"
                elif not (st.waits_called or self.code_waits):
                    why, key = "nothing waits for them (no wait_group)", "no wait"
                else:
                    why, key = (
                        ("their group was still in flight: no wait_group had retired it yet"),
                        "released too early",
                    )
                raise Found(
                    "race",
                    f"warp {w} handed stage {stage} (k-tile {t}) back to the "
                    f"producer while its wgmmas of k-tile {t} still read it: {why}",
                    key,
                )
        if held is None:
            raise Found(
                "misuse", f"warp {w} released stage {stage}, which holds no k-tile", "stage index"
            )
        try:
            self.empty[stage].arrive()
        except MBarrierError as exc:
            raise Found("misuse", f"warp {w}: {exc}", "released twice") from None

    def touch_acc(self, w: int, how: str):
        st = self.warps[w]
        if st.pending():
            raise Found(
                "race",
                f"warp {w} {how} the accumulator while its wgmmas were still "
                f"writing it (no wait_group before)",
                "acc in flight",
            )
        st.fenced = False

    def finish(self, w: int):
        """The kernel after the method: wait_group(0) retires what was committed."""
        st = self.warps[w]
        if st.open.reads:
            ts = st.open.k_tiles()
            raise Found(
                "race",
                f"warp {w}'s wgmmas of k-tile(s) {ts} were never committed: "
                f"the kernel's wait_group(0) after the loop does not wait for them, "
                f"so the epilogue may read the accumulator while they still write it",
                "commit",
            )
        st.committed = []

    def verdict(self) -> Verdict:
        want = [(t, kb) for t in range(self.k_tiles) for kb in range(self.k_blocks)]
        for w, st in enumerate(self.warps):
            got = sorted(st.products)
            if got != want:
                twice = sorted({p for p in got if got.count(p) > 1})
                never = [p for p in want if p not in got]
                what = (
                    f"multiplied (k-tile, k-block) {twice[0]} more than once"
                    if twice
                    else f"never multiplied (k-tile, k-block) {never[0]}"
                )
                return Verdict(
                    "misuse",
                    f"warp {w} {what}: every k-block of every k-tile "
                    f"goes into the accumulator exactly once",
                    "every k-block",
                )
        if sorted(self.loaded) != list(range(self.k_tiles)):
            return Verdict(
                "misuse", f"the k-tiles loaded were {sorted(self.loaded)}", "every k-tile"
            )
        st = self.warps[0]
        if st.first_idle is not None:
            return Verdict(
                "serialised",
                f"warp 0 issued k-tile {st.first_idle}'s wgmmas only "
                f"after every earlier group had completed: nothing was left in "
                f"flight while it issued them",
                "serialises",
            )
        return Verdict(
            OK,
            f"{len(self.warps)} warps, {self.stages} stages, {self.k_tiles} "
            f"k-tiles: every k-block multiplied once, no stage read early or "
            f"handed back while read",
        )


# ------------------------------------------------------------------ stand-ins


@dataclass(frozen=True)
class OperandSlice:
    """`tCrA[None, None, kb, stage]`: the wgmma descriptors of one k-block of one stage;
    `tCrA[None, None, None, stage]` (k_block None): of the whole k-tile, which one
    cute.gemm multiplies k-block by k-block (CuTe loops over the K mode itself)."""

    operand: str
    k_block: int | None
    stage: int

    def k_blocks(self, count: int) -> range:
        """The k-blocks a cute.gemm over this slice issues a wgmma for, in order."""
        return range(count) if self.k_block is None else range(self.k_block, self.k_block + 1)

    def blocks_text(self) -> str:
        return "whole k-tile" if self.k_block is None else f"k-block {self.k_block}"


class Operand:
    """`tCrA` / `tCrB`: (MMA, MMA_M or N, MMA_K, STAGE) descriptors over the ring."""

    def __init__(self, name: str, k_blocks: int, stages: int):
        self.name, self.k_blocks, self.stages = name, k_blocks, stages
        self.shape = (1, 1, k_blocks, stages)

    def __getitem__(self, index):
        if not (isinstance(index, tuple) and len(index) == 4 and index[:2] == (None, None)):
            raise Unmodelled(
                f"{self.name}[{index!r}] (the model knows {self.name}[None, None, k_block, stage]"
                f" and {self.name}[None, None, None, stage])"
            )
        kb = None if index[2] is None else int(index[2])  # None: the whole k-tile
        stage = int(index[3])
        if not ((kb is None or 0 <= kb < self.k_blocks) and 0 <= stage < self.stages):
            raise Found(
                "misuse",
                f"{self.name}[None, None, {kb}, {stage}] is outside its "
                f"{self.k_blocks} k-blocks x {self.stages} stages",
                "stage index",
            )
        return OperandSlice(self.name, kb, stage)


class Accumulator:
    """`acc`: the warp's fp32 accumulator registers; any use but cute.gemm's is an access."""

    def __init__(self, step, w: int):
        self._step, self._w = step, w

    def _touch(self, how):
        self._step(lambda cta: cta.touch_acc(self._w, how))

    def fill(self, value):
        self._touch("wrote")

    def load(self):
        self._touch("read")

    def store(self, value):
        self._touch("wrote")

    def __getitem__(self, i):
        self._touch("read")
        return 0.0

    def __setitem__(self, i, v):
        self._touch("wrote")


class ModelRing:
    """`ring`: PipelineTmaAsync's consumer side, as steps of the model."""

    def __init__(self, warp: Warp):
        self._warp = warp

    def consumer_wait(self, state, try_wait_token=None):
        if not try_wait_token:  # PipelineTmaAsync waits unless a peek saw the phase complete
            self._warp.step(("wait", "full", int(state.index), int(state.phase)))

    def consumer_try_wait(self, state):
        """NVIDIA's peek: True if the stage's phase has completed (its bytes landed, as a
        wait would have seen), handed to consumer_wait so that it need not wait."""
        stage, phase, w = int(state.index), int(state.phase), self._warp.index

        def peek(cta):
            ready = cta.full[stage].try_wait(phase)
            if ready:
                cta.warps[w].waited[stage] = cta.content[stage]
            return ready

        return self._warp.step(("act", peek))

    def consumer_release(self, state):
        stage, w = int(state.index), self._warp.index
        self._warp.step(("act", lambda cta: cta.release(w, stage)))

    def __getattr__(self, name):
        raise Unmodelled(f"ring.{name}")


class Warpgroup:
    def __init__(self, warp: Warp):
        self._warp = warp
        self.Field = type("Field", (), {"ACCUMULATE": "accumulate"})

    def fence(self):
        w = self._warp.index
        self._warp.step(("act", lambda cta: setattr(cta.warps[w], "fenced", True)))

    def commit_group(self):
        w = self._warp.index
        self._warp.step(("act", lambda cta: cta.commit(w)))

    def wait_group(self, n):
        w = self._warp.index
        self._warp.step(("act", lambda cta: cta.wait_group(w, int(n))))


class ModelCute:
    """`cute` for one warp: what a WGMMA main loop calls."""

    def __init__(self, warp: Warp):
        self._warp = warp
        self.nvgpu = type("nvgpu", (), {})()
        self.nvgpu.warpgroup = Warpgroup(warp)

    def size(self, x, mode=None):
        if isinstance(x, Operand) and mode is not None and list(mode) == [2]:
            return x.k_blocks
        raise Unmodelled(f"cute.size({x!r}, mode={mode!r})")

    def gemm(self, tiled_mma, d, a, b, c):
        w = self._warp.index
        self._warp.step(("act", lambda cta: cta.mma(w, a, b)))

    def __getattr__(self, name):
        raise Unmodelled(f"cute.{name}")


class TiledMma:
    """`tiled_mma`: only its ACCUMULATE field may be set (a no-op here)."""

    def set(self, field_, value):
        pass


class ModelSelf:
    """`self`: the config, and step 09's TMA load of one k-tile as the producer's steps."""

    def __init__(self, cfg, warp: Warp):
        self.cfg, self._warp = cfg, warp

    def load_k_tile(self, ring, state, *loads):
        stage, phase, k_tile = int(state.index), int(state.phase), int(state.count)
        self._warp.step(("wait", "empty", stage, phase))
        self._warp.step(("act", lambda cta: cta.issue(k_tile, stage)))


# ------------------------------------------------------------------ running it


@functools.lru_cache(maxsize=64)
def _waits_for_groups(mainloop) -> bool:
    """Does the code call wait_group at all? (Read once per function, not once per run.)"""
    return "wait_group" in inspect.getsource(inspect.unwrap(mainloop))


def run(mainloop, cfg, k_tiles: int, seed: int = 0, k_blocks: int = 4) -> Verdict:
    """One random interleaving of `mainloop` run by every consumer warp of a CTA of
    kernels.wgmma_gemm with Config `cfg`, over `k_tiles` k-tiles of `k_blocks` k-blocks."""
    warps_n = cfg.threads // 32
    cta = Cta(
        cfg.stages,
        k_tiles,
        warps_n,
        k_blocks,
        tx_bytes=2,
        code_waits=_waits_for_groups(mainloop),
    )
    parked = threading.Semaphore(0)
    warps = [Warp(w, parked) for w in range(warps_n)]
    try:
        for warp in warps:
            cute = ModelCute(warp)
            body = python_version(mainloop, {**PLAIN_NAMES, "cute": cute})
            warp.start(
                lambda body=body, warp=warp, cute=cute: _warp_program(
                    body, warp, cfg, k_tiles, k_blocks
                )
            )
        return _schedule(cta, warps, random.Random(seed), mainloop)
    finally:
        stop_all(warps, parked)


def _warp_program(body, warp: Warp, cfg, k_tiles: int, k_blocks: int):
    """What the kernel does around the method, for one warp: warp 0's prologue fills the
    ring; every warp's accumulator was written (fill) before; the method; wait_group(0)."""
    me = ModelSelf(cfg, warp)
    produce = PipelineState.producer(cfg.stages)
    if warp.index == 0:
        for _ in range(min(cfg.stages, k_tiles)):
            me.load_k_tile(None, produce)
            produce.advance()
    acc = Accumulator(lambda act: warp.step(("act", act)), warp.index)
    body(
        me,
        TiledMma(),
        acc,
        Operand("tCrA", k_blocks, cfg.stages),
        Operand("tCrB", k_blocks, cfg.stages),
        ModelRing(warp),
        PipelineState.consumer(cfg.stages),
        PipelineState.consumer(cfg.stages),
        produce,
        k_tiles,
        warp.index,
        (),
    )
    warp.step(("act", lambda cta: cta.finish(warp.index)))


def _schedule(cta: Cta, warps: list[Warp], rng: random.Random, fn) -> Verdict:
    for _ in range(MAX_STEPS):
        failed = next((w for w in warps if w.error is not None), None)
        if failed is not None:
            return error_verdict(failed, "the main loop", fn)
        live = [w for w in warps if not w.done]
        if not live and not cta.in_flight:
            return cta.verdict()
        choices = [("warp", w) for w in live if _enabled(cta, w)]
        choices += [("copy", i) for i in range(len(cta.in_flight))]
        if not choices:
            return _deadlock(cta, live)
        kind, x = rng.choice(choices)
        try:
            if kind == "copy":
                cta.land(x)
            else:
                x.take(_take(cta, x))
        except Found as found:
            return found.verdict
    return Verdict("deadlock", f"no progress after {MAX_STEPS} steps", "deadlock")


def _barrier(cta: Cta, op) -> MBarrier:
    return (cta.full if op[1] == "full" else cta.empty)[op[2]]


def _enabled(cta: Cta, warp: Warp) -> bool:
    op = warp.pending
    return op[0] != "wait" or _barrier(cta, op).try_wait(op[3])


def _take(cta: Cta, warp: Warp):
    op = warp.pending
    if op[0] == "wait":
        if op[1] == "full":  # what this warp now knows has landed in the stage
            cta.warps[warp.index].waited[op[2]] = cta.content[op[2]]
        return None
    return op[1](cta)


def _deadlock(cta: Cta, live: list[Warp]) -> Verdict:
    lines = []
    for w in live[:2]:
        kind, name, stage, parity = w.pending
        bar = _barrier(cta, w.pending)
        role = (
            "to load the next k-tile"
            if kind == "wait" and name == "empty"
            else "for its next k-tile"
        )
        lines.append(
            f"warp {w.index} waits on {bar.name} {role}, for parity {parity}, but {bar.describe()}"
        )
    empty_waits = [w for w in live if w.pending[1] == "empty"]
    return Verdict(
        "deadlock",
        "; ".join(lines) + ("; ..." if len(live) > 2 else ""),
        "missing release" if empty_waits else "deadlock",
    )


def sweep(
    mainloop, cfg=None, stages_list=(2, 3, 4), k_tiles_list=(1, 2, 5, 9), seeds: int = 3
) -> Verdict:
    """run() over ring depths, lengths and interleavings: the first problem, or ok."""
    from dataclasses import replace

    from kernels.wgmma_gemm import Config

    base = cfg or Config()
    for stages in stages_list:
        for k_tiles in k_tiles_list:
            for seed in range(seeds):
                out = run(mainloop, replace(base, stages=stages), k_tiles, seed)
                if not out.ok:
                    return Verdict(
                        out.kind, f"{stages} stages, {k_tiles} k-tile(s): {out.detail}", out.mistake
                    )
    return Verdict(
        OK,
        f"no race, no deadlock, every k-block multiplied once, over "
        f"{len(stages_list)} ring depths x {len(k_tiles_list)} lengths x "
        f"{seeds} interleavings",
    )
