"""Attacks on the class hub's logins and passwords, through its login, sign-up and
change-password pages and `./course.sh hub-password` (issue 39, "Logins"): each worked on
the hub before course.tools.hub_auth counted failures itself.

* keeping the teacher out by guessing their password from anywhere, and keeping a learner
  out with one wrong try per lockout (NativeAuthenticator's count never went down);
* telling a locked name's right password from a wrong one ("not authorized" / "invalid"),
  and telling known names from unknown ones by how fast the page answers;
* guessing through many names from one address, unknown names never counted;
* slowing every learner's page with a few parallel guessers (bcrypt on the event loop);
* passwords such as "bbbbbbbbbb", ten spaces, the name twice, "abcdefghij", "Password12"
  for learners, "1234567890" for the teacher;
* and, for the teacher, a password piped into `./course.sh hub-password` refused for want
  of a terminal.

The tests here all come from 127.0.0.1, which may claim any client address in
X-Forwarded-For (only a process on the hub's machine can: see hub_auth.client_address), so
each attack and each victim gets an address of its own (documentation ranges).
"""

import html
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

from course import ROOT
from course.tools import hub_admin

from .test_hub import TEACHER_PASSWORD, running_hub, sign_up

WINDOW = 20  # seconds a failure is counted here (300 in a class)
WEAK = ["1234567890", " " * 10, "bbbbbbbbbb", "abcdefghij", "Password12"]


def address(n: int) -> str:
    return f"203.0.113.{n}"


def attempt(base, name, password, at) -> tuple[bool, str, float]:
    """One login from client address `at`, as a browser through a proxy would send it:
    whether it got in, what the page said, and how long the POST took."""
    session = requests.Session()
    session.headers["X-Forwarded-For"] = at
    session.get(f"{base}/hub/login", timeout=30)
    started = time.monotonic()
    reply = session.post(
        f"{base}/hub/login",
        timeout=120,
        allow_redirects=False,
        data={"username": name, "password": password, "_xsrf": session.cookies.get("_xsrf")},
    )
    took = time.monotonic() - started
    ok = reply.status_code == 302 and "/hub/login" not in reply.headers["location"]
    said = re.search(r'<p class="login_error">(.*?)</p>', reply.text, re.S)
    return ok, html.unescape(said.group(1)).strip() if said else "", took


def fail(base, name, times, at):
    for n in range(times):
        assert not attempt(base, name, f"a wrong guess {n}", at)[0]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A class hub as the README starts it (NativeAuthenticator, the teacher's password
    set first), learners' servers as this account (none is started here)."""
    tmp = tmp_path_factory.mktemp("login-hub")
    env = {"COURSE_HUB_LOCKOUT_SECONDS": str(WINDOW)}
    with running_hub(tmp, users="shared", native=True, env=env) as (base, _):
        yield base, tmp / "hub"


def learner(hub, name=None) -> tuple[str, str]:
    """An approved learner (written as `./course.sh hub-password` writes one): name and
    password."""
    name = name or f"l{uuid.uuid4().hex[:6]}"
    password = f"{name[::-1]} rides a green bicycle"
    hub_admin.set_password(hub_admin.db_url(hub[1]), name, password)
    return name, password


def test_guessing_the_teachers_password_does_not_lock_the_teacher_out(hub):
    base, state = hub
    fail(base, "teacher", 6, address(1))
    assert not attempt(base, "teacher", TEACHER_PASSWORD, address(1))[0]  # that address waits
    assert attempt(base, "teacher", TEACHER_PASSWORD, address(2))[0]  # the teacher does not
    # the teacher at the machine lifts the lock of their own address with a new password
    fail(base, "teacher", 6, address(3))
    for password in ("a brand new teaching password", TEACHER_PASSWORD):
        done = subprocess.run(
            ["bash", str(ROOT / "course.sh"), "hub-password", "teacher"],
            input=password + "\n",
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COURSE_PYTHON": sys.executable, "COURSE_HUB_STATE": str(state)},
        )
        assert done.returncode == 0, done.stderr
        assert attempt(base, "teacher", password, address(3))[0]


