"""What a learner's server leaves outside their home, and how much their home holds.

Files a learner parks in /tmp, /var/tmp or /dev/shm (a tmpfs: memory) would outlive their
server and count against nobody, so every restart could park another ceiling's worth. At
the server's stop, and again before its next start, everything there owned by the learner's
account is removed, by a child process running as that account (`python -I`, this file's code on
stdin: it imports nothing of the course): it can delete only what the learner could delete
anyway, so no link they planted leads it anywhere else.

No disk quota can be set on most class machines (ext4 without quota options, no
quota tools), so the hub enforces a ceiling of its own: `home_usage` counts what a home
holds (allocated blocks, so sparse files count what they really take, each inode once),
walking it as root without following a link (os.fwalk checks every folder it enters is the
one it listed) and reading metadata only; a home past the ceiling (COURSE_HUB_DISK) does
not start, with a message saying what to do, and while a server runs no single file may
grow past the ceiling (RLIMIT_FSIZE, course.tools.limits).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
DEFAULT_DISK = "10G"
MAX_ENTRIES = 200_000  # a home's walk at start stays short, whatever a learner creates


class TooMuch(Exception):
    """A home past the class's disk ceiling (or with more entries than the hub counts)."""


def disk_ceiling(environ=os.environ) -> str:
    """The class's disk ceiling per learner, as the teacher writes it (COURSE_HUB_DISK)."""
    return environ.get("COURSE_HUB_DISK") or DEFAULT_DISK


def home_usage(home: str, max_entries: int = MAX_ENTRIES) -> int:
    """Bytes allocated under `home`, counted as root without following links. Raises TooMuch
    past `max_entries` entries: a walk that long would hold up the hub."""
    if not os.path.isdir(home):
        return 0  # a first start: the home is made after this
    seen: set[tuple[int, int]] = set()
    total = entries = 0
    for _, dirs, files, dirfd in os.fwalk(home, follow_symlinks=False):
        for entry in dirs + files:
            entries += 1
            if entries > max_entries:
                raise TooMuch(f"more than {max_entries:,} files and folders")
            try:
                st = os.stat(entry, dir_fd=dirfd, follow_symlinks=False)
            except OSError:
                continue  # removed meanwhile
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def check_home(home: str, ceiling: int) -> None:
    """Raise TooMuch (with what the learner and the teacher can do) when `home` holds more
    than `ceiling` bytes."""
    try:
        used = home_usage(home)
        if used <= ceiling:
            return
        held = _size(used)
    except TooMuch as too_many:
        held = str(too_many)
    raise TooMuch(
        f"your home holds {held}, past this class's ceiling of {_size(ceiling)} "
        f"(COURSE_HUB_DISK), so your server was not started. Ask the teacher to make room: "
        f"as root, du -sh {home}/* {home}/.[!.]* shows what takes the space."
    )


def remove_owned(tops=SCRATCH) -> int:
    """Remove every entry under `tops` owned by this process's user, never following a link;
    how many were removed. Meant to run as the learner (see the module docstring)."""
    me, removed = os.getuid(), 0
    for top in tops:
        for folder, dirs, files in os.walk(top, topdown=True):
            for name in list(dirs) + files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if st.st_uid != me:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(path, ignore_errors=True)  # fd-based: links not followed
                    dirs.remove(name)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        continue
                removed += 1
    return removed


def learner_account(account: str) -> pwd.struct_passwd | None:
    """The account's entry where it is a learner's (never root's nor the hub's own, as a
    "shared" hub's servers run as the hub's user): else None, and nothing is cleaned."""
    try:
        entry = pwd.getpwnam(account)
    except KeyError:
        return None
    return entry if entry.pw_uid not in (0, os.geteuid()) else None


def clean_scratch(account: str, python: str = sys.executable, tops=SCRATCH) -> str:
    """Remove what `account` left in /tmp, /var/tmp and /dev/shm, as that account, with
    `python` (one learners can run: the servers' own); this file's code goes in on stdin, so
    nothing of the checkout needs to be readable to them. What was done, for the hub's log."""
    entry = learner_account(account)
    if entry is None:
        return f"{account} is no learner's account: scratch space left alone"
    done = subprocess.run(
        [python, "-I", "-", *tops],
        input=Path(__file__).read_text(),
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode:
        return f"scratch space of {account} not cleaned: {done.stderr.strip()[-300:]}"
    return f"removed {done.stdout.strip()} entries of {account} from {', '.join(tops)}"


if __name__ == "__main__":  # as the learner, from clean_scratch (code on stdin)
    print(remove_owned(sys.argv[1:] or SCRATCH))
