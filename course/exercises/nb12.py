"""Notebook 12's exercises: FP8 on Hopper."""

from __future__ import annotations

from course.exercises import nb12_promotion_kernel  # noqa: F401  registers 12.promotion
from course.exercises import nb12_overlap_kernel  # noqa: F401  registers 12.overlap
