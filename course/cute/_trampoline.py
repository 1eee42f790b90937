"""The @cute.jit functions behind course.cute.trace.on_cpu (kept in their own module because
importing CuTe DSL costs about a second, and jit functions must live in .py files)."""

import cutlass
import cutlass.cute as cute


@cute.jit
def run_traced(job: cutlass.Constexpr, box: cutlass.Constexpr):
    """Call job() while CuTe DSL traces this function; keep its result in `box`.

    No kernel is launched, so this runs on a machine without a GPU. CuTe values are
    only valid during the trace, so `job` converts what it returns (course.cute.trace
    does) before the trace ends.
    """
    box.append(job())


@cute.jit
def run_traced_with_pointers(
    job: cutlass.Constexpr,
    box: cutlass.Constexpr,
    p0: cute.Pointer,
    p1: cute.Pointer,
    p2: cute.Pointer,
):
    """As run_traced, with three global-memory pointers (address 0) for job(p0, p1, p2):
    tensors built on them show the strides a kernel would see, and nothing is read."""
    box.append(job(p0, p1, p2))
