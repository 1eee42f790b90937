"""Who may sign up and log in on the class hub.

NativeAuthenticator, as a class uses it: each learner signs up and the teacher approves them
(the teacher's own account exists before the hub opens: course.tools.hub_admin), and every
password, the teacher's too, follows one rule (course.tools.passwords; the sign-up and
change-password pages say which part a refused one broke). On top of it, the names
course.tools.hub_accounts refuses (accounts of this machine such as `root` or `ubuntu`,
reserved names) can neither sign up, log in nor be added by the admin, and the sign-up page
says why.

Logins (CourseAuthenticator.authenticate, in place of NativeAuthenticator's): wrong
passwords are counted per name and per client address over a sliding window
(`seconds_before_next_try`, COURSE_HUB_LOCKOUT_SECONDS): five for a name, twenty for an
address lock it until the oldest of them is older than the window; tries refused while
locked are not counted, so a lock never outlasts its window (NativeAuthenticator's count
never went down: one guess every five minutes kept a name locked until the hub restarted).
The teacher's name is counted per address instead (a learner guessing it locks out only
their own address), and a new password set on the machine (`./course.sh hub-password
NAME`) lifts every lock of that name. A locked name, an unknown name and a wrong password
get the same page after the same work (one bcrypt check, against a fixed hash when there is
no real one to check), and bcrypt runs in a few threads of its own, never on the hub's event
loop, so guessers cannot slow anyone else's page.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path

import bcrypt
from jupyterhub.auth import DummyAuthenticator
from jupyterhub.handlers.login import LoginHandler as JupyterHubLoginHandler
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import (
    ChangePasswordAdminHandler,
    ChangePasswordHandler,
    LoginHandler,
    SignUpHandler,
    admin_users_scope,
)
from nativeauthenticator.orm import UserInfo
from tornado import web
from traitlets import Integer, Unicode
from traitlets.config import Configurable

from course.tools import hub_accounts, hub_pages, passwords

# a bcrypt hash of no password anyone types, at the cost of the hub's own (bcrypt's default,
# 12): an unknown or a locked name is checked against it, so its answer takes as long
NO_ONES_HASH = b"$2b$12$lFHUEg2uBod2S4CW5MxbZO0uJf62iHiWwJ6.DYVdpZmqaK38r7evm"
REFUSED = (
    "Invalid username or password. After {tries} wrong passwords a name waits up to "
    "{seconds} seconds before it can log in again."
)
NOT_APPROVED = "{name} has not been approved by the teacher yet."


class LearnerNames(Configurable):
    """Refuses every name that must not become a learner's account (see hub_accounts)."""

    account_registry = Unicode(
        "", config=True, help="JSON file of the Unix accounts the hub created"
    )
    teacher = Unicode(
        "", config=True, help="the teacher's name: never withdrawn, discarded or locked out"
    )

    @property
    def teachers(self) -> set[str]:
        return {self.teacher} if self.teacher else set()

    def name_refusal(self, name: str) -> str:
        registry = Path(self.account_registry) if self.account_registry else None
        return hub_accounts.refusal(name, registry)

    def validate_username(self, username: str) -> bool:
        problem = self.name_refusal(username)
        if problem:
            self.log.warning("refused the name %r: %s", username, problem)
            return False
        return super().validate_username(username)

    def delete_user(self, user):
        """A learner the teacher deletes (/hub/admin, or discarded at /hub/authorize) leaves
        no account for the next sign-up under the name: it is retired, its home archived
        where only root can open it (hub_accounts.retire). A retirement that fails fails
        the deletion, so the teacher sees it and the name stays taken."""
        if self.account_registry:
            archived = hub_accounts.retire(user.name, Path(self.account_registry))
            if archived:
                self.log.info("retired the account of %s: home archived at %s", user.name, archived)
        return super().delete_user(user)


class FailedLogins:
    """Failed logins of the last `window` seconds, per key (a name, an address); older ones
    are forgotten, and keys left with none dropped (unknown names tried once each do not
    pile up). `add` counts a try before its password is checked, so parallel guesses cannot
    all slip under the limit; `withdraw` takes back a try that was right."""

    def __init__(self, window: float, clock=time.monotonic):
        self.window, self.clock, self.times = window, clock, {}

    def count(self, key) -> int:
        self.forget_old()
        return len(self.times.get(key, ()))

    def add(self, key) -> float:
        when = self.clock()
        self.times.setdefault(key, []).append(when)
        return when

    def withdraw(self, key, when: float) -> None:
        if when in self.times.get(key, ()):
            self.times[key].remove(when)

    def clear(self, key) -> None:
        self.times.pop(key, None)

    def forget_old(self) -> None:
        oldest = self.clock() - self.window
        for key in list(self.times):
            self.times[key] = [when for when in self.times[key] if when > oldest]
            if not self.times[key]:
                del self.times[key]


