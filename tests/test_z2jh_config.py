"""hub/z2jh on Zero to JupyterHub 4.4.0, without a cluster: hub/z2jh/values.yaml merged over
the chart's own defaults as Helm merges them, the chart's own hub configuration
(tests/z2jh_chart, files of the chart unchanged) run on the result, and KubeSpawner (the
chart's spawner, from the registry) asked for the pod each profile would start. Checked:
the command the pod runs (the image's start, which copies the notebooks), its image
(a registry and a fixed version, pulled once), its GPU, its limits; the teacher's account
written before the hub starts, and no hub without it; HTTPS; and the image's files."""

import asyncio
import concurrent.futures
import os
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "hub"
CHART = Path(__file__).resolve().parent / "z2jh_chart"
CONFIG_D = "/usr/local/etc/jupyterhub/jupyterhub_config.d"  # where the chart loads extra files


def helm_merge(defaults, values):
    """Helm's merge of a values file over a chart's defaults: maps merge key by key, any
    other value replaces, and null removes the key."""
    merged = dict(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def chart_values() -> dict:
    ours = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    # --set-file hub.extraFiles.course-admin.stringData=course/tools/hub_admin.py
    ours["hub"]["extraFiles"]["course-admin"]["stringData"] = (
        ROOT / "course" / "tools" / "hub_admin.py"
    ).read_text()
    merged = helm_merge(yaml.safe_load((CHART / "values.yaml").read_text()), ours)
    merged["Chart"] = {"Name": "jupyterhub", "Version": "4.4.0"}
    return merged


def run_chart_config(values: dict, folder: Path, env: dict):
    """The chart's hub configuration on `values`, in `folder` (the hub's working directory,
    where its sqlite database lives), with the extra files mounted where the chart puts
    them (`folder`/config.d stands for CONFIG_D). Returns the traitlets config."""
    from tornado.httpclient import AsyncHTTPClient
    from traitlets.config import Config

    z2jh = types.ModuleType("z2jh")
    exec(compile((CHART / "z2jh.py").read_text(), str(CHART / "z2jh.py"), "exec"), z2jh.__dict__)
    z2jh._load_config = lambda: values
    z2jh._get_config_value = lambda key: key  # resource names: their short names will do
    z2jh.get_secret_value = lambda key, default="x": "0" * 64 if "cookie" in key else default
    config_d = folder / "config.d"
    config_d.mkdir()
    for name, extra in values["hub"]["extraFiles"].items():
        if extra["mountPath"].startswith(CONFIG_D + "/"):
            (config_d / Path(extra["mountPath"]).name).write_text(extra["stringData"])
    source = (CHART / "jupyterhub_config.py").read_text().replace(CONFIG_D, str(config_d))
    config = Config()
    saved_env, saved_cwd, saved_z2jh = dict(os.environ), os.getcwd(), sys.modules.get("z2jh")
    os.environ.update({"PROXY_API_SERVICE_PORT": "8001", "HUB_SERVICE_PORT": "8081", **env})
    sys.modules["z2jh"] = z2jh
    os.chdir(folder)
    configure = AsyncHTTPClient.configure  # the chart picks pycurl's client: not needed here
    AsyncHTTPClient.configure = classmethod(lambda cls, *args, **kwargs: None)
    try:
        exec(
            compile(source, "jupyterhub_config.py", "exec"),
            {
                "get_config": lambda: config,
                "__file__": str(CHART / "jupyterhub_config.py"),
                "__name__": "jupyterhub_config",
            },
        )
    finally:
        AsyncHTTPClient.configure = configure
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.modules.pop("z2jh")
        if saved_z2jh is not None:
            sys.modules["z2jh"] = saved_z2jh
    return config


@pytest.fixture(scope="module")
def chart(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub")
    values = chart_values()
    config = run_chart_config(
        values,
        folder,
        {"COURSE_HUB_ADMIN": "teacher", "COURSE_HUB_ADMIN_PASSWORD": "the teacher's secret"},
    )
    return values, config, folder


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


@pytest.fixture(scope="module", autouse=True)
def no_cluster(tmp_path_factory):
    """KubeSpawner reads a cluster's address when made; this one is never contacted (a
    pod manifest is built, not sent)."""
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(KUBECONFIG)
    saved = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = str(path)
    yield
    if saved is None:
        os.environ.pop("KUBECONFIG")
    else:
        os.environ["KUBECONFIG"] = saved


def pod_for(config, profile: str):
    from kubespawner import KubeSpawner

    async def build():
        spawner = KubeSpawner(config=config, _mock=True)
        spawner.user.name = "alice"
        spawner.user_options = {"profile": profile}
        await spawner.load_user_options()
        return await spawner.get_pod_manifest()

    # a thread of its own: the browser suite's Playwright leaves an event loop running in
    # this one, where asyncio.run() refuses to start
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, build()).result()


def test_the_pod_runs_the_images_start_which_copies_the_notebooks(chart):
    _, config, _ = chart
    container = pod_for(config, "gpu").spec.containers[0]
    command = container.args or container.command
    assert command[0] == "/opt/course/hub/z2jh/start-singleuser.sh", command
    script = (HUB / "z2jh" / "start-singleuser.sh").read_text()
    assert (
        'course.tools.learner_copy --source /opt/course/notebooks --dest "$HOME/course"' in script
        and "exec jupyterhub-singleuser" in script
        and script.rstrip().endswith('"$@"')
    )
    assert '"shell_command": ["/bin/bash"]' in script  # python in a terminal is the course's
    docker = (HUB / "z2jh" / "Dockerfile").read_text()
    assert 'CMD ["/opt/course/hub/z2jh/start-singleuser.sh"]' in docker
    assert config.Spawner.default_url == "/lab/tree/course"  # the folder the start makes


def test_the_image_comes_from_a_registry_at_a_fixed_version_pulled_once(chart):
    values, config, _ = chart
    container = pod_for(config, "gpu").spec.containers[0]
    name, tag = container.image.rsplit(":", 1)
    assert "." in name.split("/")[0], "a registry host, not Docker Hub's default"
    assert tag != "latest" and container.image_pull_policy == "IfNotPresent"
    assert values["prePuller"]["hook"]["enabled"] is False  # would outlast Helm's timeout
    assert values["singleuser"]["startTimeout"] >= 600


@pytest.mark.parametrize(
    "profile, resource",
    [("gpu", "nvidia.com/gpu"), ("mig", "nvidia.com/mig-1g.10gb"), ("cpu", None)],
)
def test_each_profile_asks_for_its_gpu_and_the_limits(chart, profile, resource):
    _, config, _ = chart
    limits = pod_for(config, profile).spec.containers[0].resources.limits
    gpus = {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}
    assert gpus == ({resource: "1"} if resource else {})
    assert limits["memory"] and limits["cpu"]


def test_the_gpu_profiles_promise_only_what_runs_there():
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    text = " ".join(p["description"] for p in values["singleuser"]["profileList"])
    assert "every kernel runs" not in text
    assert "14-16 need a Blackwell GPU" in " ".join(text.split())


def test_the_teacher_exists_before_the_hub_starts_and_signing_up_is_approved(chart):
    values, config, folder = chart
    assert config.JupyterHub.authenticator_class == "nativeauthenticator.NativeAuthenticator"
    native = config.NativeAuthenticator
    assert native.open_signup is False and native.minimum_password_length >= 10
    assert native.allowed_failed_logins and native.check_common_password
    from course.tools import hub_admin

    assert hub_admin.has_password(f"sqlite:///{folder / 'jupyterhub.sqlite'}", "teacher")
    assert values["hub"]["extraEnv"]["COURSE_HUB_ADMIN_PASSWORD"]["valueFrom"]


def test_without_the_teachers_password_the_hub_does_not_start(tmp_path):
    with pytest.raises(SystemExit, match="teacher has no password"):
        run_chart_config(chart_values(), tmp_path, {"COURSE_HUB_ADMIN_PASSWORD": ""})


def test_learners_reach_the_hub_over_https():
    https = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())["proxy"]["https"]
    assert https["enabled"] is True and https["hosts"]


