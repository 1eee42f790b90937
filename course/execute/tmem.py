"""Tensor memory (TMEM) on the executor: one CTA's 128 lanes x 512 columns of 32-bit cells,
allocated by columns, and `cutlass.memory.TmemAllocator` over it.

A TMEM address is `lane << 16 | column` (what tcgen05.alloc writes to shared memory and
what CuTe's TMEM layouts stride by: ((128, N), ...):((65536, 1), ...)); a TMEM pointer on the
executor is a course.execute.tensor.Pointer into the CTA's `Tmem` at byte 4 * address, so
CuTe's layouts and slicing work on it unchanged. Only tcgen05 instructions reach the cells
(course.execute.tcgen05): an ordinary load or store of a TMEM tensor is a hazard, as it
would not compile.

What the GPU gets wrong and the executor names (kind TMEM):
* a column count that is not a power of two in [32, 512], more columns than are free, an
  allocation after relinquish_alloc_permit;
* a dealloc of columns that were not allocated, an access to columns never allocated or
  already freed (use after free);
* a CTA that exits with TMEM still allocated (the next CTA on that SM waits for ever);
* cta_group::2: a dealloc that nothing orders after the peer CTA's arrival at its own
  dealloc (the peer's epilogue may still read the pair's TMEM): the handshake on the dealloc
  mbarrier, whether or not the peer happened to get there first in the run.
"""

from __future__ import annotations


import numpy as np

from course.execute import atoms, happens_before, hazards, machine, mbarriers, oracle, sm90
from course.execute.hazards import Hazard, Site, Unmodelled
from course.execute.lanes import uniform
from course.execute.memory import Memory
from course.execute.numeric import DType, Float32, Int32
from course.execute.tensor import Pointer

LANES, COLUMNS = 128, 512
LANE_SHIFT = 16  # a TMEM address: lane << 16 | column
TMEM = hazards.TMEM  # its kind (hazards.KINDS says what it means)
SPACE = "tmem"


