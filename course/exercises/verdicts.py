"""The five verdicts a check can give, as the words the progress file records.

A verdict claims only what was checked: *right* needs every check passed and, for a kernel,
a run whose every output was compared with a reference; *not proven* is what a machine that
could not run the kernel says when everything it could check passed; *machine fault* is a
check that could not run here at all through no fault of the answer (a package missing, a
driver that does not start, no GPU memory: course.exercises.machine_faults), counted apart
from the learner's mistakes.
"""

RIGHT, WRONG, UNPROVEN, UNANSWERED = "right", "wrong", "not proven", "not answered"
MACHINE_FAULT = "machine fault"
VERDICTS = (RIGHT, WRONG, UNPROVEN, UNANSWERED, MACHINE_FAULT)
