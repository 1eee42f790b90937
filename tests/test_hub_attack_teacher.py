"""The teacher's rights against a hostile learner's pages (issue: a class nobody can break
into, II). Learners' servers share the hub's origin, so whatever a learner's server sends
runs, in the browser that opens it, with that browser's hub login. Each test is an attack
that worked on the hub as the README set it up before:

* the teacher (a JupyterHub admin) opened a learner's notebook on the learner's server,
  and a script in it created an API token as the teacher and made the learner admin;
* `<img src="/hub/authorize/mallory">` in a markdown cell approved a pending sign-up when
  the teacher only looked at it (the approval was a GET), and the same GET on the
  teacher's own name locked the teacher out.

One hub, as `./course.sh hub` starts it (NativeAuthenticator), with the learners' servers
as the hub's own user (no Unix accounts needed).
"""

import sqlite3

import pytest
import requests

from .test_hub import (
    TEACHER_PASSWORD,
    approve,
    log_in,
    running_hub,
    sign_up,
    try_log_in,
    wait_for,
)

LEARNER_PASSWORD = "mallory's own long passphrase"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("teacher-hub")
    with running_hub(tmp, users="shared", native=True) as (base, _):
        yield base, tmp / "hub"


def approved(state, name: str) -> bool | None:
    with sqlite3.connect(state / "jupyterhub.sqlite") as db:
        row = db.execute("select is_authorized from users_info where username=?", (name,))
        found = row.fetchone()
    return None if found is None else bool(found[0])


def test_a_get_approves_nobody_and_cannot_lock_the_teacher_out(hub):
    base, state = hub
    sign_up(base, "mallory", LEARNER_PASSWORD)
    teacher = log_in(base, "teacher", TEACHER_PASSWORD)
    # what an <img src=...> in a learner's cell makes the teacher's browser ask for
    for name in ("mallory", "teacher"):
        teacher.get(f"{base}/hub/authorize/{name}", timeout=30)
        teacher.get(f"{base}/hub/discard/{name}", timeout=30)
    assert approved(state, "mallory") is False
    assert approved(state, "teacher") is True
    assert try_log_in(base, "teacher", TEACHER_PASSWORD)[1]
    # a POST from another page has no form token: refused
    forged = teacher.post(f"{base}/hub/authorize/mallory", data={"approve": "1"}, timeout=30)
    assert forged.status_code == 403 and approved(state, "mallory") is False
    # the teacher's own form: approved, and the teacher can never be withdrawn
    assert approve(base, teacher, "mallory").ok and approved(state, "mallory") is True
    assert approve(base, teacher, "teacher", approve=False).status_code == 403
    assert approved(state, "teacher") is True
    assert try_log_in(base, "teacher", TEACHER_PASSWORD)[1]


def test_the_teacher_cannot_open_a_learners_server_nor_make_tokens_for_others(hub):
    base, state = hub
    if not approved(state, "mallory"):
        sign_up(base, "mallory", LEARNER_PASSWORD)
        approve(base, log_in(base, "teacher", TEACHER_PASSWORD), "mallory")
    learner = log_in(base, "mallory", LEARNER_PASSWORD)
    learner.get(f"{base}/hub/spawn", timeout=120)
    wait_for(
        lambda: learner.get(f"{base}/user/mallory/lab", timeout=60).url.startswith(
            f"{base}/user/mallory/lab"
        ),
        180,
        "mallory's server",
        state.parent / "hub.log",
    )
    own = learner.get(f"{base}/user/mallory/lab", timeout=60)  # she opens her own server ...
    policy = own.headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'self'" in policy and "script-src 'self'" in policy, policy

    teacher = log_in(base, "teacher", TEACHER_PASSWORD)
    # ... the teacher, following a link she sent, gets the hub's refusal, not her pages
    opened = teacher.get(f"{base}/user/mallory/lab/tree/course", timeout=60)
    assert opened.status_code == 403, (opened.status_code, opened.url)
    assert "jupyter-config-data" not in opened.text
    assert teacher.get(f"{base}/user/mallory/api/contents", timeout=30).status_code == 403
    # what the script did with the teacher's login: a token for the learner, and admin
    teacher.get(f"{base}/hub/token", timeout=30)  # the page the script read its token from
    headers = {"X-XSRFToken": teacher.cookies.get("_xsrf", path="/hub/")}
    made = teacher.post(
        f"{base}/hub/api/users/mallory/tokens", json={"note": "x"}, headers=headers, timeout=30
    )
    assert made.status_code == 403, made.text[:200]
    promoted = teacher.patch(
        f"{base}/hub/api/users/mallory", json={"admin": True}, headers=headers, timeout=30
    )
    assert promoted.status_code == 403, promoted.text[:200]
    me = teacher.get(f"{base}/hub/api/user", headers=headers, timeout=30).json()
    assert me["name"] == "teacher" and not me["admin"]
    # the teacher still runs the class: the user list and a learner's server can be stopped
    users = teacher.get(f"{base}/hub/api/users", headers=headers, timeout=30)
    assert users.ok and {"mallory", "teacher"} <= {u["name"] for u in users.json()}
    stopped = teacher.delete(f"{base}/hub/api/users/mallory/server", headers=headers, timeout=60)
    assert stopped.status_code in (202, 204), stopped.text[:200]
    assert teacher.get(f"{base}/hub/admin", timeout=30).ok


def test_the_hubs_own_pages_still_cannot_be_framed(hub):
    """JupyterHub's own policy (a guard: the class's settings must not loosen it)."""
    base, _ = hub
    page = requests.get(f"{base}/hub/login", timeout=30)
    assert "frame-ancestors 'none'" in page.headers.get("Content-Security-Policy", "")


def test_an_older_hubs_admin_flag_is_taken_and_a_new_password_approves(tmp_path):
    """A hub made before the teacher's role kept the teacher as a JupyterHub admin in its
    database (admins may open every server); `./course.sh hub` takes the flag away. And the
    GET that once withdrew the teacher's approval is answered by `hub-password teacher`."""
    from jupyterhub import orm
    from nativeauthenticator.orm import UserInfo

    from course.tools import hub_admin

    url = hub_admin.db_url(tmp_path)
    session = hub_admin.open_db(url)
    session.add(orm.User(name="teacher", admin=True))
    session.add(UserInfo(username="teacher", password=b"x", is_authorized=False))
    session.commit()
    session.close()
    assert hub_admin.not_an_admin(url, "teacher")
    assert not hub_admin.not_an_admin(url, "teacher")  # once is enough
    hub_admin.set_password(url, "teacher", TEACHER_PASSWORD)
    session = hub_admin.open_db(url)
    try:
        assert not orm.User.find(session, "teacher").admin
        assert UserInfo.find(session, "teacher").is_authorized
    finally:
        session.close()
