"""Inline PTX in kernel code (`llvm.inline_asm`): the one table of the asm strings the CPU
executor runs, each with what it does with its operands.

Kernel code written after NVIDIA's examples reaches a few instructions CuTe DSL has no call
for through `cutlass._mlir.dialects.llvm.inline_asm(result type, operands, asm, constraints)`:
a DSMEM store and its address map (course.execute.dsmem_stores), approximate math
(course.execute.ptx_math). A new form is added to its module's FORMS and listed here; any
other asm string stops the run as not modelled, naming the instruction (never a crash
blamed on the kernel).
"""

from __future__ import annotations

import re

from course.execute import dsmem_stores, ptx_math
from course.execute.hazards import Unmodelled

# asm template (whitespace collapsed) -> the stand-in run with its operands ($0 the result)
FORMS = {
    **dsmem_stores.FORMS,  # mapa, st.async ... complete_tx into a peer CTA's shared memory
    **ptx_math.FORMS,  # tanh.approx.f32
}


def inline_asm(result_type, operands, asm: str, constraints: str = "", *_, **__):
    """llvm.inline_asm(result type, operands, asm, constraints, ...): a form of FORMS, run
    on the executor; any other is not modelled."""
    text = re.sub(r"\s+", " ", str(asm).strip())
    form = FORMS.get(text)
    if form is None:
        raise Unmodelled(f"inline PTX `{text}`")
    return form(*operands)


class _AsmDialect:
    AD_ATT = "att"
    AD_Intel = "intel"


def _type(name: str):
    """An MLIR type constructor of `cutlass.cutlass_dsl.T` (cutlass._mlir.extras.types):
    inline_asm's result type, which the executor's forms do not need: its name."""

    def make(*_, **__):
        return name

    make.__name__ = name
    return make


NAMES = {
    "cutlass._mlir.dialects.llvm": {"inline_asm": inline_asm, "AsmDialect": _AsmDialect},
    "cutlass._mlir.extras.types": {
        t: _type(t) for t in ("i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")
    },
}
