"""The class hub's private state folder and its teacher, settled before the hub opens a port.

    python -m course.tools.hub_admin                    # ./course.sh hub runs this first
    python -m course.tools.hub_admin --reset NAME       # a new password for anyone

The hub's database holds every password's hash, and its cookie secret signs every login,
so they live in a folder only the hub's account can open (default /var/lib/course-hub as
root, mode 700), never in the checkout that learners can read. The teacher's account is
written into that database before JupyterHub starts: a hub that opened its port first would
let whoever signs up as the teacher first become the admin. `hub/jupyterhub_config.py`
refuses to start while the teacher has no password.

The password comes from the terminal (asked twice) or, for scripts, from the first line of
COURSE_HUB_ADMIN_PASSWORD_FILE or of standard input when that is not a terminal
(`echo "$PW" | ./course.sh hub-password teacher`), and follows the rule every password on
the hub follows (course.tools.passwords). Setting a password also approves the account.
Only the standard library, bcrypt, JupyterHub and
NativeAuthenticator are imported, so Zero to JupyterHub's hub image can run this file as a
configuration file too (hub/z2jh/values.yaml mounts it): there the password comes from the
COURSE_HUB_ADMIN_PASSWORD variable (a Kubernetes Secret) and the hub refuses to start
without one.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

# course.tools.passwords.MIN_LENGTH, for where this file runs without the course (Zero to
# JupyterHub's hub): this file imports nothing of the course, so the number is written twice
MIN_PASSWORD = 10


def default_state() -> Path:
    """/var/lib/course-hub as root (a class); ~/.local/state/course-hub otherwise."""
    if os.geteuid() == 0:
        return Path("/var/lib/course-hub")
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "course-hub"


# what the hub keeps in its state folder (homes: the learners' folders in "shared" mode)
HUB_FILES = {
    "jupyterhub.sqlite",
    "jupyterhub_cookie_secret",
    "jupyterhub-proxy.pid",
    "gpus.json",
    "accounts.json",
    "accounts.json.tmp",
    "gpus.json.tmp",
    "homes",
    "retired",
}


def state_folder(path: str | Path | None = None) -> Path:
    """The hub's state folder (COURSE_HUB_STATE, else the default), made if missing and
    closed to every other account. A folder that is open and holds anything else (a
    mistyped COURSE_HUB_STATE=/home) is refused rather than closed."""
    folder = Path(path or os.environ.get("COURSE_HUB_STATE") or default_state()).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    others = sorted(set(os.listdir(folder)) - HUB_FILES)
    if folder.stat().st_mode & 0o077 and others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise SystemExit(
            f"course hub: {folder} holds more than the hub's state ({shown}): "
            "name an empty folder or a new one in COURSE_HUB_STATE"
        )
    os.chmod(folder, 0o700)
    return folder


def db_url(state: Path) -> str:
    return f"sqlite:///{Path(state) / 'jupyterhub.sqlite'}"


def open_db(url: str):
    """A session on the hub's database, with NativeAuthenticator's table: the same schema
    JupyterHub makes (and stamps) for a new database."""
    from jupyterhub import orm
    from nativeauthenticator.orm import UserInfo  # noqa: F401  (registers users_info)

    session = orm.new_session_factory(url)()
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        os.chmod(url[len("sqlite:///") :], 0o600)
    return session


def has_password(url: str, name: str) -> bool:
    from nativeauthenticator.orm import UserInfo

    session = open_db(url)
    try:
        return UserInfo.find(session, name) is not None
    finally:
        session.close()


def set_password(url: str, name: str, password: str) -> None:
    """`name`'s password (the account made, and approved, if missing)."""
    import bcrypt
    from nativeauthenticator.orm import UserInfo

    problem = password_problem(password, name)
    if problem:
        raise ValueError(problem)
    session = open_db(url)
    try:
        info = UserInfo.find(session, name)
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
        if info is None:
            session.add(UserInfo(username=name, password=hashed, is_authorized=True))
        else:
            info.password, info.is_authorized = hashed, True
        session.commit()
    finally:
        session.close()


def password_problem(password: str, name: str) -> str:
    """Why `password` will not do for `name` ('' if it will): course.tools.passwords, the
    rule of the hub's own pages. Zero to JupyterHub's hub runs this file alone, without the
    course: there only the length is checked here (and NativeAuthenticator's own checks on
    its pages)."""
    try:
        from course.tools import passwords
    except ImportError:
        short = len(password) < MIN_PASSWORD
        return f"a password needs at least {MIN_PASSWORD} characters" if short else ""
    return passwords.problem(password, name)


