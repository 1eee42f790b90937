"""A live cell's fallback for numbers that must be measured on a GPU but may not be yet.

`recorded_or_prediction(name, predict, what, command)` shows the newest recorded result
of family `name` when results/<name>.json has one (labelled RECORDED, with GPU, date
and command, like course.runtime.live.recorded). When nothing has been recorded yet, it says
so plainly, names the command that would record it, and shows only the course's
prediction (labelled SIMULATED): never a made-up measurement, never a traceback.
"""
from __future__ import annotations

from typing import Any, Callable

from course.runtime import results
from course.runtime.live import Banner, Fallback, Mode, Outcome, _why_not


def recorded_or_prediction(name: str, predict: Callable[[], Any], what: str, command: str,
                           gpu: str | None = None) -> Fallback:
    """Recorded `name` if any; else `predict()` with a 'not measured yet' banner.

    The Outcome's mode tells the cell which one it got: RECORDED (value = the record's
    data, .record set) or SIMULATED (value = predict()'s result, .record None).
    """

    def run(m, needs: str, announce: Callable[[Banner], None]) -> Outcome:
        rec = results.latest(name, gpu=gpu)
        if rec is not None:
            banner = Banner(Mode.RECORDED, f"{_why_not(m, needs)}. Showing the result "
                                           f"{rec.citation()}.")
            announce(banner)
            return Outcome(Mode.RECORDED, rec.data, banner, rec)
        banner = Banner(Mode.SIMULATED,
                        f"{_why_not(m, needs)}. No GPU measurement of this has been recorded "
                        f"yet{' on ' + gpu if gpu else ''} (it is recorded by `{command}` on an "
                        f"H100 into results/{name}.json). Showing {what} only.")
        announce(banner)
        return Outcome(Mode.SIMULATED, predict(), banner)

    return Fallback(Mode.RECORDED, run)