def client_address(peer: str, forwarded_for: str = "") -> str:
    """Who connected to this machine: the hub's peer or, while that is this machine itself
    (the hub's proxy, Caddy, an SSH tunnel), the address it forwarded for, the last one of
    X-Forwarded-For (each proxy appends its own peer). A client elsewhere gets the address
    the first proxy on this machine saw, whatever it sends; only a process on this machine
    (a learner's kernel, a tunnel's user) can claim another, so for those the limits per
    name are what hold. Not JupyterHub's request.remote_ip: tornado takes that from
    X-Real-Ip, which the proxies pass on from the client unchanged."""
    hops = [peer] + [hop.strip() for hop in reversed(forwarded_for.split(",")) if hop.strip()]
    address = peer
    for hop in hops:
        try:
            ip = ipaddress.ip_address(hop)
        except ValueError:
            return address  # not an address: no proxy wrote it
        ip = getattr(ip, "ipv4_mapped", None) or ip
        address = str(ip)
        if not ip.is_loopback:
            break
    return address


def login_address(handler) -> str:
    """The client address of a login request (client_address), from the socket's own peer."""
    request = handler.request
    peer = getattr(getattr(request.connection, "context", None), "address", None)
    peer = peer[0] if isinstance(peer, tuple) else request.remote_ip
    return client_address(peer, request.headers.get("X-Forwarded-For", ""))


def password_matches(password: str, hashed: bytes) -> bool:
    """bcrypt's check (a quarter of a second of CPU); a password it cannot take is wrong."""
    try:
        return bcrypt.checkpw(password.encode("utf-8", "surrogatepass"), hashed)
    except ValueError:
        return False


class CourseSignUpHandler(SignUpHandler):
    """NativeAuthenticator's sign-up page, saying why a refused name or password was refused
    (its own message only speaks of spaces, commas, length and common passwords)."""

    async def post(self):
        name = self.authenticator.normalize_username(self.get_body_argument("username", ""))
        password = self.get_body_argument("signup_password", "", strip=False)
        problem = self.authenticator.name_refusal(name) or passwords.problem(password, name)
        if not problem:
            return await super().post()
        html = await self.render_template(
            "signup.html",
            ask_email=self.authenticator.ask_email_on_signup,
            result_message=problem,
            alert="alert-danger",
            two_factor_auth=self.authenticator.allow_2fa,
            recaptcha_key=self.authenticator.recaptcha_key,
            tos=self.authenticator.tos,
        )
        self.finish(html)


class CourseLoginHandler(LoginHandler):
    """NativeAuthenticator's login page with JupyterHub's own POST. NativeAuthenticator's
    checked a refused password a second time, on the event loop, to say "not authorized",
    even while the name was locked: a wrong password answered "invalid", the right one "not
    authorized", so the lock told a guesser when they had it. The only other answer than
    REFUSED is now the authenticator's NOT_APPROVED, never given while a name is locked."""

    post = JupyterHubLoginHandler.post

    def _render(self, login_error=None, username=None):
        if login_error:
            login_error = getattr(self, "login_refusal", "") or self.authenticator.refused()
        return super()._render(login_error=login_error, username=username)


async def refused_for_rule(handler, template: str, name: str) -> bool:
    """Show the change-password page with why the new password breaks the rule, if it does
    (NativeAuthenticator's says only "at least 10 characters and not too common")."""
    new = handler.get_body_argument("new_password", "", strip=False)
    problem = passwords.problem(new, name)
    if problem:
        page = await handler.render_template(
            template, user_name=name, result_message=problem, alert="alert-danger"
        )
        handler.finish(page)
    return bool(problem)


class CourseChangePasswordHandler(ChangePasswordHandler):
    """A learner's own new password, under the one rule."""

    @web.authenticated
    async def post(self):
        user = await self.get_current_user()
        if not await refused_for_rule(self, "change-password.html", user.name):
            await super().post()


