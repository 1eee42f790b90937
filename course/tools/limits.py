"""Ceilings for one learner's server, with the kernel's control groups and rlimits.

JupyterHub's local spawners pass `mem_limit` and `cpu_limit` on as numbers and enforce
nothing. This puts the server process (and so every kernel, terminal and background job it
starts, daemonised or not: a control group is inherited and a learner cannot leave it) into
a control group of its own, `course-hub/<learner>`, with

* a memory ceiling (past it the kernel kills that learner's process, nobody else's);
* a CPU quota (cores' worth of time per period);
* a process ceiling (`pids.max`, threads included: a fork bomb stops there, far below the
  machine's own pid limit; COURSE_HUB_PIDS, default 512);
* a device rule denying the GPUs the learner was not given (v1: `devices.deny`; v2: an eBPF
  program, course.tools.device_rule);
* a largest file (RLIMIT_FSIZE, the hub's disk ceiling: course.tools.learner_cleanup).

`kill_group` stops every process of the group (v2: `cgroup.kill`; v1: frozen, then killed),
at the server's stop and, for whatever outlived a server, at the next start and at the
hub's exit (`stop_at_exit`). It runs in the child process before it becomes the learner
(`preexec_fn`), so it needs root and a writable control-group file system: cgroup v2 (one
unified tree), or v1 with its `memory` and `cpu` hierarchies (and `pids`, `freezer`,
`devices` where mounted). Where neither can be written, `confine` says why and the server
starts without limits.
"""

from __future__ import annotations

import atexit
import os
import resource
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "course-hub"
CPU_PERIOD_US = 100_000
DEFAULT_PIDS = 512
# v1 hierarchies a learner's group lives in: the first two are needed, the rest used when
# mounted (pids: the process ceiling; freezer: a kill no fork can outrun; devices: GPUs)
V1_CONTROLLERS = ("memory", "cpu", "pids", "freezer", "devices")
V2_CONTROLLERS = ("memory", "cpu", "pids")


def parse_bytes(text: str | int | float) -> int:
    """'8G', '512M', '1.5G' or a number of bytes -> bytes."""
    if isinstance(text, (int, float)):
        return int(text)
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


def pids_ceiling(environ=os.environ) -> int:
    """How many processes and threads one learner may have at once (COURSE_HUB_PIDS). A
    kernel that imports torch starts a thread per core; raise it on a machine of many cores
    where learners run several kernels."""
    return int(environ.get("COURSE_HUB_PIDS") or DEFAULT_PIDS)


def machine_share(
    seats: int, memory: int | None = None, cpus: int | None = None
) -> tuple[int, float]:
    """One learner's ceiling when `seats` learners share this machine: its memory (less a
    tenth kept for the system and the hub) and its CPUs divided evenly, at least 1 GiB and
    one CPU each. A ceiling, not a reservation: learners rarely all peak at once, but none
    can take what the others need."""
    memory = memory or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpus = cpus or len(os.sched_getaffinity(0))
    seats = max(1, seats)
    return max(2**30, int(memory * 0.9 / seats)), max(1.0, round(cpus / seats, 1))


def describe_bytes(n: int) -> str:
    return f"{n / 2**30:.1f}G"


def cgroup_version(root: Path = CGROUP_ROOT) -> int | None:
    """2 for a unified tree, 1 for v1 hierarchies with memory and cpu, else None."""
    if (root / "cgroup.controllers").exists():
        return 2
    if (root / "memory").is_dir() and (root / "cpu").is_dir():
        return 1
    return None


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _v2_group(root: Path, name: str) -> Path:
    """course-hub/`name`, with the controllers it needs handed down the tree (those this
    kernel has: `pids` may be missing where nothing mounted it)."""
    parent = root / GROUP
    parent.mkdir(exist_ok=True)
    available = set((root / "cgroup.controllers").read_text().split())
    wanted = " ".join(f"+{c}" for c in V2_CONTROLLERS if c in available)
    for level in (root, parent):
        _write(level / "cgroup.subtree_control", wanted)
    group = parent / name
    group.mkdir(exist_ok=True)
    return group


def _v1_settings(mem_bytes, quota, pids, deny) -> dict[str, list[tuple[str, str]]]:
    """Each v1 hierarchy's writes for one learner, in order. devices: "a" first lifts the
    rules an earlier start left (another GPU then), then each device not theirs is denied,
    one rule a write."""
    return {
        "memory": [("memory.limit_in_bytes", str(mem_bytes))] if mem_bytes else [],
        "cpu": [("cpu.cfs_period_us", str(CPU_PERIOD_US)), ("cpu.cfs_quota_us", str(quota))]
        if quota
        else [],
        "pids": [("pids.max", str(pids))] if pids else [],
        "freezer": [],
        "devices": [("devices.allow", "a")] + [("devices.deny", rule) for rule in deny],
    }


def _v1_confine(root: Path, name: str, settings, who: str) -> list[Path]:
    joined = []
    for controller in V1_CONTROLLERS:
        if not (root / controller).is_dir():
            continue  # pids, freezer, devices: where mounted (memory, cpu: checked before)
        group = root / controller / GROUP / name
        group.mkdir(parents=True, exist_ok=True)
        for file, value in settings[controller]:
            _write(group / file, value)
        _write(group / "cgroup.procs", who)
        joined.append(group)
    return joined


