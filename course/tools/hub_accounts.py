"""Which learner names a class hub accepts, and the Unix account each learner gets.

A learner never gets an account that already exists on the machine: learner `alice` runs as
the account `course-alice`, which the hub creates at her first login and records in its
state folder (readable only by the hub). An account of that name that the hub did not
create is refused, never reused, and so are names that are accounts of the machine
(`root`, `ubuntu`, ...) or reserved: a learner who signs up as `ubuntu` gets nothing,
however the teacher answers.

Nor does a learner ever get what an earlier learner of the same name left. When the teacher
deletes a learner, their account is retired (`retire`): their processes killed, their home
moved (renamed, never followed if it is a link) into STATE/retired, a folder only root can
open, the account removed and forgotten. A new sign-up under the name then gets a new
account with an empty home, and a uid no account of this hub ever had (files an old
account left in /tmp or /dev/shm stay its own). `ensure_account` checks again: an account
older than the hub user it is asked for (a hub database started afresh, a deletion on an
older hub) is retired first, and so is a home left at the account's path.

    problem = refusal("ubuntu")              # why a name cannot be a learner ('' if it can)
    account = ensure_account("alice", registry_file, since=user.created)  # course-alice
    retire("alice", registry_file)           # -> where her home was archived (or None)
    learner_of("course-alice")               # -> "alice" (for the teacher's table)
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import signal
import stat
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from course.tools import limits

PREFIX = "course-"
NAME = re.compile(r"[a-z][a-z0-9_-]{0,24}")  # with PREFIX, within Unix's 32 characters
RESERVED = {
    "root",
    "admin",
    "administrator",
    "hub",
    "jupyterhub",
    "course",
    "system",
    "nobody",
    "daemon",
    "sudo",
    "wheel",
    "adm",
    "staff",
    "users",
    "jovyan",
}
# an account made less than this before its hub user is still that user's (clock steps)
SLACK_SECONDS = 60
RULE = "a learner's name is 1 to 25 lower-case letters, digits, '-' or '_', starting with a letter"


class AccountRefused(Exception):
    """A name that must never become (or reach) a Unix account. `jupyterhub_message` is
    what JupyterHub shows on the error page instead of a bare 500."""

    def __init__(self, why: str):
        super().__init__(why)
        self.jupyterhub_message = why


def account_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def refusal(name: str, registry: Path | None = None) -> str:
    """Why `name` cannot be a learner of this hub, or '' if it can. With `registry`, an
    existing course-<name> account the hub did not make is refused too."""
    if not NAME.fullmatch(name or ""):
        return f"{name!r} cannot be used: {RULE}."
    if name in RESERVED or name.startswith(PREFIX):
        return f"{name!r} is reserved on this hub: choose another name."
    if account_exists(name):
        return f"{name!r} is an account of this machine: choose another name."
    account = PREFIX + name
    if (
        registry is not None
        and account_exists(account)
        and load_registry(registry).get(account) != pwd.getpwnam(account).pw_uid
    ):
        return f"the account {account} exists and was not made by this hub: choose another name."
    return ""


def learner_of(account: str) -> str:
    """The learner an account belongs to: `course-alice` -> `alice`; any other account is
    its own name (a teacher's, or a machine's without a hub)."""
    return account[len(PREFIX) :] if account.startswith(PREFIX) else account


def _read(path: Path) -> dict:
    """The registry as stored: {"accounts": {account: {"uid", "created"}}, "last_uid"}, the
    highest uid the hub ever gave (retired accounts' too). The first format (account ->
    uid) reads as accounts of unknown age; an unreadable file as an empty registry, so
    every course-* account is refused rather than trusted."""
    try:
        data = json.loads(Path(path).read_text())
        if "accounts" not in data:  # the first format
            data = {"accounts": {k: {"uid": v} for k, v in data.items()}, "last_uid": 0}
        accounts = {
            str(name): {
                "uid": int(info["uid"]),
                "created": None if info.get("created") is None else float(info["created"]),
            }
            for name, info in data["accounts"].items()
        }
        last = max([int(data.get("last_uid", 0))] + [a["uid"] for a in accounts.values()])
    except (OSError, ValueError, AttributeError, TypeError, KeyError):
        return {"accounts": {}, "last_uid": 0}
    return {"accounts": accounts, "last_uid": last}


def _write(path: Path, registry: dict) -> None:
    """Replace the registry in one step (a hub killed mid-write leaves the old one)."""
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(registry, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def load_registry(path: Path) -> dict[str, int]:
    """Account -> uid of every account this hub created and has not retired."""
    return {name: info["uid"] for name, info in _read(path)["accounts"].items()}


def _epoch(when: datetime | float | None) -> float | None:
    """Seconds since 1970 of JupyterHub's `user.created` (a naive datetime in UTC)."""
    if when is None or isinstance(when, (int, float)):
        return when
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def ensure_account(learner: str, registry: Path, since=None) -> pwd.struct_passwd:
    """The Unix account of `learner` (course-<learner>), created at the first login with a
    home only they can open. `since`, when the hub user was made (`user.created`): an
    account made well before it was a previous learner's of the name (a hub database
    started afresh, a deletion the hub did not retire), and is retired first. Raises
    AccountRefused for a name that must not have one."""
    problem = refusal(learner, registry)
    if problem:
        raise AccountRefused(problem)
    account = PREFIX + learner
    made = _read(registry)["accounts"].get(account, {}).get("created")
    since = _epoch(since)
    if None not in (made, since) and made + SLACK_SECONDS < since and account_exists(account):
        retire(learner, registry)
    if account_exists(account):
        return pwd.getpwnam(account)
    return _create(learner, registry)


