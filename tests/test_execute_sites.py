"""Where a hazard is: `hazards.site()` names the kernel's (or learner's) own line, past the
frames of NVIDIA's library code the executor runs translated (cutlass.pipeline), whose
globals are kernel globals too."""

import sys

from course.execute import hazards, translate  # noqa: F401  (translate: what site() reads)
from tests import plants


def _function(module: str, source: str, name: str, **names):
    """`name` from `source`, run with KernelGlobals of module `module` (as translate makes)."""
    g = hazards.KernelGlobals(__name__=module, **names)
    exec(compile(source, f"<{module}>", "exec"), g)
    return g[name]


LIBRARY = "def consumer_wait():\n    x = 1\n    return site()\n"
KERNEL = "def kernel():\n    y = 2\n    return consumer_wait()\n"


def test_a_site_inside_translated_pipeline_code_is_the_kernels_line():
    wait = _function("cutlass.pipeline.sm90", LIBRARY, "consumer_wait", site=hazards.site)
    kernel = _function("kernels.some_gemm", KERNEL, "kernel", consumer_wait=wait)
    where = kernel()
    assert where.function == "kernel" and where.lineno == 3, where
    assert where.filename == "<kernels.some_gemm>"


def test_without_a_kernel_frame_the_library_line_is_named():
    wait = _function("cutlass.pipeline.sm90", LIBRARY, "consumer_wait", site=hazards.site)
    where = wait()
    assert where.function == "consumer_wait" and where.lineno == 3, where


def test_a_traceback_through_pipeline_code_names_the_kernels_line():
    def boom():
        raise RuntimeError("inside")

    wait = _function(
        "cutlass.pipeline", "def consumer_wait():\n    boom()\n", "consumer_wait", boom=boom
    )
    kernel = _function("learner", KERNEL, "kernel", consumer_wait=wait)
    try:
        kernel()
    except RuntimeError:
        where = hazards.site_of_traceback(sys.exc_info()[2])
    assert where.function == "kernel" and where.lineno == 3, where


def test_a_deadlock_inside_pipeline_tma_async_names_the_kernels_lines(monkeypatch):
    """tma_gemm's PipelineTmaAsync ring with consumer_release a no-op: the producer waits in
    producer_acquire forever. The waits are named by the lines of kernels/ that called the
    pipeline (tma_gemm's ring, sm90_parts' load_k_tile), not by NVIDIA's
    `wait line 16 (cute.arch.mbarrier_wait(`)."""
    import cutlass.pipeline as pipeline

    from course.execute import ladder_runs

    plants.no_op(monkeypatch, pipeline.PipelineTmaAsync, "consumer_release")
    run = ladder_runs.run_tma_gemm(128, 128, 640, "pipeline")
    assert run.hazard is not None and run.hazard.kind == hazards.DEADLOCK, run.summary()
    assert "ring.producer_acquire(state)" in str(run.hazard), run.hazard
    assert "pipe.consumer_wait(read)" in str(run.hazard), run.hazard
    assert "mbarrier_wait(" not in str(run.hazard), run.hazard
    assert "/kernels/" in run.hazard.site.filename, run.hazard.site  # sm90_parts.load_k_tile
