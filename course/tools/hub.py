"""A class on one machine: the JupyterHub pieces `hub/jupyterhub_config.py` puts together.

Each learner logs in to the hub and gets their own Jupyter server (a process of its own, so
one learner's hung or crashed kernel never touches another's), started in their own home
with:

* their own copy of the notebooks in ~/course, made at the first login and kept after that;
  a newer course version is offered beside any notebook they edited, never over it
  (course.tools.learner_copy);
* a GPU of the machine, spread fairly over several (course.tools.gpu_share), named in the
  notebook header; the course's tier detection still says what runs live;
* the course's Python packages from this checkout (read-only for them) and its kernels;
* their exercise verdicts in ~/.course/progress.jsonl, for the teacher's `./course.sh
  progress /home` (course.exercises.progress, course.tools.class_progress);
* a memory ceiling and a CPU quota of their own (course.tools.limits), where the machine's
  control groups can be written.

Two ways to run the learners' servers (COURSE_HUB_USERS):

* "system" (the default as root): every learner gets a Unix account of their own,
  `course-<name>`, created at their first login (course.tools.hub_accounts: never an account
  that already existed), and their server runs as it: learners cannot read each other's
  files, nor the hub's.
* "shared": every server runs as the hub's own user, each in its own folder under
  COURSE_HUB_HOMES. For a test or a single person's machine, not for a class: nothing
  keeps one learner out of another's folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, SimpleLocalProcessSpawner
from tornado import web
from traitlets import Unicode

from course import ROOT
from course.tools import gpu_share, hub_accounts, learner_cleanup, learner_copy, learner_env, limits

NOTEBOOKS = ROOT / "notebooks"
# a terminal's shell that is not a login shell: a login shell reads /etc/profile, which sets
# PATH afresh and so loses the course's Python
TERMINAL_ARG = '--ServerApp.terminado_settings={"shell_command": ["/bin/bash"]}'
# What a learner's pages may load and who may frame them: scripts, styles, pictures and
# connections from the server's own origin only (inline code and blob: modules, which
# JupyterLab and anywidget use, allowed), no plug-ins, no framing by another site, forms
# posted only back to the server. Defence in depth: a learner can restart their own server
# with other settings, so this protects a learner from content they open, not the teacher
# from a learner (the teacher cannot open a learner's server: hub/jupyterhub_config.py).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data:",
        "style-src 'self' 'unsafe-inline' blob: data:",
        "img-src 'self' blob: data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ]
)
CSP_ARG = "--ServerApp.tornado_settings=" + json.dumps(
    {"headers": {"Content-Security-Policy": CONTENT_SECURITY_POLICY}}
)


def unreadable_for_learners(paths) -> str:
    """Why another account could not run this course's Python or read its checkout ('' if
    it can): every folder on the way needs others' x bit, the files others' r (and x for
    the interpreter). Learners' servers run as their own accounts, so a course installed
    under root's home (/root is closed to others) fails for every learner."""
    for path in paths:
        path = Path(path).resolve()
        for folder in reversed(path.parents):
            if not folder.stat().st_mode & stat.S_IXOTH:
                return f"{folder} is closed to other accounts (needed for {path})"
        if not path.stat().st_mode & stat.S_IROTH:
            return f"{path} cannot be read by other accounts"
    return ""


def learners_cannot_run(python: str) -> str:
    """Why learners' accounts could not run the course with `python` ('' if they can): the
    interpreter, its standard library and this checkout must be open to them. Checked when
    the hub starts; the fix is said in the same words to the teacher and on the page a
    learner sees."""
    stdlib = Path(python).resolve().parent.parent / "lib"
    packages = Path(python).parent.parent / "lib"  # a venv's own (its bin/python is a link)
    problem = unreadable_for_learners(
        [
            python,
            *sorted(stdlib.glob("python3*/os.py"))[:1],
            *sorted(packages.glob("python3*/site-packages"))[:1],
            ROOT / "course" / "__init__.py",
            NOTEBOOKS,
        ]
    )
    if not problem:
        return ""
    return (
        f"learners' accounts cannot run the course: {problem}. The teacher can fix it: "
        "put the course where every account can read it (e.g. git clone into "
        "/opt/course) and give it a Python every account can run: apt-get install "
        "python3 python3-venv, then start the hub with COURSE_BASE_PYTHON=/usr/bin/python3 "
        "./course.sh hub (the course's .venv is rebuilt with it)."
    )


def prepare_home(home: Path, python: str = sys.executable) -> learner_copy.SyncReport | str:
    """The learner's ~/course, copied or updated from this checkout's notebooks by a child
    process (`python`) that runs as the owner of the home, the learner, never as root: a
    learner who swaps ~/course for a link while it runs can only make it write where they
    could write themselves, and the hub never opens a file of theirs
    (learner_copy.copy_as_owner). A ~/course that is a link already is left alone."""
    dest = home / "course"
    if dest.is_symlink():
        return f"{dest} is a link: notebooks not copied"
    return learner_copy.copy_as_owner(NOTEBOOKS, dest, learner_copy.course_version(ROOT), python)


class CannotStart(web.HTTPError):
    """A learner's server that must not start. An HTTP error is what JupyterHub passes on to
    the page the learner sees, and `jupyterhub_message` is what that page says (instead of a
    bare "500 Internal Server Error")."""

    def __init__(self, why: str):
        super().__init__(503, "%s", why)
        self.jupyterhub_message = why


