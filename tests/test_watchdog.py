"""course.runtime.watchdog: a launch that hangs comes back as a clear error in bounded time."""

import time

import pytest

from course.runtime import watchdog
from course.runtime.watchdog import ChildFailed, PipelineHang, isolated


def _raise_hang():
    raise PipelineHang("CTA 0, warp 0 gave up waiting on empty[0]")


def _raise_value_error():
    raise ValueError("bad input")


def test_a_finishing_call_returns_its_value():
    assert isolated(watchdog.spin_wait, 0) == "wait(parity=0) returned after 0 polls"
    assert isolated(watchdog.spin_wait, 1, 0) == "wait(parity=1) returned after 0 polls"
    t = watchdog.LAST_TIMING
    assert t.startup > 0 and t.launch < 5


@pytest.mark.parametrize("args", [(0, 1, 2), (1,)], ids=["missing arrival", "wrong parity"])
def test_a_hanging_call_is_stopped_in_bounded_time(args):
    start = time.perf_counter()
    with pytest.raises(PipelineHang, match=r"did not finish within 1\.5 s of its launch"):
        isolated(watchdog.spin_wait, *args, timeout_s=1.5)
    elapsed = time.perf_counter() - start
    assert 1.5 <= elapsed < 15, elapsed
    assert 1.4 <= watchdog.LAST_TIMING.launch < 8


def test_the_message_says_what_to_check():
    with pytest.raises(PipelineHang) as info:
        isolated(watchdog.spin_wait, 1, timeout_s=1)
    text = str(info.value)
    assert "parity" in text and "arrive" in text and "arrival counts" in text


def test_errors_in_the_child_come_back():
    with pytest.raises(PipelineHang, match="empty\\[0\\]"):
        isolated(_raise_hang)
    with pytest.raises(ChildFailed, match="ValueError: bad input"):
        isolated(_raise_value_error)


def test_the_compile_phase_has_its_own_budget():
    start = time.perf_counter()
    with pytest.raises(PipelineHang, match="did not reach its launch"):
        isolated(time.sleep, 30, timeout_s=1, compile_timeout_s=1.5)
    assert time.perf_counter() - start < 15


def test_launching_outside_a_child_is_harmless():
    watchdog.launching()


def test_a_script_without_a_main_guard_is_not_run_again_in_the_child(tmp_path):
    """The child starts from its own module, not by re-importing the caller's __main__:
    a plain script that calls isolated() at top level runs once (with multiprocessing's
    spawn it would run again in the child, and fail)."""
    import subprocess
    import sys

    from course import ROOT

    script = tmp_path / "learner_script.py"
    script.write_text(
        "from course.runtime import watchdog\n"
        "print('script body ran')\n"
        "print(watchdog.isolated(watchdog.spin_wait, 0))\n"
    )
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("script body ran") == 1, out.stdout
    assert "wait(parity=0) returned" in out.stdout