def test_the_image_leaves_the_checkouts_private_and_bulky_parts_out():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for path in (".git", ".gpu", "build", ".venv"):
        assert path in ignored
    docker = (HUB / "z2jh" / "Dockerfile").read_text()
    assert "PIP_NO_CACHE_DIR=1" in docker and "USER ${NB_UID}" in docker
    assert "WORKDIR /opt/course" in docker  # where ./course.sh is, for the image's test


FAKE_KUBECTL = '''#!{python}
"""Stands in for kubectl against a class of three: two running servers, one starting."""
import json, sys
args = sys.argv[1:]
line = lambda who, verdict: json.dumps({{"learner": who, "exercise": "00.tiles",
                                       "verdict": verdict}})
if args[0] == "get":
    pod = lambda name, who, phase: {{"metadata": {{"name": name, "annotations":
                                   {{"hub.jupyter.org/username": who}}}},
                                   "status": {{"phase": phase}}}}
    print(json.dumps({{"items": [pod("jupyter-alice", "alice", "Running"),
                                 pod("jupyter-bob", "bob", "Running"),
                                 pod("jupyter-carol", "carol", "Pending")]}}))
elif args[0] == "exec":
    pod = args[args.index("--namespace") + 2]
    assert args[args.index("--container") + 1] == "notebook"
    print({{"jupyter-alice": line("alice", "wrong") + "\\n" + line("bob", "right"),
           "jupyter-bob": line("bob", "wrong")}}[pod])
'''


def test_a_clusters_progress_is_gathered_from_the_learners_pods(tmp_path, monkeypatch, capsys):
    """What `python -m course.tools.cluster_progress` asks kubectl, here of a stand-in (no
    cluster is reached from these tests): whose each file is comes from the pod's hub
    annotation, so alice's line giving bob a right answer is ignored."""
    from course.tools import cluster_progress

    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text(FAKE_KUBECTL.format(python=sys.executable))
    kubectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{kubectl.parent}{os.pathsep}{os.environ['PATH']}")
    assert cluster_progress.main(["--namespace", "class", "--out", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "progress.md").read_text()
    assert "| alice | ❌ |" in report and "| bob | ❌ |" in report
    assert "1 line(s) naming bob" in report
    assert "read 2 of 2 running learners' servers" in capsys.readouterr().out
