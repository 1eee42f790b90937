"""The shared-memory bank model: how many wavefronts one warp instruction costs.

Shared memory is 32 banks, each 4 bytes wide; byte address a lives in bank
(a // 4) % 32. One wavefront serves at most one 4-byte word from every bank, so:

* lanes that touch *different words of the same bank* are served one word per
  wavefront (a bank conflict: an n-way conflict costs n wavefronts);
* lanes that touch *the same word* share it (a broadcast: free);
* a wide access is served in phases, each phase its own set of wavefronts:
  up to 32-bit per lane -> 1 phase of 32 lanes; 64-bit -> 2 phases of 16 lanes
  (lanes 0-15, then 16-31); 128-bit -> 4 phases of 8 lanes. A phase moves at most
  128 bytes, so a conflict-free warp needs 1, 2 or 4 wavefronts.

For every request the model reports wavefronts, the ideal (one per phase that has
an active lane) and conflicts = wavefronts - ideal, which is how Nsight Compute
counts `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld`; per phase it keeps
how many distinct words each bank serves (the heat map).

What it leaves out (and the notebook's measured cases avoid): the extra merging
some GPUs do for 64/128-bit loads whose lanes repeat addresses in pairs, and stores
racing loads. Plain Python and numpy, no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

BANKS = 32
BANK_BYTES = 4
WARP = 32
WAVEFRONT_BYTES = BANKS * BANK_BYTES  # 128 bytes

# access width (bytes per lane) -> lanes per phase
PHASE_LANES = {1: 32, 2: 32, 4: 32, 8: 16, 16: 8}


def bank_of(byte_address) -> "int | np.ndarray":
    """The bank holding a byte address (an int, or elementwise on a numpy array)."""
    if isinstance(byte_address, (int, np.integer)):
        return (int(byte_address) // BANK_BYTES) % BANKS
    return (np.asarray(byte_address) // BANK_BYTES) % BANKS


@dataclass(frozen=True)
class Request:
    """One warp-wide shared-memory instruction: each lane's byte address (None: inactive)."""

    addresses: tuple[int | None, ...]
    width: int  # bytes each active lane reads: 1, 2, 4, 8 or 16
    label: str = ""

    def __post_init__(self):
        if self.width not in PHASE_LANES:
            raise ValueError(
                f"access width {self.width} bytes: expected one of {sorted(PHASE_LANES)}"
            )
        if len(self.addresses) != WARP:
            raise ValueError(f"a request has {WARP} lanes, got {len(self.addresses)} addresses")
        for lane, a in enumerate(self.addresses):
            if a is None:
                continue
            if a < 0:
                raise ValueError(f"lane {lane}: negative address {a}")
            if a % self.width:
                raise ValueError(
                    f"lane {lane}: address {a} is not aligned to the "
                    f"{self.width}-byte access (the hardware would fault)"
                )

    @classmethod
    def of(cls, addresses: Sequence[int | None], width: int, label: str = "") -> "Request":
        """From up to 32 addresses; missing lanes are inactive."""
        addrs = list(addresses) + [None] * (WARP - len(addresses))
        return cls(tuple(None if a is None else int(a) for a in addrs), width, label)

    @property
    def active(self) -> list[int]:
        return [lane for lane, a in enumerate(self.addresses) if a is not None]


@dataclass(frozen=True)
class Phase:
    """One phase of a request: the lanes it serves and the wavefronts they cost."""

    lanes: tuple[int, ...]
    words_per_bank: tuple[int, ...]  # distinct 4-byte words each bank must serve
    active: int  # active lanes in this phase

    @property
    def wavefronts(self) -> int:
        return max(self.words_per_bank) if self.active else 0

    @property
    def ideal(self) -> int:
        return 1 if self.active else 0

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def degree(self) -> int:
        """n of the n-way conflict (1 = conflict-free; 0 = no active lane)."""
        return self.wavefronts


@dataclass(frozen=True)
class Analysis:
    """What one request costs, phase by phase."""

    request: Request
    phases: tuple[Phase, ...]

    @property
    def wavefronts(self) -> int:
        return sum(p.wavefronts for p in self.phases)

    @property
    def ideal(self) -> int:
        return sum(p.ideal for p in self.phases)

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def degree(self) -> int:
        """The worst phase's n-way conflict."""
        return max((p.degree for p in self.phases), default=0)

    def heat(self) -> np.ndarray:
        """(phases, 32) distinct words per bank: the bank heat map of this request."""
        return np.array([p.words_per_bank for p in self.phases], dtype=np.int64)

    def lane_banks(self) -> list[tuple[int, ...]]:
        """For each lane, the banks its access touches (empty when inactive)."""
        out = []
        for a in self.request.addresses:
            if a is None:
                out.append(())
                continue
            words = range(a // BANK_BYTES, (a + self.request.width - 1) // BANK_BYTES + 1)
            out.append(tuple(w % BANKS for w in words))
        return out

    def summary(self) -> str:
        per_phase = ", ".join(str(p.wavefronts) for p in self.phases)
        return (
            f"{self.wavefronts} wavefront(s) (ideal {self.ideal}; per phase {per_phase}), "
            f"{self.conflicts} conflict(s), worst phase {self.degree}-way"
        )


def analyze(request: Request) -> Analysis:
    """Split a request into phases and count each phase's wavefronts."""
    per_phase = PHASE_LANES[request.width]
    phases = []
    for start in range(0, WARP, per_phase):
        lanes = tuple(range(start, start + per_phase))
        words: list[set[int]] = [set() for _ in range(BANKS)]
        active = 0
        for lane in lanes:
            a = request.addresses[lane]
            if a is None:
                continue
            active += 1
            for w in range(a // BANK_BYTES, (a + request.width - 1) // BANK_BYTES + 1):
                words[w % BANKS].add(w)
        phases.append(Phase(lanes, tuple(len(s) for s in words), active))
    return Analysis(request, tuple(phases))


@dataclass(frozen=True)
class Totals:
    """A whole access pattern (several requests): the numbers Nsight Compute sums."""

    analyses: tuple[Analysis, ...] = field(default_factory=tuple)

    @property
    def requests(self) -> int:
        return len(self.analyses)

    @property
    def wavefronts(self) -> int:
        return sum(a.wavefronts for a in self.analyses)

    @property
    def ideal(self) -> int:
        return sum(a.ideal for a in self.analyses)

    @property
    def conflicts(self) -> int:
        return sum(a.conflicts for a in self.analyses)

    @property
    def wavefronts_per_request(self) -> float:
        return self.wavefronts / self.requests if self.requests else 0.0

    @property
    def degree(self) -> int:
        return max((a.degree for a in self.analyses), default=0)

    def as_dict(self) -> dict:
        return {
            "requests": self.requests,
            "wavefronts": self.wavefronts,
            "ideal": self.ideal,
            "conflicts": self.conflicts,
            "wavefronts_per_request": self.wavefronts_per_request,
            "worst_degree": self.degree,
        }


def analyze_all(requests: Iterable[Request]) -> Totals:
    return Totals(tuple(analyze(r) for r in requests))


def heat(totals: Totals) -> np.ndarray:
    """(requests, max phases, 32) words per bank over a whole pattern (zero-padded)."""
    n_phase = max((len(a.phases) for a in totals.analyses), default=1)
    out = np.zeros((totals.requests, n_phase, BANKS), dtype=np.int64)
    for i, a in enumerate(totals.analyses):
        h = a.heat()
        out[i, : h.shape[0]] = h
    return out
