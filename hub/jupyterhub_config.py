"""JupyterHub for a class on one machine: `./course.sh hub` starts it with this file.

The teacher (COURSE_HUB_ADMIN, default "teacher") gets a password before the hub opens its
port (`./course.sh hub` asks for it: course.tools.hub_admin); the hub refuses to start
without one. Learners sign up on the login page and the teacher approves each one at
/hub/authorize (NativeAuthenticator, with the rules of course.tools.hub_auth). Each learner
gets their own Unix account, Jupyter server, notebooks and GPU (course/tools/hub.py).

Settings, all from the environment:

    COURSE_HUB_STATE   the hub's own files: database (password hashes), cookie secret, GPU
                       and account records. Default /var/lib/course-hub as root, else
                       ~/.local/state/course-hub; made mode 700 at every start
    COURSE_HUB_IP, COURSE_HUB_PORT
                       where the hub listens (default 127.0.0.1:8000; 0.0.0.0 opens it to
                       the network: put HTTPS in front of it first)
    COURSE_HUB_HUB_PORT, COURSE_HUB_PROXY_API_PORT
                       the hub's and its proxy's own ports on 127.0.0.1 (default 8081, 8001)
    COURSE_HUB_ADMIN   the teacher's user name (default teacher)
    COURSE_HUB_USERS   "system" (default as root: a Unix account per learner) or "shared"
    COURSE_HUB_HOMES   with "shared": where the learners' folders go (default STATE/homes)
    COURSE_HUB_SEATS   how many learners share the machine (default 4): each learner's
                       memory and CPU ceiling is that share of the machine
    COURSE_HUB_MEM, COURSE_HUB_CPUS
                       the ceilings themselves, e.g. 8G and 2 (instead of the share)
    COURSE_HUB_PIDS    processes and threads per learner (default 512; a kernel importing
                       torch starts a thread per core: raise it on machines of many cores)
    COURSE_HUB_DISK    what a learner's home may hold (default 10G): past it their server
                       does not start (the message says what to do), and no file they write
                       grows past it
    COURSE_HUB_LOCKOUT_SECONDS
                       the window over which wrong passwords are counted (default 300): 5
                       for a name, or 20 from one address, and it waits until the oldest
                       is that old (the teacher's name is counted per address)
    COURSE_HUB_SUBDOMAIN_HOST
                       e.g. https://course.example.org, with a wildcard DNS name and
                       certificate: each learner's server on an origin of its own
                       (https://alice.course.example.org) instead of the hub's
    COURSE_HUB_PYTHON  the Python the learners' servers run (default: the hub's own, the
                       course's .venv)
    COURSE_HUB_TEST_PASSWORD, COURSE_HUB_TEST_TOKEN
                       tests only: a shared password, every user name accepted (JupyterHub's
                       DummyAuthenticator, with the class's name rules), and an admin API
                       token for the test itself; never set them for a class
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course.tools import hub, hub_accounts, hub_admin, learner_cleanup, limits  # noqa: E402

c = get_config()  # noqa: F821  (JupyterHub provides it)
state = hub_admin.state_folder()  # closed to every other account
admin = os.environ.get("COURSE_HUB_ADMIN", "teacher")
python = os.environ.get("COURSE_HUB_PYTHON") or sys.executable
test_password = os.environ.get("COURSE_HUB_TEST_PASSWORD")


def refuse_to_start(why: str):
    sys.exit(f"course hub: {why}\nThe hub was not started.")


if hub_accounts.refusal(admin):
    refuse_to_start(f"the teacher's name cannot be used: {hub_accounts.refusal(admin)}")

c.JupyterHub.ip = os.environ.get("COURSE_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("COURSE_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
# the hub's and the proxy's own ports, on 127.0.0.1 only (two hubs on one machine need others)
c.JupyterHub.hub_port = int(os.environ.get("COURSE_HUB_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = \
    f"http://127.0.0.1:{int(os.environ.get('COURSE_HUB_PROXY_API_PORT', '8001'))}"
c.JupyterHub.db_url = hub_admin.db_url(state)
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")
registry = str(state / "accounts.json")

# The teacher is not one of JupyterHub's admins, whose fixed role may open every learner's
# server: learners' servers share the hub's origin, so a page a learner made would run with
# the teacher's rights in the teacher's browser (it once created an admin token that way).
# The teacher's role manages users, sign-ups and servers, but opens no server but their own
# and makes no token for anyone else.
TEACHER_SCOPES = ["admin-ui", "admin:users", "admin:servers", "read:hub", "read:roles:users"]
roles = [{"name": "teacher", "description": "the class's teacher: users and their servers, "
          "no access to a learner's server", "scopes": TEACHER_SCOPES, "users": [admin]}]
c.JupyterHub.admin_access = False
c.JupyterHub.template_paths = [str(ROOT / "hub" / "templates")]  # the POST-only approvals

if test_password:
    c.JupyterHub.authenticator_class = "course.tools.hub_auth.CourseTestAuthenticator"
    c.DummyAuthenticator.password = test_password
    c.Authenticator.allow_all = True
    # the test drives the hub's REST API as an admin service with this token
    c.JupyterHub.services = [{"name": "course-test",
                              "api_token": os.environ["COURSE_HUB_TEST_TOKEN"]}]
    roles.append({"name": "course-test", "scopes": ["admin:users", "admin:servers", "tokens",
                  "access:servers"], "services": ["course-test"]})
else:
    if not hub_admin.has_password(c.JupyterHub.db_url, admin):
        refuse_to_start(f"the teacher ({admin}) has no password yet, so anyone could sign up "
                        "as the teacher: start the hub with ./course.sh hub, which asks for "
                        "it first (or: python -m course.tools.hub_admin)")
    c.JupyterHub.authenticator_class = "course.tools.hub_auth.CourseAuthenticator"
    c.NativeAuthenticator.open_signup = False  # the teacher approves each learner
    c.NativeAuthenticator.minimum_password_length = hub_admin.MIN_PASSWORD
    c.NativeAuthenticator.check_common_password = True
    c.NativeAuthenticator.allowed_failed_logins = 5
    c.NativeAuthenticator.seconds_before_next_try = \
        int(os.environ.get("COURSE_HUB_LOCKOUT_SECONDS", "300"))
    c.Authenticator.allow_all = True  # whoever the teacher approved
c.JupyterHub.load_roles = roles
c.LearnerNames.teacher = admin
# a single origin for every learner's server unless the machine has a wildcard name and
# certificate: COURSE_HUB_SUBDOMAIN_HOST=https://course.example.org puts alice's server on
# https://alice.course.example.org, an origin of its own (README: HTTPS)
if os.environ.get("COURSE_HUB_SUBDOMAIN_HOST"):
    c.JupyterHub.subdomain_host = os.environ["COURSE_HUB_SUBDOMAIN_HOST"]
c.LearnerNames.account_registry = registry

users = os.environ.get("COURSE_HUB_USERS", "system" if os.geteuid() == 0 else "shared")
if users == "system":
    c.JupyterHub.spawner_class = hub.SystemUserSpawner
    c.SystemUserSpawner.account_registry = registry
    problem = hub.learners_cannot_run(python)
    if problem:  # said now to the teacher, and to each learner instead of a bare error
        print(f"course hub: WARNING: {problem}", file=sys.stderr)
        c.SystemUserSpawner.start_problem = problem
else:
    c.JupyterHub.spawner_class = hub.SharedUserSpawner
    homes = Path(os.environ.get("COURSE_HUB_HOMES", state / "homes")).resolve()
    c.SharedUserSpawner.home_dir_template = str(homes / "{username}")
c.CourseSpawner.gpu_state = str(state / "gpus.json")
c.Spawner.cmd = [python, "-m", "jupyterhub.singleuser"]
# the browser test drives JupyterLab as tests/browser does (settings and app handle)
c.Spawner.args = [hub.TERMINAL_ARG, hub.CSP_ARG] + os.environ.get("COURSE_HUB_TEST_LAB_ARGS", "").split()
c.Spawner.default_url = "/lab/tree/course"

seats = int(os.environ.get("COURSE_HUB_SEATS", "4"))
share_mem, share_cpus = limits.machine_share(seats)
c.Spawner.mem_limit = os.environ.get("COURSE_HUB_MEM") or limits.describe_bytes(share_mem)
c.Spawner.cpu_limit = float(os.environ.get("COURSE_HUB_CPUS") or share_cpus)
print(f"course hub: state in {state} (only this account can open it); each learner's server "
      f"may use up to {c.Spawner.mem_limit} of memory, {c.Spawner.cpu_limit:g} CPUs, "
      f"{limits.pids_ceiling()} processes and {learner_cleanup.disk_ceiling()} of disk "
      + ("(COURSE_HUB_MEM / COURSE_HUB_CPUS)" if os.environ.get("COURSE_HUB_MEM")
         or os.environ.get("COURSE_HUB_CPUS") else
         f"(a 1/{seats} share of this machine: COURSE_HUB_SEATS, or set COURSE_HUB_MEM and "
         "COURSE_HUB_CPUS)"), file=sys.stderr)
c.Spawner.http_timeout = 120  # the first start imports torch and CuTe DSL
c.Spawner.start_timeout = 180
