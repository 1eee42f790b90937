"""The one @cute.jit trampoline behind course.algebra (kept in its own module because
importing CuTe DSL costs about a second, and jit functions must live in .py files)."""
import cutlass
import cutlass.cute as cute


@cute.jit
def run_traced(job: cutlass.Constexpr, box: cutlass.Constexpr):
    """Call job() while CuTe DSL traces this function; keep its result in `box`.

    No kernel is launched, so this runs on a machine without a GPU. CuTe values are
    only valid during the trace, so `job` converts what it returns (course.algebra
    does) before the trace ends.
    """
    box.append(job())
