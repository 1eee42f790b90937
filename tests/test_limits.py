"""course.tools.limits: a learner's server in a control group of its own. The parsing runs
anywhere; the real limits need root and a writable control-group file system (a class's
hub machine; this test says so and skips where they are missing)."""

import os
import subprocess
import sys
import uuid

import pytest

from course.tools import limits


def test_memory_sizes_read_as_a_teacher_writes_them():
    assert limits.parse_bytes("8G") == 8 * 2**30
    assert limits.parse_bytes("512M") == 512 * 2**20
    assert limits.parse_bytes("1.5GB") == int(1.5 * 2**30)
    assert limits.parse_bytes(1000) == 1000


def test_no_control_groups_is_a_clear_error(tmp_path):
    with pytest.raises(OSError, match="no control-group file system"):
        limits.confine("ann", 2**30, 1.0, root=tmp_path)


def test_v1_groups_get_the_limits_and_the_process(tmp_path):
    for controller in ("memory", "cpu"):
        (tmp_path / controller).mkdir()
    joined = limits.confine("ann", 2**30, 1.5, pid=4242, root=tmp_path)
    memory, cpu = (tmp_path / c / "course-hub" / "ann" for c in ("memory", "cpu"))
    assert joined == [memory, cpu]
    assert (memory / "memory.limit_in_bytes").read_text() == str(2**30)
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"
    assert (memory / "cgroup.procs").read_text() == "4242"
    for group in joined:  # a real empty group holds no files; these stand-ins do
        for f in group.iterdir():
            f.unlink()
    limits.release("ann", root=tmp_path)
    assert not memory.exists() and not cpu.exists()


def _can_write_cgroups() -> str:
    if os.geteuid() != 0:
        return "needs root"
    if limits.cgroup_version() is None:
        return "no control-group file system at /sys/fs/cgroup"
    try:
        probe = (
            limits.CGROUP_ROOT / ("memory" if limits.cgroup_version() == 1 else "") / limits.GROUP
        )
        probe.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot write control groups here: {exc}"
    return ""


NO_CGROUPS = _can_write_cgroups()


@pytest.mark.skipif(bool(NO_CGROUPS), reason=NO_CGROUPS or "-")
def test_a_learner_past_the_memory_ceiling_is_stopped_and_nobody_else():
    name = f"test-{uuid.uuid4().hex[:8]}"
    grab = "x = bytearray(400 * 2**20); x[::4096] = b'1' * len(x[::4096]); print('survived')"
    greedy = subprocess.run(
        [sys.executable, "-c", grab],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limits.preexec_with_limits(name, 100 * 2**20, 0.5),
    )
    for controller in ("memory", "cpu", ""):  # the child has exited: its groups are empty
        group = limits.CGROUP_ROOT / controller / limits.GROUP / name
        if group.is_dir():
            group.rmdir()
    assert "survived" not in greedy.stdout and greedy.returncode != 0
    neighbour = subprocess.run(
        [sys.executable, "-c", grab], capture_output=True, text=True, timeout=120
    )
    assert neighbour.stdout.strip() == "survived"  # same program, outside the group


def test_the_default_ceiling_is_a_share_of_the_machine():
    memory, cpus = limits.machine_share(4, memory=64 * 2**30, cpus=16)
    assert memory == int(64 * 2**30 * 0.9 / 4) and cpus == 4.0
    assert limits.machine_share(40, memory=8 * 2**30, cpus=2) == (2**30, 1.0)  # floors
    memory, cpus = limits.machine_share(1)  # this machine, whole
    assert 0 < memory < os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert cpus == max(1.0, float(len(os.sched_getaffinity(0))))
