"""Who may sign up and log in on the class hub.

NativeAuthenticator, as a class uses it: each learner signs up and the teacher approves them
(the teacher's own account exists before the hub opens: course.tools.hub_admin), passwords
have at least ten characters and are not common ones, and after five wrong passwords a name
is locked for five minutes. On top of it, the names course.tools.hub_accounts refuses
(accounts of this machine such as `root` or `ubuntu`, reserved names) can neither sign up,
log in nor be added by the admin, and the sign-up page says why.
"""

from __future__ import annotations

from pathlib import Path

from jupyterhub.auth import DummyAuthenticator
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import SignUpHandler
from traitlets import Unicode
from traitlets.config import Configurable

from course.tools import hub_accounts


class LearnerNames(Configurable):
    """Refuses every name that must not become a learner's account (see hub_accounts)."""

    account_registry = Unicode(
        "", config=True, help="JSON file of the Unix accounts the hub created"
    )

    def name_refusal(self, name: str) -> str:
        registry = Path(self.account_registry) if self.account_registry else None
        return hub_accounts.refusal(name, registry)

    def validate_username(self, username: str) -> bool:
        problem = self.name_refusal(username)
        if problem:
            self.log.warning("refused the name %r: %s", username, problem)
            return False
        return super().validate_username(username)


class CourseSignUpHandler(SignUpHandler):
    """NativeAuthenticator's sign-up page, saying why a refused name was refused (its own
    message only speaks of spaces and commas)."""

    async def post(self):
        name = self.authenticator.normalize_username(self.get_body_argument("username", ""))
        problem = self.authenticator.name_refusal(name)
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


class CourseAuthenticator(LearnerNames, NativeAuthenticator):
    """The class hub's authenticator (hub/jupyterhub_config.py sets its password rules)."""

    def get_handlers(self, app):
        return [
            (path, CourseSignUpHandler if handler is SignUpHandler else handler)
            for path, handler in super().get_handlers(app)
        ]


class CourseTestAuthenticator(LearnerNames, DummyAuthenticator):
    """Tests only: one shared password, with the class hub's name rules."""
