"""The course's CPU executor: a CuTe DSL kernel's own Python source, run on numpy.

    from course.execute import run, pointer
    run(vector_add.add, pointer(a), pointer(b), pointer(c), n, None, 256)

`run(fn, *args)` calls a `@cute.jit` host function -- the kernel's own, or a learner's -- with
`cute` and `cutlass` bound to CPU stand-ins (course.execute.api, bound by
course.execute.translate), and runs every kernel it launches there and then:

* a grid of CTAs, each a set of warps on greenlets (course.execute.machine), a warp's 32
  lanes together as numpy vectors; branches the lanes take differently run masked
  (course.execute.simt);
* global tensors over torch CPU tensors (`pointer(t)`), shared memory watched for races,
  register fragments that remember what was written (course.execute.memory,
  course.execute.tensor);
* copies (vectorised, cp.async in flight until its group is waited for), ldmatrix and
  mma.sync (course.execute.atoms);
* every static layout, TV partition, fragment and retile answered by CuTe DSL itself in a
  CPU trace (course.execute.oracle).

What would go wrong on a GPU raises `Hazard`, naming the thread and warp, the tensor (and
stage) and the kernel's line; a call it does not model raises `Unmodelled` ("the CPU
executor does not model `X`; this check needs a GPU"), never a made-up value. Speed is not
modelled. course.execute.ladder_runs runs the ladder kernels of notebooks 00-07;
course.exercises.executor_checks runs the kernel exercises 01-07.
"""

from course.execute.hazards import Hazard, Unmodelled
from course.execute.runner import Result, pointer, run

__all__ = ["run", "pointer", "Result", "Hazard", "Unmodelled"]