class Tmem(Memory):
    """One CTA's tensor memory: cells (lane, column), what is allocated and what was freed."""

    def __init__(self, cta):
        super().__init__(SPACE, np.zeros(0, dtype=np.uint8), f"TMEM of CTA {cta.block}")
        self.cta = cta
        self.cells = np.full((LANES, COLUMNS), np.nan, dtype=np.float32)
        self.written = np.zeros((LANES, COLUMNS), dtype=bool)
        self.allocated: dict[int, tuple[int, Site]] = {}  # first column -> (columns, site)
        self.freed: dict[int, tuple[int, Site]] = {}
        self.relinquished: Site | None = None
        # (the allocator warp, its stamp) once it entered free(): this CTA is done with TMEM
        self.reached_free: tuple | None = None
        # warp -> {(first, last column): (its clock after that tcgen05.ld, site)}
        self.reads: dict = {}

    # --- tcgen05 instructions reach the cells through these
    def locate(self, addresses: np.ndarray, doing: str, site: Site) -> tuple:
        """(lanes, columns) of TMEM addresses, each checked to be allocated now."""
        addresses = np.asarray(addresses, dtype=np.int64)
        lane, col = addresses >> LANE_SHIFT, addresses & ((1 << LANE_SHIFT) - 1)
        bad = (lane < 0) | (lane >= LANES) | (col >= COLUMNS)
        if bad.any():
            raise Hazard(
                TMEM,
                f"{doing} {_first_cell(lane, col, bad)} of {self.name}: "
                f"TMEM has {LANES} lanes x {COLUMNS} columns",
                site,
            )
        owned = np.zeros(col.shape, dtype=bool)
        for start, (n, _) in self.allocated.items():
            owned |= (col >= start) & (col < start + n)
        if not owned.all():
            c = int(col.reshape(-1)[int(np.argmax(~owned.reshape(-1)))])
            freed = self._freed_at(c)
            raise Hazard(
                TMEM,
                f"{doing} column {c} of {self.name}: {self._why_not(c)}",
                site,
                hazards.Cause(
                    hazards.USE_AFTER_FREE if freed is not None else hazards.NOT_ALLOCATED,
                    self.name,
                    observed=c,
                ),
            )
        return lane, col

    def _freed_at(self, col: int) -> Site | None:
        """Where column `col` was freed, if it was (else it was never allocated)."""
        for start, (n, where) in self.freed.items():
            if start <= col < start + n:
                return where
        return None

    def _why_not(self, col: int) -> str:
        freed = self._freed_at(col)
        if freed is not None:
            return f"use after free (tcgen05.dealloc at {freed.describe()})"
        return "not allocated (tcgen05.alloc first)"

    def read(
        self, addresses: np.ndarray, doing: str, site: Site, unwritten: str, unit: str = ""
    ) -> np.ndarray:
        """The cells' values; a cell nothing wrote since its allocation is a hazard that
        `unwritten` explains (`unit`: the instruction that reads, a hazards.UNIT_ name)."""
        lane, col = self.locate(addresses, doing, site)
        fresh = ~self.written[lane, col]
        if fresh.any():
            raise Hazard(
                TMEM,
                f"{doing} {_first_cell(lane, col, fresh)} of {self.name}, "
                f"which no tcgen05.mma has written: {unwritten}",
                site,
                hazards.Cause(
                    hazards.UNWRITTEN, self.name, observed=_first_cell(lane, col, fresh), unit=unit
                ),
            )
        return self.cells[lane, col]

    def write(self, addresses: np.ndarray, values: np.ndarray, doing: str, site: Site) -> None:
        lane, col = self.locate(addresses, doing, site)
        self.cells[lane, col] = values
        self.written[lane, col] = True

    # --- ordinary loads and stores do not reach TMEM
    def load(self, dtype, tids, elems, site=None):
        raise Hazard(
            TMEM,
            f"an ordinary load from {self.name}: TMEM is read with tcgen05.ld "
            f"(tcgen05.make_tmem_copy and cute.copy)",
            site or hazards.site(4),
        )

    def store(self, dtype, tids, elems, values, site=None):
        raise Hazard(
            TMEM,
            f"an ordinary store to {self.name}: TMEM is written by tcgen05.mma or tcgen05.st",
            site or hazards.site(4),
        )

    # --- allocation
    def alloc(self, columns: int, site: Site) -> int:
        if self.relinquished is not None:
            raise Hazard(
                TMEM,
                f"tcgen05.alloc after relinquish_alloc_permit "
                f"({self.relinquished.describe()}): this CTA promised to allocate no more",
                site,
            )
        if columns < 32 or columns > COLUMNS or columns & (columns - 1):
            raise Hazard(
                TMEM, f"tcgen05.alloc of {columns} columns: a power of two from 32 to 512", site
            )
        for start in range(0, COLUMNS, columns):
            if all(start + columns <= s or s + n <= start for s, (n, _) in self.allocated.items()):
                self.allocated[start] = (columns, site)
                self.freed.pop(start, None)
                return start
        raise Hazard(
            TMEM,
            f"tcgen05.alloc of {columns} columns in {self.name}, where "
            f"{sum(n for n, _ in self.allocated.values())} are taken: it would wait for ever",
            site,
        )

    def dealloc(self, start: int, columns: int, site: Site) -> None:
        held = self.allocated.get(start)
        if held is None or held[0] != columns:
            what = f"{columns} columns at column {start}"
            raise Hazard(
                TMEM,
                f"tcgen05.dealloc of {what} of {self.name}: {self._why_not(start)}"
                if held is None
                else f"tcgen05.dealloc of {what}; {held[0]} were allocated there",
                site,
            )
        del self.allocated[start]
        self.freed[start] = (columns, site)
        self.written[:, start : start + columns] = False

    def note_read(self, w, addresses: np.ndarray, site: Site) -> None:
        """Warp w read these cells with tcgen05.ld: its clock ticks (course.execute.
        happens_before), so a deallocating warp is ordered after the read only once a barrier
        or an mbarrier wait has carried w's clock since to it."""
        cols = np.asarray(addresses, dtype=np.int64) & ((1 << LANE_SHIFT) - 1)
        w.clock += 1
        self.reads.setdefault(w, {})[(int(cols.min()), int(cols.max()))] = (w.clock, site)

    def check_readers_done(self, w, start: int, columns: int, site: Site) -> None:
        """At warp w's tcgen05.dealloc of [start, start + columns): every other warp's
        tcgen05.ld of those columns happens before it (a barrier both passed since, or an
        mbarrier the reader arrived on and w waited for); else the reader may still be
        reading them when they are freed."""
        for x, ranges in self.reads.items():
            if x is w:
                continue
            for (lo, hi), (clock, where) in ranges.items():
                if hi < start or lo >= start + columns or w.knows.get(x, 0) >= clock:
                    continue
                raise Hazard(
                    TMEM,
                    f"warp {w.index} of CTA {self.cta.block} frees TMEM columns "
                    f"{start}-{start + columns - 1} (tcgen05.dealloc) while warp {x.index} may "
                    f"still be reading columns {lo}-{hi}: no barrier both passed (nor an "
                    f"mbarrier arrive it waited for) orders that warp's tcgen05.ld at "
                    f"{where.describe()} before the free",
                    site,
                    hazards.Cause(
                        hazards.FREED_WHILE_READ,
                        f"TMEM columns {start}-{start + columns - 1}",
                        expected=x.index,
                        observed=w.index,
                    ),
                )

    def check_freed(self) -> None:
        """At the CTA's exit: every column given back."""
        if self.allocated:
            start, (n, where) = next(iter(self.allocated.items()))
            raise Hazard(
                TMEM,
                f"CTA {self.cta.block} exits with {n} TMEM columns (from column {start}) still "
                f"allocated (tcgen05.alloc at {where.describe()}): tcgen05.dealloc before "
                f"exiting, or the next CTA on this SM waits for ever",
                where,
                hazards.Cause(hazards.NEVER_FREED, f"CTA {self.cta.block}", observed=n),
            )