def test_one_wrong_try_per_lockout_does_not_keep_a_learner_locked(hub):
    base, _ = hub
    name, password = learner(hub)
    fail(base, name, 5, address(10))
    assert not attempt(base, name, password, address(11))[0]  # locked: the name is guessed
    time.sleep(WINDOW + 1)
    fail(base, name, 1, address(10))  # one more, as the lock ends
    assert attempt(base, name, password, address(11))[0]


def test_a_locked_name_an_unknown_name_and_a_wrong_password_look_alike(hub):
    base, _ = hub
    pending, password = f"p{uuid.uuid4().hex[:6]}", "a pending learner's passphrase"
    assert "sent to the admin" in sign_up(base, pending, password)
    known, _ = learner(hub)
    fail(base, pending, 5, address(20))
    answers, times = {}, {}
    for kind, name, guess in (
        ("locked, right password", pending, password),
        ("unknown name", f"nobody{uuid.uuid4().hex[:6]}", "a guessed password"),
        ("wrong password", known, "a guessed password"),
    ):
        tries = [attempt(base, name, guess, address(21 + n)) for n in range(3)]
        assert not any(ok for ok, _, _ in tries), kind
        answers[kind] = {said for _, said, _ in tries}
        times[kind] = statistics.median(took for _, _, took in tries)
    assert len(set.union(*answers.values())) == 1, answers
    assert max(times.values()) < 3 * min(times.values()), times


def test_guessing_through_many_names_from_one_address_locks_the_address(hub):
    base, _ = hub
    name, password = learner(hub)
    guessers = [
        threading.Thread(target=fail, args=(base, f"nobody{uuid.uuid4().hex[:6]}", 1, address(30)))
        for _ in range(20)
    ]
    for guesser in guessers:
        guesser.start()
    for guesser in guessers:
        guesser.join()
    assert not attempt(base, name, password, address(30))[0]
    assert attempt(base, name, password, address(31))[0]


def test_parallel_guessers_do_not_slow_a_learners_page(hub):
    base, _ = hub
    name, password = learner(hub)
    session = requests.Session()
    session.headers["X-Forwarded-For"] = address(40)
    session.get(f"{base}/hub/login", timeout=30)
    session.post(
        f"{base}/hub/login",
        data={"username": name, "password": password, "_xsrf": session.cookies.get("_xsrf")},
        timeout=60,
        allow_redirects=False,
    )
    assert session.get(f"{base}/hub/api/user", timeout=30).json()["name"] == name
    target, _ = learner(hub)  # a known name: its password is checked
    guessed = []  # seconds each wrong guess's POST took (its password hash included)

    def guess(at):
        for n in range(3):
            ok, _, took = attempt(base, target, f"a wrong guess {n}", at)
            assert not ok
            guessed.append(took)

    guessers = [threading.Thread(target=guess, args=(address(41 + n),)) for n in range(6)]
    for guesser in guessers:
        guesser.start()
    took = []
    while any(guesser.is_alive() for guesser in guessers):
        started = time.monotonic()
        assert session.get(f"{base}/hub/api/user", timeout=30).ok
        took.append(time.monotonic() - started)
    for guesser in guessers:
        guesser.join()
    # the learner's page is served between the guesses, not behind them: had a hash held the
    # hub's event loop, a page would wait about as long as a guess. Measured against the
    # guesses of the same run, so a loaded machine slows both sides alike (no absolute bound)
    assert len(took) >= 5 and len(guessed) == 18, (took, guessed)
    assert statistics.median(took) < statistics.median(guessed) / 4, (took, guessed)


