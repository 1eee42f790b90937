"""The four verdicts a check can give, as the words the progress file records.

A verdict claims only what was checked: *right* needs every check passed and, for a kernel,
a run whose every output was compared with a reference; *not proven* is what a machine that
could not run the kernel says when everything it could check passed.
"""

RIGHT, WRONG, UNPROVEN, UNANSWERED = "right", "wrong", "not proven", "not answered"
VERDICTS = (RIGHT, WRONG, UNPROVEN, UNANSWERED)