def of_cta(cta) -> Tmem:
    tmem = cta.__dict__.get("tmem")
    if tmem is None:
        tmem = cta.__dict__["tmem"] = Tmem(cta)
    return tmem


def at_exit(cta) -> None:
    """At a CTA's exit (course.execute.machine.Cluster): its TMEM given back."""
    mine = cta.__dict__.get("tmem")
    if mine is not None:
        mine.check_freed()


def peer(cta):
    """The other CTA of a cta_group::2 pair (rank ^ 1 in the cluster)."""
    if len(cta.cluster.ctas) < 2:
        raise Hazard(TMEM, "a cta_group::2 operation in a launch without CTA pairs (clusters)")
    return cta.cluster.ctas[cta.rank ^ 1]


def pointer(address: int, dtype: DType) -> Pointer:
    """A TMEM pointer of the current CTA at a TMEM address."""
    if dtype.width != 32:
        raise Unmodelled(f"a TMEM pointer of {dtype} (only 32-bit cells are modelled)")
    return Pointer(of_cta(machine.warp().cta), 4 * int(address), dtype, align=16)


def address_of(ptr) -> int:
    if not isinstance(ptr, Pointer) or not isinstance(ptr.memory, Tmem):
        raise Unmodelled(f"a TMEM address from {ptr!r}")
    return uniform(ptr.byte_offset, "a TMEM address") // 4


# ---------------------------------------------------------------- cute.arch's TMEM calls


def _whole_warp(what: str, site: Site) -> "machine.Warp":
    """A warp-wide TMEM instruction (.sync.aligned): all 32 lanes execute it together."""
    return machine.collective(f"{what} (warp-wide, .sync.aligned)", site, "all 32 lanes")


def alloc_tmem(num_columns, smem_ptr_to_write_address, is_two_cta=False, **_) -> None:
    """tcgen05.alloc: the warp allocates columns (in both CTAs of a pair with cta_group::2)
    and writes the TMEM address to shared memory."""
    site = hazards.site(2)
    w = _whole_warp("tcgen05.alloc", site)
    columns = int(num_columns)
    start = of_cta(w.cta).alloc(columns, site)
    if is_two_cta:
        peer(w.cta)  # a pair is needed; each CTA's own warp allocates its half
    _store_address(smem_ptr_to_write_address, start)


