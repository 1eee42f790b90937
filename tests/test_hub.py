"""A class on one machine, for real: JupyterHub and its proxy (configurable-http-proxy) on
127.0.0.1 with hub/jupyterhub_config.py. Two learners log in through the login page, each
finds their own notebooks, one's edit stays out of the other's copy, each runs an exercise
check in a kernel of their own, a learner's crashed or hung kernel leaves the other's
working, and the teacher's table shows both verdicts.

Needs `configurable-http-proxy` (Node.js): `./course.sh test` installs it with npm into
build/hub/; without it this test FAILS with the reason (it never skips). The learners'
servers run as this test's own user ("shared" mode) in the first test; the second runs
the mode a class uses, a Unix account per learner, where the test runs as root.
"""

import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

# a machine without the course's requirements (a GPU box running `pytest -m gpu`) has no hub
# to test: say so instead of failing at collection
for _package in ("jupyterhub", "nativeauthenticator", "requests", "websocket"):
    pytest.importorskip(
        _package,
        reason=f"{_package} is not installed here: the hub tests "
        f"need JupyterHub and NativeAuthenticator "
        f"(requirements.txt, ./course.sh setup)",
    )

import requests  # noqa: E402
import websocket  # noqa: E402

from course import ROOT  # noqa: E402
from course.exercises.nb00 import TILE_M, TILE_N, TILES  # noqa: E402
from course.tools import class_progress  # noqa: E402

PASSWORD = "a-class-password"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def proxy_binary() -> str:
    found = shutil.which("configurable-http-proxy") or str(
        ROOT / "build" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
    )
    if not os.path.exists(found):
        pytest.fail(
            "configurable-http-proxy not found: `./course.sh test` installs it with "
            "npm into build/hub (or: npm install -g configurable-http-proxy)"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TEACHER_PASSWORD = "the teacher's long password"


@contextmanager
def running_hub(tmp_path, users="shared", lab_args=(), native=False, env=None, state=None):
    """The hub on free ports. With `native`, as a class runs it: `./course.sh hub`, which
    sets the teacher's password (TEACHER_PASSWORD, from a file as a script would give it)
    before JupyterHub opens its port, then NativeAuthenticator (sign-up and the teacher's
    approval); else JupyterHub with the tests' shared password and admin token. `env` adds
    settings; `state` is the hub's state folder (default tmp_path/hub). Yields the base URL
    and the admin token's headers."""
    port, token = free_port(), uuid.uuid4().hex
    full_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("COURSE_PROGRESS", "COURSE_HUB_"))
    }
    if native:
        password_file = tmp_path / "teacher-password"
        password_file.write_text(TEACHER_PASSWORD + "\n")
        full_env.update(
            COURSE_HUB_ADMIN_PASSWORD_FILE=str(password_file), COURSE_PYTHON=sys.executable
        )  # the test's environment, no setup
        command = ["bash", str(ROOT / "course.sh"), "hub"]
    else:
        full_env.update(
            COURSE_HUB_TEST_PASSWORD=PASSWORD,
            COURSE_HUB_TEST_TOKEN=token,
            COURSE_HUB_TEST_LAB_ARGS=" ".join(lab_args),
        )
        command = [
            sys.executable,
            "-m",
            "jupyterhub",
            "-f",
            str(ROOT / "hub" / "jupyterhub_config.py"),
        ]
    full_env.update(
        COURSE_HUB_STATE=str(state or tmp_path / "hub"),
        COURSE_HUB_PORT=str(port),
        COURSE_HUB_HUB_PORT=str(free_port()),
        COURSE_HUB_PROXY_API_PORT=str(free_port()),
        COURSE_HUB_USERS=users,
        COURSE_HUB_HOMES=str(tmp_path / "homes"),
        PATH=os.path.dirname(proxy_binary()) + os.pathsep + os.environ["PATH"],
        **(env or {}),
    )
    log = open(tmp_path / "hub.log", "w")
    hub = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: hub.poll() is None and requests.get(f"{base}/hub/api", timeout=5).ok,
            180,
            "the hub to answer",
            tmp_path / "hub.log",
            gone=lambda: hub.poll(),
        )
        yield base, {"Authorization": f"token {token}"}
    finally:
        hub.terminate()
        try:
            hub.wait(timeout=60)
        except subprocess.TimeoutExpired:
            hub.kill()
        log.close()