def test_weak_passwords_are_refused_with_the_reason(hub):
    base, _ = hub
    name = f"w{uuid.uuid4().hex[:6]}"
    for password in WEAK + [name * 3, name + name + "1234"]:
        said = sign_up(base, name, password)
        assert "This password is refused:" in said and "at least 10 characters" in said, (
            password,
            said,
        )
    # a learner's own new password, on the change-password page
    name, password = learner(hub)
    session = requests.Session()
    session.get(f"{base}/hub/login", timeout=30)
    session.post(
        f"{base}/hub/login",
        data={"username": name, "password": password, "_xsrf": session.cookies.get("_xsrf")},
        timeout=60,
    )
    changed = session.post(
        f"{base}/hub/change-password",
        timeout=60,
        data={
            "old_password": password,
            "new_password": "bbbbbbbbbb",
            "new_password_confirmation": "bbbbbbbbbb",
            "_xsrf": session.cookies.get("_xsrf"),
        },
    )
    assert "This password is refused: it has only 1 different" in html.unescape(changed.text)
    assert attempt(base, name, password, address(50))[0]  # the old one still holds


def admin_tool(tmp_path, *args, given="", env=None) -> subprocess.CompletedProcess:
    """`python -m course.tools.hub_admin` as `./course.sh hub` runs it, `given` piped in."""
    return subprocess.run(
        [sys.executable, "-m", "course.tools.hub_admin", "--state", str(tmp_path), *args],
        input=given,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_the_teachers_password_piped_in_is_taken_and_a_weak_one_refused(tmp_path):
    url = hub_admin.db_url(tmp_path)
    for weak in WEAK + ["teacherteacher"]:
        done = admin_tool(tmp_path, given=weak + "\n")
        assert done.returncode == 2 and "This password is refused" in done.stderr, weak
        assert not hub_admin.has_password(url, "teacher")
    done = admin_tool(tmp_path, given="a long and private passphrase\n")
    assert done.returncode == 0, done.stderr
    assert "was created" in done.stdout and hub_admin.has_password(url, "teacher")


def test_the_rule_and_the_lockout_without_a_hub():
    """The same rule and counting, unit by unit: a lock ends with its window, the teacher is
    counted per address, and a remote client cannot claim another address."""
    from course.tools import hub_auth, passwords

    for weak, name in [(w, "ola") for w in WEAK] + [("olaolaola1", "ola"), ("kimkim2024!", "kim")]:
        assert passwords.problem(weak, name).startswith("This password is refused"), weak
    assert not passwords.problem("the teacher's long password", "teacher")
    # the length hub_admin checks where it runs without the course is the rule's
    assert hub_admin.MIN_PASSWORD == passwords.MIN_LENGTH
    now = [0.0]
    failures = hub_auth.FailedLogins(300, clock=lambda: now[0])
    for _ in range(5):
        failures.add("lena")
    now[0] = 299.0
    assert failures.count("lena") == 5
    now[0] = 301.0
    assert failures.count("lena") == 0 and not failures.times  # forgotten, key dropped
    auth = hub_auth.CourseAuthenticator.__new__(hub_auth.CourseAuthenticator)
    auth._trait_values.update(teacher="teacher", admin_users=set())
    auth._trait_values.update(allowed_failed_logins=5, address_failed_logins=20)
    assert auth.counters("teacher", b"h", "1.2.3.4")[0][0] == ("name", "teacher", "1.2.3.4", b"h")
    assert auth.counters("lena", b"h", "1.2.3.4")[0][0] == ("name", "lena", b"h")
    remote = "198.51.100.7"
    assert hub_auth.client_address("127.0.0.1", f"10.9.9.9, {remote}") == remote
    assert hub_auth.client_address("127.0.0.1", f"{remote}, 127.0.0.1") == remote  # Caddy
    assert hub_auth.client_address("127.0.0.1", "::ffff:127.0.0.1") == "127.0.0.1"
    assert hub_auth.client_address(remote, "192.0.2.1") == remote
