"""`cutlass.tensor_utils.LayoutEnum` on the executor (also reached as
`cutlass.utils.LayoutEnum` and through the arch helper modules).

CuTe DSL's LayoutEnum is a plain Python enum whose methods read a tensor's leading
dimension (`from_tensor`) and name the MMA operand's major mode. The stand-in is the same
enum with the same methods, answering with the executor's stand-ins (`OperandMajorMode`
members are recipes of the real ones); where CuTe itself is asked (a helper such as
`make_smem_layout_a(layout, ...)` run in a trace by course.execute.oracle), a member turns
into the real member of the same name (`to_real`).
"""

from __future__ import annotations

import enum

from course.execute.oracle import Recipe

PATH = "cutlass.tensor_utils.LayoutEnum"


def _major_mode(name: str):
    """A member of the executor's `cute.nvgpu.OperandMajorMode` (as kernel code sees it)."""
    from course.execute.standins import OperandMajorMode

    return getattr(OperandMajorMode, name)


class LayoutEnum(enum.Enum):
    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"

    # --- the operand's major mode, as CuTe DSL's methods say it
    def mma_major_mode(self):
        return _major_mode("K" if self is LayoutEnum.ROW_MAJOR else "MN")

    def sm90_mma_major_mode(self):
        return self.mma_major_mode()

    def is_k_major_a(self) -> bool:
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_a(self) -> bool:
        return self is LayoutEnum.COL_MAJOR

    def is_n_major_b(self) -> bool:
        return self is LayoutEnum.COL_MAJOR

    def is_k_major_b(self) -> bool:
        return self is LayoutEnum.ROW_MAJOR

    def is_n_major_c(self) -> bool:
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_c(self) -> bool:
        return self is LayoutEnum.COL_MAJOR

    @staticmethod
    def from_tensor(tensor) -> "LayoutEnum":
        """Row-major when the tensor's mode 1 has stride 1, column-major for mode 0 (the
        first of a nested leading mode decides), as CuTe DSL's from_tensor reads it."""
        lead = tensor.leading_dim
        first = lead[0] if isinstance(lead, tuple) else lead
        if first == 1:
            return LayoutEnum.ROW_MAJOR
        if first == 0:
            return LayoutEnum.COL_MAJOR
        raise ValueError(f"Invalid leading dimension: {lead}")

    # --- what course.execute.oracle needs to pass a member to CuTe
    @property
    def key(self):
        return ("R", f"{PATH}.{self.name}", (), ())

    def oracle_key(self):
        return self.key

    def real(self):
        return Recipe(f"{PATH}.{self.name}").real()

    to_real = real
