"""Ceilings per learner, attacked at the spawner: the hub's own SharedUserSpawner and
SystemUserSpawner (course.tools.hub), with a fake JupyterHub user, start a "server" (a
shell standing in for Jupyter) with the spawner's own preexec_fn and stop it with the
spawner's own stop. Each test is an attack that worked before:

* a fork bomb: 1000 processes in a second, toward the machine's pid limit;
* files parked in /tmp and /dev/shm that outlived the server (and a link among them that
  must not lead the clean-up to root's file);
* a home filled past any ceiling, and one file as large as the disk;
* a daemonised `sleep` (setsid nohup) that outlived the server's stop and the hub's exit;
* another GPU's device opened whatever CUDA_VISIBLE_DEVICES said;
* root's PATH, virtualenv and a secret of the hub's environment in a learner's server.

The control groups need root and a writable cgroup file system; where a part is missing
(no `pids` or `devices` hierarchy, no cgroup v2 tree for the eBPF rule) the test says so and
skips. On a machine without an NVIDIA driver the GPU test uses a device node of the GPUs'
major number (195) made for the test: the driver then answers "no such device" to an open
the rule lets through and the rule answers "operation not permitted".
"""

import asyncio
import concurrent.futures
import errno
import os
import pwd
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("jupyterhub", reason="the spawner tests need JupyterHub")

from jupyterhub.objects import Hub  # noqa: E402

from course.tools import gpu_share, hub, limits  # noqa: E402

CG = limits.CGROUP_ROOT
ROOT_ONLY = "" if os.geteuid() == 0 else "control groups and learners' accounts need root"


def stopped(spawner) -> None:
    """The spawner's stop, run to its end on an event loop of its own in another thread
    (a test before this one in the same process may have left a loop running in this one,
    and asyncio.run refuses to start beside it)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, spawner.stop(now=True)).result(timeout=120)


def _missing(controller: str) -> str:
    if ROOT_ONLY:
        return ROOT_ONLY
    if limits.cgroup_version() == 2:
        return ""
    if not (CG / controller).is_dir():
        return f"no cgroup v1 {controller} hierarchy mounted here"
    return ""


def fake_spawner(tmp_path, name, cls=hub.SharedUserSpawner, **config):
    """The hub's spawner class for learner `name`, as JupyterHub makes it, without a hub."""
    user = SimpleNamespace(name=name, escaped_name=name, url=f"/user/{name}/")
    if issubclass(cls, hub.SharedUserSpawner):
        config.setdefault("home_dir_template", str(tmp_path / "homes" / "{username}"))
    return cls(
        user=user,
        hub=Hub(),
        gpu_state=str(tmp_path / "gpus.json"),
        cmd=[sys.executable, "-m", "jupyterhub.singleuser"],
        **config,
    )


def start_fake_server(spawner, script: str) -> subprocess.Popen:
    """`script` (bash) started as the spawner starts a server: its preexec_fn, a new session;
    the spawner then holds it as its server process."""
    proc = subprocess.Popen(
        ["bash", "-c", script],
        preexec_fn=spawner.make_preexec_fn(spawner.user.name),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    spawner.proc, spawner.pid = proc, proc.pid
    return proc


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def wait_for_pid_file(path: Path, seconds=20) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.1)
    raise AssertionError(f"no pid in {path}")


@pytest.fixture
def learner_account():
    """A Unix account standing in for a learner's course-<name> (removed afterwards)."""
    if ROOT_ONLY or not shutil.which("useradd"):
        pytest.skip(ROOT_ONLY or "no useradd")
    name = f"course-ct{uuid.uuid4().hex[:6]}"
    subprocess.run(["useradd", "--create-home", name], check=True, capture_output=True)
    yield pwd.getpwnam(name)
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    subprocess.run(["userdel", "--remove", name], capture_output=True)