def confine(
    name: str,
    mem_bytes: int | None,
    cpus: float | None,
    pid: int = 0,
    root: Path = CGROUP_ROOT,
    pids: int | None = None,
    deny: tuple[str, ...] = (),
) -> list[Path]:
    """Put process `pid` (0: this one) into course-hub/`name` with the limits; `deny`: device
    rules such as "c 195:1 rwm" (GPUs not the learner's). Returns the groups it joined.
    Raises OSError when the control groups cannot be written."""
    version = cgroup_version(root)
    who = str(pid or os.getpid())
    quota = int(cpus * CPU_PERIOD_US) if cpus else None
    if version == 2:
        group = _v2_group(root, name)
        settings = {
            "memory.max": mem_bytes,
            "memory.swap.max": 0 if mem_bytes else None,
            "cpu.max": f"{quota} {CPU_PERIOD_US}" if quota else None,
            "pids.max": pids,
        }
        for file, value in settings.items():
            if value is not None:
                _write(group / file, str(value))
        if deny:
            from course.tools import device_rule  # v2 only: an eBPF program

            device_rule.attach(group, deny)
        _write(group / "cgroup.procs", who)
        return [group]
    if version == 1:
        return _v1_confine(root, name, _v1_settings(mem_bytes, quota, pids, deny), who)
    raise OSError(f"no control-group file system to write at {root}")


def groups_of(name: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """Every group of `name` that exists now (v2's one, or one per v1 hierarchy)."""
    places = [root / GROUP / name] + [root / c / GROUP / name for c in V1_CONTROLLERS]
    return [g for g in places if (g / "cgroup.procs").exists()]


def processes_in(groups: list[Path]) -> set[int]:
    found = set()
    for group in groups:
        try:
            found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        except OSError:
            pass  # removed meanwhile
    return found


def _freeze(groups: list[Path], frozen: bool) -> None:
    """Hold every process of the group still (v2 cgroup.freeze, v1 freezer.state), so none
    forks a new one while the others are killed; where there is no freezer, killing in
    rounds catches what was forked meanwhile."""
    for group in groups:
        for file, value in (
            ("cgroup.freeze", "1" if frozen else "0"),
            ("freezer.state", "FROZEN" if frozen else "THAWED"),
        ):
            if (group / file).exists():
                try:
                    _write(group / file, value)
                except OSError:
                    pass


def kill_group(name: str, root: Path = CGROUP_ROOT, seconds: float = 10.0) -> int:
    """SIGKILL every process in `name`'s groups, daemonised (setsid, nohup, reparented to
    init) or not, and wait until none is left; how many were killed."""
    groups = groups_of(name, root)
    killed: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not processes_in(groups):
            break
        _freeze(groups, True)
        for group in groups:
            if (group / "cgroup.kill").exists():  # v2, Linux 5.14 and later: all at once
                _write(group / "cgroup.kill", "1")
        for pid in processes_in(groups):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        _freeze(groups, False)  # a frozen process cannot die
        time.sleep(0.05)
    return len(killed)


def release(name: str, root: Path = CGROUP_ROOT) -> bool:
    """Remove `name`'s groups once its processes are gone (an empty group is all that is
    left after a server stops); a group still in use is left alone. True when none is left."""
    left = False
    for group in [root / GROUP / name] + [root / c / GROUP / name for c in V1_CONTROLLERS]:
        try:
            group.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            left = True
    return not left


def stop_all(names, root: Path = CGROUP_ROOT) -> dict[str, int]:
    """Kill every process of these learners and remove their groups: what the hub's exit
    does, so nothing a learner started outlives the class's hub. Learner -> processes
    killed."""
    killed = {}
    for name in sorted(names):
        killed[name] = kill_group(name, root)
        release(name, root)
    return killed


_AT_EXIT: dict[Path, set[str]] = {}


def stop_at_exit(name: str, root: Path = CGROUP_ROOT) -> None:
    """At this process's exit (the hub's Ctrl-C or SIGTERM ends in a normal exit), stop
    `name`'s group, also where their server died before and so was not stopped by the hub
    (JupyterHub stops only servers it still sees running). Only the learners this hub
    started: another hub on the machine keeps its own."""
    if root not in _AT_EXIT:
        _AT_EXIT[root] = set()
        atexit.register(lambda: stop_all(_AT_EXIT[root], root))
    _AT_EXIT[root].add(name)


def preexec_with_limits(
    name: str,
    mem_bytes: int | None,
    cpus: float | None,
    then=None,
    pids: int | None = None,
    deny: tuple[str, ...] = (),
    largest_file: int | None = None,
):
    """A preexec_fn: confine this (child) process, cap the size of any file it writes, then
    run `then` (e.g. the spawner's switch to the learner's account, which cannot raise the
    cap again). A failure to confine is written to the child's stderr (the hub's log) and
    the server starts anyway: no limits beats no server."""

    def preexec():
        try:
            confine(name, mem_bytes, cpus, pids=pids, deny=deny)
        except OSError as exc:
            os.write(2, f"course hub: no memory/CPU limits for {name}: {exc}\n".encode())
        if largest_file:
            resource.setrlimit(resource.RLIMIT_FSIZE, (largest_file, largest_file))
        if then is not None:
            then()

    return preexec
