"""Memory and CPU limits for one learner's server, with the kernel's control groups.

JupyterHub's local spawners pass `mem_limit` and `cpu_limit` on as numbers and enforce
nothing. This puts the server process (and so every kernel it starts) into a control group
of its own, `course-hub/<learner>`, with a memory ceiling (past it the kernel kills that
learner's process, nobody else's) and a CPU quota (cores' worth of time per period). It
runs in the child process before it becomes the learner (`preexec_fn`), so it needs root
and a writable control-group file system: cgroup v2 (one unified tree), or v1 with its
`memory` and `cpu` hierarchies. Where neither can be written, `confine` says why and the
server starts without limits.
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "course-hub"
CPU_PERIOD_US = 100_000


def parse_bytes(text: str | int | float) -> int:
    """'8G', '512M', '1.5G' or a number of bytes -> bytes."""
    if isinstance(text, (int, float)):
        return int(text)
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


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
    parent = root / GROUP
    parent.mkdir(exist_ok=True)
    for level in (root, parent):  # hand the memory and cpu controllers down the tree
        _write(level / "cgroup.subtree_control", "+memory +cpu")
    group = parent / name
    group.mkdir(exist_ok=True)
    return group


def confine(
    name: str, mem_bytes: int | None, cpus: float | None, pid: int = 0, root: Path = CGROUP_ROOT
) -> list[Path]:
    """Put process `pid` (0: this one) into course-hub/`name` with the limits; returns the
    groups it joined. Raises OSError when the control groups cannot be written."""
    version = cgroup_version(root)
    who = str(pid or os.getpid())
    quota = int(cpus * CPU_PERIOD_US) if cpus else None
    if version == 2:
        group = _v2_group(root, name)
        if mem_bytes:
            _write(group / "memory.max", str(mem_bytes))
            _write(group / "memory.swap.max", "0")
        if quota:
            _write(group / "cpu.max", f"{quota} {CPU_PERIOD_US}")
        _write(group / "cgroup.procs", who)
        return [group]
    if version == 1:
        joined = []
        for controller, settings in (
            ("memory", {"memory.limit_in_bytes": mem_bytes} if mem_bytes else {}),
            (
                "cpu",
                {"cpu.cfs_period_us": CPU_PERIOD_US, "cpu.cfs_quota_us": quota} if quota else {},
            ),
        ):
            group = root / controller / GROUP / name
            group.mkdir(parents=True, exist_ok=True)
            for file, value in settings.items():
                _write(group / file, str(value))
            _write(group / "cgroup.procs", who)
            joined.append(group)
        return joined
    raise OSError(f"no control-group file system to write at {root}")


def preexec_with_limits(name: str, mem_bytes: int | None, cpus: float | None, then=None):
    """A preexec_fn: confine this (child) process, then run `then` (e.g. the spawner's
    switch to the learner's account). A failure to confine is written to the child's
    stderr (the hub's log) and the server starts anyway: no limits beats no server."""

    def preexec():
        try:
            confine(name, mem_bytes, cpus)
        except OSError as exc:
            os.write(2, f"course hub: no memory/CPU limits for {name}: {exc}\n".encode())
        if then is not None:
            then()

    return preexec


def release(name: str, root: Path = CGROUP_ROOT) -> bool:
    """Remove `name`'s groups once its processes are gone (an empty group is all that is
    left after a server stops); a group still in use is left alone. True when none is left."""
    left = False
    for group in (root / GROUP / name, root / "memory" / GROUP / name, root / "cpu" / GROUP / name):
        try:
            group.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            left = True
    return not left
