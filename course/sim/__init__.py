"""The course's CPU-side models of what the hardware would do. Pure Python: they run
anywhere, with no GPU and no CuTe DSL.

    course.sim.event_engine     a discrete-event engine: warp roles as generators of operations
    course.sim.pipeline_diagnosis   why a simulated kernel deadlocked, in words
    course.sim.pipeline_sim   notebook 09: a TMA -> MMA ring of stages, with injectable bugs
    course.sim.schedule_sim   notebook 15: SMs, CTA pairs, static vs CLC scheduling, TMEM slots
    course.sim.ring_protocol  notebook 09: the kernel's exact barrier protocol, interleaved

    from course.sim import pipeline_sim, schedule_sim
    pipeline_sim.simulate(stages=4).summary()
    schedule_sim.simulate(scheduler="clc").per_sm_utilisation

Simulators return data and draw nothing: course.viz.pipeline_pictures and
course.viz.schedule_pictures draw their results.
"""

from course.sim import event_engine, pipeline_diagnosis, pipeline_sim, ring_protocol, schedule_sim

__all__ = ["event_engine", "pipeline_diagnosis", "pipeline_sim", "ring_protocol", "schedule_sim"]
