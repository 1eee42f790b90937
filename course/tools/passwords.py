"""The one password rule of the class hub, for the teacher and the learners alike.

The teacher's password is set on the machine (course.tools.hub_admin: `./course.sh hub`,
`./course.sh hub-password NAME`), a learner's on the sign-up and change-password pages
(course.tools.hub_auth); all of them ask `problem(password, name)`. A guesser tries the
common passwords first, then the name (so the name does not count towards the rule: what
is left without it must pass), a key held down, a run of the keyboard or the
alphabet, and a common word with digits added ("Password12"): each of those is refused with
a sentence saying which it is, followed by the whole rule, so a learner knows what to type
instead. NativeAuthenticator's own check (length and its list of 10,000 common passwords,
compared exactly) let "bbbbbbbbbb", ten spaces, the name twice and "Password12" through.
"""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

MIN_LENGTH = 10  # NativeAuthenticator's minimum_password_length on the class hub
MIN_DIFFERENT = 4  # "abababababab" and "1212121212" are as easy to guess as one key held
MIN_NAME = 3  # shorter names are inside too many good passwords to refuse them
RULE = (
    f"a password needs at least {MIN_LENGTH} characters, at least {MIN_DIFFERENT} of them "
    "different, and must not be a common password (nor one with digits or signs added), "
    "be your name with a little added, be only digits, or be a run like abcdefghij"
)
# how a common word is disguised: a@ssword, pa$$word, p4ssw0rd
UNDISGUISE = str.maketrans(
    {"@": "a", "4": "a", "$": "s", "5": "s", "3": "e", "0": "o", "1": "i", "!": "i", "7": "t"}
)


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    """NativeAuthenticator's list of the 10,000 most common passwords, in lower case."""
    import nativeauthenticator

    listed = Path(nativeauthenticator.__file__).with_name("common-credentials.txt")
    return frozenset(line.strip().lower() for line in listed.read_text().splitlines())


def is_run(password: str) -> bool:
    """Every character one step from the one before, in the same direction (abcdefghij,
    0123456789, 9876543210, acegikmoqs): one key held or one row typed."""
    steps = {ord(b) - ord(a) for a, b in zip(password, password[1:])}
    return len(steps) == 1


def disguised_common(password: str) -> bool:
    """A common password with digits or signs around it, or letters swapped for look-alike
    digits ("Password12", "!dragon2024", "P@ssw0rd99"): the first things a guesser adds."""
    core = password.lower().strip(string.digits + string.punctuation + string.whitespace)
    candidates = {core, core.translate(UNDISGUISE), password.lower().translate(UNDISGUISE)}
    return any(len(word) >= 4 and word in common_passwords() for word in candidates)


def why_weak(password: str, name: str = "") -> str:
    """The first reason a guesser would find `password` (for `name`) early; '' if none."""
    lowered, name = password.lower(), name.lower()
    if len(password) < MIN_LENGTH:
        return f"it has {len(password)} characters"
    if not password.strip():
        return "it is only spaces"
    if len(set(password)) < MIN_DIFFERENT:
        return f"it has only {len(set(password))} different characters"
    if is_run(password):
        return "it is a run of consecutive characters"
    if password.isdigit():
        return "it is only digits (dates and phone numbers are guessed early)"
    if lowered.strip() in common_passwords() or disguised_common(password):
        return "it is one of the most common passwords, or one with a few characters added"
    if len(name) >= MIN_NAME and name in lowered:
        rest = why_weak(lowered.replace(name, ""))
        return f"without the user name in it, {rest}" if rest else ""
    return ""


def problem(password: str, name: str = "") -> str:
    """Why `password` will not do for `name`, as a sentence to show; '' when it will do."""
    why = why_weak(password, name)
    return f"This password is refused: {why}. ({RULE[0].upper()}{RULE[1:]}.)" if why else ""