def wait_for(ready, seconds, what, log=None, gone=lambda: None):
    """Poll `ready` for up to `seconds`; fail with the log's tail, at once if `gone()` says
    the process exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and gone() is None:
        try:
            if ready():
                return
        except (requests.RequestException, KeyError, TypeError):
            pass
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    pytest.fail(f"timed out waiting for {what} (exit status {gone()})\n{tail}")


def try_log_in(base, name, password=PASSWORD) -> tuple[requests.Session, bool]:
    """The login page, as a browser would use it: get the form's xsrf cookie, post it."""
    session = requests.Session()
    session.get(f"{base}/hub/login", timeout=30)
    reply = session.post(
        f"{base}/hub/login",
        timeout=60,
        allow_redirects=False,
        data={"username": name, "password": password, "_xsrf": session.cookies.get("_xsrf")},
    )
    return session, reply.status_code == 302 and "/hub/login" not in reply.headers["location"]


def log_in(base, name, password=PASSWORD) -> requests.Session:
    session, ok = try_log_in(base, name, password)
    assert ok, f"{name} could not log in"
    return session


def sign_up(base, name, password) -> str:
    """NativeAuthenticator's sign-up page, as a learner fills it in: what the page says."""
    session = requests.Session()
    session.get(f"{base}/hub/signup", timeout=30)
    reply = session.post(
        f"{base}/hub/signup",
        timeout=60,
        data={
            "username": name,
            "signup_password": password,
            "signup_password_confirmation": password,
            "_xsrf": session.cookies.get("_xsrf"),
        },
    )
    assert reply.ok, reply.text[:300]
    said = re.search(r'class="alert[^"]*"[^>]*>(.*?)</div>', reply.text, re.S)
    return html.unescape(re.sub(r"<[^>]+>|\s+", " ", said.group(1))).strip() if said else ""


def form_token(session: requests.Session, page: str) -> str:
    """The xsrf token a hub page's forms carry, as the teacher's browser has it (a page
    with no form in it today: the token of the xsrf cookie it set, which is the same)."""
    found = re.search(r'name="_xsrf" value="([^"]+)"', session.get(page, timeout=30).text)
    return html.unescape(found.group(1)) if found else session.cookies.get("_xsrf", path="/hub/")


def approve(base, teacher: requests.Session, name: str, approve: bool = True):
    """The teacher approves (or withdraws) `name` on /hub/authorize: the form's POST."""
    return teacher.post(
        f"{base}/hub/authorize/{name}",
        timeout=30,
        data={"_xsrf": form_token(teacher, f"{base}/hub/authorize"), "approve": "01"[approve]},
    )


def start_server(base, admin, name) -> dict:
    """Start `name`'s server and return headers with a token of theirs for it."""
    requests.post(f"{base}/hub/api/users/{name}/server", headers=admin, timeout=60)
    wait_for(
        lambda: requests.get(f"{base}/hub/api/users/{name}", headers=admin, timeout=10).json()[
            "servers"
        ][""]["ready"],
        180,
        f"{name}'s server",
    )
    token = requests.post(
        f"{base}/hub/api/users/{name}/tokens",
        headers=admin,
        timeout=30,
        json={"note": "course test"},
    ).json()["token"]
    return {"Authorization": f"token {token}"}


def contents(base, name, auth, path="course"):
    return requests.get(f"{base}/user/{name}/api/contents/{path}", headers=auth, timeout=60)


def run_code(base, name, auth, kernel, code, timeout=240, wait=True) -> str:
    """Execute `code` in `name`'s kernel over the websocket; what it printed."""
    ws = websocket.create_connection(
        f"ws://{base.split('//')[1]}/user/{name}/api/kernels/{kernel}/channels",
        header=[f"Authorization: {auth['Authorization']}"],
        timeout=timeout,
    )
    msg_id = uuid.uuid4().hex
    ws.send(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": name,
                    "session": uuid.uuid4().hex,
                    "version": "5.3",
                },
                "parent_header": {},
                "metadata": {},
                "channel": "shell",
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                },
            }
        )
    )
    printed = []
    try:
        while wait:
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                printed.append("\n".join(msg["content"]["traceback"]))
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break  # the end of this request's output (execute_reply can come first)
    finally:
        ws.close()
    return "".join(printed)


def new_kernel(base, name, auth) -> str:
    return requests.post(
        f"{base}/user/{name}/api/kernels", headers=auth, json={}, timeout=60
    ).json()["id"]


