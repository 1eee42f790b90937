"""The teacher's approval pages on the class hub, taking only POSTs with the form's token.

NativeAuthenticator approves, un-approves and discards a sign-up on a GET
(`/hub/authorize/<name>`, `/hub/discard/<name>`), so any page the teacher's browser shows
could do it for them: `<img src="/hub/authorize/mallory">` in a learner's markdown cell
approved a sign-up when the teacher merely looked at it, and the same GET on the teacher's
own name locked the teacher out. Here a GET only shows the table; each change is a form
that POSTs the hub's xsrf token (JupyterHub checks it on every POST), says what it does
(approve or withdraw, never a toggle, so a replayed request cannot undo the teacher's
choice), and the teacher's own name can never be withdrawn or discarded.
"""

from __future__ import annotations

from jupyterhub.scopes import needs_scope
from nativeauthenticator.handlers import LocalBase
from nativeauthenticator.orm import UserInfo
from tornado import web

TEMPLATE = "course-authorization.html"  # hub/templates (c.JupyterHub.template_paths)


def protected_names(authenticator) -> set[str]:
    """The names no page may withdraw or discard: the teacher's (the hub's admins and the
    holders of its teacher role, named in the configuration)."""
    return set(authenticator.admin_users) | set(getattr(authenticator, "teachers", ()))


class AuthorizationArea(LocalBase):
    """GET /hub/authorize: every sign-up, each with forms that POST the change."""

    @needs_scope("admin:users")
    async def get(self):
        await self.show()

    async def show(self, message: str = "", alert: str = "alert-info"):
        html = await self.render_template(
            TEMPLATE,
            ask_email=self.authenticator.ask_email_on_signup,
            users=self.db.query(UserInfo).order_by(UserInfo.username).all(),
            protected=protected_names(self.authenticator),
            result_message=message,
            alert=alert,
        )
        self.finish(html)


class PostOnly(AuthorizationArea):
    """A change of a sign-up: a GET (a link, a picture in someone's page) changes nothing."""

    @needs_scope("admin:users")
    async def get(self, name):
        raise web.HTTPError(405, "changing a sign-up takes the forms on /hub/authorize")


class ChangeAuthorization(PostOnly):
    """POST /hub/authorize/<name> with approve=1 (approve) or approve=0 (withdraw)."""

    @needs_scope("admin:users")
    async def post(self, name):
        approve = self.get_body_argument("approve", "") == "1"
        info = UserInfo.find(self.db, name)
        if info is None:
            raise web.HTTPError(404, "no sign-up by that name")
        if not approve and name in protected_names(self.authenticator):
            self.set_status(403)
            return await self.show(f"{name} is the teacher and stays approved.", "alert-danger")
        info.is_authorized = approve
        self.db.commit()
        await self.show(f"{name} {'approved' if approve else 'withdrawn'}.", "alert-success")


class DiscardSignUp(PostOnly):
    """POST /hub/discard/<name>: forget a sign-up that was never approved."""

    @needs_scope("admin:users")
    async def post(self, name):
        info = UserInfo.find(self.db, name)
        if info is None or info.is_authorized or name in protected_names(self.authenticator):
            self.set_status(403)
            return await self.show(f"{name} is not a pending sign-up.", "alert-danger")
        self.authenticator.delete_user(type("SignUp", (), {"name": name}))
        if self.users.get(name) is not None:
            self.users.delete(name)
        await self.show(f"the sign-up of {name} was discarded.", "alert-success")


# NativeAuthenticator's pattern -> the handler that replaces it
REPLACEMENTS = {
    r"/authorize": AuthorizationArea,
    r"/authorize/([^/]*)": ChangeAuthorization,
    r"/discard/([^/]*)": DiscardSignUp,
}
