"""The course's CPU executor: a CuTe DSL kernel's own Python source, run on numpy.

`run(fn, *args)` runs a `@cute.jit` host function and the kernels it launches with `cute`
and `cutlass` bound to CPU stand-ins (course.execute.api): grids of CTAs, threads
interleaved on greenlets (course.execute.machine), global tensors over torch CPU tensors
(`pointer(t)`), shared memory watched for races, cp.async groups in flight until waited
for, ldmatrix and mma.sync computed warp-wide. Static layouts, TV partitions and fragments
are CuTe DSL's own answers (course.execute.oracle). What it does not model it says
(`hazards.Unmodelled`); what would go wrong on the GPU it names (`hazards.Hazard`).
"""
from course.execute.hazards import Hazard, Unmodelled
from course.execute.runner import Result, pointer, run

__all__ = ["run", "pointer", "Result", "Hazard", "Unmodelled"]
