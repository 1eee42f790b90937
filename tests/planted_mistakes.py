"""Mistakes planted in working kernels, for the tests that compute-sanitizer catches them.

Each is a course reference with one edit (course.exercises.learner_code.edited): a race (a
barrier taken out) and a missing wait, in the cp.async ring of notebook 07 and the TMA +
mbarrier ring of notebook 09.
"""

from course.exercises.learner_code import edited
from course.exercises.solutions import nb07_solutions, nb09_solutions

CP_ASYNC_RACE = ("07.mainloop", nb07_solutions.mainloop__no_sync)
CP_ASYNC_NO_WAIT = (
    "07.mainloop",
    edited(nb07_solutions.mainloop, "mainloop__no_wait", (nb07_solutions.WAIT, "")),
)
TMA_NO_WAIT = (
    "09.ring",
    edited(
        nb09_solutions.ring,
        "ring__no_wait",
        ("        self.wait_full(full + s, (t // stages) % 2, t, report)\n", ""),
    ),
)
