"""The environment a learner's server starts with: nothing of the hub's own.

The hub runs as root, often from a shell whose PATH starts in /root (pyenv, cargo, ...),
with a virtualenv, tokens and passwords in its environment. JupyterHub's local spawners
pass some of it on (`env_keep`: PATH, PYTHONPATH, VIRTUAL_ENV, CONDA_*, ...), and a teacher's
config may add more. A learner's server gets instead: JupyterHub's own variables for the
server, the teacher's `c.Spawner.environment`, the locale, and the course's variables (set by
course.tools.hub: PATH, PYTHONPATH, the GPU, the CuTe DSL cache); HOME, USER, LOGNAME and
SHELL are the learner's.
"""

from __future__ import annotations

import os
from pathlib import Path

INHERITED = ("LANG", "LC_ALL", "JUPYTERHUB_SINGLEUSER_APP")  # all a server keeps of the hub's
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


def without_hub_environment(env: dict, env_keep, configured: dict, hub=os.environ) -> dict:
    """`env` less what JupyterHub copied into it from the hub's own environment (`env_keep`),
    but the locale; a variable the teacher set in `configured` (c.Spawner.environment) stays."""
    dropped = {
        key
        for key in env_keep
        if key in hub
        and key not in INHERITED
        and key not in configured
        and env.get(key) == hub[key]
    }
    return {key: value for key, value in env.items() if key not in dropped}


def learner_path(python: str) -> str:
    """PATH in a learner's server and terminals: the course's Python first (`python` and
    `pip` are the course's), then the system's; never a folder of the hub's PATH."""
    return os.pathsep.join([str(Path(python).parent), *SYSTEM_PATH])
