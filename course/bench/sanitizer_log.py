"""What a compute-sanitizer log says, read without judging it: the tool's own summary (how
many errors), the first problem it reports, a race's two instructions in words, and the
line a run under it printed where its own checks failed.

Shared by the exercises' GPU checks (course.exercises.gpu_run turns a log into a learner's
verdict) and by the kernels' sweep (course.bench.sanitize turns it into a row of a record).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Callable, NamedTuple

# memcheck/synccheck end with "ERROR SUMMARY: N errors"; racecheck with
# "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)"
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|SUMMARY: \d+ hazards? displayed \((\d+) error")
FIRST_REPORT = re.compile(
    r"^=+ +((?:Invalid|Race|Barrier|Error|Warning|Uninitialized|"
    r"Out-of-range|Misaligned|Program hit).*)$",
    re.M,
)
# racecheck prints the two accesses of a race on two lines of its log ("... Write access at
# kernel+0x1d60" / "=========     and Read access at kernel+0x2040 ...")
RACE = re.compile(
    r"Race reported between (Write|Read) access at \S+?\+0x([0-9a-f]+)"
    r"[\s=]{0,80}?and (Write|Read) access at \S+?\+0x([0-9a-f]+)"
)
# what a SASS instruction that touches shared memory is, in the words of the course
SASS_ACCESS = {
    "LDGSTS": "a cp.async copy into shared memory",
    "LDSM": "an ldmatrix read",
    "STSM": "an stmatrix write",
    "STS": "a store to shared memory",
    "LDS": "a load from shared memory",
    "ATOMS": "a shared-memory atomic",
    "UTMALDG": "a TMA load",
    "UTMASTG": "a TMA store",
    "HGMMA": "a WGMMA read",
    "SYNCS": "an mbarrier operation",
}
FAILED_CHECK_MARK = "✘"  # how a run under the tool prints a check of its own that failed


def sanitizer() -> str | None:
    """Path of compute-sanitizer (on PATH or in the CUDA toolkit), or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/compute-sanitizer")
    return str(default) if default.exists() else None


class Log(NamedTuple):
    """A log, read: the errors of each summary the tool printed (none: it printed none)."""

    counts: list[int]
    text: str

    @property
    def errors(self) -> int:
        return sum(self.counts)

    @property
    def clean(self) -> bool:
        """The tool summed up and found nothing."""
        return bool(self.counts) and self.errors == 0

    def first_problem(self, sass: Callable[[], str] | None = None) -> str | None:
        """The first problem reported: a race named by its two instructions where the
        kernel's SASS is at hand, else the tool's own line (None: it reported none)."""
        race = RACE.search(self.text)
        if race and sass is not None:
            return describe_race(race, sass)
        first = FIRST_REPORT.search(self.text)
        return first.group(1).strip() if first else None

    def failed_check(self) -> str:
        """The run's own line for a check of its that failed ('' if it printed none)."""
        return next((ln.strip() for ln in self.text.splitlines() if FAILED_CHECK_MARK in ln), "")

    def last_line(self) -> str:
        return self.text.strip().splitlines()[-1] if self.text.strip() else ""


def read(log: str) -> Log:
    return Log([int(a or b) for a, b in SUMMARY.findall(log)], log)


def describe_race(race: re.Match, sass: Callable[[], str]) -> str:
    """'a cp.async copy into shared memory (LDGSTS at +0x1d60) and an ldmatrix read (LDSM
    at +0x1e40) touch the same shared-memory bytes with no barrier between them'."""
    try:
        text = sass()
    except Exception:  # no disassembler here: the offsets alone
        text = ""
    sides = []
    for kind, offset in (race.group(1, 2), race.group(3, 4)):
        op = sass_opcode(text, int(offset, 16))
        meaning = next(
            (m for prefix, m in SASS_ACCESS.items() if op.startswith(prefix)), f"a {kind.lower()}"
        )
        sides.append(f"{meaning} ({op.split('.')[0] or kind.lower()} at +0x{offset})")
    return (
        f"{sides[0]} and {sides[1]} touch the same shared-memory bytes with no barrier between them"
    )


def sass_opcode(sass: str, offset: int) -> str:
    """The opcode of the SASS instruction at `offset` in nvdisasm's listing ('' if none)."""
    m = re.search(rf"/\*{offset:04x}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][\w.]*)", sass)
    return m.group(1) if m else ""
