"""WGMMA on the executor: Hopper's warpgroup MMA, issued by 4 warps together, in flight until
a `wait_group` retires it.

    tiled_mma = sm90_utils.make_trivial_tiled_mma(...)    # WgmmaTiledMma (CuTe answers layouts)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))   # Descriptors: views of smem
    cute.nvgpu.warpgroup.fence()
    cute.gemm(tiled_mma, acc, tCrA[None, None, kb, s], tCrB[None, None, kb, s], acc)
    cute.nvgpu.warpgroup.commit_group(); cute.nvgpu.warpgroup.wait_group(0)

What it models, after the PTX ISA ("Asynchronous warpgroup level matrix multiply"):

* `wgmma.mma_async` is `.sync.aligned` over a warpgroup (warps 4g..4g+3, 128 threads): each
  warp's `cute.gemm` blocks until the other three reach the same line (course.execute.machine
  `block_until`); one that never comes is a deadlock, one at another line is a divergence.
  Then the warpgroup's tile is multiplied: A and B read from shared memory through the
  descriptor fragments (their TV layouts asked of CuTe, course.execute.oracle), each
  wgmma's (K = 16 of bf16, 32 of fp8) dot product exact, added to the fp32 accumulator
  rounding toward zero (what the H100's bf16 outputs match bit for bit:
  `numeric.fp32_toward_zero`), and each
  warp's accumulator fragment written per lane by the atom's C layout. The values are
  computed at issue; what the hazards below rule out is exactly what would make them differ
  on the GPU.
* groups: a warp's wgmmas join its open group; `commit_group` closes it; `wait_group(n)`
  retires all but the n newest committed groups (never the open one).
* hazards, each naming warp, tensor and line:
  - the accumulator read or written by any other instruction while a wgmma that writes it is
    not retired (ACC_IN_FLIGHT): course.execute.memory.Registers tells its `watcher`;
  - an accumulator written by the warp's own instructions since its last `fence()` when a
    wgmma is issued into it (NO_FENCE: register stamps against the fence's clock);
  - shared memory a wgmma still reads overwritten -- by a thread store, cp.async or a TMA
    landing -- before wait_group retired it (hazards.STAGE_OVERWRITE): the wgmma holds its
    operand bytes in course.execute.memory.SharedMemory (`hold` / `unhold`), and every
    writer calls `SharedMemory.check_readers_in_flight(bytes, writer, site)` first. A
    module that writes shared memory outside `SharedMemory.write` (a TMA landing) calls it.
    When wait_group retires a wgmma, its reads are stamped on the warp's clock
    (course.execute.happens_before), so a stage handed back by an mbarrier arrive *before*
    the wait_group is named when the producer's TMA load is issued over it;
  - operands written by threads and read by the wgmma (the async proxy) with no
    fence.proxy.async between (the core's PROXY_FENCE, through `SharedMemory.unfenced`).
* A from registers (OperandSource.RMEM, "RS"): each warp's A fragment, placed by the atom's
  A layout; writing those registers before the wgmma is retired, or since the last fence
  when it is issued, is a hazard as for the accumulator.
* float8 A and B (e4m3, e5m2; K = 32 per wgmma) as 16-bit ones: exact products, one
  fp32 sum per wgmma (the H100 keeps fewer bits in that sum: exact for integer values).
* not modelled (Unmodelled): scale/negate fields,
  sparse WGMMA, int8 operands and fp16 accumulators (their rounding is not the fp32
  model's).

Also here: `cutlass.utils.hopper_helpers` (the tiled MMA, smem layout atoms, the epilogue's
store op and layout) and `cute.nvgpu.warpgroup`, bound into course.execute.api by
`register` (one call at the end of api).

For other modules (the generic pieces this one added, for any asynchronous unit):
  * `SharedMemory.hold(bytes, reader) -> token`, `unhold(token)`: bytes an asynchronous
    unit reads until it is retired (`reader` a str, or a function giving one);
    `SharedMemory.check_readers_in_flight(bytes, writer, site)`: call it before writing
    shared memory other than through `SharedMemory.write` (TMA issues and landings do);
  * `Registers.watcher` (told of every access) and `Registers.stamp` against
    `memory.register_clock()`: registers an asynchronous unit writes, and fences;
  * `atoms.gemm` hands a TiledMma with an `issue_gemm(d, a, b, c)` method its call (an
    asynchronous MMA's own module, as here).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from course.execute import atoms, happens_before, hazards, machine, numeric, oracle
from course.execute.hazards import Hazard, Site, Unmodelled, threads_text
from course.execute.lanes import Lanes
from course.execute.memory import RMEM, SMEM, Registers, register_clock
from course.execute.oracle import Recipe
from course.execute.sm90 import PROXY_FENCE
from course.execute.tensor import Pointer, Tensor, register_tensor
from course.execute.layout_enum import LayoutEnum
from course.execute.standins import Alias, OperandMajorMode, Wraps, enum_namespace, recipe_maker

WARPGROUP_WARPS = 4
MODELLED_AB = ("BFloat16", "Float16", "Float8E4M3FN", "Float8E5M2")
ACC_IN_FLIGHT = hazards.ACC_IN_FLIGHT  # its kind (hazards.KINDS says what it means)
A_IN_FLIGHT = hazards.A_IN_FLIGHT  # its kind (hazards.KINDS says what it means)
NO_FENCE = hazards.NO_FENCE  # its kind (hazards.KINDS says what it means)


# ---------------------------------------------------------------- static answers from CuTe


_static = oracle.static_function


def _lazy(path: str):
    """A host-side function whose answer is a CuTe object the executor keeps as a Recipe
    (get_smem_layout_atom's SmemLayoutAtomKind): replayed where CuTe needs it."""

    def fn(*args, **kwargs):
        return Recipe(path, args, kwargs)

    fn.__name__ = path.rsplit(".", 1)[-1]
    return fn


HELPERS = "cutlass.utils.hopper_helpers"


def make_trivial_tiled_mma(*args, **kwargs) -> "WgmmaTiledMma":
    return WgmmaTiledMma(Recipe(f"{HELPERS}.make_trivial_tiled_mma", args, kwargs))


def get_smem_store_op(layout_d, elem_ty_d, elem_ty_acc, **_):
    """stmatrix for a 16-bit C, else a universal copy: the helper's own choice, its
    `is_m_major_c()` asked of CuTe."""
    if elem_ty_d.width == 16:
        m_major = bool(oracle.method(layout_d, "is_m_major_c"))
        op = Recipe("cute.nvgpu.warp.StMatrix8x8x16bOp", (m_major, 4))
    else:
        op = Recipe("cute.nvgpu.CopyUniversalOp")
    return atoms.make_copy_atom(op, elem_ty_d)


# ---------------------------------------------------------------- the tiled MMA and operands


class WgmmaTiledMma(atoms.TiledMma):
    """A TiledMMA of wgmma atoms: static questions go to CuTe; the ACCUMULATE field is per
    warp (it is a predicate register of each thread); A and B fragments of shared memory
    are descriptor views (Descriptors)."""

    def __init__(self, recipe: Recipe, op: Recipe | None = None):
        super().__init__(recipe, op or Recipe("cute.nvgpu.warpgroup.MmaF16BF16Op"))
        self.kind = "wgmma"
        self.accumulate = weakref.WeakKeyDictionary()  # warp -> the field as it set it

    def set(self, which, value) -> None:
        if not (isinstance(which, Recipe) and which.name == "ACCUMULATE"):
            raise Unmodelled(f"tiled_mma.set({which!r}, ...)")
        if isinstance(value, Lanes):
            if not (value.v == value.v[0]).all():
                raise Unmodelled("a wgmma ACCUMULATE field that differs between lanes")
            value = value.v[0]
        self.accumulate[machine.warp()] = bool(value)

    def accumulates(self, w) -> bool:
        return self.accumulate.get(w, True)

    @property
    def a_in_registers(self) -> bool:
        """OperandSource.RMEM among the arguments that made it (A from registers: RS)."""
        return _names_rmem_source((self.recipe.args, self.recipe.kwargs))

    def _fragment(self, which: str, x) -> Tensor:
        if which == "make_fragment_C" or not isinstance(x, Tensor) or x.is_coordinates:
            return super()._fragment(which, x)
        space = x.iterator.memory.space
        layout, dtype = oracle.fragment(self.recipe, which, space, x.element_type, x.domain_layout)
        if which == "make_fragment_A" and self.a_in_registers:  # registers, in A's TV layout
            return register_tensor(layout, dtype or x.element_type, "fragment A")
        if space != SMEM:
            raise Hazard(
                hazards.CRASH,
                f"wgmma reads A and B from shared memory, not {space}",
                hazards.site(3),
            )
        return Descriptors(x, layout)

    def issue_gemm(self, d, a, b, c, **kwargs) -> None:
        """cute.gemm(tiled_mma, d, a, b, c) by one warp (course.execute.atoms.gemm sends it)."""
        if kwargs:
            raise Unmodelled(f"cute.gemm with {', '.join(kwargs)}")
        issue(self, d, a, b, c, hazards.site(3))

    def get_slice(self, thr_idx) -> "WgmmaThrMma":
        return WgmmaThrMma(self, atoms.thread_index(thr_idx))


class WgmmaThrMma(atoms.ThrMma, WgmmaTiledMma):
    """A thread's slice of a wgmma TiledMMA (CuTe's ThrMma is a TiledMma too): it partitions
    for its thread, and makes descriptor fragments and keeps the ACCUMULATE field as its
    tiled MMA does (`thr_mma.make_fragment_A(thr_mma.partition_A(sA))`)."""

    def __init__(self, tiled: WgmmaTiledMma, thr_idx):
        super().__init__(tiled, thr_idx)
        self.accumulate = tiled.accumulate


def _names_rmem_source(x) -> bool:
    if isinstance(x, Recipe):
        return x.path.endswith("OperandSource.RMEM") or _names_rmem_source(x.args)
    if isinstance(x, (tuple, list)):
        return any(_names_rmem_source(e) for e in x)
    if isinstance(x, dict):
        return any(_names_rmem_source(e) for e in x.values())
    return False


class Descriptors(Tensor):
    """A wgmma operand fragment: CuTe's descriptor tensor (MMA, MMA_M|N, MMA_K, STAGE), whose
    layout kernel code sees, over the shared-memory partition it describes (`view`,
    ((64|N, 16), MMA_M|N, MMA_K, STAGE)): slicing slices both; its values are the view's."""

    __slots__ = ("view",)

    def __init__(self, view: Tensor, layout):
        super().__init__(view.iterator, layout)
        self.view = view

    def slice(self, crd) -> "Descriptors":
        off, sub = self.layout.slice(crd)
        crd = crd if isinstance(crd, tuple) else (crd,)
        return Descriptors(self.view.slice((None,) + tuple(crd[1:])), sub)

    def __getitem__(self, crd):
        crd = crd if isinstance(crd, tuple) else (crd,)
        if crd[0] is not None and crd[0] != 0:
            raise Unmodelled("a wgmma descriptor fragment indexed in its MMA mode")
        return self.slice((None,) + tuple(crd[1:]))

    def values(self, width: int = 0):
        raise Unmodelled("the values of a wgmma descriptor fragment (it is shared memory)")

    def __str__(self) -> str:
        return f"descriptors<{self.layout}> of {self.view}"


# ---------------------------------------------------------------- per-warp state


@dataclass
class Issued:
    """One wgmma as one warp sees it: the accumulator it writes, the operand bytes it holds."""

    regs: Registers
    token: int
    site: Site
    a_regs: Registers | None = None  # A's registers (RS wgmma): read until retired
    bytes: np.ndarray | None = None  # the shared-memory bytes it reads until retired
    siblings: list = field(default_factory=list)  # the same wgmma as its warpgroup's 4 warps see it
    done: happens_before.Completion | None = None  # its completion, one for the 4 warps


@dataclass
class WarpWgmma:
    fence_clock: int = -1  # register_clock() at the warp's last wgmma.fence (-1: never)
    open: list = field(default_factory=list)
    committed: list = field(default_factory=list)  # lists of Issued, oldest first
    waits: int = 0  # wait_group calls so far

    def state(self, op: Issued) -> str:
        """Why `op` is not retired yet: a hazards.Cause.what (UNCOMMITTED, NEWEST_GROUP,
        NEVER_WAITED, NOT_RETIRED)."""
        if any(x is op for x in self.open):
            return hazards.UNCOMMITTED
        if self.committed and any(x is op for x in self.committed[-1]):
            return hazards.NEWEST_GROUP
        if not self.waits:
            return hazards.NEVER_WAITED
        return hazards.NOT_RETIRED

    def status(self, op: Issued) -> str:
        """Why `op` is not retired yet, as a verdict says it."""
        return STATUS_WORDS[self.state(op)]

    def cause(self, w, op: Issued) -> hazards.Cause:
        """The same as a hazards.Cause (a write over its operands completes it: see
        course.execute.memory.SharedMemory.hold)."""
        return hazards.Cause(
            self.state(op), op.site.describe(), expected=w.index, unit=hazards.UNIT_WGMMA
        )


STATUS_WORDS = {
    hazards.UNCOMMITTED: "its group was never closed: no commit_group after it",
    hazards.NEWEST_GROUP: "its group is the warp's newest: the k-tile just issued",
    hazards.NEVER_WAITED: "its warp has called no wait_group yet",
    hazards.NOT_RETIRED: "no wait_group has retired its group yet",
}


@dataclass
class Meeting:
    """The warps of a warpgroup arriving at one wgmma; the last to come issues it."""

    site: Site
    calls: dict = field(default_factory=dict)  # warp -> (d, a, b, c, accumulate)
    done: bool = False


_WARPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_MEETINGS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # cta -> {group: Meeting}
_EXECUTING = [False]  # the meeting's own register accesses are not the kernel's


def _state(w) -> WarpWgmma:
    st = _WARPS.get(w)
    if st is None:
        st = _WARPS[w] = WarpWgmma()
    return st


def _warpgroup_warps(w, site: Site) -> list:
    g = w.index // WARPGROUP_WARPS
    members = w.cta.warps[g * WARPGROUP_WARPS : (g + 1) * WARPGROUP_WARPS]
    if len(members) < WARPGROUP_WARPS or any(m.width != 32 for m in members):
        raise Hazard(
            hazards.CRASH,
            f"a wgmma needs a whole warpgroup (4 warps, 128 threads); warp {w.index} is in "
            f"a block of {w.cta.threads} threads",
            site,
        )
    return members


def _whole_warp(what: str, site: Site):
    """A warpgroup-wide instruction (.sync.aligned): each of its 4 warps with all its lanes
    (the warps meet at the wgmma itself)."""
    return machine.collective(
        f"{what} (warpgroup-wide, .sync.aligned)", site, "all 128 threads of the warpgroup"
    )


# ---------------------------------------------------------------- fence, commit, wait


def fence(**_) -> None:
    """wgmma.fence: the warp's register writes so far are ordered before its next wgmmas."""
    w = _whole_warp("wgmma.fence", hazards.site(2))
    _state(w).fence_clock = register_clock()


def commit_group(**_) -> None:
    w = _whole_warp("wgmma.commit_group", hazards.site(2))
    st = _state(w)
    st.committed.append(st.open)
    st.open = []


def wait_group(n, **_) -> None:
    """wgmma.wait_group(n): every committed group but the n newest is complete."""
    w = _whole_warp("wgmma.wait_group", hazards.site(2))
    st = _state(w)
    st.waits += 1
    keep = int(n)
    if keep < 0:
        raise Hazard(hazards.CRASH, f"wgmma.wait_group({keep})", hazards.site(2))
    while len(st.committed) > keep:
        for op in st.committed.pop(0):
            _retire(w, op)


def _retire(w, op: Issued) -> None:
    """wait_group saw `op` complete: its reads of shared memory end now, in this warp's
    order of things (course.execute.happens_before: a TMA load issued over those bytes must
    be ordered after this warp's next mbarrier arrive, not an earlier one).

    A wgmma is one operation of its warpgroup (the PTX ISA's wgmma.mma_async is
    warpgroup-level; NVIDIA's WGMMA guide: "one MMA is issued collectively by a 128-thread
    warpgroup"), so the first of its warps to see it complete ends its shared-memory reads
    for all four (Hopper fmha's epilogue stores over Q once its own warp has waited). Each
    warp's registers still wait for that warp's own wait_group: the ISA leaves reading them
    before it undefined. The end of the reads is the completion's (happens_before.Completion):
    a warp that waited, or one a barrier tells of such a wait, is ordered after them."""
    smem, done = w.cta.smem, op.done
    if done is None or not done.stamped:
        for sibling in op.siblings or [op]:
            if sibling.token in smem.holds:
                smem.unhold(sibling.token)
        if done is not None:
            done.stamped = True
        happens_before.stamp(done or w, smem, op.bytes, 1, hazards.UNIT_WGMMA)
    if done is not None:
        happens_before.observed(w, done)
    for regs in {id(r): r for r in (op.regs, op.a_regs) if r is not None}.values():
        left = [x for x in _pending(regs) if x is not op]
        regs.wgmmas = left
        if not left:
            regs.watcher = None


def _pending(regs: Registers) -> list:
    """The wgmmas (Issued) not retired that write (accumulator) or read (A) these registers."""
    return regs.__dict__.get("wgmmas", [])


def _in_flight(op: Issued, regs: Registers) -> None:
    regs.wgmmas = _pending(regs) + [op]
    regs.watcher = _watch


def _watch(regs: Registers, writing: bool) -> None:
    """Registers.watcher of an accumulator a wgmma still writes: any other access is early."""
    if _EXECUTING[0]:
        return
    acc = [op for op in _pending(regs) if op.regs is regs]
    a = [op for op in _pending(regs) if op.a_regs is regs] if writing else []
    if not (acc or a):
        return
    w = machine.current_warp()
    op = (acc or a)[-1]
    who = f"warp {w.index}" if w is not None else "the host"
    verb = "writes" if writing else "reads"
    status = _state(w).status(op) if w is not None else "it was never retired"
    what, does = ("the accumulator", "write") if acc else ("A's registers", "read")
    raise Hazard(
        ACC_IN_FLIGHT if acc else A_IN_FLIGHT,
        f"{who} {verb} {what} ({regs.name}) while the wgmma issued at "
        f"{op.site.describe()} may still {does} them ({status}): warpgroup.wait_group "
        f"retires a committed group",
        hazards.site(3),
        hazards.Cause(
            _state(w).state(op) if w is not None else hazards.NOT_RETIRED,
            regs.name,
            expected=w.index if w is not None else None,
            unit=hazards.UNIT_WGMMA,
        ),
    )


# ---------------------------------------------------------------- the wgmma


def issue(mma: WgmmaTiledMma, d, a, b, c, site: Site) -> None:
    """One warp's cute.gemm: check its fence, meet the other warps of its warpgroup; the last
    to arrive multiplies for all four."""
    w = _whole_warp("wgmma.mma_async", site)
    members = _warpgroup_warps(w, site)
    for t, name in ((a, "A"), (b, "B")) if not mma.a_in_registers else ((b, "B"),):
        if not isinstance(t, Descriptors):
            raise Unmodelled(
                f"wgmma with {name} not a shared-memory fragment (make_fragment_{name} of a "
                f"partition of shared memory)"
            )
    accumulate = mma.accumulates(w)
    _check_fence(w, c if accumulate else d, site, "accumulator registers")
    if mma.a_in_registers:
        _check_fence(w, a, site, "A's registers")
    group = w.index // WARPGROUP_WARPS
    meetings = _MEETINGS.setdefault(w.cta, {})
    meeting = meetings.get(group)
    if meeting is None:
        meeting = meetings[group] = Meeting(site)
    elif meeting.site != site:
        came = threads_text(np.concatenate([m.tids for m in meeting.calls]).tolist())
        raise Hazard(
            hazards.DIVERGENT,
            f"the warps of warpgroup {group} reach different wgmmas: {came} at "
            f"{meeting.site.describe()}, warp {w.index} here (wgmma is .sync.aligned: "
            f"all 128 threads issue the same one)",
            site,
        )
    meeting.calls[w] = (d, a, b, c, accumulate)
    if len(meeting.calls) == WARPGROUP_WARPS:
        del meetings[group]
        _execute(mma, members, meeting)
        meeting.done = True
        return

    def what() -> str:
        missing = ", ".join(str(m.index) for m in members if m not in meeting.calls)
        return (
            f"warp {w.index} waits at a wgmma for warp(s) {missing} of its warpgroup "
            f"(wgmma is .sync.aligned: all 4 warps issue it)"
        )

    machine.block_until(lambda: meeting.done, what, site)


def _check_fence(w, t: Tensor, site: Site, what: str) -> None:
    regs = _registers(t)
    if regs.stamp > _state(w).fence_clock and not _pending(regs):
        raise Hazard(
            NO_FENCE,
            f"warp {w.index} issues a wgmma with {what} its own instructions "
            f"wrote after its last warpgroup.fence() (or with no fence at all): the PTX ISA "
            f"asks for wgmma.fence between any register access and the wgmma that uses "
            f"those registers; call cute.nvgpu.warpgroup.fence() before the first cute.gemm",
            site,
        )


def _registers(t: Tensor) -> Registers:
    if not (isinstance(t.iterator, Pointer) and t.iterator.memory.space == RMEM):
        raise Hazard(
            hazards.CRASH, "a wgmma accumulates into registers (make_fragment_C)", hazards.site(4)
        )
    return t.iterator.memory


def _execute(mma: WgmmaTiledMma, members: list, meeting: Meeting) -> None:
    """The warpgroup's wgmma(s): D = A . B^T (+ C) for every atom of the fragments."""
    site = meeting.site
    calls = [meeting.calls[m] for m in members]
    d0, a0, b0, c0, _ = calls[0]
    rs = mma.a_in_registers
    for m, (_, a, b, _, _) in zip(members, calls):
        if not ((rs or _same(a.view, a0.view)) and _same(b.view, b0.view)):
            raise Hazard(
                hazards.DIVERGENT,
                f"warp {m.index} gives its wgmma other A/B descriptors than warp "
                f"{members[0].index} of its warpgroup: one wgmma reads one tile",
                site,
            )
    (va, m_, k_), (vb, n_, _), (vc, _, _) = atoms._dispatch(a0, b0, c0, d0, site)
    atom_m, atom_n, atom_k = (int(x) for x in mma.shape_mnk)
    tva, tvb, tvc = (
        atoms._tv_index(lay) for lay in (mma.tv_layout_A, mma.tv_layout_B, mma.tv_layout_C)
    )
    want_a = tva.shape[1] if rs else 1
    if va != want_a or vb != 1 or vc != tvc.shape[1]:
        raise Hazard(
            hazards.CRASH,
            f"wgmma fragments of {va}/{vb}/{vc} values per thread; the atom takes "
            f"{want_a}/1/{tvc.shape[1]} (A: {'registers' if rs else 'a descriptor'}, B: a "
            f"descriptor, C: registers; a fragment from another MMA?)",
            site,
        )
    _check_types(a0.element_type, b0.element_type, c0.element_type, site)
    smem = members[0].cta.smem
    tid0 = members[0].tids[:1]
    if rs:
        a4 = _register_operand([call[1] for call in calls], tva, (va, m_, k_))
        a4, a_bytes = a4.reshape(m_, k_, atom_k, atom_m).transpose(0, 1, 3, 2), np.zeros(0, int)
    else:
        a4, a_bytes = _operand(smem, a0.view, tva[0], (m_, k_, atom_m, atom_k), tid0, site)
    b4, b_bytes = _operand(smem, b0.view, tvb[0], (n_, k_, atom_n, atom_k), tid0, site)
    dense = np.zeros((m_, n_, atom_m * atom_n))
    rows = np.arange(32)
    _EXECUTING[0] = True
    try:
        for j, (_, _, _, c, accumulate) in enumerate(calls):
            if accumulate:
                _check_cleared(members[j], c, rows, site)
                C = atoms._values(c, (vc, m_, n_))  # (32, vc, m, n)
                dense[:, :, tvc[32 * j : 32 * j + 32]] = C.transpose(2, 3, 0, 1)
        acc = dense.reshape(m_, n_, atom_n, atom_m).transpose(0, 1, 3, 2)  # [mi, ni, am, an]
        acc = numeric.accumulate_k(acc, a4, b4)  # one wgmma per k-block, added in fp32
        dense = acc.transpose(0, 1, 3, 2).reshape(m_, n_, atom_m * atom_n)
        for j, (d, _, _, _, _) in enumerate(calls):
            regs = _registers(d)
            before = regs.stamp
            per_lane = dense[:, :, tvc[32 * j : 32 * j + 32]]  # (m, n, 32, vc)
            d.store_values(atoms._ssa(d, per_lane.transpose(2, 3, 0, 1)))
            regs.stamp = before  # the wgmma's own write needs no fence before the next
    finally:
        _EXECUTING[0] = False
    held = np.unique(np.concatenate([a_bytes, b_bytes]))
    ops: list = []
    done = happens_before.Completion(members[0])
    for m, (d, a, _, _, _) in zip(members, calls):
        op = Issued(_registers(d), -1, site, _registers(a) if rs else None, held)
        op.token = smem.hold(held, _reader(m, op), lambda m=m, op=op: _state(m).cause(m, op))
        ops.append(op)
        op.siblings, op.done = ops, done
        _state(m).open.append(op)
        for regs in {id(r): r for r in (op.regs, op.a_regs) if r is not None}.values():
            _in_flight(op, regs)


def _reader(w, op: Issued):
    """How a write into this wgmma's operands names it (how it stands when that happens)."""
    return lambda: (
        f"the wgmma warp {w.index} issued at {op.site.describe()} ({_state(w).status(op)})"
    )


def _check_types(a, b, acc, site: Site) -> None:
    """16-bit or float8 A and B (both of one type) into fp32: what the executor's values
    model (exact products, one fp32 sum per wgmma). int8 wgmma and fp16 accumulators round
    differently: not made up. For float8 the H100 adds a wgmma's products into fewer bits
    than fp32 (why fp8 kernels promote into a second accumulator): the executor's values
    are exact where the sums are (integer-valued operands), and otherwise at least as
    precise as the H100's."""
    if a.name not in MODELLED_AB or b.name != a.name or acc.name != "Float32":
        raise Unmodelled(
            f"wgmma of {a} x {b} into {acc} (only 16-bit or float8 A/B, both one type, "
            f"into Float32)"
        )


def _same(x: Tensor, y: Tensor) -> bool:
    return x.layout == y.layout and _first_row(x.elements()).tolist() == (
        _first_row(y.elements()).tolist()
    )


def _first_row(e: np.ndarray) -> np.ndarray:
    if e.ndim == 2:
        if not (e == e[:1]).all():
            raise Unmodelled("a wgmma descriptor that differs between the lanes of a warp")
        return e[0]
    return e


def _operand(smem, view: Tensor, tv_row: np.ndarray, dims: tuple, tid0, site: Site):
    """An operand's atoms from shared memory, [x, k, atom rows, atom k] (x: M or N blocks),
    and the bytes it reads. The descriptor reads as the async proxy does: bytes threads wrote
    need their fence.proxy.async first."""
    x, k, rows, cols = dims
    dtype = view.element_type
    elems = _first_row(view.elements())
    b, _ = smem._bytes(dtype, tid0, elems[None, :])
    unfenced = getattr(smem, "unfenced", None)
    if unfenced is not None and unfenced[b].any():
        byte = int(b[int(np.argmax(unfenced[b]))])
        raise Hazard(
            PROXY_FENCE,
            f"a wgmma reads {smem.describe(byte)}, which threads wrote with no "
            f"fence.proxy.async since: the tensor cores read shared memory through the async "
            f"proxy; call cute.arch.fence_proxy('async.shared', space='cta') after the stores "
            f"(before the barrier)",
            site,
        )
    values = smem.read(tid0, dtype, elems[None, :], site, by_unit=True)[0].astype(np.float64)
    per = rows * cols
    tiles = values.reshape(k, x, per)  # colexicographic: the atom's values, then x, then k
    dense = np.zeros((x, k, per))
    dense[:, :, tv_row] = tiles.transpose(1, 0, 2)
    return dense.reshape(x, k, cols, rows).transpose(0, 1, 3, 2), np.unique(b)


def _register_operand(frags: list, tv: np.ndarray, shape3: tuple) -> np.ndarray:
    """A from the registers of the warpgroup's 4 warps (RS): (x, k, atom tile), each lane's
    values placed by the atom's TV layout (thread 32 j + lane of warp j)."""
    v, x, k = shape3
    dense = np.zeros((x, k, tv.size))
    _EXECUTING[0] = True
    try:
        for j, frag in enumerate(frags):
            vals = atoms._values(frag, shape3)  # (32, v, x, k)
            dense[:, :, tv[32 * j : 32 * j + 32]] = vals.transpose(2, 3, 0, 1)
    finally:
        _EXECUTING[0] = False
    return dense


def _check_cleared(w, c: Tensor, rows, site: Site) -> None:
    regs = _registers(c)
    from course.execute.tensor import _rows_of

    unset = regs.unwritten(c.element_type, rows, _rows_of(c.elements(), rows))
    if unset:
        raise Hazard(
            hazards.UNINITIALISED,
            f"a wgmma of warp {w.index} adds to accumulator registers no instruction wrote "
            f"({unset} register values): clear the accumulator (acc.fill(0.0)) or set "
            f"ACCUMULATE to False for the first k-block",
            site,
            hazards.Cause(hazards.NEVER_WRITTEN, "C", observed=unset, unit=hazards.UNIT_WGMMA),
        )


# ---------------------------------------------------------------- binding into the api


_enum = enum_namespace


def _names() -> dict:
    """What WGMMA adds to the stand-ins: `cute.nvgpu.warpgroup`, `cute.nvgpu.OperandMajorMode`,
    `cutlass.utils.hopper_helpers` (and the names CuTe DSL 4.8.1 re-exports it under:
    `hopper_helpers.sm90_get_smem_store_op`, `cutlass.utils.sm90_<name>`) and
    `cutlass.tensor_utils`; cute's MMA makers give a WgmmaTiledMma for a warpgroup op."""
    wg = "cute.nvgpu.warpgroup"
    source = _enum(f"{wg}.OperandSource", "SMEM", "RMEM")
    warpgroup = {
        "MmaF16BF16Op": recipe_maker(f"{wg}.MmaF16BF16Op"),
        "MmaF8Op": recipe_maker(f"{wg}.MmaF8Op"),
        "OperandSource": source,
        "Field": _enum(f"{wg}.Field", "ACCUMULATE"),
        "SmemLayoutAtomKind": _enum(
            f"{wg}.SmemLayoutAtomKind",
            *(f"{mode}_{sw}" for mode in ("MN", "K") for sw in ("INTER", "SW32", "SW64", "SW128")),
        ),
        "make_smem_layout_atom": _static(f"{wg}.make_smem_layout_atom"),
        "fence": fence,
        "commit_group": commit_group,
        "wait_group": wait_group,
        "OperandMajorMode": OperandMajorMode,
    }
    helpers = {
        "make_trivial_tiled_mma": make_trivial_tiled_mma,
        "get_smem_layout_atom": _lazy(f"{HELPERS}.get_smem_layout_atom"),
        "get_smem_store_op": get_smem_store_op,
        "make_smem_layout_epi": _static(f"{HELPERS}.make_smem_layout_epi"),
        "make_smem_layout_a": _static(f"{HELPERS}.make_smem_layout_a"),
        "make_smem_layout_b": _static(f"{HELPERS}.make_smem_layout_b"),
        "compute_tile_shape_or_override": _static(f"{HELPERS}.compute_tile_shape_or_override"),
        "OperandSource": source,
        "sm90_get_smem_store_op": get_smem_store_op,
    }
    utils = {
        f"sm90_{name}": Alias(HELPERS, name)
        for name in (
            "get_smem_layout_atom",
            "make_smem_layout_a",
            "make_smem_layout_b",
            "make_smem_layout_epi",
            "make_trivial_tiled_mma",
        )
    }
    for name in ("sm90_get_smem_store_op", "compute_tile_shape_or_override"):
        utils[name] = Alias(HELPERS, name)
    return {
        "cutlass.cute.nvgpu": {"OperandMajorMode": OperandMajorMode},
        "cutlass.cute.nvgpu.warpgroup": warpgroup,
        "cutlass.cute": {
            "make_mma_atom": Wraps(_wgmma_aware),
            "make_tiled_mma": Wraps(_wgmma_aware),
        },
        HELPERS: helpers,
        "cutlass.utils": utils,
        "cutlass.tensor_utils": {"LayoutEnum": LayoutEnum},
    }


def _wgmma_aware(make):
    """cute.make_mma_atom / make_tiled_mma: a TiledMma of a warpgroup op is a WgmmaTiledMma."""

    def made(*args, **kwargs):
        tiled = make(*args, **kwargs)
        if tiled.op.path.startswith("cute.nvgpu.warpgroup."):
            return WgmmaTiledMma(tiled.recipe, tiled.op)
        return tiled

    made.__name__ = make.__name__
    return made


NAMES = _names()


__all__ = ["WgmmaTiledMma", "Descriptors", "fence", "commit_group", "wait_group", "NAMES"]