def first_line(stream) -> str:
    """The first line of a file or a pipe, without its line break (a password may hold
    spaces at either end)."""
    return stream.readline().rstrip("\r\n")


def read_password(name: str) -> str:
    """From COURSE_HUB_ADMIN_PASSWORD_FILE's first line, else from standard input's when it
    is not a terminal (a pipe, a script), else asked twice on the terminal."""
    path = os.environ.get("COURSE_HUB_ADMIN_PASSWORD_FILE")
    if path:
        with open(path) as given:
            return first_line(given)
    if not sys.stdin.isatty():
        password = first_line(sys.stdin)
        if not password:
            raise SystemExit(
                f"course hub: {name} needs a password before the hub can open: run "
                "./course.sh hub in a terminal once, pipe it in "
                f'(echo "$PW" | ./course.sh hub-password {name}), or set '
                "COURSE_HUB_ADMIN_PASSWORD_FILE"
            )
        return password
    for _ in range(3):
        first = getpass.getpass(
            f"A password for {name}, the teacher (at least {MIN_PASSWORD} characters): "
        )
        problem = password_problem(first, name)
        if problem:
            print(problem)
        elif getpass.getpass("The same again: ") != first:
            print("the two did not match")
        else:
            return first
    raise SystemExit("course hub: no password set; the hub was not started")


def ensure_admin(url: str, name: str) -> str:
    """Make sure the teacher can log in before anyone else can reach the hub."""
    if has_password(url, name):
        return f"the teacher's account {name} is ready"
    set_password(url, name, read_password(name))
    return f"the teacher's account {name} was created"


def not_an_admin(url: str, name: str) -> bool:
    """Take JupyterHub's admin flag from `name` if a hub made before the teacher's role
    (hub/jupyterhub_config.py) gave it: JupyterHub keeps the flag in its database, and an
    admin may open every learner's server, where a learner's page would run with the
    teacher's rights. True if the flag was taken."""
    from jupyterhub import orm

    session = open_db(url)
    try:
        user = orm.User.find(session, name)
        if user is None or not user.admin:
            return False
        user.admin = False
        session.commit()
        return True
    finally:
        session.close()


def seed_z2jh(config) -> None:
    """On Zero to JupyterHub: the teacher's account from COURSE_HUB_ADMIN_PASSWORD, written
    before the hub starts; without one (and no account yet) the hub does not start."""
    admins = sorted(config.Authenticator.get("admin_users", ()))
    name = os.environ.get("COURSE_HUB_ADMIN") or (admins[0] if admins else "teacher")
    url = config.JupyterHub.get("db_url") or "sqlite:///jupyterhub.sqlite"
    password = os.environ.get("COURSE_HUB_ADMIN_PASSWORD", "")
    if password:
        if not has_password(url, name):
            set_password(url, name, password)
    elif not has_password(url, name):
        raise SystemExit(
            f"course hub: {name} has no password: create the Secret that "
            "hub/z2jh/values.yaml names (COURSE_HUB_ADMIN_PASSWORD)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.tools.hub_admin", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--state",
        help="the hub's state folder (default COURSE_HUB_STATE, else /var/lib/course-hub as root)",
    )
    parser.add_argument(
        "--admin",
        default=os.environ.get("COURSE_HUB_ADMIN", "teacher"),
        help="the teacher's name (default COURSE_HUB_ADMIN, else teacher)",
    )
    parser.add_argument(
        "--reset",
        metavar="NAME",
        help="set a new password for NAME (asked twice; the hub may be running)",
    )
    args = parser.parse_args(argv)
    url = db_url(state_folder(args.state))
    try:
        if args.reset:
            if not has_password(url, args.reset):
                print(f"{args.reset} has not signed up on this hub", file=sys.stderr)
                return 1
            set_password(url, args.reset, read_password(args.reset))
            print(f"new password set for {args.reset}")
        else:
            print(ensure_admin(url, args.admin))
            if not_an_admin(url, args.admin):
                print(
                    f"{args.admin} is no longer one of JupyterHub's admins: the teacher's role "
                    "manages the class without opening learners' servers"
                )
    except ValueError as error:
        print(f"course hub: {error}", file=sys.stderr)
        return 2
    return 0


if type(globals().get("c")).__name__ == "Config":
    seed_z2jh(c)  # noqa: F821  (run as a configuration file by Zero to JupyterHub's hub)
elif __name__ == "__main__":
    sys.exit(main())
