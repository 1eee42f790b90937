"""The five verdicts a check can give, as the words the progress file records.

A verdict claims only what was checked: *right* needs every check passed and, for a kernel,
a run whose every output was compared with a reference; *not proven* is what a machine that
could not run the kernel says when everything it could check passed; *machine fault* is a
check that could not run here at all through no fault of the answer (a package missing, a
driver that does not start, no GPU memory: course.exercises.machine_faults), counted apart
from the learner's mistakes. A `Verdict` is one of them given to one exercise, with its
message: what `check` returns and prints, and what the progress file keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from course.exercises.machine_faults import HEADLINE


RIGHT, WRONG, UNPROVEN, UNANSWERED = "right", "wrong", "not proven", "not answered"
MACHINE_FAULT = "machine fault"
VERDICTS = (RIGHT, WRONG, UNPROVEN, UNANSWERED, MACHINE_FAULT)
NOT_SOLVED = "not solved yet: "  # how a kernel exercise's checker says "still the skeleton"

_MARK = {
    RIGHT: "✅ right",
    WRONG: "❌ wrong",
    UNPROVEN: "🔶 not proven here",
    UNANSWERED: "✏️  not answered yet",
    MACHINE_FAULT: f"⚠️  {HEADLINE}",
}


@dataclass(frozen=True)
class Verdict:
    id: str
    status: str  # one of VERDICTS
    message: str
    printed: bool = False  # check() printed it already

    @property
    def ok(self) -> bool | None:
        """True only for right, False for wrong, None otherwise (not proven, not answered, a
        machine fault)."""
        return {RIGHT: True, WRONG: False}.get(self.status)

    def __str__(self) -> str:
        mark, message = _MARK[self.status], self.message.removeprefix(f"{HEADLINE}: ")
        if self.status == UNANSWERED and message.startswith(NOT_SOLVED):  # still a skeleton
            mark, message = "✏️  not solved yet", message[len(NOT_SOLVED) :]
        return f"[{self.id}] {mark}: {message}"

    def __repr__(self) -> str:
        return str(self)

    def __bool__(self) -> bool:
        return bool(self.ok)

    def _ipython_display_(self) -> None:
        """As a cell's value: print, unless check() already did (no double verdicts)."""
        if not self.printed:
            print(self)