def system_spawner(tmp_path, monkeypatch, account):
    """A SystemUserSpawner for `account`, with a Python that account can run (the hub checks
    that of a class's at its start; the tests' own may sit under /root)."""
    monkeypatch.setattr(hub.SystemUserSpawner, "account", lambda self: account)
    spawner = fake_spawner(tmp_path, account.pw_name.removeprefix("course-"), hub.SystemUserSpawner)
    if hub.learners_cannot_run(sys.executable) and os.path.exists("/usr/bin/python3"):
        spawner.cmd = ["/usr/bin/python3", *spawner.cmd[1:]]
    return spawner


FORK_1000 = textwrap.dedent(
    """
    import os, signal, time
    children = []
    for _ in range(1000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    print(len(children), flush=True)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    """
)


@pytest.mark.skipif(bool(_missing("pids")), reason=_missing("pids") or "-")
def test_a_fork_bomb_stops_at_the_learners_process_ceiling(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_HUB_PIDS", "100")
    spawner = fake_spawner(tmp_path, f"pid{uuid.uuid4().hex[:6]}")
    proc = start_fake_server(spawner, f"exec {sys.executable} -c '{FORK_1000}'")
    out, err = proc.communicate(timeout=120)
    stopped(spawner)
    forked = int(out.split()[0])
    print(f"forks before the ceiling of 100 stopped them: {forked}")
    assert forked < 100, (forked, err)  # bash, python and its children share the 100


@pytest.mark.skipif(bool(ROOT_ONLY), reason=ROOT_ONLY or "-")
def test_files_parked_in_tmp_and_shm_are_gone_with_the_server(
    tmp_path, monkeypatch, learner_account
):
    tag = uuid.uuid4().hex[:8]
    decoy = Path(f"/tmp/root-decoy-{tag}")  # root's, pointed at by the learner's link
    decoy.write_text("root's")
    parked = [
        Path(f"/tmp/parked-{tag}.bin"),
        Path(f"/dev/shm/parked-{tag}"),
        Path(f"/var/tmp/parked-{tag}/deep/file"),
    ]
    spawner = system_spawner(tmp_path, monkeypatch, learner_account)
    script = (
        f"head -c 4194304 /dev/zero > {parked[0]}; head -c 4194304 /dev/zero > {parked[1]}; "
        f"mkdir -p {parked[2].parent} && echo x > {parked[2]}; "
        f"ln -s {decoy} /tmp/parked-link-{tag}; sleep 1000"
    )
    try:
        start_fake_server(spawner, script)
        deadline = time.monotonic() + 20
        while not Path(f"/tmp/parked-link-{tag}").is_symlink() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(p.exists() for p in parked)
        stopped(spawner)
        left = [str(p) for p in (*parked, parked[2].parents[1]) if p.exists()]
        assert not left and not Path(f"/tmp/parked-link-{tag}").is_symlink(), left
        assert decoy.read_text() == "root's"  # the link was removed, not followed
    finally:
        decoy.unlink()
        for p in (parked[0], parked[1], Path(f"/tmp/parked-link-{tag}")):
            p.unlink(missing_ok=True)
        shutil.rmtree(parked[2].parents[1], ignore_errors=True)


DAEMON = "setsid nohup sleep 1000 >/dev/null 2>&1 < /dev/null & echo $! > {pid_file}; {rest}"


@pytest.mark.skipif(bool(ROOT_ONLY), reason=ROOT_ONLY or "-")
def test_a_daemonised_process_dies_with_the_learners_server(tmp_path):
    spawner = fake_spawner(tmp_path, f"dmn{uuid.uuid4().hex[:6]}")
    pid_file = tmp_path / "daemon.pid"
    start_fake_server(spawner, DAEMON.format(pid_file=pid_file, rest="sleep 1000"))
    daemon = wait_for_pid_file(pid_file)
    try:
        stopped(spawner)
        time.sleep(0.5)
        assert not alive(daemon), "the learner's daemon outlived their server's stop"
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


HUB_THAT_EXITS = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    sys.path.insert(0, {root!r})
    from tests.test_hub_attack_ceilings import fake_spawner
    from pathlib import Path
    spawner = fake_spawner(Path({tmp!r}), {name!r})
    subprocess.Popen(["bash", "-c", {script!r}], preexec_fn=spawner.make_preexec_fn({name!r}),
                     start_new_session=True).wait()   # the server dies; its daemon does not
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # as JupyterHub ends on SIGTERM
    print("ready", flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(bool(ROOT_ONLY), reason=ROOT_ONLY or "-")
def test_a_daemon_whose_server_died_dies_with_the_hub(tmp_path):
    """JupyterHub's exit stops only the servers it sees running: a server that died
    first (killed by its learner) leaves its daemon to the hub's exit."""
    from course import ROOT

    pid_file = tmp_path / "daemon.pid"
    name = f"hx{uuid.uuid4().hex[:6]}"
    code = HUB_THAT_EXITS.format(
        root=str(ROOT),
        tmp=str(tmp_path),
        name=name,
        script=DAEMON.format(pid_file=pid_file, rest="exit 0"),
    )
    hub_process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert hub_process.stdout.readline().strip() == "ready"
    daemon = wait_for_pid_file(pid_file)
    try:
        assert alive(daemon)
        hub_process.send_signal(signal.SIGTERM)
        hub_process.wait(timeout=60)
        time.sleep(0.5)
        assert not alive(daemon), "the learner's daemon outlived the hub"
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)
        hub_process.kill()


@pytest.mark.skipif(bool(ROOT_ONLY), reason=ROOT_ONLY or "-")
def test_a_home_past_the_disk_ceiling_does_not_start(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_HUB_DISK", "8M")
    name = f"dsk{uuid.uuid4().hex[:6]}"
    spawner = fake_spawner(tmp_path, name)
    home = tmp_path / "homes" / name
    home.mkdir(parents=True)
    with open(home / "sparse.bin", "wb") as sparse:  # 3 GiB that take no disk: no refusal
        sparse.truncate(3 * 2**30)
    proc = start_fake_server(spawner, "head -c 16777216 /dev/zero > big.bin; echo $?")
    out, err = proc.communicate(timeout=60)
    stopped(spawner)
    size = (home / "big.bin").stat().st_size
    print(f"one file of the learner's stopped at {size} bytes (ceiling 8 MiB): {err.strip()}")
    assert size <= 8 * 2**20, "a file grew past the disk ceiling"
    (home / "filler.bin").write_bytes(b"\1" * 12 * 2**20)  # 8 + 12 MiB: past the ceiling
    with pytest.raises(hub.CannotStart) as refused:
        spawner.make_preexec_fn(name)
    message = refused.value.jupyterhub_message
    assert "past this class's ceiling of 8 MiB" in message
    assert "COURSE_HUB_DISK" in message and str(home) in message


def _device_rule_problem() -> str:
    if ROOT_ONLY:
        return ROOT_ONLY
    if limits.cgroup_version() == 1 and not (CG / "devices").is_dir():
        return "no cgroup v1 devices hierarchy here"
    return ""


@pytest.mark.skipif(bool(_device_rule_problem()), reason=_device_rule_problem() or "-")
def test_a_learner_cannot_open_another_learners_gpu(tmp_path, monkeypatch):
    """Two GPUs (the model: their UUIDs and device minors 0 and 1); the learner is given
    GPU 0 and opens the device nodes of both."""
    gpus = [gpu_share.Gpu(f"GPU-{i}", f"GPU {i}: test") for i in (0, 1)]
    monkeypatch.setattr(gpu_share, "visible_gpus", lambda: gpus)
    minors = {"GPU-0": 0, "GPU-1": 1}
    monkeypatch.setattr(gpu_share, "device_minors", lambda *a: minors, raising=False)
    nodes = tmp_path / "dev"
    nodes.mkdir()
    for i in (0, 1):
        os.mknod(nodes / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, i))
    spawner = fake_spawner(tmp_path, f"gpu{uuid.uuid4().hex[:6]}")
    assert spawner.get_env()["CUDA_VISIBLE_DEVICES"] == "GPU-0"
    probe = (
        "import errno, sys\n"
        "for n in sys.argv[1:]:\n"
        "    try: open(n, 'rb').close(); print('opened')\n"
        "    except OSError as e: print(errno.errorcode[e.errno])\n"
    )
    proc = start_fake_server(
        spawner, f'exec {sys.executable} -c "{probe}" {nodes}/nvidia0 {nodes}/nvidia1'
    )
    out, err = proc.communicate(timeout=60)
    stopped(spawner)
    own, other = out.split()
    real_gpu = (nodes / "nvidia0").exists() and Path("/proc/driver/nvidia").exists()
    assert own in ({"opened"} if real_gpu else {"ENXIO", "ENODEV", "opened"}), (own, err)
    assert other == errno.errorcode[errno.EPERM], (other, err)


UNIFIED = CG / "unified" if (CG / "unified" / "cgroup.procs").exists() else CG


@pytest.mark.skipif(
    bool(ROOT_ONLY)
    or not (UNIFIED / "cgroup.procs").exists()
    or limits.cgroup_version() == 1
    and UNIFIED == CG,
    reason=ROOT_ONLY or "no cgroup v2 tree here for the eBPF device rule",
)
def test_the_cgroup_v2_device_rule_denies_what_it_names_and_nothing_else():
    """cgroup v2's only device rule is an eBPF program: /dev/null (c 1:3) denied, /dev/zero
    (c 1:5) still open."""
    from course.tools import device_rule

    group = UNIFIED / f"course-hub-test-{uuid.uuid4().hex[:6]}"
    group.mkdir()
    try:
        device_rule.attach(group, ["c 1:3 rwm"])
        probe = subprocess.run(
            [
                "sh",
                "-c",
                f"echo $$ > {group}/cgroup.procs; head -c 1 /dev/null; echo null=$?; "
                "head -c 1 /dev/zero | wc -c",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "null=1" in probe.stdout and "not permitted" in probe.stderr, probe
        assert probe.stdout.split()[-1] == "1", probe  # /dev/zero read
    finally:
        group.rmdir()


ROOTS_ENV = {
    "PATH": "/root/.pyenv/shims:/root/.cargo/bin:/usr/local/bin:/usr/bin:/bin",
    "VIRTUAL_ENV": "/root/.venvs/hub",
    "CONDA_DEFAULT_ENV": "/root/conda",
    "PYTHONPATH": "/root/lib",
    "COURSE_HUB_SECRET": "the-hub's-secret",
    "LANG": "C.UTF-8",
}


@pytest.mark.parametrize("kind", ["shared", "system"])
def test_nothing_of_roots_environment_reaches_a_learners_server(tmp_path, monkeypatch, kind):
    for key, value in ROOTS_ENV.items():
        monkeypatch.setenv(key, value)
    if kind == "system":
        monkeypatch.setattr(hub.SystemUserSpawner, "account", lambda self: pwd.getpwnam("nobody"))
        cls = hub.SystemUserSpawner
    else:
        cls = hub.SharedUserSpawner
    spawner = fake_spawner(tmp_path, "ann", cls)
    spawner.env_keep = [*spawner.env_keep, "COURSE_HUB_SECRET"]  # a careless teacher's config
    spawner.environment = {"COURSE_TEACHERS_NOTE": "hello"}
    env = spawner.get_env()
    leaked = {k: v for k, v in env.items() if "/root" in v or "secret" in v}
    assert not leaked, leaked
    assert env["PATH"] == f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    assert env["LANG"] == "C.UTF-8" and env["COURSE_TEACHERS_NOTE"] == "hello"
    if kind == "system":
        assert env["HOME"] == pwd.getpwnam("nobody").pw_dir and env["USER"] == "nobody"