def test_a_class_of_two_on_a_real_hub(tmp_path):
    homes = class_of_two(tmp_path, "shared", ("alice", "bob"))
    assert homes == {name: tmp_path / "homes" / name for name in ("alice", "bob")}


def learner_python(folder: Path) -> tuple[str, str]:
    """A Python with the course's packages that learners' accounts can run, and '' (or ''
    and why there is none). The test's own Python may sit under /root (pyenv), closed to
    them, as on a class's machine before the README's fix; the fix gives the course's
    .venv a Debian Python. Here, without reinstalling its packages: a venv of Debian's
    python3 (same minor version) in an open folder that adds this one's site-packages."""
    import sysconfig

    from course.tools.hub import learners_cannot_run

    if not learners_cannot_run(sys.executable):
        return sys.executable, ""
    system = Path("/usr/bin/python3")
    version = "%d.%d" % sys.version_info[:2]
    same = f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"
    if (
        not system.exists()
        or subprocess.run([str(system), "-c", same], capture_output=True).returncode != 0
    ):
        return "", f"no Debian python{version} to give learners a Python they can run"
    venv = folder / "learner-venv"
    subprocess.run(
        [str(system), "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "course-packages.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
    )
    for shared in ("etc", "share"):  # Jupyter's extensions, kernels and Lab, by sys.prefix
        if (Path(sys.prefix) / shared).is_dir():
            (venv / shared).symlink_to(Path(sys.prefix) / shared)
    python = str(venv / "bin" / "python")
    problem = learners_cannot_run(python)
    return (python, "") if not problem else ("", problem)


def _can_create_accounts() -> str:
    if os.geteuid() != 0:
        return "creating Unix accounts for the learners needs root"
    if not shutil.which("useradd") or not shutil.which("userdel"):
        return "no useradd/userdel on this machine"
    return ""


NO_ACCOUNTS = _can_create_accounts()


@pytest.fixture
def open_folder():
    """A folder every account may enter (as /opt is)."""
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="course-hub-test-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(bool(NO_ACCOUNTS), reason=NO_ACCOUNTS or "-")
def test_a_class_with_an_account_per_learner(tmp_path, open_folder):
    """The mode a class uses: each learner's server runs as their own Unix account
    (course-<name>, made by the hub), so a learner cannot even read another's notebooks,
    nor give another learner a grade."""
    python, why_not = learner_python(open_folder)
    if not python:
        pytest.skip(why_not)
    names = tuple(f"ct{uuid.uuid4().hex[:6]}{who}" for who in "ab")
    try:
        homes = class_of_two(
            tmp_path, "system", names, hostile=True, env={"COURSE_HUB_PYTHON": python}
        )
        for name, home in homes.items():
            assert home.owner() == f"course-{name}" and (home / "course").owner() == home.owner()
            assert home.stat().st_mode & 0o077 == 0  # closed to every other account
    finally:
        for name in names:
            subprocess.run(
                ["userdel", "--remove", f"course-{name}"], capture_output=True, timeout=60
            )


def run_in_terminal(base, name, auth, command, timeout=120) -> str:
    """Type `command` into a new terminal of `name`'s server; what the terminal showed up
    to the end of its output (a marker the typed line itself does not contain)."""
    term = requests.post(f"{base}/user/{name}/api/terminals", headers=auth, timeout=30).json()[
        "name"
    ]
    ws = websocket.create_connection(
        f"ws://{base.split('//')[1]}/user/{name}/terminals/websocket/{term}",
        header=[f"Authorization: {auth['Authorization']}"],
        timeout=timeout,
    )
    shown = ""
    try:
        ws.send(json.dumps(["stdin", f"{command}; echo END-$((6 * 7))\r"]))
        while "END-42" not in shown:
            message = json.loads(ws.recv())
            if message[0] == "stdout":
                shown += message[1]
    finally:
        ws.close()
        requests.delete(f"{base}/user/{name}/api/terminals/{term}", headers=auth, timeout=30)
    return shown


def class_of_two(tmp_path, users, names, hostile=False, env=None) -> dict:
    """Two learners on a real hub (see the module docstring); with `hostile`, the second
    also tries to read the first's notebook and the first writes a line into their own
    progress file giving the second a right answer. Returns each learner's home."""
    first, second = names
    with running_hub(tmp_path, users, env=env) as (base, admin):
        sessions = {name: log_in(base, name) for name in names}
        assert all(s.cookies for s in sessions.values())
        auth = {name: start_server(base, admin, name) for name in names}

        # each has their own copy of every notebook
        for name in names:
            listed = sorted(
                f["name"]
                for f in contents(base, name, auth[name]).json()["content"]
                if f["name"].endswith(".ipynb")
            )
            assert listed == NOTEBOOKS, name

        # the first learner's edit stays in their copy
        path = f"course/{NOTEBOOKS[0]}"
        model = contents(base, first, auth[first], path).json()
        model["content"]["cells"][0]["source"] = "# the first learner was here"
        saved = requests.put(
            f"{base}/user/{first}/api/contents/{path}",
            headers=auth[first],
            json={"type": "notebook", "content": model["content"]},
            timeout=60,
        )
        assert saved.ok, saved.text
        first_cell = {
            name: contents(base, name, auth[name], path).json()["content"]["cells"][0]["source"]
            for name in names
        }
        assert first_cell[first] == "# the first learner was here"
        assert first_cell[second] != "# the first learner was here"

        # an exercise check as each learner, in a kernel of their own
        kernels = {name: new_kernel(base, name, auth[name]) for name in names}
        check = "from course.exercises.check import check\ncheck('00.tiles', {})"
        right = TILES.tiles(TILE_M, TILE_N)
        assert "✅ right" in run_code(base, first, auth[first], kernels[first], check.format(right))
        assert "❌ wrong" in run_code(
            base, second, auth[second], kernels[second], check.format(right - 24)
        )
        homes = {
            name: Path(
                run_code(
                    base,
                    name,
                    auth[name],
                    kernels[name],
                    "import os; print(os.path.expanduser('~'))",
                ).strip()
            )
            for name in names
        }
        # each server (and so each kernel) has its memory and CPU limits, or the hub's log
        # says why it could not set them
        log = (tmp_path / "hub.log").read_text
        for name in names:
            groups = run_code(
                base, name, auth[name], kernels[name], "print(open('/proc/self/cgroup').read())"
            )
            assert f"course-hub/{name}" in groups or f"no memory/CPU limits for {name}" in log(), (
                groups
            )
        # `python` in a learner's terminal is the course's (a login shell used to lose it)
        shown = run_in_terminal(
            base,
            first,
            auth[first],
            "python -c 'import course, sys; print(\"COURSE-AT\", course.__file__, sys.prefix)'",
        )
        assert f"COURSE-AT {ROOT / 'course' / '__init__.py'}" in shown, shown[-800:]
        if hostile:
            peeked = run_code(
                base,
                second,
                auth[second],
                kernels[second],
                f"print(len(open({str(homes[first] / path)!r}).read()))",
            )
            assert "PermissionError" in peeked, peeked[-500:]
            forged = json.dumps({"learner": second, "exercise": "00.tiles", "verdict": "right"})
            run_code(
                base,
                first,
                auth[first],
                kernels[first],
                "import os; open(os.path.expanduser('~/.course/progress.jsonl'), 'a')"
                f".write({forged!r} + '\\n')",
            )

        # the first learner's kernel hangs, then another of theirs dies: the second
        # learner's kernel and the first learner's server still answer
        run_code(base, first, auth[first], kernels[first], "while True: pass", wait=False)
        crashed = new_kernel(base, first, auth[first])
        run_code(base, first, auth[first], crashed, "import os; os._exit(1)", wait=False)
        assert (
            run_code(
                base, second, auth[second], kernels[second], "print(6 * 7)", timeout=120
            ).strip()
            == "42"
        )
        assert contents(base, first, auth[first]).ok
        requests.delete(
            f"{base}/user/{first}/api/kernels/{kernels[first]}", headers=auth[first], timeout=60
        )  # stop the hung kernel's spinning

    # the teacher's view of the class, from the learners' own folders: whose each file is
    # comes from its owner (an account per learner) or its folder (one account for all)
    whose = (
        class_progress.by_owner
        if users == "system"
        else class_progress.by_folder(tmp_path / "homes")
    )
    found = class_progress.gather([str(home) for home in homes.values()], whose)
    by_learner = {row["learner"]: row for row in class_progress.class_rows(found)}
    assert by_learner[first]["00.tiles"] == "✅"
    assert by_learner[second]["00.tiles"] == "❌"  # a forged line changes nothing
    assert class_progress.wrong_answers(found)["00.tiles"][0].learners == 1
    assert len(found.foreign) == int(hostile)
    return homes
