"""JupyterHub for a class on one machine: `./course.sh hub` starts it with this file.

Learners sign up on the login page; the teacher (COURSE_HUB_ADMIN, default "teacher")
signs up first, then approves each learner at /hub/authorize (NativeAuthenticator:
passwords are kept hashed in the hub's database). Each learner gets their own Jupyter
server, notebooks and GPU (course/tools/hub.py explains how).

Settings, all from the environment:

    COURSE_HUB_STATE   the hub's own files: database, cookie secret, GPU assignments
                       (default build/hub)
    COURSE_HUB_IP, COURSE_HUB_PORT
                       where the hub listens (default 127.0.0.1:8000; 0.0.0.0 opens it to
                       the network: put HTTPS in front of it first)
    COURSE_HUB_HUB_PORT, COURSE_HUB_PROXY_API_PORT
                       the hub's and its proxy's own ports on 127.0.0.1 (default 8081, 8001)
    COURSE_HUB_ADMIN   the teacher's user name (default teacher)
    COURSE_HUB_USERS   "system" (default as root: a Unix account per learner) or "shared"
    COURSE_HUB_HOMES   with "shared": where the learners' folders go (default STATE/homes)
    COURSE_HUB_MEM     memory a learner's server may use, e.g. 8G (default 8G)
    COURSE_HUB_CPUS    CPU cores a learner's server may use (default 2)
    COURSE_HUB_TEST_PASSWORD, COURSE_HUB_TEST_TOKEN
                       tests only: a shared password, every user name accepted
                       (JupyterHub's DummyAuthenticator), and an admin API token for the
                       test itself; never set them for a class
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course.tools import hub  # noqa: E402  (needs ROOT on the path)

c = get_config()  # noqa: F821  (JupyterHub provides it)
state = Path(os.environ.get("COURSE_HUB_STATE", ROOT / "build" / "hub")).resolve()
state.mkdir(parents=True, exist_ok=True)
admin = os.environ.get("COURSE_HUB_ADMIN", "teacher")

c.JupyterHub.ip = os.environ.get("COURSE_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("COURSE_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
# the hub's and the proxy's own ports, on 127.0.0.1 only (two hubs on one machine need others)
c.JupyterHub.hub_port = int(os.environ.get("COURSE_HUB_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = \
    f"http://127.0.0.1:{int(os.environ.get('COURSE_HUB_PROXY_API_PORT', '8001'))}"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

if os.environ.get("COURSE_HUB_TEST_PASSWORD"):
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = os.environ["COURSE_HUB_TEST_PASSWORD"]
    c.Authenticator.allow_all = True
    # the test drives the hub's REST API as an admin service with this token
    c.JupyterHub.services = [{"name": "course-test",
                              "api_token": os.environ["COURSE_HUB_TEST_TOKEN"]}]
    c.JupyterHub.load_roles = [{"name": "course-test", "scopes": ["admin:users",
                                "admin:servers", "tokens", "access:servers"],
                                "services": ["course-test"]}]
    # the browser test drives JupyterLab as tests/browser does (settings and app handle)
    c.Spawner.args = os.environ.get("COURSE_HUB_TEST_LAB_ARGS", "").split()
else:
    c.JupyterHub.authenticator_class = "nativeauthenticator.NativeAuthenticator"
    c.NativeAuthenticator.open_signup = False  # the teacher approves each learner
    c.Authenticator.allow_all = True  # whoever the teacher approved
c.Authenticator.admin_users = {admin}

users = os.environ.get("COURSE_HUB_USERS", "system" if os.geteuid() == 0 else "shared")
if users == "system":
    c.JupyterHub.spawner_class = hub.SystemUserSpawner
else:
    c.JupyterHub.spawner_class = hub.SharedUserSpawner
    homes = Path(os.environ.get("COURSE_HUB_HOMES", state / "homes")).resolve()
    c.SharedUserSpawner.home_dir_template = str(homes / "{username}")
c.CourseSpawner.gpu_state = str(state / "gpus.json")
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab/tree/course"
c.Spawner.mem_limit = os.environ.get("COURSE_HUB_MEM", "8G")
c.Spawner.cpu_limit = float(os.environ.get("COURSE_HUB_CPUS", "2"))
c.Spawner.http_timeout = 120  # the first start imports torch and CuTe DSL
c.Spawner.start_timeout = 180
