"""Notebook 16's exercises: block-scaled MMA on Blackwell (the kernel exercise: the MMA warp's
k-loop that copies each k-tile's scale factors into TMEM and points each MMA at its own)."""

from __future__ import annotations

from course.exercises import nb16_sf_kernel  # noqa: F401  registers 16.sf_copy_and_mma