class CourseChangePasswordAdminHandler(ChangePasswordAdminHandler):
    """A new password the teacher gives a learner, under the same rule."""

    @admin_users_scope
    async def post(self, user_name):
        if not await refused_for_rule(self, "change-password-admin.html", user_name):
            await super().post(user_name)


COURSE_PAGES = {
    r"/login": CourseLoginHandler,
    r"/signup": CourseSignUpHandler,
    r"/change-password": CourseChangePasswordHandler,
    r"/change-password/([^/]+)": CourseChangePasswordAdminHandler,
}


class CourseAuthenticator(LearnerNames, NativeAuthenticator):
    """The class hub's authenticator (hub/jupyterhub_config.py sets its password rules);
    how logins are limited: the module's docstring."""

    address_failed_logins = Integer(
        20,
        config=True,
        help="wrong passwords from one client address (any names) that lock it for the "
        "window; more than a name's, since a classroom may share one address",
    )
    hash_threads = Integer(
        max(1, (os.cpu_count() or 2) // 2),
        config=True,
        help="threads that run bcrypt (half the CPUs): guessers queue there, and the other "
        "half of the machine keeps serving everyone else",
    )

    def get_handlers(self, app):
        """NativeAuthenticator's pages, with the course's login, sign-up and change-password
        pages (above) and the approval pages taking POSTs only (course.tools.hub_pages)."""
        replaced = {**COURSE_PAGES, **hub_pages.REPLACEMENTS}
        return [(path, replaced.get(path, handler)) for path, handler in super().get_handlers(app)]

    @cached_property
    def failures(self) -> FailedLogins:
        return FailedLogins(self.seconds_before_next_try)

    @cached_property
    def hashing(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(self.hash_threads, thread_name_prefix="course-bcrypt")

    def refused(self) -> str:
        return REFUSED.format(
            tries=self.allowed_failed_logins, seconds=self.seconds_before_next_try
        )

    def get_user(self, username):
        """Read from the database afresh: `./course.sh hub-password` writes it from another
        process while the hub runs, and a cached row would keep the old password."""
        name = self.normalize_username(username)
        query = self.db.query(UserInfo).populate_existing()
        return query.filter(UserInfo.username == name).first()

    def counters(self, name: str, stored: bytes | None, address: str) -> list:
        """The counters a login of `name` from `address` adds to, each with the count that
        locks it. The teacher's name is counted per address: a learner guessing it locks
        out their own address, not the teacher (who is not lockable from elsewhere; from
        the same address, a new password set on the machine lifts it). A name's counter
        holds the stored hash, so a new password starts it afresh."""
        own = (name, address) if name in self.teachers | set(self.admin_users) else (name,)
        return [
            (("name", *own, stored), self.allowed_failed_logins),
            (("address", address), self.address_failed_logins),
        ]

    async def check_password(self, password: str, hashed: bytes) -> bool:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.hashing, password_matches, password, hashed)

    async def authenticate(self, handler, data):
        """`data`'s name if its password is right and nothing is locked; else None, after
        the same work whatever the reason (see the module's docstring)."""
        name = self.normalize_username(data.get("username", ""))
        info = self.get_user(name)
        stored = info.password if info is not None else None
        counters = self.counters(name, stored, login_address(handler))
        locked = any(self.failures.count(key) >= most for key, most in counters)
        counted = [] if locked else [(key, self.failures.add(key)) for key, _ in counters]
        checked = NO_ONES_HASH if locked or stored is None else stored
        right = await self.check_password(data.get("password", ""), checked) and checked is stored
        if right and info.has_2fa:
            right = info.is_valid_token(data.get("2fa"))
        if not right:
            return None
        for key, when in counted:  # not a failure after all
            self.failures.withdraw(key, when)
        self.failures.clear(counters[0][0])
        if not info.is_authorized:
            handler.login_refusal = NOT_APPROVED.format(name=name)
            return None
        return name

    def create_user(self, username, password, **kwargs):
        """A sign-up, only with a password the rule takes (the page said why not)."""
        if passwords.problem(password, self.normalize_username(username)):
            return None
        return super().create_user(username, password, **kwargs)

    def change_password(self, username, new_password):
        """A new password, only one the rule takes (the page said why not)."""
        if passwords.problem(new_password, username):
            return None
        return super().change_password(username, new_password)


class CourseTestAuthenticator(LearnerNames, DummyAuthenticator):
    """Tests only: one shared password, with the class hub's name rules."""
