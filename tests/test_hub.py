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
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
import websocket

from course import ROOT
from course.tools import class_progress

PASSWORD = "a-class-password"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def proxy_binary() -> str:
    found = shutil.which("configurable-http-proxy") or \
        str(ROOT / "build" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy")
    if not os.path.exists(found):
        pytest.fail("configurable-http-proxy not found: `./course.sh test` installs it with "
                    "npm into build/hub (or: npm install -g configurable-http-proxy)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_hub(tmp_path, users="shared", lab_args=(), native=False):
    """The hub on a free port; with `native`, as a class runs it (NativeAuthenticator:
    sign-up and the teacher's approval), else with the tests' shared password and admin
    token. Yields the base URL and the admin token's headers."""
    port, token = free_port(), uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_PROGRESS",
                                                                     "COURSE_HUB_TEST"))}
    if not native:
        env.update(COURSE_HUB_TEST_PASSWORD=PASSWORD, COURSE_HUB_TEST_TOKEN=token,
                   COURSE_HUB_TEST_LAB_ARGS=" ".join(lab_args))
    env.update(COURSE_HUB_STATE=str(tmp_path / "hub"), COURSE_HUB_PORT=str(port),
               COURSE_HUB_HUB_PORT=str(free_port()), COURSE_HUB_PROXY_API_PORT=str(free_port()),
               COURSE_HUB_USERS=users, COURSE_HUB_HOMES=str(tmp_path / "homes"),
               PATH=os.path.dirname(proxy_binary()) + os.pathsep + os.environ["PATH"])
    log = open(tmp_path / "hub.log", "w")
    hub = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f",
                            str(ROOT / "hub" / "jupyterhub_config.py")],
                           cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: requests.get(f"{base}/hub/api", timeout=5).ok, 90, "the hub to answer",
                 tmp_path / "hub.log")
        yield base, {"Authorization": f"token {token}"}
    finally:
        hub.terminate()
        try:
            hub.wait(timeout=60)
        except subprocess.TimeoutExpired:
            hub.kill()
        log.close()


def wait_for(ready, seconds, what, log=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (requests.RequestException, KeyError, TypeError):
            pass
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    pytest.fail(f"timed out waiting for {what}\n{tail}")


def try_log_in(base, name, password=PASSWORD) -> tuple[requests.Session, bool]:
    """The login page, as a browser would use it: get the form's xsrf cookie, post it."""
    session = requests.Session()
    session.get(f"{base}/hub/login", timeout=30)
    reply = session.post(f"{base}/hub/login", timeout=60, allow_redirects=False,
                         data={"username": name, "password": password,
                               "_xsrf": session.cookies.get("_xsrf")})
    return session, reply.status_code == 302 and "/hub/login" not in reply.headers["location"]


def log_in(base, name, password=PASSWORD) -> requests.Session:
    session, ok = try_log_in(base, name, password)
    assert ok, f"{name} could not log in"
    return session


def sign_up(base, name, password) -> None:
    """NativeAuthenticator's sign-up page, as a learner fills it in."""
    session = requests.Session()
    session.get(f"{base}/hub/signup", timeout=30)
    reply = session.post(f"{base}/hub/signup", timeout=60,
                         data={"username": name, "signup_password": password,
                               "signup_password_confirmation": password,
                               "_xsrf": session.cookies.get("_xsrf")})
    assert reply.ok, reply.text[:300]


def test_learners_sign_up_and_the_teacher_lets_them_in(tmp_path):
    """The authenticator a class uses: nobody but the teacher gets in until approved."""
    with running_hub(tmp_path, native=True) as (base, _):
        sign_up(base, "teacher", "the teacher's long password")
        teacher = log_in(base, "teacher", "the teacher's long password")
        sign_up(base, "dana", "dana's long password")
        assert not try_log_in(base, "dana", "dana's long password")[1]  # not approved yet
        assert not try_log_in(base, "erin", "never signed up")[1]
        approved = teacher.get(f"{base}/hub/authorize/dana", timeout=30)
        assert approved.ok, approved.status_code
        assert try_log_in(base, "dana", "dana's long password")[1]
        assert not try_log_in(base, "dana", "a wrong password")[1]


def start_server(base, admin, name) -> dict:
    """Start `name`'s server and return headers with a token of theirs for it."""
    requests.post(f"{base}/hub/api/users/{name}/server", headers=admin, timeout=60)
    wait_for(lambda: requests.get(f"{base}/hub/api/users/{name}", headers=admin,
                                  timeout=10).json()["servers"][""]["ready"], 180,
             f"{name}'s server")
    token = requests.post(f"{base}/hub/api/users/{name}/tokens", headers=admin, timeout=30,
                          json={"note": "course test"}).json()["token"]
    return {"Authorization": f"token {token}"}


def contents(base, name, auth, path="course"):
    return requests.get(f"{base}/user/{name}/api/contents/{path}", headers=auth, timeout=60)


def run_code(base, name, auth, kernel, code, timeout=240, wait=True) -> str:
    """Execute `code` in `name`'s kernel over the websocket; what it printed."""
    ws = websocket.create_connection(
        f"ws://{base.split('//')[1]}/user/{name}/api/kernels/{kernel}/channels",
        header=[f"Authorization: {auth['Authorization']}"], timeout=timeout)
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request",
                                   "username": name, "session": uuid.uuid4().hex,
                                   "version": "5.3"},
                        "parent_header": {}, "metadata": {}, "channel": "shell",
                        "content": {"code": code, "silent": False, "store_history": False,
                                    "user_expressions": {}, "allow_stdin": False}}))
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
            elif msg["msg_type"] == "status" and \
                    msg["content"]["execution_state"] == "idle":
                break  # the end of this request's output (execute_reply can come first)
    finally:
        ws.close()
    return "".join(printed)


