"""The course's CPU executor: a CuTe DSL kernel's own Python source, run on numpy.

    from course.execute import run, pointer
    run(vector_add.add, pointer(a), pointer(b), pointer(c), n, None, 256)

`run(fn, *args)` calls a `@cute.jit` host function -- the kernel's own, or a learner's -- with
`cute` and `cutlass` bound to CPU stand-ins (course.execute.api, bound by
course.execute.translate), and runs every kernel it launches there and then:

* a grid of clusters of CTAs, each CTA a set of warps on greenlets (course.execute.machine),
  a warp's 32 lanes together as numpy vectors; branches the lanes take differently run
  masked (course.execute.simt);
* global tensors over torch CPU tensors (`pointer(t)`), shared memory watched for races,
  register fragments that remember what was written (course.execute.memory,
  course.execute.tensor);
* copies (vectorised, cp.async in flight until its group is waited for), ldmatrix,
  stmatrix and mma.sync (course.execute.atoms);
* WGMMA: issued by a whole warpgroup (its 4 warps meet), in flight until wait_group retires
  its group, its accumulator and shared-memory operands watched meanwhile
  (course.execute.wgmma);
* Hopper: mbarriers (course.execute.mbarriers, over course.models.mbarrier), TMA loads,
  multicast and stores in flight until they land or their bulk group is waited for
  (course.execute.tma), a cluster's CTAs run together, proxy fences and named barriers
  (course.execute.sm90), and NVIDIA's own cutlass.pipeline run translated on them
  (course.execute.pipeline; all named in course.execute.hopper's table);
* every static layout, TV partition, fragment and retile answered by CuTe DSL itself in a
  CPU trace (course.execute.oracle).

What would go wrong on a GPU raises `Hazard`, naming the thread and warp, the tensor (and
stage) and the kernel's line; a call it does not model raises `Unmodelled` ("the CPU
executor does not model `X`; this check needs a GPU"), never a made-up value. Speed is not
modelled. course.execute.ladder_runs runs the ladder kernels of notebooks 00-11,
course.execute.blackwell_runs the Blackwell kernels of notebooks 14-15 (tcgen05, TMEM,
CTA pairs, Cluster Launch Control); course.exercises.executor_checks runs the kernel
exercises.
"""

from course.execute.hazards import Hazard, Unmodelled
from course.execute.runner import Result, pointer, run

__all__ = ["run", "pointer", "Result", "Hazard", "Unmodelled"]
