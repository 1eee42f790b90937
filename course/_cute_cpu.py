"""A @cute.jit trampoline for asking CuTe DSL questions on a CPU (jit functions must live
in a .py file; importing CuTe DSL costs about a second, so callers import this lazily)."""
import cutlass
import cutlass.cute as cute


@cute.jit
def traced(job: cutlass.Constexpr, box: cutlass.Constexpr):
    """Run job() while CuTe DSL traces this function and keep what it returns in `box`.

    Nothing is launched, so no GPU is needed; CuTe values live only during the trace,
    so `job` must return plain Python values.
    """
    box.append(job())


def run(job):
    """job()'s plain-Python result, computed inside a CuTe DSL trace."""
    box: list = []
    traced(job, box)
    return box[0]