class CourseSpawner(LocalProcessSpawner):
    """What every learner's server gets, however it runs (see the module docstring)."""

    gpu_state = Unicode("", config=True, help="JSON file keeping which GPU each learner was given")

    def course_home(self) -> Path:
        raise NotImplementedError

    def account_name(self) -> str:
        """The Unix account the server runs as."""
        return self.user.name

    def get_env(self):
        """JupyterHub's variables for the server and the course's, and nothing of the hub's
        own environment (root's PATH, virtualenv, secrets): course.tools.learner_env."""
        env = learner_env.without_hub_environment(
            super().get_env(), self.env_keep, self.environment
        )
        share = gpu_share.GpuShare(Path(self.gpu_state), gpu_share.visible_gpus())
        env.update(share.environment_for(self.user.name, active=set(share.assigned)))
        env["PYTHONPATH"] = str(ROOT)  # `import course, kernels` from the shared checkout
        env["PATH"] = learner_env.learner_path(self.cmd[0])
        env.setdefault("CUTE_DSL_CACHE_DIR", str(self.course_home() / ".cache" / "cute-dsl"))
        return env

    async def start(self):
        # in a thread: the copy waits for a child process, the hub's other users do not
        home = self.course_home()
        try:
            report = await asyncio.to_thread(prepare_home, home, self.cmd[0])
        except Exception as error:  # the notebooks must never keep a server from starting
            report = f"notebooks not copied: {error!r}"
        self.log.info("course notebooks for %s: %s", self.user.name, report)
        # what outlived the last server, and the disk ceiling: a walk of the home and a
        # child process, off the event loop every learner's page waits on
        await asyncio.to_thread(self.before_start)
        return await super().start()

    async def stop(self, now=False):
        """Stop the server, then everything else of the learner's: every process left in
        their group (daemonised ones too: setsid, nohup), the group, and their files in
        /tmp, /var/tmp and /dev/shm (course.tools.learner_cleanup)."""
        await super().stop(now=now)
        killed = await asyncio.to_thread(limits.kill_group, self.user.name)
        for _ in range(25):  # the server's kernels may take a moment to go
            if limits.release(self.user.name):
                break
            await asyncio.sleep(0.2)
        scratch = await asyncio.to_thread(
            learner_cleanup.clean_scratch, self.account_name(), self.cmd[0]
        )
        self.log.info("%s stopped: %d more processes killed; %s", self.user.name, killed, scratch)

    _before_start_done = False

    def before_start(self):
        """In the hub, before the server starts: what outlived the learner's last server
        (processes whose server died, scratch files) is removed, and a home past the disk
        ceiling is refused (CannotStart, with what to do). start() runs it in a thread;
        make_preexec_fn runs it only where start() did not (a spawner driven by hand)."""
        limits.kill_group(self.user.name)
        scratch = learner_cleanup.clean_scratch(self.account_name(), self.cmd[0])
        self.log.info("before %s starts: %s", self.user.name, scratch)
        try:
            learner_cleanup.check_home(str(self.course_home()), self.disk_ceiling())
        except learner_cleanup.TooMuch as too_much:
            raise CannotStart(str(too_much)) from None
        if self.config.get("JupyterHub", {}).get("cleanup_servers", True):
            limits.stop_at_exit(self.user.name)  # the hub's exit stops this group too
        self._before_start_done = True

    @staticmethod
    def disk_ceiling() -> int:
        return limits.parse_bytes(learner_cleanup.disk_ceiling())

    def make_preexec_fn(self, name):
        """The preexec_fn: the child joins its group with its ceilings (memory, CPU,
        processes, other GPUs denied, largest file: course.tools.limits) as root, and only
        then becomes the learner (after before_start, which start() ran in a thread)."""
        if not self._before_start_done:
            self.before_start()
        self._before_start_done = False  # the next start cleans up again
        account = self.account_name()
        share = gpu_share.GpuShare(Path(self.gpu_state), gpu_share.visible_gpus())
        deny = gpu_share.devices_to_deny(share.gpu_for(self.user.name), gpu_share.device_minors())
        return limits.preexec_with_limits(
            self.user.name,
            limits.parse_bytes(self.mem_limit) if self.mem_limit else None,
            self.cpu_limit,
            then=super().make_preexec_fn(account),
            pids=limits.pids_ceiling(),
            deny=deny,
            largest_file=self.disk_ceiling(),
        )


class SystemUserSpawner(CourseSpawner):
    """Each learner's server runs as their own Unix account, course-<name>, created at their
    first login (never an account that existed before: course.tools.hub_accounts)."""

    account_registry = Unicode(
        "", config=True, help="JSON file of the Unix accounts the hub created"
    )
    start_problem = Unicode(
        "",
        config=True,
        help="why no learner's server can start here (found when the "
        "hub started): shown to the learner instead of starting",
    )

    def account(self):
        try:
            return hub_accounts.ensure_account(
                self.user.name, Path(self.account_registry), since=self.user.created
            )
        except hub_accounts.AccountRefused as refused:
            raise CannotStart(str(refused)) from None

    def account_name(self) -> str:
        return self.account().pw_name

    def user_env(self, env):
        """The learner's account's names, home and shell (never the hub's: root's)."""
        account = self.account()
        env.update(
            USER=account.pw_name,
            LOGNAME=account.pw_name,
            HOME=account.pw_dir,
            SHELL=account.pw_shell or "/bin/bash",
        )
        return env

    async def start(self):
        if self.start_problem:
            raise CannotStart(self.start_problem)
        return await super().start()

    def course_home(self) -> Path:
        return Path(self.account().pw_dir)


class SharedUserSpawner(CourseSpawner, SimpleLocalProcessSpawner):
    """Every learner's server runs as the hub's user, in its own folder (tests, one person)."""

    def course_home(self) -> Path:
        return Path(self.home_dir)

    def get_args(self):
        # as root (a container), Jupyter refuses to start unless told it is meant
        return super().get_args() + (["--allow-root"] if os.geteuid() == 0 else [])
