"""The course's CPU-side models of what the hardware would do. Pure Python: they run
anywhere, with no GPU and no CuTe DSL.

    course.sim.mbarrier   an mbarrier (phases, parity waits, tx bytes) and PipelineState
    course.sim.engine     a discrete-event engine: warp roles as generators of operations
    course.sim.diagnose   why a simulated kernel deadlocked, in words
    course.sim.pipeline   notebook 08: a TMA -> MMA ring of stages, with injectable bugs
    course.sim.schedule   notebook 12: SMs, CTA pairs, static vs CLC scheduling, TMEM slots

    from course.sim import pipeline, schedule
    pipeline.simulate(stages=4).figure()
    schedule.simulate(scheduler="clc").figure()
"""
from . import diagnose, engine, mbarrier, pipeline, schedule

__all__ = ["diagnose", "engine", "mbarrier", "pipeline", "schedule"]