def _home_base() -> Path:
    """Where useradd puts homes (HOME in /etc/default/useradd, else /home)."""
    try:
        for line in Path("/etc/default/useradd").read_text().splitlines():
            if line.startswith("HOME="):
                return Path(line[len("HOME=") :].strip() or "/home")
    except OSError:
        pass
    return Path("/home")


def _login_defs(key: str, default: int) -> int:
    try:
        for line in Path("/etc/login.defs").read_text().splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == key:
                return int(words[1])
    except (OSError, ValueError):
        pass
    return default


def _fresh_uid(last: int) -> int:
    """A uid above every account's and group's of the machine and every one this hub ever
    gave: useradd would reuse a retired learner's uid, and with it whatever they left
    outside their home (/tmp, /dev/shm, System V shared memory). Free as a gid too, so the
    learner's own group gets the same number."""
    low, high = _login_defs("UID_MIN", 1000), _login_defs("UID_MAX", 60000)
    taken = [e.pw_uid for e in pwd.getpwall()] + [g.gr_gid for g in grp.getgrall()]
    uid = max([last, low - 1] + [n for n in taken if low <= n <= high]) + 1
    if uid > high:
        raise AccountRefused(f"no uid left below UID_MAX ({high}) for a new learner")
    return uid


def _create(learner: str, registry: Path) -> pwd.struct_passwd:
    """A new account for `learner`, in a home that did not exist before: a home left at its
    path (an account removed by hand) is archived first, as useradd would reuse it."""
    account = PREFIX + learner
    home = _home_base() / account
    _archive_home(home, registry)
    known = _read(registry)
    uid = _fresh_uid(known["last_uid"])
    subprocess.run(
        [
            "useradd",
            "--create-home",
            "--home-dir",
            str(home),
            "--uid",
            str(uid),
            "--shell",
            "/bin/bash",
            "--user-group",
            "--comment",
            f"course learner {learner}",
            account,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    entry = pwd.getpwnam(account)
    os.chmod(entry.pw_dir, 0o700)  # useradd's default lets every account read every home
    known["accounts"][account] = {"uid": entry.pw_uid, "created": time.time()}
    known["last_uid"] = max(known["last_uid"], entry.pw_uid)
    _write(registry, known)
    return entry


def retire(learner: str, registry: Path) -> Path | None:
    """Retire the account the hub made for `learner` (the teacher deleted them): their
    processes killed, their home archived (`_archive_home`), the account removed (its
    files elsewhere keep a uid no one gets again) and dropped from the registry. Returns
    where the home went (None: no home, or no account of the hub's). An account of the
    name that the hub did not make is left alone."""
    account = PREFIX + learner
    known = _read(registry)
    info = known["accounts"].pop(account, None)
    if info is None:
        return None
    archived = None
    if account_exists(account) and pwd.getpwnam(account).pw_uid == info["uid"]:
        entry = pwd.getpwnam(account)
        _stop_processes(entry.pw_uid)
        archived = _archive_home(Path(entry.pw_dir), registry)
        _userdel(account)
        limits.release(learner)  # the memory/CPU group, empty now
    _write(registry, known)
    return archived


def _processes_of(uid: int) -> list[int]:
    """The live processes (zombies aside) any of whose uids is `uid`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if str(uid) in fields.get("Uid", "").split() and not fields.get(
            "State", ""
        ).strip().startswith("Z"):
            found.append(int(pid))
    return found


def _kill_all_as(uid: int) -> None:
    """SIGKILL every process of `uid` at once: kill(-1) from a child that has become the
    uid reaches exactly the processes it may signal, and a process forking meanwhile is
    killed before its child exists, which a kill of each pid listed in /proc cannot be."""
    if uid == 0 or uid == os.geteuid():
        raise ValueError(f"refusing to kill every process of uid {uid}")
    child = os.fork()
    if child == 0:
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(child, 0)


def _stop_processes(uid: int, seconds: float = 5) -> None:
    """Kill every process of `uid` (a server the hub stopped may leave some behind: `nohup`,
    a terminal's background job) and wait until none is left."""
    deadline = time.monotonic() + seconds
    while _processes_of(uid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of uid {uid} keep running: {_processes_of(uid)}")
        _kill_all_as(uid)
        time.sleep(0.05)


def _userdel(account: str, seconds: float = 5) -> None:
    """userdel without --remove (the home is archived, not deleted), tried again while the
    account's last processes are being reaped."""
    deadline = time.monotonic() + seconds
    while True:
        done = subprocess.run(["userdel", account], capture_output=True, text=True, timeout=60)
        if done.returncode == 0 or not account_exists(account):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"userdel {account} failed: {done.stderr.strip()}")
        time.sleep(0.2)


def archive_folder(state: Path, home: Path) -> Path:
    """Where a retired home goes: STATE/retired (mode 700, root's), or .course-retired beside
    the home where the home is on another filesystem, since only a rename moves a learner's
    files without root reading or following them."""
    for folder in (Path(state) / "retired", Path(home).parent / ".course-retired"):
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise RuntimeError(f"{folder} is not a folder of this hub's own: no home archived")
        os.chmod(folder, 0o700)
        if info.st_dev == os.lstat(home).st_dev:
            return folder
    raise RuntimeError(f"{home} cannot be moved into an archive on its filesystem")


def _archive_home(home: Path, registry: Path) -> Path | None:
    """Rename `home` into the archive as <account>-<UTC time>; a link is renamed itself,
    never what it points to. Nothing in it is read, changed or followed: the archive's
    mode keeps everyone but root out. None when there is no home."""
    if not os.path.lexists(home):
        return None
    folder = archive_folder(Path(registry).parent, home)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest, n = folder / f"{home.name}-{stamp}", 1
    while os.path.lexists(dest):  # only root writes here: no race but the hub's own
        n += 1
        dest = folder / f"{home.name}-{stamp}-{n}"
    os.rename(home, dest)
    return dest
