"""Which lanes of a warp run a PTX instruction: read from the branches that guard it.

A check such as "one lane arms the barrier" must accept every way of saying "one lane" --
CuTe DSL's `elect_one()` (elect.sync), `if cute.arch.lane_idx() == 0:`, a thread index
modulo 32 -- and not the spelling of one of them. The kernels' PTX guards a block of
instructions with a forward branch over it (`@%p bra $L`); this module follows the branch's
predicate back to what defines it (elect.sync, or a comparison of the lane against a
constant) and says whether a single lane falls through.

    single_lane(lines, i)  ->  "the elected lane" | "lane 0" | None (several lanes, or unknown)
"""

from __future__ import annotations

import re

_BRANCH = re.compile(r"^@(!?)(%p\d+)\s+bra(?:\.uni)?\s+(\S+);")
_LABEL = re.compile(r"^(\$?[\w$]+):")


def labelled_lines(ptx: str) -> list[str]:
    """The PTX's instructions and labels, in order (comments and directives dropped)."""
    out = []
    for line in ptx.splitlines():
        line = line.split("//")[0].strip()
        if _LABEL.match(line) or (line.endswith(";") and not line.startswith(".")):
            out.append(line)
    return out


def single_lane(lines: list[str], i: int) -> str | None:
    """What lets exactly one lane of the warp reach instruction `i`, or None."""
    labels = {m.group(1): k for k, line in enumerate(lines) if (m := _LABEL.match(line))}
    for k in range(i - 1, -1, -1):
        line = lines[k]
        if _LABEL.match(line):  # a join point: other paths reach i too
            return None
        m = _BRANCH.match(line)
        if m and labels.get(m.group(3), -1) > i:  # a branch over i: i runs where it falls through
            negated, pred = m.group(1) == "!", m.group(2)
            # `@%p bra` falls through where %p is false; `@!%p bra` where it is true
            return _value_one_lane(lines[:k], pred, value=negated)
        if line.startswith("bra"):
            return None
    return None


def _value_one_lane(lines: list[str], pred: str, value: bool) -> str | None:
    """Is `pred == value` true for exactly one lane?"""
    definition = _definition(lines, pred)
    if definition is None:
        return None
    op, args = definition
    if op == "not.pred":
        return _value_one_lane(lines, args[0], not value)
    if op == "elect.sync":
        return "the elected lane" if value else None
    m = re.match(r"setp\.(eq|ne)\.[bsu]32", op)
    if m and len(args) == 2 and args[1] == "0" and _is_lane(lines, args[0]):
        equal = m.group(1) == "eq"
        return "lane 0" if equal == value else None
    return None


def _definition(lines: list[str], reg: str):
    """(opcode, operands) of the last instruction before the end of `lines` that writes `reg`
    (elect.sync writes 'r|p')."""
    for line in reversed(lines):
        parts = line.rstrip(";").split(None, 1)
        if len(parts) < 2:
            continue
        op, rest = parts
        operands = [x.strip() for x in rest.split(",")]
        dest = operands[0]
        if op.startswith("elect.sync") and dest.split("|")[-1] == reg:
            return "elect.sync", []
        if dest == reg:
            return op, operands[1:]
    return None


def _is_lane(lines: list[str], reg: str) -> bool:
    """Does `reg` hold the lane index (%laneid, or %tid.x modulo 32)?"""
    definition = _definition(lines, reg)
    if definition is None:
        return False
    op, args = definition
    if op.startswith("mov") and args == ["%laneid"]:
        return True
    if op.startswith("and.b32") and "31" in args:
        other = [a for a in args if a != "31"][0]
        return other == "%tid.x" or _is_tid(lines, other)
    if op.startswith("rem.") and "32" in args:
        other = [a for a in args if a != "32"][0]
        return other == "%tid.x" or _is_tid(lines, other)
    return False


def _is_tid(lines: list[str], reg: str) -> bool:
    definition = _definition(lines, reg)
    return (
        definition is not None and definition[0].startswith("mov") and definition[1] == ["%tid.x"]
    )
