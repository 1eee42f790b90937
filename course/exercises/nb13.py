"""Notebook 13's exercises: the last five percent."""

from __future__ import annotations

from course.exercises import nb13_residual_kernel  # noqa: F401  registers 13.residual_epilogue
