"""tcgen05 on the executor: the Blackwell MMA into tensor memory, its commit, and tcgen05.ld.

* `TiledMma` (tcgen05.MmaF16BF16Op, cta_group ONE or TWO): its partitions and TMEM layouts
  are CuTe's (course.execute.oracle, traced for sm_100a). `make_fragment_A/B` of a
  shared-memory tensor is the tensor itself: the descriptors CuTe makes name exactly those
  bytes, so the MMA reads through them.
* `gemm`: one MMA per warp call (the instruction is issued by one thread), asynchronous: it
  is queued on the issuing warp and *executes* -- reads shared memory, writes TMEM -- only
  when a later `commit` of that warp lands. A commit is an async operation of the cluster
  (course.execute.machine lands them when no warp can go on, or early under other seeds):
  it runs every MMA its warp issued before it, then arrives once on its mbarrier in each
  CTA of its mask (course.execute.mbarriers). With cta_group::2 the leader's MMA reads A
  (128 rows) and B (half the columns) from each CTA of the pair and writes rows 0-127 of
  D to the leader's TMEM, rows 128-255 to the peer's.
* `tmem_copy` (tcgen05.ld 32x32b via make_tmem_copy + cute.copy): warp-wide; warp w reaches
  only TMEM lanes 32*(w%4) .. +31. The registers it fills are not the warp's until
  `wait_ld` (tcgen05.wait::ld, cute.arch.fence_view_async_tmem_load). make_tmem_copy of a
  store op is tcgen05.st, run by course.execute.tmem_store (which a tcgen05.ld asks whether
  the cells it reads were stored and waited for).

Hazards (kind tmem.TMEM): TMEM read while an MMA that writes it has not completed (no
commit landed and waited for); shared memory an issued MMA reads overwritten before the
MMA ran (a stage released or refilled too early); TMEM outside the warp's lanes. A note
(kind WAIT_LD, on the run's result, never raised): a register of a tcgen05.ld read before
wait::ld.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from course.execute import atoms, happens_before, hazards, machine, mbarriers, oracle
from course.execute import tmem, tmem_store
from course.execute.lanes import uniform
from course.execute.hazards import Hazard, Site, Unmodelled, threads_text
from course.execute.memory import Memory, SMEM
from course.execute.numeric import DType, element_byte_span, tf32_toward_zero
from course.execute.oracle import Recipe
from course.execute.tensor import Pointer, Tensor

WAIT_LD = hazards.WAIT_LD  # its kind (hazards.KINDS says what it means)
TF32_ROUNDING = hazards.TF32_ROUNDING
PATH = "cute.nvgpu.tcgen05"


def is_tcgen05(op) -> bool:
    return isinstance(op, Recipe) and op.path.startswith(PATH + ".")


# ---------------------------------------------------------------- the tiled MMA


class _Unplaced(Memory):
    """The TMEM of a fragment CuTe made from a shape: a layout, not yet an address."""

    def __init__(self):
        super().__init__(tmem.SPACE, np.zeros(0, dtype=np.uint8), "a TMEM fragment (no address)")


class TiledMma(atoms.TiledMma):
    """cute.make_tiled_mma(tcgen05.MmaF16BF16Op(...)): the runtime field ACCUMULATE too.

    A TiledMma is a by-value kernel parameter: each thread's copy starts from the value the
    host gave it at the launch, and a kernel's `tiled_mma.set(ACCUMULATE, True)` changes
    its own warp's copy only (one object shared by every CTA would hand CTA 1 the True CTA
    0 set)."""

    def __init__(self, recipe: Recipe, op: Recipe):
        super().__init__(recipe, op)
        self.kind = "tcgen05"
        self._launch_accumulate = False  # the host's value, each warp's at its start
        self._accumulate = weakref.WeakKeyDictionary()  # warp -> its copy's value

    @property
    def accumulate(self) -> bool:
        w = machine.current_warp()
        return self._accumulate.get(w, self._launch_accumulate) if w else self._launch_accumulate

    @accumulate.setter
    def accumulate(self, value: bool) -> None:
        w = machine.current_warp()
        if w is None:
            self._launch_accumulate = bool(value)
        else:
            self._accumulate[w] = bool(value)

    @property
    def cta_group(self) -> int:
        return int(self.size)  # thr_id: one "thread" per CTA of the group

    def set(self, field, value) -> None:
        if isinstance(field, Recipe) and field.name in ("SFA", "SFB"):
            self.__dict__.setdefault("scale_factors", {})[field.name] = value  # TMEM pointers
            return
        if not (isinstance(field, Recipe) and field.name == "ACCUMULATE"):
            raise Unmodelled(f"tiled_mma.set({field!r})")
        self.accumulate = bool(value)

    def _fragment(self, which: str, x) -> Tensor:
        if which == "make_fragment_C":
            made = oracle.method(self.recipe, which, x)
            if not (isinstance(made, tuple) and made and made[0] == "tensor"):
                raise Unmodelled(f"{which} of {x!r}")
            return Tensor(Pointer(_Unplaced(), 0, made[1]), made[2])
        if not isinstance(x, Tensor) or x.is_coordinates or x.iterator.memory.space != SMEM:
            raise Unmodelled(f"tcgen05 {which} of an operand not in shared memory")
        return x  # the descriptors name these bytes: the MMA reads through the tensor


def _ab_matrix(t: Tensor, what: str, site: Site) -> tuple[np.ndarray, tuple[int, int]]:
    """Element indices (rows, K) of an MMA operand view ((rows, K), 1, ...)."""
    shape = t.shape if isinstance(t.shape, tuple) else (t.shape,)
    first = shape[0]
    rest = int(np.prod([np.prod(s) for s in shape[1:]])) if len(shape) > 1 else 1
    if not (isinstance(first, tuple) and len(first) == 2) or rest != 1:
        raise Unmodelled(f"a tcgen05 {what} operand of shape {t.shape} (one atom per call)")
    rows, k = int(np.prod(first[0])), int(np.prod(first[1]))
    elems = np.asarray(t.elements()).reshape(-1)[: rows * k]
    return elems.reshape(k, rows).T, (rows, k)


def _d_addresses(d: Tensor, site: Site) -> np.ndarray:
    """TMEM addresses (128, N) of the accumulator view ((128, N), 1, 1)."""
    shape = d.shape if isinstance(d.shape, tuple) else (d.shape,)
    first = shape[0]
    if not (isinstance(first, tuple) and len(first) == 2) or d.size != np.prod(first):
        raise Unmodelled(f"a tcgen05 accumulator of shape {d.shape} (one atom per call)")
    if not isinstance(d.iterator, Pointer) or not isinstance(d.iterator.memory, tmem.Tmem):
        raise Hazard(tmem.TMEM, "tcgen05.mma accumulates in TMEM: D is not a TMEM tensor", site)
    m, n = int(np.prod(first[0])), int(np.prod(first[1]))
    return np.asarray(d.iterator.elem_base + np.asarray(d.layout.offsets)).reshape(n, m).T


@dataclass
class Mma:
    """One issued tcgen05.mma: what it reads and writes, run when its commit lands."""

    ctas: list  # the CTAs of the group, leader first
    a: np.ndarray  # (rows per CTA, K) element indices in each CTA's shared memory
    b: np.ndarray  # (N per CTA, K)
    d: np.ndarray  # (128, N) TMEM addresses, the same in each CTA
    dtype: DType
    accumulate: bool
    holds: list  # (shared memory, token): its operands' bytes, held until it runs (a TMA
    # landing in them first is a hazard: course.execute.memory.check_readers_in_flight)
    site: Site
    tids: np.ndarray
    done: bool = False
    known_at: tuple = ()  # (issuing warp, its clock at the commit): what a reader must know
    read_as: object = None  # how the MMA's kind reads the decoded operands (kind::tf32)

    def operands(self) -> tuple[list, list]:
        a = [cta.smem.typed(self.dtype)[self.a] for cta in self.ctas]
        b = [cta.smem.typed(self.dtype)[self.b] for cta in self.ctas]
        return a, b

    def product(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """A . B^T: exact products, one fp32 result per MMA."""
        return (a @ b.T).astype(np.float32)

    def run(self) -> None:
        if self.done:
            return
        self.done = True
        for smem, token in self.holds:
            smem.unhold(token)
        raw_a, raw_b = self.operands()
        a, b = (np.concatenate([self.dtype.decode(x) for x in raw]) for raw in (raw_a, raw_b))
        if self.read_as is not None:
            a, b = self.read_as(a), self.read_as(b)
        a, b = a.astype(np.float64), b.astype(np.float64)
        product = self.product(a, b)
        rows = self.d.shape[0]
        for i, cta in enumerate(self.ctas):
            space = tmem.of_cta(cta)
            part = product[i * rows : (i + 1) * rows]
            if self.accumulate:
                held = space.read(
                    self.d,
                    "tcgen05.mma accumulates into",
                    self.site,
                    "the first MMA of a tile must overwrite (ACCUMULATE False)",
                    hazards.UNIT_MMA,
                )
                part = (held + part).astype(np.float32)
            space.write(self.d, part, "tcgen05.mma writes", self.site)
            if self.known_at:  # a reader of these columns must have seen the commit arrive
                issuer, clock = self.known_at
                clocks = space.__dict__.setdefault("mma_clocks", {})
                done = clocks.setdefault(issuer, np.zeros(tmem.COLUMNS, np.int64))
                done[np.unique(self.d & ((1 << tmem.LANE_SHIFT) - 1))] = clock
            pending = space.__dict__.setdefault("pending", [])
            if self in pending:
                pending.remove(self)


def _mma_reads(w) -> hazards.Cause:
    """A tcgen05.mma reading its operands until it runs (its tcgen05.commit lands), as a
    write over them names it (course.execute.memory.SharedMemory.hold)."""
    return hazards.Cause(hazards.NOT_RETIRED, "", expected=w.index, unit=hazards.UNIT_MMA)


def _queue(w) -> list:
    return w.__dict__.setdefault("tcgen05_issued", [])


def gemm(mma: TiledMma, d: Tensor, a: Tensor, b: Tensor, c: Tensor, scaled=None,
         **kwargs) -> None:  # fmt: skip
    """cute.gemm(tiled_mma, D, A, B, C) with a tcgen05 atom: CuTe's dispatch [5],
    (V, M, K) x (V, N, K) => (V, M, N), is one MMA per (m, n, k), k innermost. ACCUMULATE
    is read for the first k of each (m, n); the later k of the same call add to what the
    first wrote (NVIDIA's tutorials set ACCUMULATE = k_tile != 0 and issue a k-tile's four
    k-blocks in one call); the field is left as the kernel set it. `scaled(issued, mma,
    site)`: for a block-scaled op, the same MMA with its SFs read from TMEM when it runs
    (course.execute.scaled_mma; course.execute.dispatch passes it)."""
    site = hazards.site(2)
    (a, sfa), (b, sfb) = _with_aux(a, "A"), _with_aux(b, "B")
    if (sfa is None) != (sfb is None) or (sfa is not None and scaled is None):
        raise Unmodelled(f"cute.gemm of {mma.op.name} with auxiliary operands {sfa!r}, {sfb!r}")
    if not all(isinstance(t, Tensor) and _rank(t) == 3 for t in (d, a, b)):
        with _scale_factors(mma, sfa, sfb, (), ()):
            return _gemm_atom(mma, d, a, b, c, site, scaled, **kwargs)
    (_, m_count, k_count), (_, n_count, kb_count) = a.shape, b.shape
    if kb_count != k_count or tuple(d.shape[1:]) != (m_count, n_count):
        raise Hazard(hazards.CRASH, f"cute.gemm of A {a.shape}, B {b.shape} into D {d.shape}", site)
    first = mma.accumulate
    try:
        for m in range(_count(m_count)):
            for n in range(_count(n_count)):
                for k in range(_count(k_count)):
                    mma.accumulate = first if k == 0 else True
                    with _scale_factors(mma, sfa, sfb, (None, m, k), (None, n, k)):
                        _gemm_atom(mma, d[None, m, n], a[None, m, k], b[None, n, k],
                                   c[None, m, n], site, scaled, **kwargs)  # fmt: skip
    finally:
        mma.accumulate = first


def _with_aux(x, which: str):
    """cute.gemm's variadic operand: a tensor, or [tensor, auxiliary] -- for a block-scaled
    MMA, A with SFA and B with SFB (CuTe DSL 4.8.1's cute.gemm); (tensor, aux or None)."""
    if not isinstance(x, (list, tuple)):
        return x, None
    if len(x) in (1, 2):
        return x[0], (x[1] if len(x) == 2 else None)
    raise Unmodelled(f"cute.gemm with {len(x)} {which} operands (sparse metadata)")


class _scale_factors:
    """The SFs of one MMA atom passed as cute.gemm's auxiliary operands: the TMEM address
    of each SF tensor's slice for the atom's (m, k) and (n, k), as `tiled_mma.set(Field.SFA,
    tCtSFA[None, None, k].iterator)` names them -- in force while the atom is issued."""

    def __init__(self, mma, sfa, sfb, at_a, at_b):
        self.mma, self.given = mma, sfa is not None
        if self.given:
            a, b = (sfa[at_a], sfb[at_b]) if at_a else (sfa, sfb)
            self.sfs = {"SFA": a.iterator, "SFB": b.iterator}

    def __enter__(self):
        if self.given:
            self.saved = self.mma.__dict__.get("scale_factors")
            self.mma.__dict__["scale_factors"] = self.sfs

    def __exit__(self, *exc):
        if self.given:
            if self.saved is None:
                self.mma.__dict__.pop("scale_factors", None)
            else:
                self.mma.__dict__["scale_factors"] = self.saved


def _rank(t: Tensor) -> int:
    return len(t.shape) if isinstance(t.shape, tuple) else 1


def _count(mode) -> int:
    return int(np.prod(mode)) if isinstance(mode, tuple) else int(mode)


def _gemm_atom(mma: TiledMma, d: Tensor, a: Tensor, b: Tensor, c: Tensor, site: Site,
               scaled=None, **kwargs) -> None:  # fmt: skip
    """One tcgen05.mma atom, queued on the warp."""
    if kwargs:
        raise Unmodelled(f"cute.gemm with {', '.join(kwargs)}")
    if c is not d and not (
        c.iterator.memory is d.iterator.memory and c.iterator.byte_offset == d.iterator.byte_offset
    ):
        raise Unmodelled("a tcgen05 gemm whose C is not its D (the accumulator is in place)")
    w = machine.collective(machine.SELF_ELECTED.format("tcgen05.mma (cute.gemm)"), site)
    group = mma.cta_group
    ctas = [w.cta] if group == 1 else _pair(w.cta, site)
    ea, (rows, k) = _ab_matrix(a, "A", site)
    eb, (nb, kb) = _ab_matrix(b, "B", site)
    addresses = _d_addresses(d, site)
    if k != kb or rows != addresses.shape[0] or nb * group != addresses.shape[1]:
        raise Hazard(
            hazards.CRASH,
            f"tcgen05.mma of A {rows}x{k}, B {nb}x{kb} per CTA into D {addresses.shape}",
            site,
        )
    _check_types(mma, a.element_type, b.element_type)
    reading = _operand_reading(mma, a.element_type, site)
    issued = Mma(ctas, ea, eb, addresses, a.element_type, mma.accumulate, [], site,
                 w.active_tids()[:1], read_as=reading)  # fmt: skip
    if a.element_type.width < 8 and scaled is None:
        raise Unmodelled(
            f"{mma.op.name} of {a.element_type} (4-bit A/B only in the "
            "block-scaled kind::mxf4 and kind::mxf4nvf4, packed two a byte)"
        )
    if a.element_type.width < 8:
        for what, elems in (("A", ea), ("B", eb)):
            _check_packed_k_major(elems, what, site)
    if scaled is not None:  # the same MMA, its SFs read from TMEM when it runs
        issued = scaled(issued, mma, site)
    reader = f"the tcgen05.mma {threads_text(issued.tids.tolist())} issued at {site.describe()}"
    for cta in ctas:
        for elems in (ea, eb):
            b = np.unique(element_byte_span(issued.dtype, elems))
            _check_landed(cta, b, site)
            issued.holds.append((cta.smem, cta.smem.hold(b, reader, _mma_reads(w))))
    for cta in ctas:
        tmem.of_cta(cta).locate(addresses, "tcgen05.mma writes", site)
        tmem.of_cta(cta).__dict__.setdefault("pending", []).append(issued)
    _queue(w).append(issued)


TF32_OP = "MmaTF32Op"
F8F6F4_OP = "MmaF8F6F4Op"
# where an op's recipe holds its accumulator type (the others' is fp32 by their kind)
_ACC_ARG = {"MmaF16BF16Op": 1, F8F6F4_OP: 2}


def _check_types(mma: TiledMma, a: DType, b: DType) -> None:
    """What the executor's MMA runs: A and B of one type (it decodes both as A's), into an
    fp32 accumulator (an f16 one's rounding is not modelled)."""
    if a.name != b.name:
        raise Unmodelled(f"a tcgen05.mma of {a} A and {b} B (mixed operand types)")
    at = _ACC_ARG.get(mma.op.name)
    acc = mma.op.kwargs.get("acc_dtype", mma.op.args[at] if at is not None else None)
    name = getattr(acc, "name", getattr(acc, "__name__", "Float32"))
    if name != "Float32":
        raise Unmodelled(f"{mma.op.name} with a {name} accumulator (only fp32 is modelled)")


def _operand_reading(mma: TiledMma, dtype: DType, site: Site):
    """How the MMA's kind reads its operands' values: kind::tf32 (MmaTF32Op) reads each
    32-bit element as tf32 (numeric.tf32_toward_zero, the executor's choice where the PTX
    ISA leaves tf32's layout implementation defined: said in a note on the launch); the
    other kinds read their element types exactly."""
    if mma.op.name != TF32_OP:
        return None
    if dtype.width != 32 or not dtype.is_float:
        raise Hazard(hazards.CRASH, f"tcgen05.mma kind::tf32 of {dtype} operands", site)
    machine.note(
        TF32_ROUNDING,
        "tcgen05.mma kind::tf32 reads each fp32 operand as tf32; the PTX ISA leaves how "
        "implementation defined, and the executor keeps the top 10 mantissa bits (rounds "
        "toward zero), its own choice",
        site,
    )
    return tf32_toward_zero


def _check_packed_k_major(elems: np.ndarray, what: str, site: Site) -> None:
    """kind::mxf4 / mxf4nvf4 read A and B K-major and packed: a row's 64 e2m1 of one MMA are
    32 bytes, K elements 2j and 2j+1 in one byte (2j in its low nibble), each 16-byte chunk
    of a row contiguous (the swizzle moves whole 16-byte chunks). The operand view CuTe
    gives must name the nibbles so; otherwise the kernel's view and the hardware disagree."""
    lo, hi = elems[:, 0::2], elems[:, 1::2]
    ok = elems.shape[1] % 32 == 0 and bool(((lo % 2 == 0) & (hi == lo + 1)).all())
    if ok:
        chunks = (lo // 2).reshape(elems.shape[0], -1, 16)  # 16 bytes = 32 e2m1
        ok = bool((np.diff(chunks, axis=2) == 1).all() and (chunks[:, :, 0] % 16 == 0).all())
    if not ok:
        raise Unmodelled(
            f"a 4-bit tcgen05.mma {what} operand not packed K-major (K pairs in one byte, "
            "the lower K in the low nibble, 16-byte chunks of 32 e2m1)"
        )


def _check_landed(
    cta, b: np.ndarray, site: Site, reader: str = "a tcgen05.mma", unit: str = hazards.UNIT_MMA
) -> None:
    """The operands must be in shared memory when the MMA (or tcgen05.cp) is issued: a copy
    still in flight to them (the stage's full barrier not waited for) is a hazard."""
    smem = cta.smem
    flying = smem.inflight[b]
    if (flying >= 0).any():
        byte = int(b[int(np.argmax(flying >= 0))])
        copy = smem.copies[int(flying[flying >= 0][0])]
        raise Hazard(
            hazards.IN_FLIGHT,
            f"{reader} reads {smem.describe(byte)} of CTA {cta.block} while the "
            f"{copy.what} issued at {copy.site.describe()} is still writing it: wait on the "
            f"stage's full barrier first",
            site,
            hazards.Cause(hazards.READ_IN_FLIGHT, smem.describe(byte), unit=unit),
        )


ODD_ISSUER = hazards.ODD_ISSUER


def _pair(cta, site: Site) -> list:
    """The pair's two CTAs, the even rank first. Either CTA may issue: the PTX ISA's tcgen05
    issue granularity says of .mma, .cp, .shift and .commit with .cta_group::2 "Issue from a
    single thread from the CTA-Pair would initiate the base operation. When the current CTA
    issues the operation, the peer CTA should be active and should not have exited." It does
    not say in words which CTA's TMEM gets rows 0-127 when the odd one issues; the executor
    keeps them in the even CTA (the pair's order by rank) and says so in a note."""
    peer = tmem.peer(cta)
    if cta.rank % 2 == 0:
        return [cta, peer]
    machine.note(
        ODD_ISSUER,
        f"CTA {cta.block} (odd rank) issued a cta_group::2 tcgen05.mma, which the PTX ISA "
        "allows from either CTA of a pair; the executor puts rows 0-127 of D (and A's "
        "first 128 rows) in the even CTA of the pair either way, its own reading",
        site,
    )
    return [peer, cta]


@dataclass
class Commit:
    """tcgen05.commit in flight: lands when its MMAs have run, then arrives."""

    mmas: list
    mbar: Pointer
    ranks: list
    site: Site
    issuers: int = 1  # lanes that issued it: without elect_one, each arrives
    knows: dict = field(default_factory=dict)  # the issuing warp's knowledge (and clock)
    landed: bool = False
    issuer: object = None  # the CTA whose warp issued it

    def land(self) -> None:
        if self.landed:
            return
        self.landed = True
        for m in self.mmas:
            m.run()
        for rank in self.ranks:
            slot = mbarriers.barrier_at(self.mbar, rank, self.site)
            phase = slot.model.phase  # the phase its arrival counts towards
            for _ in range(self.issuers):
                happens_before.merge(slot.pending, self.knows)  # waiters learn the MMAs ran
                mbarriers.arrive_once(self.mbar, cta=rank, site=self.site)
            remote = self.issuer is not None and slot.cta is not self.issuer
            slot.cta.__dict__.setdefault("commits", []).append((slot, phase, (self.site, remote)))


COMMIT_NOT_WAITED = hazards.COMMIT_NOT_WAITED  # its kind (hazards.KINDS says what it means)


def at_exit(cta) -> None:
    """At a CTA's exit (course.execute.machine.Cluster): every phase a tcgen05.commit arrived
    on was seen complete by some wait (course.execute.mbarriers.wait records it).

    A commit of another CTA of the cluster (a multicast release, a CTA pair's leader) whose
    arrival nobody waited for may reach this CTA's shared memory after it exited: the CUDA
    Programming Guide's rule for distributed shared memory is that every access to a block's
    shared memory completes before that block exits (a cluster barrier, or the ring's
    producer_tail(), sees to it). That is a hazard. A commit arriving on its own CTA's
    barrier is not covered by that rule, and the PTX ISA says nothing of a CTA exiting
    before its own commit's arrival: NVIDIA's tutorial fp16_gemm_0 ends so. That is a note:
    the course's kernels still end with producer_tail(), which a cluster needs."""
    for slot, phase, (site, remote) in mbarriers.never_waited(cta, "commits"):
        detail = (
            f"CTA {cta.block} exits while the arrival of the tcgen05.commit at "
            f"{site.describe()} on {slot.name} (phase {phase}) was never waited on"
        )
        if remote:
            raise Hazard(
                COMMIT_NOT_WAITED,
                detail + ": the commit is another CTA's, and its arrival may reach this "
                "CTA's shared memory after it exited (the ring's producer_tail() waits for "
                "the last releases)",
                site,
            )
        notes = cta.launch.notes
        if not any(n.kind == COMMIT_NOT_WAITED and n.site == site for n in notes):
            notes.append(
                hazards.Note(
                    COMMIT_NOT_WAITED,
                    detail + ": its own CTA's barrier, so no other CTA is affected; in a "
                    "cluster, producer_tail() makes the last releases land before exit",
                    site,
                )
            )


def commit(mbar_ptr, mask=None, cta_group=None, **_) -> None:
    """tcgen05.commit: once every MMA this warp issued so far has run, one arrival on the
    mbarrier (of each CTA in `mask`, else this CTA's) per issuing lane -- the kernel elects
    one; a whole warp's 32 commits over-arrive."""
    site = hazards.site(2)
    w = machine.warp()
    queue = _queue(w)
    mmas, queue[:] = list(queue), []
    if mask is None:
        ranks = [None]  # the barrier of this CTA
    else:
        bits = uniform(mask, "a commit multicast mask")
        ranks = [r for r in range(16) if bits >> r & 1]
    mbarriers.barrier_at(mbar_ptr, ranks[0], site)
    knows: dict = {}
    happens_before.arrived(w, knows)  # the commit is ordered after this warp's work so far
    for m in mmas:
        m.known_at = (w, w.clock)
    op = Commit(mmas, mbar_ptr, ranks, site, len(w.active_tids()), knows, issuer=w.cta)
    w.cta.cluster.inflight.append(op)


# ---------------------------------------------------------------- tcgen05.ld


class TmemOperand:
    """A TMEM tensor passed to CuTe (make_tmem_copy): its layout on a TMEM pointer."""

    def __init__(self, t: Tensor):
        self.layout = t.layout

    def oracle_key(self):
        return ("tmem-tensor", oracle.key_of(self.layout))

    def to_real(self):
        import cutlass
        import cutlass.cute as cute

        ptr = cute.make_ptr(cutlass.Float32, 0, cute.AddressSpace.tmem, assumed_align=16)
        return cute.make_tensor(ptr, oracle.to_real(self.layout))


def make_tmem_copy(atom, tmem_tensor: Tensor) -> atoms.TiledCopy:
    if not isinstance(atom, atoms.CopyAtom) or not is_tcgen05(atom.op):
        raise Unmodelled("tcgen05.make_tmem_copy of a non-tcgen05 copy atom")
    kind = {"Ld": "tcgen05.ld", "St": "tcgen05.st"}.get(atom.op.name[:2])
    if kind is None:
        raise Unmodelled(f"tcgen05.make_tmem_copy of {atom.op.name} (only tcgen05.ld and .st)")
    recipe = Recipe(f"{PATH}.make_tmem_copy", (atom, TmemOperand(tmem_tensor)))
    tiled = atoms.TiledCopy(recipe, atom)
    tiled.kind = kind  # a tcgen05.st: course.execute.tmem_store
    return tiled


def tmem_load(atom: atoms.TiledCopy, src: Tensor, dst: Tensor, site: Site) -> None:
    """cute.copy(tmem_copy, tmem source, registers): warp-wide tcgen05.ld."""
    w = machine.collective("tcgen05.ld (warp-wide, .sync.aligned)", site, "all 32 lanes", True)
    if not isinstance(src.iterator, Pointer) or not isinstance(src.iterator.memory, tmem.Tmem):
        raise Hazard(tmem.TMEM, "tcgen05.ld reads TMEM: its source is not a TMEM tensor", site)
    src_tv, dst_tv, calls = tmem.copy_calls(atom, src.size, dst.size, "tcgen05.ld", True, site)
    per_src, per_dst = src_tv.shape[1], dst_tv.shape[1]
    elems = np.asarray(src.elements())
    addresses = (elems[0] if elems.ndim == 2 else elems).reshape(calls, per_src)
    space: tmem.Tmem = src.iterator.memory
    tmem.check_warp_lanes(w, addresses, "reads", "tcgen05.ld", site)
    _check_no_mma_writing(space, addresses, site)
    _check_commit_seen(w, space, addresses, site)
    tmem_store.check_stored(w, space, addresses, site)
    values = space.read(  # (calls, per_src)
        addresses,
        f"warp {w.index}'s tcgen05.ld reads",
        site,
        "the accumulator is not ready; wait on the mbarrier the MMA's tcgen05.commit arrives on",
        hazards.UNIT_TMEM_LOAD,
    )
    space.note_read(w, addresses, site)
    tiles = np.zeros((calls, src_tv.size), dtype=np.float32)
    tiles[:, src_tv[0]] = values
    out = tiles[:, dst_tv].transpose(1, 0, 2).reshape(32, calls * per_dst)
    rows = np.arange(32)
    from course.execute.tensor import _rows_of

    D = _rows_of(np.asarray(dst.elements()), rows)
    atoms._scatter(dst, D, np.ones(D.shape, dtype=bool), out, rows, w.tids, site)
    _hold_until_wait(w, dst, site)


def _check_no_mma_writing(space: tmem.Tmem, addresses: np.ndarray, site: Site) -> None:
    cols = addresses & ((1 << tmem.LANE_SHIFT) - 1)
    lo, hi = int(cols.min()), int(cols.max())
    for m in space.__dict__.get("pending", []):
        mcols = m.d & ((1 << tmem.LANE_SHIFT) - 1)
        if int(mcols.min()) <= hi and lo <= int(mcols.max()):
            raise Hazard(
                tmem.TMEM,
                f"tcgen05.ld reads TMEM columns {lo}-{hi} of {space.name} while the "
                f"tcgen05.mma issued at {m.site.describe()} that writes them has not "
                f"completed: wait on the mbarrier its tcgen05.commit arrives on first",
                site,
            )


def _check_commit_seen(w, space: tmem.Tmem, addresses: np.ndarray, site: Site) -> None:
    """The MMAs that wrote these columns ran, and the reader must know it: an mbarrier wait
    that saw their tcgen05.commit arrive (its issuing warp's clock, course.execute.
    happens_before) -- a commit that landed unseen orders nothing."""
    cols = np.unique(addresses & ((1 << tmem.LANE_SHIFT) - 1))
    for issuer, clocks in space.__dict__.get("mma_clocks", {}).items():
        need = int(clocks[cols].max())
        if need > w.knows.get(issuer, 0):
            col = int(cols[int(np.argmax(clocks[cols]))])
            raise Hazard(
                tmem.TMEM,
                f"warp {w.index} of CTA {w.cta.block} reads TMEM column {col} of {space.name} "
                f"with tcgen05.ld, written by tcgen05.mma issued by warp {issuer.index} of CTA "
                f"{issuer.cta.block}, with no mbarrier wait that saw its tcgen05.commit "
                f"arrive: the accumulator may not be ready (wait on the accumulator barrier)",
                site,
            )


def _hold_until_wait(w, dst: Tensor, site: Site) -> None:
    """Registers a tcgen05.ld fills, read before tcgen05.wait::ld: a note (machine.note),
    not a hazard. The PTX ISA says "The instruction tcgen05.ld is performed asynchronously"
    and that its completion is "observed through tcgen05.wait based waiting mechanism", but
    -- unlike wgmma.mma_async's accumulator -- it does not call the registers undefined
    before the wait; CuTe DSL 4.8.1 emits no wait::ld for NVIDIA's tutorial GEMMs, whose
    reads the hardware orders itself. The course's kernels wait, as the ISA's patterns do
    (course.cute.ptx_protocol.tmem_load_waited says the same of the PTX)."""
    regs = dst.iterator.memory
    held = w.__dict__.setdefault("tmem_loads", [])
    if regs in held:
        return
    held.append(regs)

    def noted(dtype, rows, elems, site_=None):
        machine.note(
            WAIT_LD,
            f"{threads_text(w.tids.tolist())} of CTA {w.cta.block} read the registers the "
            f"tcgen05.ld at {site.describe()} filled with no tcgen05.wait::ld before "
            f"(cute.arch.fence_view_async_tmem_load): the PTX ISA observes a tcgen05.ld's "
            f"completion through wait::ld, and the course's kernels wait, but it does not call "
            f"the registers undefined before it",
            site_ or hazards.site(4),
        )
        regs.__dict__.pop("load", None)
        return regs.load(dtype, rows, elems, site_)

    regs.load = noted


def wait_ld(*_, **__) -> None:
    """tcgen05.wait::ld: every tcgen05.ld of this warp has filled its registers."""
    w = machine.warp()
    for regs in w.__dict__.get("tmem_loads", []):
        regs.__dict__.pop("load", None)
    w.__dict__["tmem_loads"] = []
