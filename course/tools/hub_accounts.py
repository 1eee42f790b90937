"""Which learner names a class hub accepts, and the Unix account each learner gets.

A learner never gets an account that already exists on the machine: learner `alice` runs as
the account `course-alice`, which the hub creates at her first login and records in its
state folder (readable only by the hub). An account of that name that the hub did not
create is refused, never reused, and so are names that are accounts of the machine
(`root`, `ubuntu`, ...) or reserved: a learner who signs up as `ubuntu` gets nothing,
however the teacher answers.

    problem = refusal("ubuntu")              # why a name cannot be a learner ('' if it can)
    account = ensure_account("alice", registry_file)   # pwd entry of course-alice
    learner_of("course-alice")               # -> "alice" (for the teacher's table)
"""

from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
from pathlib import Path

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


def load_registry(path: Path) -> dict[str, int]:
    """Account -> uid of every account this hub created (an unreadable file: none)."""
    try:
        data = json.loads(Path(path).read_text())
        return {str(k): int(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _record(path: Path, account: str, uid: int) -> None:
    known = load_registry(path)
    known[account] = uid
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(known, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def ensure_account(learner: str, registry: Path) -> pwd.struct_passwd:
    """The Unix account of `learner` (course-<learner>), created at the first login with a
    home only they can open. Raises AccountRefused for a name that must not have one."""
    problem = refusal(learner, registry)
    if problem:
        raise AccountRefused(problem)
    account = PREFIX + learner
    if account_exists(account):
        return pwd.getpwnam(account)
    subprocess.run(
        [
            "useradd",
            "--create-home",
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
    _record(registry, account, entry.pw_uid)
    return entry