def _store_address(ptr, address: int) -> None:
    """tcgen05.alloc writes the address to shared memory itself (not a thread's store: no
    thread is its writer for the race watch, as for a TMA landing)."""
    smem, byte = ptr.memory, uniform(ptr.byte_offset, "a TMEM address")
    if byte % 4:
        raise Hazard(TMEM, f"tcgen05.alloc writes its address to byte {byte}: not 4-aligned")
    smem.typed(Int32)[byte // 4] = address
    b = np.arange(byte, byte + 4)
    smem.landed(b)


def retrieve_tmem_ptr(element_type, alignment=16, ptr_to_buffer_holding_addr=None, **_):
    """The TMEM address tcgen05.alloc wrote to shared memory, as a pointer."""
    from course.execute.tensor import Tensor
    from course.execute.static_layout import Layout

    src = ptr_to_buffer_holding_addr
    address = Tensor(Pointer(src.memory, src.byte_offset, Int32), Layout(1))[0]
    return pointer(uniform(address, "a TMEM address"), element_type)


def relinquish_tmem_alloc_permit(is_two_cta=False, **_) -> None:
    site = hazards.site(2)
    w = _whole_warp("tcgen05.relinquish_alloc_permit", site)
    of_cta(w.cta).relinquished = site


def dealloc_tmem(tmem_ptr, num_columns, is_two_cta=False, **_) -> None:
    site = hazards.site(2)
    w = _whole_warp("tcgen05.dealloc", site)
    mine = of_cta(w.cta)
    address = address_of(tmem_ptr)
    if address >> LANE_SHIFT:
        raise Hazard(TMEM, f"tcgen05.dealloc of address {address:#x}: lane 0 required", site)
    if is_two_cta:
        _peer_done_before(w, of_cta(peer(w.cta)), site)
    mine.check_readers_done(w, address, int(num_columns), site)
    mine.dealloc(address, int(num_columns), site)


def _peer_done_before(w, other: Tmem, site: Site) -> None:
    """A cta_group::2 dealloc is the pair's collective, and the peer may still read the pair's
    TMEM until it is done with it: the peer's allocator warp must have entered free() and that
    must be ordered before this dealloc (course.execute.happens_before: the handshake's arrive
    on this CTA's barrier and the wait on it), not merely have come first in this run."""
    reached = other.reached_free
    if reached is not None and happens_before.ordered(w, reached[0], reached[1], 0):
        return
    state = (
        "has not reached its own dealloc"
        if reached is None
        else "reached its own dealloc, but nothing orders that before this one"
    )
    raise Hazard(
        TMEM,
        f"CTA {w.cta.block} deallocates its cta_group::2 TMEM while the peer CTA "
        f"{other.cta.block} {state}: the peer may still read the pair's TMEM (the dealloc "
        f"mbarrier handshake is missing)",
        site,
        hazards.Cause(hazards.PEER_NOT_DONE, f"CTA {other.cta.block}"),
    )


# ---------------------------------------------------------------- cutlass.memory.TmemAllocator


def _arch():
    """The executor's cute.arch: the allocator calls TMEM's instructions through it, as
    NVIDIA's calls cute.arch (so a test can make one of them a no-op)."""
    from course.execute import standins

    return standins.MODULES["cutlass.cute.arch"]


class TmemAllocator:
    """cutlass.memory.TmemAllocator, as NVIDIA writes it (cutlass/memory/tmem.py): the
    allocator warp allocates and frees, every user waits on the named barrier and reads the
    address from shared memory; with two CTAs, free() first arrives on the peer's dealloc
    mbarrier and waits on its own."""

    def __init__(
        self,
        alloc_result_dst_smem_ptr=None,
        *,
        barrier_for_retrieve,
        allocator_warp_id: int = 0,
        is_two_cta: bool = False,
        num_allocated_columns: int = 0,
        two_cta_tmem_dealloc_mbar_ptr=None,
        arch: str = "sm_100",
        initialize_mbarrier: bool = True,
    ):
        if alloc_result_dst_smem_ptr is None or (is_two_cta and not two_cta_tmem_dealloc_mbar_ptr):
            raise Unmodelled("TmemAllocator with its shared-memory words auto-allocated")
        self.dst = alloc_result_dst_smem_ptr
        self.barrier = barrier_for_retrieve
        self.warp_id = int(allocator_warp_id)
        self.two_cta = bool(is_two_cta)
        self.columns = int(num_allocated_columns)
        self.dealloc_mbar = two_cta_tmem_dealloc_mbar_ptr
        if self.two_cta and initialize_mbarrier:
            if self._is_allocator():
                with sm90.elect_one():
                    mbarriers.init(self.dealloc_mbar, machine.WARP)
            mbarriers.init_fence()

    def _is_allocator(self) -> bool:
        return machine.warp().index == self.warp_id

    def allocate(self, num_columns) -> None:
        if self._is_allocator():
            _arch().alloc_tmem(int(num_columns), self.dst, is_two_cta=self.two_cta)
        self.columns += int(num_columns)

    def wait_for_alloc(self) -> None:
        self.barrier.arrive_and_wait()

    def retrieve_ptr(self, dtype: DType = Float32):
        return _arch().retrieve_tmem_ptr(dtype, 16, self.dst)

    def relinquish_alloc_permit(self) -> None:
        if self._is_allocator():
            _arch().relinquish_tmem_alloc_permit(self.two_cta)

    def free(self, tmem_ptr, num_columns: int = 0) -> None:
        columns = self.columns if not num_columns else int(num_columns)
        self.columns -= columns
        if not self._is_allocator():
            return
        w = machine.warp()
        if self.two_cta:
            of_cta(w.cta).reached_free = (w, happens_before.now(w))
            self.handshake(w)
        _arch().dealloc_tmem(tmem_ptr, columns, self.two_cta)

    def handshake(self, w) -> None:
        """Arrive on the peer's dealloc barrier, wait on ours: both CTAs are done with TMEM.
        Through cute.arch, as NVIDIA's free() issues them (so a plant of course.execute.planted
        reaches both)."""
        _arch().mbarrier_arrive(self.dealloc_mbar, w.cta.rank ^ 1)
        _arch().mbarrier_wait(self.dealloc_mbar, 0)


def _first_cell(lane: np.ndarray, col: np.ndarray, where: np.ndarray) -> str:
    """'lane L column C' of the first cell where `where` holds, for a hazard's message."""
    k = int(np.argmax(where.reshape(-1)))
    return f"lane {int(lane.reshape(-1)[k])} column {int(col.reshape(-1)[k])}"


# ---------------------------------------------------------------- tcgen05.ld / tcgen05.st


def copy_calls(atom, tmem_size: int, reg_size: int, instr: str, tmem_is_src: bool, site):
    """(src_tv, dst_tv, calls) of a warp-wide TMEM copy (tcgen05.ld: TMEM is the source;
    tcgen05.st: the destination): the atom's thread-value indices of each side and how many
    of its calls the copy takes. Sizes the atom does not divide are the kernel's crash."""
    src_tv = atoms._tv_index(oracle.attribute(atom.atom_recipe, "layout_src_tv"))
    dst_tv = atoms._tv_index(oracle.attribute(atom.atom_recipe, "layout_dst_tv"))
    per_src, per_dst = src_tv.shape[1], dst_tv.shape[1]
    per_tmem, per_reg = (per_src, per_dst) if tmem_is_src else (per_dst, per_src)
    calls = tmem_size // per_tmem
    if calls * per_tmem != tmem_size or calls * per_reg != reg_size:
        sides = (
            f"{tmem_size} TMEM values into {reg_size} registers"
            if tmem_is_src
            else f"{reg_size} registers into {tmem_size} TMEM values"
        )
        raise Hazard(
            hazards.CRASH, f"{instr} of {sides} with an atom of {per_src} -> {per_dst}", site
        )
    return src_tv, dst_tv, calls


def check_warp_lanes(w, addresses: np.ndarray, verb: str, instr: str, site) -> None:
    """A warp reaches only its quarter of TMEM's lanes: 32 * (warp % 4) onwards (the PTX
    ISA's tcgen05 data-movement shapes)."""
    lanes = addresses >> LANE_SHIFT
    quarter = 32 * (w.index % 4)
    outside = (lanes < quarter) | (lanes >= quarter + 32)
    if outside.any():
        raise Hazard(
            TMEM,
            f"warp {w.index} {verb} TMEM lane {int(lanes[outside][0])} with {instr}: warp w "
            f"reaches only lanes {quarter}-{quarter + 31} (32 * (w % 4) onwards)",
            site,
        )