def new_kernel(base, name, auth) -> str:
    return requests.post(f"{base}/user/{name}/api/kernels", headers=auth, json={},
                         timeout=60).json()["id"]


def test_a_class_of_two_on_a_real_hub(tmp_path):
    homes = class_of_two(tmp_path, "shared", ("alice", "bob"))
    assert homes == {name: tmp_path / "homes" / name for name in ("alice", "bob")}


def _can_create_accounts() -> str:
    if os.geteuid() != 0:
        return "creating Unix accounts for the learners needs root"
    if not shutil.which("useradd") or not shutil.which("userdel"):
        return "no useradd/userdel on this machine"
    from course.tools.hub import unreadable_for_learners

    problem = unreadable_for_learners([sys.executable, ROOT / "course" / "__init__.py"])
    return f"learners' accounts could not run this checkout: {problem}" if problem else ""


NO_ACCOUNTS = _can_create_accounts()


@pytest.mark.skipif(bool(NO_ACCOUNTS), reason=NO_ACCOUNTS or "-")
def test_a_class_with_an_account_per_learner(tmp_path):
    """The mode a class uses: each learner's server runs as their own Unix account, so a
    learner cannot even read another's notebooks."""
    names = tuple(f"ct{uuid.uuid4().hex[:6]}{who}" for who in "ab")
    try:
        homes = class_of_two(tmp_path, "system", names, peek=True)
        for name, home in homes.items():
            assert home.owner() == name and (home / "course").owner() == name
            assert home.stat().st_mode & 0o077 == 0  # closed to every other account
    finally:
        for name in names:
            subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)


def class_of_two(tmp_path, users, names, peek=False) -> dict:
    """Two learners on a real hub (see the module docstring); with `peek`, the second also
    tries to read the first's notebook. Returns each learner's home."""
    first, second = names
    with running_hub(tmp_path, users) as (base, admin):
        sessions = {name: log_in(base, name) for name in names}
        assert all(s.cookies for s in sessions.values())
        auth = {name: start_server(base, admin, name) for name in names}

        # each has their own copy of every notebook
        for name in names:
            listed = sorted(f["name"] for f in contents(base, name, auth[name]).json()["content"]
                            if f["name"].endswith(".ipynb"))
            assert listed == NOTEBOOKS, name

        # the first learner's edit stays in their copy
        path = f"course/{NOTEBOOKS[0]}"
        model = contents(base, first, auth[first], path).json()
        model["content"]["cells"][0]["source"] = "# the first learner was here"
        saved = requests.put(f"{base}/user/{first}/api/contents/{path}", headers=auth[first],
                             json={"type": "notebook", "content": model["content"]},
                             timeout=60)
        assert saved.ok, saved.text
        first_cell = {name: contents(base, name, auth[name], path).json()["content"]["cells"][0]
                      ["source"] for name in names}
        assert first_cell[first] == "# the first learner was here"
        assert first_cell[second] != "# the first learner was here"

        # an exercise check as each learner, in a kernel of their own
        kernels = {name: new_kernel(base, name, auth[name]) for name in names}
        check = "from course.exercises.check import check\ncheck('00.tiles', {})"
        assert "correct" in run_code(base, first, auth[first], kernels[first],
                                     check.format(1536))
        assert "not yet" in run_code(base, second, auth[second], kernels[second],
                                     check.format(1000))
        homes = {name: Path(run_code(base, name, auth[name], kernels[name],
                                     "import os; print(os.path.expanduser('~'))").strip())
                 for name in names}
        # each server (and so each kernel) has its memory and CPU limits, or the hub's log
        # says why it could not set them
        log = (tmp_path / "hub.log").read_text
        for name in names:
            groups = run_code(base, name, auth[name], kernels[name],
                              "print(open('/proc/self/cgroup').read())")
            assert f"course-hub/{name}" in groups or \
                f"no memory/CPU limits for {name}" in log(), groups
        if peek:
            peeked = run_code(base, second, auth[second], kernels[second],
                              f"print(len(open({str(homes[first] / path)!r}).read()))")
            assert "PermissionError" in peeked, peeked[-500:]

        # the first learner's kernel hangs, then another of theirs dies: the second
        # learner's kernel and the first learner's server still answer
        run_code(base, first, auth[first], kernels[first], "while True: pass", wait=False)
        crashed = new_kernel(base, first, auth[first])
        run_code(base, first, auth[first], crashed, "import os; os._exit(1)", wait=False)
        assert run_code(base, second, auth[second], kernels[second], "print(6 * 7)",
                        timeout=120).strip() == "42"
        assert contents(base, first, auth[first]).ok
        requests.delete(f"{base}/user/{first}/api/kernels/{kernels[first]}",
                        headers=auth[first], timeout=60)  # stop the hung kernel's spinning

    # the teacher's view of the class, from the learners' own folders
    rows, wrong = class_progress.table([str(home) for home in homes.values()])
    by_learner = {row["learner"]: row for row in rows}
    assert by_learner[first]["00.tiles"] == "✅"
    assert by_learner[second]["00.tiles"] == "❌"
    assert wrong["00.tiles"][0].learners == 1  # one learner got it wrong
    return homes
